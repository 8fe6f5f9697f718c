package timeseries

import "math"

// gauss is the state of the local linear trend model: mean (level, slope)
// and the symmetric covariance [[p00, p01], [p01, p11]].
type gauss struct {
	x0, x1        float64
	p00, p01, p11 float64
}

// predict moves g forward by dt days with process noise ratios qs (slope)
// and ql (level), in units of the observation noise.
func (g gauss) predict(dt, qs, ql float64) gauss {
	if dt == 0 {
		return g
	}
	return gauss{
		x0:  g.x0 + dt*g.x1,
		x1:  g.x1,
		p00: g.p00 + 2*dt*g.p01 + dt*dt*g.p11 + qs*dt*dt*dt/3 + ql*dt,
		p01: g.p01 + dt*g.p11 + qs*dt*dt/2,
		p11: g.p11 + qs*dt,
	}
}

// update conditions g on an observation y of the level with noise variance
// r; it returns the innovation v and its variance f.
func (g gauss) update(y, r float64) (out gauss, v, f float64) {
	f = g.p00 + r
	v = y - g.x0
	k0, k1 := g.p00/f, g.p01/f
	out = gauss{
		x0:  g.x0 + k0*v,
		x1:  g.x1 + k1*v,
		p00: g.p00 - k0*g.p00,
		p01: g.p01 - k0*g.p01,
		p11: g.p11 - k1*g.p01,
	}
	return out, v, f
}

// obsRow is one observation on the model's time axis.
type obsRow struct {
	day int     // days since the epoch
	y   float64 // value
	r   float64 // noise variance in units of R: 1/clear/weight
}

// diffuse initial variances, in units of R: the first observation sets the
// level, the first two the slope.
const (
	diffuseLevel = 1e7
	diffuseSlope = 1e4
	// breakLevel and breakSlope restart the level and slope after an event.
	breakLevel = 1e4
	breakSlope = 1
)

// run is one pass of the filter (and optionally the smoother) of the model
// with ratios qs, ql over the days grid (sorted, unique) and the
// observations obs (sorted by day, each day in grid). It returns the
// concentrated log-likelihood terms: the sum of v²/f and of log f over
// innovations after the first two (diffuse start), and their count.
type run struct {
	qs, ql float64
	// per grid node: predicted and filtered states (filled by forward)
	pred, filt []gauss
	sumSq      float64
	sumLog     float64
	n          int
}

// forward filters obs over grid, starting diffuse at the first observation's
// value, and keeps every node's states for smooth.
func (r *run) forward(grid []int, obs []obsRow) {
	r.pred = resize(r.pred, len(grid))
	r.filt = resize(r.filt, len(grid))
	r.filter(grid, obs, true)
}

// likelihood filters obs over grid for the likelihood terms only (the
// parameter search's inner loop: no state is stored).
func (r *run) likelihood(grid []int, obs []obsRow) {
	r.filter(grid, obs, false)
}

func (r *run) filter(grid []int, obs []obsRow, store bool) {
	r.sumSq, r.sumLog, r.n = 0, 0, 0
	// log f is summed as the log of running products (f ≥ r > 0, and a
	// product of logBatch variances stays far inside float64's range):
	// one math.Log per batch instead of per observation.
	prod, batch := 1.0, 0
	g := gauss{p00: diffuseLevel, p11: diffuseSlope}
	if len(obs) > 0 {
		g.x0 = obs[0].y
	}
	k, seen := 0, 0
	for i, day := range grid {
		if i > 0 {
			g = g.predict(float64(day-grid[i-1]), r.qs, r.ql)
		}
		if store {
			r.pred[i] = g
		}
		for ; k < len(obs) && obs[k].day == day; k++ {
			var v, f float64
			g, v, f = g.update(obs[k].y, obs[k].r)
			if seen >= 2 {
				r.sumSq += v * v / f
				prod *= f
				if batch++; batch == logBatch {
					r.sumLog += math.Log(prod)
					prod, batch = 1, 0
				}
				r.n++
			}
			seen++
		}
		if store {
			r.filt[i] = g
		}
	}
	r.sumLog += math.Log(prod)
}

// logBatch is how many innovation variances are multiplied before a log.
const logBatch = 8

