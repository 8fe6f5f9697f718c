package zoning

import (
	"context"
	"math"
	"math/bits"

	"github.com/cropkit/cropkit/internal/unionfind"
)

// refine moves boundary pixels between zones after the sieve, a k-means
// under the minimum mapping unit: in each sweep every pixel on a zone
// boundary goes to the 4-neighbouring zone whose mean feature vector is
// closest to its own, when that is closer than its zone's mean, and the
// move keeps the map legal — its region keeps at least minPixels pixels
// (regions already below, a zone's last region, never shrink) and stays
// connected (the region's 4-neighbours of the pixel remain 4-connected
// within its 3×3 window, so no region splits). Zone means are recomputed
// after each sweep; like Lloyd's algorithm each sweep lowers the
// within-zone sum of squares, and it stops when no pixel moves (at most
// maxSweeps). Regions never split and never fall below the minimum, so the
// polygon count does not grow. labels is per pixel (0 outside); feat has
// dim values per pixel, NaN where a pixel was not clustered (such pixels
// never move).
func refine(ctx context.Context, labels []int32, feat []float64, dim, k, cols, rows, minPixels int) error {
	_, err := refineCounting(ctx, labels, feat, dim, k, cols, rows, minPixels)
	return err
}

// refineCounting is refine, returning how many pixels its sweeps examined.
//
// A sweep visits the pixels in raster order and a move changes the labels
// the later pixels see, so the order is kept, but only the pixels that can
// move are visited: those on a zone boundary when the sweep reaches them,
// that is on the boundary when the sweep began or next to a pixel that
// moved earlier in it (candidates in a bitmap, read in index order and
// added to ahead of the scan). The regions are labelled once; a move keeps
// every region connected (staysConnected) and can only join regions of the
// zone the pixel enters, which a union–find records and applies at the end
// of the sweep, so a sweep sees the regions and sizes a fresh labelling at
// its start would give. The zone means are recomputed over all pixels in
// raster order each sweep (an incremental update would round differently).
func refineCounting(ctx context.Context, labels []int32, feat []float64, dim, k, cols, rows, minPixels int) (int, error) {
	const maxSweeps = 30
	n := cols * rows
	minKeep := max(minPixels, 1)
	var rl regionLabeller
	id, nr := rl.label(labels, cols, rows) // region per pixel; a moved pixel takes its new region's
	size := make([]int, nr)                // pixels per region, valid at union–find roots
	for _, r := range id {
		if r >= 0 {
			size[r]++
		}
	}
	parent := unionfind.New(nr)
	find := parent.Find
	var joins [][2]int32 // regions a move joined, applied after the sweep

	// cand: the pixels this sweep visits; next: the next sweep's.
	cand := make([]uint64, (n+63)/64)
	next := make([]uint64, len(cand))
	mark := func(bits []uint64, p int) { bits[p>>6] |= 1 << (p & 63) }
	for row := range rows {
		for c := range cols {
			p := row*cols + c
			a := labels[p]
			if a == 0 {
				continue
			}
			if c+1 < cols {
				if b := labels[p+1]; b != 0 && b != a {
					mark(cand, p)
					mark(cand, p+1)
				}
			}
			if row+1 < rows {
				if b := labels[p+cols]; b != 0 && b != a {
					mark(cand, p)
					mark(cand, p+cols)
				}
			}
		}
	}

	mean := make([]float64, (k+1)*dim)
	cnt := make([]float64, k+1) // clustered pixels per zone, kept up to date by the moves
	for i, l := range labels {
		if l != 0 && !math.IsNaN(feat[i*dim]) {
			cnt[l]++
		}
	}
	examined := 0
	// With one feature, safe[2l], safe[2l+1] bound the values for which
	// no other zone's mean is closer than zone l's: such a pixel cannot
	// move, and the sweep passes it by without reading its neighbours.
	var safe []float64
	for range maxSweeps {
		if err := ctx.Err(); err != nil {
			return examined, err
		}
		zoneMeans(mean, cnt, labels, feat, dim, k)
		if dim == 1 {
			safe = safeIntervals(safe, mean, cnt, k)
		}
		moved := 0
		for w := range cand {
			for cand[w] != 0 {
				p := w<<6 | bits.TrailingZeros64(cand[w])
				cand[w] &= cand[w] - 1
				a := labels[p]
				f0 := feat[p*dim]
				if a == 0 || math.IsNaN(f0) {
					continue
				}
				if safe != nil && f0 >= safe[2*a] && f0 <= safe[2*a+1] {
					// No zone is closer: it stays, and stays a candidate
					// for when the means have moved.
					mark(next, p)
					continue
				}
				examined++
				c, row := p%cols, p/cols
				// With no 4-neighbour of another zone there is nothing to weigh.
				if insideZone(labels, cols, rows, p, a) {
					continue
				}
				mark(next, p) // on a boundary: a candidate of the next sweep whatever happens
				ra := find(id[p])
				if size[ra]-1 < minKeep {
					continue
				}
				best, bestQ := closestNeighbourZone(labels, feat, mean, cnt, dim, cols, p)
				if best == a || !staysConnected(labels, cols, rows, c, row) {
					continue
				}
				size[ra]--
				cnt[a]--
				cnt[best]++
				labels[p] = best
				id[p] = id[bestQ]
				size[find(id[p])]++
				moved++
				// Its neighbours may now lie on a boundary: those after it
				// in this sweep, all of them in the next; and it may join
				// regions of its new zone.
				for _, q := range [4]int{p - 1, p + 1, p - cols, p + cols} {
					switch {
					case q == p-1 && c == 0, q == p+1 && c == cols-1, q < 0, q >= n:
						continue
					}
					mark(next, q)
					if q > p {
						mark(cand, q)
					}
					if labels[q] == best && q != bestQ {
						joins = append(joins, [2]int32{id[p], id[q]})
					}
				}
			}
		}
		for _, j := range joins {
			if a, b := find(j[0]), find(j[1]); a != b {
				parent[b] = a
				size[a] += size[b]
			}
		}
		joins = joins[:0]
		cand, next = next, cand // cand is all zero again: the next sweep's next
		if moved == 0 {
			break
		}
	}
	return examined, nil
}

