package timeseries

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/cropkit/cropkit/imagery"
)

// ErrNoObservations is returned when a series has no usable observation.
var ErrNoObservations = errors.New("timeseries: no observation")

// DefaultLevel is the interval's coverage when Options.Level is 0.
const DefaultLevel = 0.8

// Observation is one usable measurement of a field's index.
type Observation struct {
	// Date is the acquisition day (its UTC calendar date counts).
	Date time.Time
	// Value is the field's mean index.
	Value float64
	// Sensor names the instrument ("sentinel-2", "landsat-8", "sentinel-1").
	Sensor string
	// Clear is the fraction (0–1] of the field's pixels that were clear; an
	// observation's noise variance is divided by it. 0 counts as 1.
	Clear float64
}

// Options tune Daily.
type Options struct {
	// Level is the interval's coverage probability, in (0, 1); 0 means DefaultLevel.
	Level float64
	// Range clamps estimates and bounds to [Range[0], Range[1]] when
	// Range[0] < Range[1] (an index's possible values, e.g. [-1, 1] for NDVI).
	Range [2]float64
	// Smooth reports the smoother's curve alone as the estimate, without
	// the combination with linear interpolation between the observations:
	// a curve that does not pass halfway through each observation's noise,
	// what phenology measures. The interval is the same.
	Smooth bool
}

// Day is one day of a daily series.
type Day struct {
	Date time.Time
	// Observed is the day's observation (the clearest when several), NaN when none.
	Observed float64
	// Sensor is the observation's sensor, "" when none.
	Sensor string
	// Estimate is the smoothed value; Lower and Upper bound the interval in
	// which a clear observation of that day falls with probability Level.
	Estimate, Lower, Upper float64
	// Std is the standard deviation of a clear observation of that day
	// around Estimate (the interval's half width over the normal quantile).
	Std float64
}

// Params are a fitted model's variances (index units squared).
type Params struct {
	// Noise is R, the variance of a clear observation around the level.
	Noise float64
	// SlopeNoise and LevelNoise are the daily process variances of the slope
	// and of the level.
	SlopeNoise, LevelNoise float64
	// CloudNoise is γ: a date with clear fraction c has noise R·(1 + γ·(1 − c)/c).
	CloudNoise float64
	// Observations counts the observations fitted, Outliers those given a
	// robustness weight below one half.
	Observations, Outliers int
}

// Model is a series fitted to a field's observations; Daily and Events
// evaluate it. A Model is safe for concurrent use.
type Model struct {
	obs     []Observation // the main sensor family's, sorted by day, stable
	shown   []Observation // every sensor's, sorted by day: the days' observed values
	rows    []obsRow      // obs on the model axis, r including robustness weights
	base    []float64     // r without robustness weights: 1/clear
	weights []float64     // robustness weights
	qs, ql  float64       // process noise ratios to R
	sigma2  float64       // R
	looU    []float64     // sorted |leave-one-out residual| / √(P_loo + r)
	// cloudNoise is the fitted γ of the partial-cloud noise (see cloudNoise).
	cloudNoise float64
	params     Params
}

// epochDay is t's UTC calendar date as days since 1970-01-01.
func epochDay(t time.Time) int {
	y, m, d := t.UTC().Date()
	return int(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400)
}

func dayTime(day int) time.Time { return time.Unix(int64(day)*86400, 0).UTC() }

