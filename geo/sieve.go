package geo

import (
	"fmt"
	"math"

	"github.com/cropkit/cropkit/internal/unionfind"
)

// Sieve removes small regions from a label raster in place: every
// 4-connected region of equal labels with fewer than minPixels pixels is
// merged into its largest 4-adjacent neighbouring region (GDAL's
// gdal_sieve rule), taking that region's label. Regions are handled smallest
// first, and a merged region is reconsidered with its new size, so it ends
// when every region has at least minPixels pixels or has no neighbour at all
// (it is surrounded by nodata or the raster's edge; such regions are kept).
// Ties between equally large neighbours go to the region whose first pixel
// (in row-major order) comes first, so the result is deterministic.
//
// Pixels equal to nodata are never changed and never a neighbour. labels is
// row-major, cols×rows; a mismatch is an error and leaves labels untouched.
// Time is O(pixels + regions·log regions) when minPixels is small; each
// merge looks only at the pixels of the small region being merged.
func Sieve(labels []int32, cols, rows int, minPixels int, nodata int32) error {
	return SieveWithOptions(labels, cols, rows, SieveOptions{MinPixels: minPixels, Nodata: nodata})
}

// SieveOptions tunes SieveWithOptions.
type SieveOptions struct {
	// MinPixels is the smallest region size kept (0 or 1: nothing changes).
	MinPixels int
	// Nodata marks pixels that are never changed and never a neighbour.
	Nodata int32
	// KeepLabels keeps every label present in the raster: a small region
	// is not merged when it is the last region of its label, so no label
	// is sieved away (that region may stay below MinPixels; small
	// neighbours can still merge into it). Since regions are handled
	// smallest first, the region kept is normally the label's largest (the
	// last in row-major order among equals); it can differ only when a
	// smaller region of the label outgrew it by absorbing neighbours.
	KeepLabels bool
	// Values, when set (Dim values per pixel, pixel-major, NaN where
	// missing), makes a small region merge into the neighbouring region
	// whose label's mean vector (over the whole raster, before sieving) is
	// closest to the small region's own mean, the largest such neighbour
	// on ties: the merge that adds the least within-label sum of squares,
	// where the largest neighbour (the default) can be a label of very
	// different values. A region without values merges into the largest
	// neighbour.
	Values []float64
	// Dim is the number of values per pixel (0 means 1).
	Dim int
	// IntoLargeOnly merges a small region only into a neighbour that had
	// at least MinPixels pixels before sieving (gdal_sieve's rule): a small
	// region whose neighbours were all small stays, where the default
	// merges small regions into each other until they reach MinPixels. On
	// a field of a few dozen pixels, the default leaves about one region
	// per zone; this keeps the finer pattern the field's size allows.
	// Running the sieve again merges into the regions grown meanwhile.
	IntoLargeOnly bool
}

