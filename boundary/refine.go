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
// NDVI profile over the season is closest to theirs, iterations times.
// Border pixels are mostly mixed pixels; with linear mixing the closer
// profile is the field covering more of the pixel, which is the one the
// pixel-centre rule gives it to. Moves are decided together per iteration.
func refine(a *profiles, labels []int32, iterations int) {
	nd := len(a.ndvi)
	if nd == 0 {
		return
	}
	type move struct{ i, to int32 }
	for range iterations {
		sum := make(map[int32][]float64)
		for i, l := range labels {
			if l < 0 {
				continue
			}
			s := sum[l]
			if s == nil {
				s = make([]float64, 2*nd)
				sum[l] = s
			}
			for d, p := range a.ndvi {
				if v := p[i]; v == v {
					s[d] += float64(v)
					s[nd+d]++
				}
			}
		}
		mean := make(map[int32][]float64, len(sum))
		for l, s := range sum {
			m := make([]float64, nd)
			for d := range m {
				m[d] = math.NaN()
				if s[nd+d] > 0 {
					m[d] = s[d] / s[nd+d]
				}
			}
			mean[l] = m
		}
		dist := func(i int, l int32) float64 {
			m, t, n := mean[l], 0.0, 0
			for d, p := range a.ndvi {
				if v := p[i]; v == v && m[d] == m[d] {
					x := float64(v) - m[d]
					t += x * x
					n++
				}
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