// safeIntervals returns, for each zone l of one-feature means (zones
// without pixels have no mean), the interval [lo, hi] = out[2l], out[2l+1]
// of the values that are no farther from l's mean than from any other
// zone's: the midpoints to the closest means below and above, moved
// inwards by far more than their rounding error, so that in exact
// arithmetic, and hence after the monotone rounding of dist2Centre, no
// zone is strictly closer. A zone whose mean another zone shares gets
// that zone's distance, never strictly less, so it does not narrow the
// interval.
func safeIntervals(out, mean, cnt []float64, k int) []float64 {
	out = append(out[:0], make([]float64, 2*(k+1))...)
	for a := 1; a <= k; a++ {
		lo, hi := math.Inf(-1), math.Inf(1)
		if cnt[a] > 0 {
			ma := mean[a]
			for b := 1; b <= k; b++ {
				mb := mean[b]
				if b == a || cnt[b] == 0 || mb == ma {
					continue
				}
				mid := ma + (mb-ma)/2
				margin := 1e-12*(math.Abs(ma)+math.Abs(mb)) + 1e-300
				if mb < ma {
					lo = max(lo, mid+margin)
				} else {
					hi = min(hi, mid-margin)
				}
			}
		} else {
			lo, hi = math.Inf(1), math.Inf(-1) // never safe (no pixel can have it)
		}
		out[2*a], out[2*a+1] = lo, hi
	}
	return out
}

