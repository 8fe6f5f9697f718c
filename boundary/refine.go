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
	// Features per date: NDVI, then each band's reflectance times alpha.
	const nf = 1 + nRefl
	feature := func(d, f, i int) (float64, bool) {
		if f == 0 {
			v := a.ndvi[d][i]
			return float64(v), v == v
		}
		q := a.refl[f-1][d][i]
		return a.alpha[f-1] * float64(q), q > 0 && a.alpha[f-1] > 0
	}
	type move struct{ i, to int32 }
	for range iterations {
		// Per region: sum and count per date and feature.
		sum := make(map[int32][]float64)
		for i, l := range labels {
			if l < 0 {
				continue
			}
			s := sum[l]
			if s == nil {
				s = make([]float64, 2*nd*nf)
				sum[l] = s
			}
			for d := range nd {
				for f := range nf {
					if v, ok := feature(d, f, i); ok {
						s[(d*nf+f)*2] += v
						s[(d*nf+f)*2+1]++
					}
				}
			}
		}
		mean := make(map[int32][]float64, len(sum))
		for l, s := range sum {
			m := make([]float64, nd*nf)
			for k := range m {
				m[k] = math.NaN()
				if s[2*k+1] > 0 {
					m[k] = s[2*k] / s[2*k+1]
				}
			}
			mean[l] = m
		}
		dist := func(i int, l int32) float64 {
			m, t, n := mean[l], 0.0, 0
			for d := range nd {
				v, ok := feature(d, 0, i)
				if !ok || m[d*nf] != m[d*nf] {
					continue
				}
				x := v - m[d*nf]
				num, den := x*x, 1.0
				for f := 1; f < nf; f++ {
					if v, ok := feature(d, f, i); ok && m[d*nf+f] == m[d*nf+f] {
						x = v - m[d*nf+f]
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