// Fit fits the model to obs (any order; values that are not finite are
// skipped). It returns ErrNoObservations when none is usable.
func Fit(obs []Observation) (*Model, error) {
	m := &Model{obs: make([]Observation, 0, len(obs))}
	for _, o := range obs {
		if math.IsNaN(o.Value) || math.IsInf(o.Value, 0) || o.Date.IsZero() {
			continue
		}
		if !(o.Clear > 0 && o.Clear <= 1) {
			o.Clear = 1
		}
		m.obs = append(m.obs, o)
	}
	if len(m.obs) == 0 {
		return nil, ErrNoObservations
	}
	slices.SortStableFunc(m.obs, func(a, b Observation) int { return cmp.Compare(epochDay(a.Date), epochDay(b.Date)) })
	m.shown = m.obs
	m.obs = mainFamily(m.shown)
	n := len(m.obs)
	m.rows = make([]obsRow, n)
	m.base = make([]float64, n)
	m.weights = make([]float64, n)
	for i, o := range m.obs {
		m.base[i] = 1 / o.Clear
		m.weights[i] = 1
		m.rows[i] = obsRow{day: epochDay(o.Date), y: o.Value, r: m.base[i]}
	}
	m.fit()
	return m, nil
}

// Params are the fitted variances.
func (m *Model) Params() Params { return m.params }

// Observations are the fitted observations (the main sensor family's)
// sorted by date.
func (m *Model) Observations() []Observation { return slices.Clone(m.obs) }

// mainFamily keeps the observations of the sensor family (imagery's
// families: the satellites of one mission; else the sensor name) with the
// most observations, ties to the first name. Another family informs the
// estimate only where it demonstrably helps, which was measured and not
// found: Landsat 8 NDVI added to the 31UDS Sentinel-2 series raised the
// cross-validated RMSE from 0.082 to 0.094 (0.087 even with its offset and
// noise fitted), radar-derived NDVI from 0.083 to 0.090 (docs/timeseries.md).
// The other families' values still show as the days' observations.
func mainFamily(obs []Observation) []Observation {
	count := map[string]int{}
	for _, o := range obs {
		count[family(o.Sensor)]++
	}
	if len(count) < 2 {
		return obs
	}
	main := ""
	for f, n := range count {
		if main == "" || n > count[main] || (n == count[main] && f < main) {
			main = f
		}
	}
	out := make([]Observation, 0, count[main])
	for _, o := range obs {
		if family(o.Sensor) == main {
			out = append(out, o)
		}
	}
	return out
}

// family groups sensors whose values are comparable as they are:
// imagery's sensor families, else the name itself.
func family(sensor string) string {
	if f, ok := imagery.ParseFamily(sensor); ok {
		return string(f)
	}
	return sensor
}

// Parameter search: log10 of the ratios qS/R and qL/R. The coarse grid spans
// from an almost straight line over a year to a curve free to bend daily.
const (
	logQsMin, logQsMax = -9.0, 0.0
	logQlMin, logQlMax = -7.0, 0.5 // a daily level step of at most √10·R: beyond, noise and level are not identifiable from sparse dates
	robustC            = 2.5       // Huber constant, in standard deviations
	robustIterations   = 4
	minFitObservations = 4
)