// logLik is the log-likelihood with R concentrated out (up to a constant)
// and that R.
func (r *run) logLik() (ll, sigma2 float64) {
	if r.n == 0 {
		return math.Inf(-1), math.NaN()
	}
	sigma2 = r.sumSq / float64(r.n)
	if sigma2 <= 0 {
		sigma2 = 1e-12
	}
	return -0.5 * (float64(r.n)*math.Log(sigma2) + r.sumLog), sigma2
}

// smooth runs the Rauch–Tung–Striebel smoother over the forward pass's
// states in place: afterwards filt holds the smoothed states.
func (r *run) smooth(grid []int) {
	for i := len(grid) - 2; i >= 0; i-- {
		f, p, s := r.filt[i], r.pred[i+1], r.filt[i+1]
		dt := float64(grid[i+1] - grid[i])
		// C = Pf Fᵀ Pp⁻¹ with F = [[1, dt], [0, 1]].
		a00, a01 := f.p00+dt*f.p01, f.p01 // Pf Fᵀ: rows (p00,p01),(p01,p11) times Fᵀ
		a10, a11 := f.p01+dt*f.p11, f.p11
		det := p.p00*p.p11 - p.p01*p.p01
		if !(det > 0) {
			continue // degenerate: keep the filtered state
		}
		i00, i01, i11 := p.p11/det, -p.p01/det, p.p00/det
		c00, c01 := a00*i00+a01*i01, a00*i01+a01*i11
		c10, c11 := a10*i00+a11*i01, a10*i01+a11*i11
		d0, d1 := s.x0-p.x0, s.x1-p.x1
		e00, e01, e11 := s.p00-p.p00, s.p01-p.p01, s.p11-p.p11
		// C E Cᵀ
		ce00, ce01 := c00*e00+c01*e01, c00*e01+c01*e11
		ce10, ce11 := c10*e00+c11*e01, c10*e01+c11*e11
		r.filt[i] = gauss{
			x0:  f.x0 + c00*d0 + c01*d1,
			x1:  f.x1 + c10*d0 + c11*d1,
			p00: max(f.p00+ce00*c00+ce01*c01, 0),
			p01: f.p01 + ce00*c10 + ce01*c11,
			p11: max(f.p11+ce10*c10+ce11*c11, 0),
		}
	}
}

func resize(s []gauss, n int) []gauss {
	if cap(s) < n {
		return make([]gauss, n)
	}
	return s[:n]
}

// looNoise is R estimated from leave-one-out residuals of a smoothed pass
// (forward then smooth over grid): the R that makes each observation's
// leave-one-out predictive variance R·(P_loo + r_i) match its squared
// leave-one-out residual on average (robustness-weighted). For a linear
// Gaussian smoother the residual of observation i left out is its smoothed
// residual over 1 − h_i, h_i = P_s/r_i the hat matrix's diagonal, and the
// level's variance without it P_s/(1 − h_i). Calibrating on these rather
// than on the likelihood keeps the interval honest away from observations
// even when the fitted ratios are off.
func (r *run) looNoise(grid []int, obs []obsRow, weights []float64) float64 {
	var sw, s2 float64
	k := 0
	for i, day := range grid {
		s := r.filt[i]
		for ; k < len(obs) && obs[k].day == day; k++ {
			h := min(s.p00/obs[k].r, 0.999)
			e := (obs[k].y - s.x0) / (1 - h)
			ploo := s.p00 / (1 - h)
			s2 += weights[k] * e * e / (ploo + obs[k].r)
			sw += weights[k]
		}
	}
	if !(sw > 0 && s2 > 0) {
		return 1e-12
	}
	return s2 / sw
}

// looStandardized are the observations' leave-one-out residuals over their
// predictive standard deviation in units of R, √(P_loo + r), unsigned. When
// lin is given (per observation, the linear interpolation between the
// neighbouring days' observations, NaN where there is none), the residual is
// that of the combination w·smoother + (1 − w)·lin, the estimate Daily reports.
func (r *run) looStandardized(grid []int, obs []obsRow, base, lin []float64, w float64) []float64 {
	out := make([]float64, 0, len(obs))
	k := 0
	for i, day := range grid {
		s := r.filt[i]
		for ; k < len(obs) && obs[k].day == day; k++ {
			h := min(s.p00/obs[k].r, 0.999)
			e := (obs[k].y - s.x0) / (1 - h)
			if lin != nil && !math.IsNaN(lin[k]) {
				e = w*e + (1-w)*(obs[k].y-lin[k])
			}
			out = append(out, math.Abs(e)/math.Sqrt(s.p00/(1-h)+base[k]))
		}
	}
	return out
}