// SieveWithOptions is Sieve with options; with the zero KeepLabels it is
// exactly Sieve(labels, cols, rows, opts.MinPixels, opts.Nodata).
func SieveWithOptions(labels []int32, cols, rows int, opts SieveOptions) error {
	minPixels, nodata := opts.MinPixels, opts.Nodata
	if cols < 0 || rows < 0 || len(labels) != cols*rows {
		return fmt.Errorf("sieve: %d labels for a %d×%d raster", len(labels), cols, rows)
	}
	if minPixels <= 1 || len(labels) == 0 {
		return nil
	}
	rg := findRegions(labels, cols, rows, nodata)
	nr := len(rg.size)
	if nr == 0 {
		return nil
	}

	// Pixels grouped by region (CSR), to find a small region's neighbours
	// by looking around its own pixels only. Only regions small at the
	// start are ever looked around (a region's size only grows, and a
	// small root's pixels are its own and those of the small regions it
	// absorbed), so only their pixels are listed.
	start := make([]int32, nr+1)
	small := func(id int32) bool { return id >= 0 && rg.size[id] < minPixels }
	for _, id := range rg.id {
		if small(id) {
			start[id+1]++
		}
	}
	for i := range nr {
		start[i+1] += start[i]
	}
	pix := make([]int32, start[nr])
	fill := append([]int32(nil), start[:nr]...)
	for i, id := range rg.id {
		if small(id) {
			pix[fill[id]] = int32(i)
			fill[id]++
		}
	}

	// Union-find over regions; the root carries the merged size and label.
	parent := unionfind.New(nr)
	find := parent.Find
	size := rg.size
	label := rg.label
	var large []bool // with IntoLargeOnly: the regions large before sieving
	if opts.IntoLargeOnly {
		large = make([]bool, nr)
		for i, s := range size {
			large[i] = s >= minPixels
		}
	}
	// With KeepLabels, live counts the unmerged regions of each label
	// (dense label index per region in lab).
	var lab, live []int32
	if opts.KeepLabels {
		lab = make([]int32, nr)
		dense := make(map[int32]int32)
		for i, l := range label {
			d, ok := dense[l]
			if !ok {
				d = int32(len(live))
				dense[l] = d
				live = append(live, 0)
			}
			lab[i] = d
			live[d]++
		}
	}
	// With Values: each label's mean vector over the raster.
	dim := max(opts.Dim, 1)
	var labelMean map[int32][]float64
	if opts.Values != nil {
		if len(opts.Values) != len(labels)*dim {
			return fmt.Errorf("sieve: %d values for %d labels of %d values", len(opts.Values), len(labels), dim)
		}
		sum, cnt := labelSums(labels, opts.Values, dim, nodata)
		labelMean = make(map[int32][]float64, len(sum))
		for l, s := range sum {
			for d := range s {
				s[d] /= cnt[l]
			}
			labelMean[l] = s
		}
	}
	mean := make([]float64, dim)
	// A root's pixels are its own list followed by those of the regions
	// merged into it: a chain of CSR segments, next linking them.
	next := make([]int32, nr)
	tail := make([]int32, nr)
	for i := range next {
		next[i], tail[i] = -1, int32(i)
	}

	// Small regions are handled smallest first from a bucket queue: sizes
	// only grow, so buckets are visited once in increasing order.
	buckets := make([][]int32, min(minPixels, len(labels)+1))
	for i := range nr {
		if size[i] < minPixels {
			buckets[size[i]] = append(buckets[size[i]], int32(i))
		}
	}
	for bs := range buckets {
		for k := 0; k < len(buckets[bs]); k++ {
			r := buckets[bs][k]
			if parent[r] != r || size[r] != bs {
				continue // merged away or grown since it was queued
			}
			if live != nil && live[lab[r]] == 1 {
				continue // the last region of its label
			}
			// The region's mean vector, when merging by value.
			byValue := false
			if labelMean != nil {
				clear(mean)
				var c float64
				for seg := r; seg >= 0; seg = next[seg] {
					for _, p := range pix[start[seg]:start[seg+1]] {
						if v := opts.Values[int(p)*dim : (int(p)+1)*dim]; finiteAll(v) {
							for d, x := range v {
								mean[d] += x
							}
							c++
						}
					}
				}
				if c > 0 {
					for d := range mean {
						mean[d] /= c
					}
					byValue = true
				}
			}
			best, bestSize, bestDist := int32(-1), -1, math.Inf(1)
			consider := func(q int) {
				id := rg.id[q]
				if id < 0 {
					return
				}
				n := find(id)
				if n == r || (large != nil && !large[n]) {
					return
				}
				d := 0.0
				if byValue {
					d = math.Inf(1)
					if m, ok := labelMean[label[n]]; ok {
						d = 0
						for j, x := range m {
							d += (x - mean[j]) * (x - mean[j])
						}
					}
				}
				if best < 0 || d < bestDist || (d == bestDist && (size[n] > bestSize || (size[n] == bestSize && n < best))) {
					best, bestSize, bestDist = n, size[n], d
				}
			}
			for seg := r; seg >= 0; seg = next[seg] {
				for _, p := range pix[start[seg]:start[seg+1]] {
					c, row := int(p)%cols, int(p)/cols
					if c > 0 {
						consider(int(p) - 1)
					}
					if c+1 < cols {
						consider(int(p) + 1)
					}
					if row > 0 {
						consider(int(p) - cols)
					}
					if row+1 < rows {
						consider(int(p) + cols)
					}
				}
			}
			if best < 0 {
				continue // isolated: nothing to merge into
			}
			// Merge r into best: best keeps its label.
			parent[r] = best
			if live != nil {
				live[lab[r]]--
			}
			size[best] += size[r]
			next[tail[best]] = r
			tail[best] = tail[r]
			if size[best] < minPixels {
				buckets[size[best]] = append(buckets[size[best]], best)
			}
		}
	}
	final := make([]int32, nr) // each region's label after the merges
	for i := range final {
		final[i] = label[find(int32(i))]
	}
	for i, id := range rg.id {
		if id >= 0 {
			labels[i] = final[id]
		}
	}
	return nil
}