// fit estimates qs, ql, sigma2 and the robustness weights.
func (m *Model) fit() {
	grid := obsDays(m.rows)
	var r run
	if len(m.rows) < minFitObservations {
		// Too few to fit: a smooth curve, noise from the spread (or 5 % of the value).
		m.qs, m.ql = 1e-3, 0
		mean, ss := 0.0, 0.0
		for _, o := range m.rows {
			mean += o.y
		}
		mean /= float64(len(m.rows))
		for _, o := range m.rows {
			ss += (o.y - mean) * (o.y - mean)
		}
		m.sigma2 = max(ss/float64(len(m.rows)), math.Pow(0.05*(math.Abs(mean)+0.1), 2))
		m.params = Params{Noise: m.sigma2, SlopeNoise: m.qs * m.sigma2, Observations: len(m.rows)}
		return
	}
	lqs, lql := m.search(&r, grid, 0, 0, true)
	lqs, lql = m.fitCloudNoise(&r, grid, lqs, lql)
	for it := 0; it < robustIterations; it++ {
		lqs, lql = m.search(&r, grid, lqs, lql, false)
		// Standardised smoothed residuals against the unweighted noise.
		r.qs, r.ql = ratio(lqs), ratio(lql)
		r.forward(grid, m.rows)
		_, m.sigma2 = r.logLik()
		r.smooth(grid)
		changed := false
		k := 0
		for i, day := range grid {
			s := r.filt[i]
			for ; k < len(m.rows) && m.rows[k].day == day; k++ {
				v := m.sigma2 * max(m.base[k]-s.p00, 0.1*m.base[k])
				u := math.Abs(m.rows[k].y-s.x0) / math.Sqrt(v)
				w := 1.0
				if u > robustC {
					w = (robustC / u) * (robustC / u)
				}
				if math.Abs(w-m.weights[k]) > 1e-3 {
					changed = true
				}
				m.weights[k] = w
				m.rows[k].r = m.base[k] / w
			}
		}
		if !changed {
			break
		}
	}
	// Final fit with the last weights.
	lqs, lql = m.search(&r, grid, lqs, lql, false)
	m.qs, m.ql = ratio(lqs), ratio(lql)
	r.qs, r.ql = m.qs, m.ql
	r.forward(grid, m.rows)
	r.smooth(grid)
	m.sigma2 = r.looNoise(grid, m.rows, m.weights)
	m.looU = r.looStandardized(grid, m.rows, m.base, m.looLinear(), combineWeight)
	slices.Sort(m.looU)
	out := 0
	for _, w := range m.weights {
		if w < 0.5 {
			out++
		}
	}
	m.params = Params{Noise: m.sigma2, SlopeNoise: m.qs * m.sigma2, LevelNoise: m.ql * m.sigma2,
		CloudNoise: m.cloudNoise, Observations: len(m.rows), Outliers: out}
}

// cloudNoise are the candidate γ of the partial-cloud noise model: an
// observation with clear fraction c has variance R·(1 + γ·(1 − c)/c). γ = 0
// trusts a partly cloudy date's clear pixels as much as a clear date's; a
// large γ all but drops it (undetected haze, cloud edges and shadows bias
// what the mask leaves).
var cloudNoise = [...]float64{0, 1, 3, 10, 30, 100}

// fitCloudNoise chooses γ by maximum likelihood at the ratios lqs, lql,
// sets the observations' base noise and refines the ratios for it.
// Without a partly cloudy observation it keeps γ = 0.
func (m *Model) fitCloudNoise(r *run, grid []int, lqs, lql float64) (float64, float64) {
	partial := false
	for _, o := range m.obs {
		partial = partial || o.Clear < 1
	}
	if !partial {
		return lqs, lql
	}
	best, bg := math.Inf(-1), 0.0
	r.qs, r.ql = ratio(lqs), ratio(lql)
	for _, g := range cloudNoise {
		m.setCloudNoise(g)
		r.likelihood(grid, m.rows)
		if ll, _ := r.logLik(); ll > best {
			best, bg = ll, g
		}
	}
	m.setCloudNoise(bg)
	m.cloudNoise = bg
	return m.search(r, grid, lqs, lql, false)
}

func (m *Model) setCloudNoise(g float64) {
	for i, o := range m.obs {
		m.base[i] = 1 + g*(1-o.Clear)/o.Clear
		m.rows[i].r = m.base[i] / m.weights[i]
	}
}

// ratio is 10^l, with the grid's lowest level ratio meaning none.
func ratio(l float64) float64 {
	if l <= logQlMin-1 {
		return 0
	}
	return math.Pow(10, l)
}

