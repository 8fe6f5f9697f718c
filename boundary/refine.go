package boundary

import "math"

// labels returns each pixel's region root, −1 outside the area.
func (g *regions) labels() []int32 {
	out := make([]int32, len(g.parent))
	for i, p := range g.parent {
		out[i] = -1
		if p >= 0 {
			out[i] = g.find(int32(i))
		}
	}
	return out
}

// refine moves pixels on region borders to the adjacent region whose mean
// profile over the season is closest to theirs, iterations times, by the
// measure of the edge strength (NDVI and the weighed bands, see edges).
// Border pixels are mostly mixed pixels; with linear mixing the closer
// profile is the field covering more of the pixel, which is the one the
// pixel-centre rule gives it to. Moves are decided together per iteration.
func refine(a *profiles, labels []int32, iterations int) {
	nd := len(a.ndvi)
	if nd == 0 {
		return
	}
	// Features per date: NDVI, then each used band's reflectance times
	// alpha; per region and feature a sum and a count.
	var bands []int
	for k, al := range a.alpha {
		if al > 0 {
			bands = append(bands, k)
		}
	}
	nf := 1 + len(bands)
	type move struct{ i, to int32 }
	for range iterations {
		slot := make(map[int32]int)
		var sums [][]float64
		for i, l := range labels {
			if l < 0 {
				continue
			}
			k, ok := slot[l]
			if !ok {
				k = len(sums)
				slot[l] = k
				sums = append(sums, make([]float64, 2*nd*nf))
			}
			s := sums[k]
			for d, p := range a.ndvi {
				if v := p[i]; v == v {
					s[2*d*nf] += float64(v)
					s[2*d*nf+1]++
				}
				for f, b := range bands {
					if q := a.refl[b][d][i]; q > 0 {
						s[2*(d*nf+1+f)] += a.alpha[b] * float64(q)
						s[2*(d*nf+1+f)+1]++
					}
				}
			}
		}
		// Means in place of the sums (NaN where no pixel was clear).
		for _, s := range sums {
			for k := 0; k < len(s); k += 2 {
				m := math.NaN()
				if s[k+1] > 0 {
					m = s[k] / s[k+1]
				}
				s[k/2] = m
			}
		}
		dist := func(i int, l int32) float64 {
			m, t, n := sums[slot[l]], 0.0, 0
			for d, p := range a.ndvi {
				v := p[i]
				if v != v || m[d*nf] != m[d*nf] {
					continue
				}
				x := float64(v) - m[d*nf]
				num, den := x*x, 1.0
				for f, b := range bands {
					if q := a.refl[b][d][i]; q > 0 && m[d*nf+1+f] == m[d*nf+1+f] {
						x = a.alpha[b]*float64(q) - m[d*nf+1+f]
						num += x * x
						den += a.bandW2
					}
				}
				t += num / den
				n++
			}
			if n == 0 {
				return math.Inf(1)
			}
			return t / float64(n)
		}
		var moves []move
		for i, l := range labels {
			if l < 0 {
				continue
			}
			r, c := i/a.cols, i%a.cols
			best, bestD := l, -1.0
			for _, j := range [4]int{i - a.cols, i - 1, i + 1, i + a.cols} {
				if (j == i-1 && c == 0) || (j == i+1 && c == a.cols-1) || (j == i-a.cols && r == 0) || (j == i+a.cols && r == a.rows-1) {
					continue
				}
				n := labels[j]
				if n < 0 || n == l || n == best {
					continue
				}
				if bestD < 0 {
					bestD = dist(i, l)
				}
				if d := dist(i, n); d < bestD {
					best, bestD = n, d
				}
			}
			if best != l {
				moves = append(moves, move{int32(i), best})
			}
		}
		if len(moves) == 0 {
			return
		}
		for _, m := range moves {
			labels[m.i] = m.to
		}
	}
}

// components relabels the 4-connected regions of equal labels 0, 1, … in
// row-major order of their first pixel (−1 stays −1) and returns their count.
func components(labels []int32, cols, rows int) int {
	out := make([]int32, len(labels))
	for i := range out {
		out[i] = -2
	}
	n := int32(0)
	var stack []int
	for s, l := range labels {
		if l < 0 {
			out[s] = -1
			continue
		}
		if out[s] != -2 {
			continue
		}
		out[s] = n
		stack = append(stack[:0], s)
		for len(stack) > 0 {
			i := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			r, c := i/cols, i%cols
			for _, j := range [4]int{i - cols, i - 1, i + 1, i + cols} {
				if (j == i-1 && c == 0) || (j == i+1 && c == cols-1) || (j == i-cols && r == 0) || (j == i+cols && r == rows-1) {
					continue
				}
				if out[j] == -2 && labels[j] == l {
					out[j] = n
					stack = append(stack, j)
				}
			}
		}
		n++
	}
	copy(labels, out)
	return int(n)
}