// labelSums sums the values (dim per pixel) of each label's pixels with
// finite values, nodata skipped, in raster order; cnt counts them.
func labelSums(labels []int32, values []float64, dim int, nodata int32) (sum map[int32][]float64, cnt map[int32]float64) {
	lo, hi := int32(math.MaxInt32), int32(math.MinInt32)
	for _, l := range labels {
		if l != nodata {
			lo, hi = min(lo, l), max(hi, l)
		}
	}
	sum, cnt = map[int32][]float64{}, map[int32]float64{}
	if lo > hi {
		return sum, cnt
	}
	// Labels of a small range (zones) are summed in slices indexed by
	// label, others in maps: the same additions in the same order.
	if int64(hi)-int64(lo) < 1<<16 {
		span := int(hi-lo) + 1
		s := make([]float64, span*dim)
		c := make([]float64, span)
		for i, l := range labels {
			v := values[i*dim : (i+1)*dim]
			if l == nodata || !finiteAll(v) {
				continue
			}
			j := int(l - lo)
			for d, x := range v {
				s[j*dim+d] += x
			}
			c[j]++
		}
		for j, n := range c {
			if n > 0 {
				l := lo + int32(j)
				sum[l] = s[j*dim : (j+1)*dim : (j+1)*dim]
				cnt[l] = n
			}
		}
		return sum, cnt
	}
	for i, l := range labels {
		v := values[i*dim : (i+1)*dim]
		if l == nodata || !finiteAll(v) {
			continue
		}
		if sum[l] == nil {
			sum[l] = make([]float64, dim)
		}
		for d, x := range v {
			sum[l][d] += x
		}
		cnt[l]++
	}
	return sum, cnt
}

// regions are the 4-connected regions of equal, non-nodata labels.
type regions struct {
	id    []int32 // per pixel, -1 for nodata; numbered in order of first pixel
	size  []int
	label []int32
}

// findRegions labels 4-connected regions with a two-pass union-find, O(pixels).
func findRegions(labels []int32, cols, rows int, nodata int32) regions {
	n := cols * rows
	id := make([]int32, n)
	parent := make(unionfind.Forest, 0, 64)
	find := func(x int32) int32 { return parent.Find(x) } // parent grows: not a method value
	for r := range rows {
		for c := range cols {
			i := r*cols + c
			v := labels[i]
			if v == nodata {
				id[i] = -1
				continue
			}
			up, left := int32(-1), int32(-1)
			if r > 0 && labels[i-cols] == v {
				up = id[i-cols]
			}
			if c > 0 && labels[i-1] == v {
				left = id[i-1]
			}
			switch {
			case up < 0 && left < 0:
				id[i] = int32(len(parent))
				parent = append(parent, int32(len(parent)))
			case up < 0:
				id[i] = left
			case left < 0:
				id[i] = up
			default:
				a, b := find(up), find(left)
				if a != b {
					if a < b {
						parent[b] = a
					} else {
						parent[a] = b
					}
				}
				id[i] = min(a, b)
			}
		}
	}
	// Renumber roots densely in order of first pixel. A root is its
	// set's smallest provisional id (unions keep the smaller), and ids are
	// given in scan order, so numbering roots by increasing id is that
	// order.
	dense := make([]int32, len(parent))
	count := int32(0)
	for i := range parent {
		if r := find(int32(i)); r == int32(i) {
			dense[i] = count
			count++
		} else {
			dense[i] = dense[r]
		}
	}
	size := make([]int, count)
	label := make([]int32, count)
	for i, p := range id {
		if p < 0 {
			continue
		}
		d := dense[p]
		id[i] = d
		if size[d] == 0 {
			label[d] = labels[i]
		}
		size[d]++
	}
	return regions{id: id, size: size, label: label}
}

func finiteAll(v []float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}