// search maximises the concentrated likelihood over (log qs, log ql): on
// the coarse grid when coarse, else around (lqs, lql); then refines by
// halving steps around the best point.
func (m *Model) search(r *run, grid []int, lqs, lql float64, coarse bool) (float64, float64) {
	best := math.Inf(-1)
	eval := func(a, b float64) {
		if a < logQsMin || a > logQsMax || b > logQlMax || b < logQlMin-1 {
			return
		}
		r.qs, r.ql = ratio(a), ratio(b)
		r.likelihood(grid, m.rows)
		if ll, _ := r.logLik(); ll > best {
			best, lqs, lql = ll, a, b
		}
	}
	step := 1.0
	if coarse {
		for a := logQsMin; a <= logQsMax; a++ {
			for b := logQlMin - 1; b <= logQlMax; b++ { // logQlMin-1: no level noise
				eval(a, b)
			}
		}
		step = 0.5
	} else {
		// a re-fit after new robustness weights: the optimum moves little
		eval(lqs, lql)
		step = 0.25
	}
	for ; step >= 0.125; step /= 2 {
		ca, cb := lqs, lql
		for _, da := range [3]float64{-step, 0, step} {
			for _, db := range [3]float64{-step, 0, step} {
				if da != 0 || db != 0 {
					eval(ca+da, cb+db)
				}
			}
		}
	}
	return lqs, lql
}

// obsDays are the distinct days of rows (sorted).
func obsDays(rows []obsRow) []int {
	days := make([]int, 0, len(rows))
	for _, o := range rows {
		if len(days) == 0 || days[len(days)-1] != o.day {
			days = append(days, o.day)
		}
	}
	return days
}

// Daily is the series of every day from from to to (inclusive calendar
// dates). Days before the first or after the last observation hold the
// nearest smoothed level, their interval widening with the distance.
func (m *Model) Daily(from, to time.Time, opts Options) ([]Day, error) {
	level := cmp.Or(opts.Level, DefaultLevel)
	if !(level > 0 && level < 1) {
		return nil, fmt.Errorf("timeseries: interval level %v outside (0, 1)", opts.Level)
	}
	d0, d1 := epochDay(from), epochDay(to)
	if d1 < d0 {
		return nil, fmt.Errorf("timeseries: end %s before start %s", to.Format(time.DateOnly), from.Format(time.DateOnly))
	}
	z := distuv.UnitNormal.Quantile(0.5 + level/2)
	scale := math.Sqrt(m.sigma2)
	if n := len(m.looU); n >= 10 {
		// The empirical quantile of the leave-one-out residuals: the
		// interval covers what the model missed on dates it did not see.
		scale = m.looU[min(n-1, int(math.Ceil(level*float64(n)))-1)] / z
	}
	first, last := m.rows[0].day, m.rows[len(m.rows)-1].day
	// The smoothing grid: every observation day, and every requested day
	// between the first and last observation.
	grid := make([]int, 0, len(m.rows)+max(0, min(d1, last)-max(d0, first)+1))
	k := 0
	for d := max(d0, first); d <= min(d1, last); d++ {
		for ; k < len(m.rows) && m.rows[k].day < d; k++ {
			if len(grid) == 0 || grid[len(grid)-1] != m.rows[k].day {
				grid = append(grid, m.rows[k].day)
			}
		}
		grid = append(grid, d)
	}
	for ; k < len(m.rows); k++ {
		if len(grid) == 0 || grid[len(grid)-1] < m.rows[k].day {
			grid = append(grid, m.rows[k].day)
		}
	}
	grid = slices.Compact(grid)
	r := run{qs: m.qs, ql: m.ql}
	r.forward(grid, m.rows)
	r.smooth(grid)
	edge := func(d int) gauss { // the smoothed state on an observation day
		i, _ := slices.BinarySearch(grid, d)
		return r.filt[i]
	}
	lo, hi := math.Inf(-1), math.Inf(1)
	if opts.Range[0] < opts.Range[1] {
		lo, hi = opts.Range[0], opts.Range[1]
	}
	anchors := m.anchors()
	ai := 0

	out := make([]Day, 0, d1-d0+1)
	gi, oi := 0, 0
	for d := d0; d <= d1; d++ {
		var s gauss
		switch {
		case d < first:
			e := edge(first)
			s = flat(e, float64(first-d), m.qs, m.ql)
		case d > last:
			e := edge(last)
			s = flat(e, float64(d-last), m.qs, m.ql)
		default:
			for grid[gi] < d {
				gi++
			}
			s = r.filt[gi]
		}
		day := Day{Date: dayTime(d), Observed: math.NaN()}
		for ; oi < len(m.shown) && epochDay(m.shown[oi].Date) < d; oi++ {
		}
		bestClear := 0.0
		for j := oi; j < len(m.shown) && epochDay(m.shown[j].Date) == d; j++ {
			if o := m.shown[j]; o.Clear > bestClear {
				bestClear = o.Clear
				day.Observed, day.Sensor = o.Value, o.Sensor
			}
		}
		sd := scale * math.Sqrt(max(s.p00, 0)+1)
		if !opts.Smooth && d >= first && d <= last && len(anchors) > 1 {
			for ai+2 < len(anchors) && anchors[ai+1].day < d {
				ai++
			}
			a, b := anchors[ai], anchors[min(ai+1, len(anchors)-1)]
			lin := a.y
			if b.day > a.day {
				lin = a.y + float64(d-a.day)/float64(b.day-a.day)*(b.y-a.y)
			}
			s.x0 = combineWeight*s.x0 + (1-combineWeight)*lin
		}
		day.Std = sd
		day.Estimate = clamp(s.x0, lo, hi)
		day.Lower = clamp(s.x0-z*sd, lo, hi)
		day.Upper = clamp(s.x0+z*sd, lo, hi)
		out = append(out, day)
	}
	return out, nil
}

