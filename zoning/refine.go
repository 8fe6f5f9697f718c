package zoning

import (
	"context"
	"math"
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
	const maxSweeps = 30
	n := cols * rows
	var id []int32
	var size []int
	var rl regionLabeller // its buffers serve every sweep
	regions := func() {
		var nr int
		id, nr = rl.label(labels, cols, rows)
		if cap(size) < nr {
			size = make([]int, nr)
		}
		size = size[:nr]
		clear(size)
		for _, r := range id {
			if r >= 0 {
				size[r]++
			}
		}
	}
	mean := make([]float64, (k+1)*dim)
	cnt := make([]float64, k+1)
	for range maxSweeps {
		if err := ctx.Err(); err != nil {
			return err
		}
		clear(mean)
		clear(cnt)
		for i, l := range labels {
			if l == 0 || math.IsNaN(feat[i*dim]) {
				continue
			}
			cnt[l]++
			for d := range dim {
				mean[int(l)*dim+d] += feat[i*dim+d]
			}
		}
		for l := 1; l <= k; l++ {
			for d := range dim {
				if cnt[l] > 0 {
					mean[l*dim+d] /= cnt[l]
				}
			}
		}
		regions()
		moved := 0
		for p := range n {
			a := labels[p]
			if a == 0 || math.IsNaN(feat[p*dim]) || size[id[p]]-1 < max(minPixels, 1) {
				continue
			}
			c, row := p%cols, p/cols
			// Most pixels lie inside their region: with no 4-neighbour of
			// another zone there is nothing to weigh.
			if (c == 0 || labels[p-1] == a || labels[p-1] == 0) && (c == cols-1 || labels[p+1] == a || labels[p+1] == 0) &&
				(row == 0 || labels[p-cols] == a || labels[p-cols] == 0) && (row == rows-1 || labels[p+cols] == a || labels[p+cols] == 0) {
				continue
			}
			f := feat[p*dim : (p+1)*dim]
			best, bestD, bestQ := a, dist2Centre(f, mean[int(a)*dim:]), -1
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
					best, bestD, bestQ = b, d, q
				}
			}
			if best == a || !staysConnected(labels, cols, rows, c, row) {
				continue
			}
			size[id[p]]--
			labels[p] = best
			id[p] = id[bestQ]
			size[id[p]]++
			moved++
		}
		if moved == 0 {
			break
		}
	}
	return nil
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