// zoneMeans sets mean to the zones' mean feature vectors (labels 1..k; 0
// and NaN features skipped), summing in raster order; cnt holds the zones'
// clustered pixels.
func zoneMeans(mean, cnt []float64, labels []int32, feat []float64, dim, k int) {
	clear(mean)
	if dim == 1 {
		// The sum of the current run of equal labels stays in a register:
		// the same additions in the same order, without a store and a
		// load between two of them.
		cur, s := int32(0), 0.0
		for i, l := range labels {
			f := feat[i]
			if l == 0 || math.IsNaN(f) {
				continue
			}
			if l != cur {
				mean[cur] = s
				cur, s = l, mean[l]
			}
			s += f
		}
		mean[cur] = s
		mean[0] = 0
	} else {
		for i, l := range labels {
			if l == 0 || math.IsNaN(feat[i*dim]) {
				continue
			}
			for d := range dim {
				mean[int(l)*dim+d] += feat[i*dim+d]
			}
		}
	}
	for l := 1; l <= k; l++ {
		for d := range dim {
			if cnt[l] > 0 {
				mean[l*dim+d] /= cnt[l]
			}
		}
	}
}

// staysConnected reports whether the 4-neighbours of pixel (c, r) with its
// label are 4-connected to each other inside its 3×3 window without it, so
// that relabelling the pixel cannot split its region.
func staysConnected(labels []int32, cols, rows, c, r int) bool {
	a := labels[r*cols+c]
	var in [3][3]bool
	for dr := -1; dr <= 1; dr++ {
		for dc := -1; dc <= 1; dc++ {
			cc, rr := c+dc, r+dr
			if (dr != 0 || dc != 0) && cc >= 0 && cc < cols && rr >= 0 && rr < rows {
				in[dr+1][dc+1] = labels[rr*cols+cc] == a
			}
		}
	}
	// Flood the window from the first same-label 4-neighbour.
	var seen [3][3]bool
	var stack [][2]int
	nb4 := [4][2]int{{0, 1}, {1, 0}, {1, 2}, {2, 1}}
	for _, s := range nb4 {
		if in[s[0]][s[1]] {
			stack = append(stack, s)
			seen[s[0]][s[1]] = true
			break
		}
	}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, d := range [4][2]int{{-1, 0}, {1, 0}, {0, -1}, {0, 1}} {
			y, x := s[0]+d[0], s[1]+d[1]
			if y >= 0 && y < 3 && x >= 0 && x < 3 && in[y][x] && !seen[y][x] {
				seen[y][x] = true
				stack = append(stack, [2]int{y, x})
			}
		}
	}
	for _, s := range nb4 {
		if in[s[0]][s[1]] && !seen[s[0]][s[1]] {
			return false
		}
	}
	return true
}

// insideZone reports whether pixel p of zone a has no 4-neighbour of
// another zone (unlabelled pixels do not count): most pixels, with nothing
// to weigh.
func insideZone(labels []int32, cols, rows, p int, a int32) bool {
	c, row := p%cols, p/cols
	return (c == 0 || labels[p-1] == a || labels[p-1] == 0) && (c == cols-1 || labels[p+1] == a || labels[p+1] == 0) &&
		(row == 0 || labels[p-cols] == a || labels[p-cols] == 0) && (row == rows-1 || labels[p+cols] == a || labels[p+cols] == 0)
}

// closestNeighbourZone is the zone whose mean is closest to pixel p's
// features among p's own and those of its 4-neighbours in other non-empty
// zones (the first of equals, in the order left, right, up, down), and the
// neighbour it was found at (−1 when p's own zone is closest).
func closestNeighbourZone(labels []int32, feat, mean, cnt []float64, dim, cols, p int) (best int32, at int) {
	a, c, n := labels[p], p%cols, len(labels)
	f := feat[p*dim : (p+1)*dim]
	best, at = a, -1
	bestD := dist2Centre(f, mean[int(a)*dim:])
	for _, q := range [4]int{p - 1, p + 1, p - cols, p + cols} {
		switch {
		case q == p-1 && c == 0, q == p+1 && c == cols-1, q < 0, q >= n:
			continue
		}
		b := labels[q]
		if b == 0 || b == a || cnt[b] == 0 {
			continue
		}
		if d := dist2Centre(f, mean[int(b)*dim:]); d < bestD {
			best, bestD, at = b, d, q
		}
	}
	return best, at
}