// combineWeight is the smoother's weight in the forecast combination with
// linear interpolation between the bracketing observations.
const combineWeight = 0.5

// anchor is one day's observation for the linear interpolation.
type anchor struct {
	day int
	y   float64
}

// anchors are the main family's observations not down-weighted as
// outliers, one per day (the clearest).
func (m *Model) anchors() []anchor {
	var out []anchor
	bestClear := 0.0
	for i, row := range m.rows {
		if m.weights[i] < anchorMinWeight {
			continue
		}
		c := m.obs[i].Clear
		if n := len(out); n > 0 && out[n-1].day == row.day {
			if c > bestClear {
				out[n-1].y, bestClear = row.y, c
			}
			continue
		}
		out = append(out, anchor{day: row.day, y: row.y})
		bestClear = c
	}
	return out
}

const anchorMinWeight = 0.0

// looLinear is, per observation, the linear interpolation between the
// anchors of the nearest other days around it (NaN at either end).
func (m *Model) looLinear() []float64 {
	a := m.anchors()
	out := make([]float64, len(m.rows))
	j := 0
	for i, row := range m.rows {
		for j < len(a) && a[j].day < row.day {
			j++
		}
		// a[j-1] is the last anchor before the day; the next after it skips the day's own
		next := j
		for next < len(a) && a[next].day == row.day {
			next++
		}
		if j == 0 || next == len(a) {
			out[i] = math.NaN()
			continue
		}
		p, n := a[j-1], a[next]
		out[i] = p.y + float64(row.day-p.day)/float64(n.day-p.day)*(n.y-p.y)
	}
	return out
}

// flat extrapolates an edge state by dt days without its slope (a trend is
// not carried beyond the data), the variance growing as the model's would.
func flat(e gauss, dt, qs, ql float64) gauss {
	return gauss{x0: e.x0, p00: e.p00 + dt*dt*e.p11 + qs*dt*dt*dt/3 + ql*dt}
}

func clamp(v, lo, hi float64) float64 { return min(max(v, lo), hi) }

// Daily fits obs and returns the series of every day from from to to.
func Daily(obs []Observation, from, to time.Time, opts Options) ([]Day, error) {
	m, err := Fit(obs)
	if err != nil {
		return nil, err
	}
	return m.Daily(from, to, opts)
}
