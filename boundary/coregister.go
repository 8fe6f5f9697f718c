package boundary

import "math"

// shift is a whole-pixel offset: a date shifted by (dr, dc) takes at pixel
// (r, c) the value it had at (r+dr, c+dc).
type shift struct{ dr, dc int }

// coregister aligns the dates with each other by whole pixels, within
// ±maxShift: each date takes the shift that maximises the correlation of
// its NDVI edge magnitude with the mean edge magnitude of the other dates,
// twice (the second time against the aligned others). Sentinel-2 dates
// are commonly misregistered by about a pixel (more between orbits before
// the 2019 geometric refinement); unaligned, every field border is blurred
// over two or three pixels. It returns the shift applied to each date.
func (p *profiles) coregister(maxShift int) []shift {
	shifts := make([]shift, len(p.ndvi))
	if maxShift <= 0 || len(p.ndvi) < 2 {
		return shifts
	}
	orig := p.ndvi
	mags := make([][]float32, len(orig))
	for d, l := range orig {
		mags[d] = p.edgeMagnitude(l)
	}
	n := len(p.in)
	for range 2 {
		// Sum and count of the shifted magnitudes over all dates.
		sum, cnt := make([]float64, n), make([]int32, n)
		shifted := make([][]float32, len(mags))
		for d, m := range mags {
			shifted[d] = p.shifted(m, shifts[d])
			for i, v := range shifted[d] {
				if v == v {
					sum[i] += float64(v)
					cnt[i]++
				}
			}
		}
		for d, m := range mags {
			// The template leaves the date itself out, so its current
			// shift does not attract it.
			tmpl := make([]float64, n)
			for i := range tmpl {
				tmpl[i] = math.NaN()
				s, c := sum[i], cnt[i]
				if v := shifted[d][i]; v == v {
					s, c = s-float64(v), c-1
				}
				if c > 0 {
					tmpl[i] = s / float64(c)
				}
			}
			best, bestR := shift{}, math.Inf(-1)
			for dr := -maxShift; dr <= maxShift; dr++ {
				for dc := -maxShift; dc <= maxShift; dc++ {
					if r := p.correlation(m, shift{dr, dc}, tmpl); r > bestR {
						best, bestR = shift{dr, dc}, r
					}
				}
			}
			shifts[d] = best
		}
	}
	for d, l := range orig {
		p.ndvi[d] = p.shifted(l, shifts[d])
		for k := range p.refl {
			p.refl[k][d] = shiftedOf(p, p.refl[k][d], shifts[d], 0)
		}
	}
	return shifts
}

// edgeMagnitude is, per pixel, |right − self| + |down − self| of l (NaN
// where a term is missing or the pixel is outside the area).
func (p *profiles) edgeMagnitude(l []float32) []float32 {
	out := make([]float32, len(l))
	for i := range out {
		out[i] = float32(math.NaN())
		r, c := i/p.cols, i%p.cols
		if !p.in[i] || r+1 >= p.rows || c+1 >= p.cols {
			continue
		}
		a, b, d := l[i], l[i+1], l[i+p.cols]
		if a == a && b == b && d == d {
			out[i] = float32(math.Abs(float64(b-a)) + math.Abs(float64(d-a)))
		}
	}
	return out
}

// shifted returns l shifted by s (NaN where the source lies outside).
func (p *profiles) shifted(l []float32, s shift) []float32 {
	return shiftedOf(p, l, s, float32(math.NaN()))
}

// shiftedOf returns l shifted by s (nan where the source lies outside).
func shiftedOf[T any](p *profiles, l []T, s shift, nan T) []T {
	out := make([]T, len(l))
	for r := range p.rows {
		for c := range p.cols {
			sr, sc := r+s.dr, c+s.dc
			if sr < 0 || sc < 0 || sr >= p.rows || sc >= p.cols {
				out[r*p.cols+c] = nan
				continue
			}
			out[r*p.cols+c] = l[sr*p.cols+sc]
		}
	}
	return out
}

// correlation is Pearson's r between m shifted by s and tmpl over the
// pixels where both are defined (−Inf with fewer than 16 such pixels).
func (p *profiles) correlation(m []float32, s shift, tmpl []float64) float64 {
	var n, sx, sy, sxx, syy, sxy float64
	for r := range p.rows {
		sr := r + s.dr
		if sr < 0 || sr >= p.rows {
			continue
		}
		for c := range p.cols {
			sc := c + s.dc
			if sc < 0 || sc >= p.cols {
				continue
			}
			x, y := float64(m[sr*p.cols+sc]), tmpl[r*p.cols+c]
			if x != x || y != y {
				continue
			}
			n++
			sx += x
			sy += y
			sxx += x * x
			syy += y * y
			sxy += x * y
		}
	}
	if n < 16 {
		return math.Inf(-1)
	}
	cov := sxy - sx*sy/n
	vx, vy := sxx-sx*sx/n, syy-sy*sy/n
	if vx <= 0 || vy <= 0 {
		return math.Inf(-1)
	}
	return cov / math.Sqrt(vx*vy)
}
