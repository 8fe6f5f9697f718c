package timeseries

import (
	"fmt"
	"math"
	"time"

	"gonum.org/v1/gonum/stat/distuv"
)

// Event kinds.
const (
	Drop = "drop" // harvest, mowing, damage: the index falls below what was expected
	Rise = "rise" // emergence, regrowth: it rises above
)

// Default event levels: an observation outside the DefaultEventLevel
// interval of its prediction, confirmed by the next observation outside
// the DefaultConfirmLevel interval on the same side.
const (
	DefaultEventLevel   = 0.95
	DefaultConfirmLevel = 0.8
)

// EventOptions tune Events.
type EventOptions struct {
	// Index names the series' index in the events.
	Index string
	// Level is the prediction interval an observation must leave, in (0, 1);
	// 0 means DefaultEventLevel.
	Level float64
	// ConfirmLevel is the interval the next observation must leave on the
	// same side; 0 means DefaultConfirmLevel.
	ConfirmLevel float64
	// MinMagnitude is the smallest departure |observed − expected| that
	// counts, in index units; 0 means none beyond the intervals.
	MinMagnitude float64
}

// Event is an abrupt change of a field's index.
type Event struct {
	// Date is the day of the triggering observation.
	Date time.Time
	// Kind is Drop or Rise.
	Kind   string
	Index  string
	Sensor string
	// Magnitude is Observed − Expected: negative for a drop.
	Magnitude float64
	// Observed is the triggering observation's value; Expected the value
	// the series predicted for its day from the observations before it,
	// Lower and Upper that prediction's interval at the event level.
	Observed, Expected, Lower, Upper float64
	// ConfirmedBy is the date of the next observation that confirmed it.
	ConfirmedBy time.Time
}

// Events finds the abrupt changes of a fitted series. The rule: the model
// (fitted on all observations) predicts each observation from those before
// it alone (the Kalman filter's one-step prediction, as a monitoring service
// sees it arrive); an observation outside the Level interval of that
// prediction is an event when the next observation, on a later day and
// predicted from the same past, also falls outside the ConfirmLevel
// interval on the same side — a change that persists, where a single
// departure is more likely an undetected cloud. The first
// minFitObservations observations, from which the filter learns level and
// slope, are never events; after an event the level and slope restart
// from it. Consecutive
// departures of one change give one event, at the first.
func (m *Model) Events(opts EventOptions) ([]Event, error) {
	level := opts.Level
	if level == 0 {
		level = DefaultEventLevel
	}
	confirm := opts.ConfirmLevel
	if confirm == 0 {
		confirm = DefaultConfirmLevel
	}
	if !(level > 0 && level < 1 && confirm > 0 && confirm < 1) {
		return nil, fmt.Errorf("timeseries: event levels %v, %v outside (0, 1)", opts.Level, opts.ConfirmLevel)
	}
	z := distuv.UnitNormal.Quantile(0.5 + level/2)
	zc := distuv.UnitNormal.Quantile(0.5 + confirm/2)
	if len(m.rows) < minFitObservations {
		return nil, nil
	}
	grid := obsDays(m.rows)
	// clearest[i] is the clearest observation of grid day i.
	clearest := make([]int, len(grid))
	for i, k := 0, 0; i < len(grid); i++ {
		clearest[i] = k
		for ; k < len(m.rows) && m.rows[k].day == grid[i]; k++ {
			if m.base[k] < m.base[clearest[i]] {
				clearest[i] = k
			}
		}
	}
	var out []Event
	g := gauss{x0: m.rows[0].y, p00: diffuseLevel, p11: diffuseSlope}
	seen, skip, k := 0, -1, 0
	for i, day := range grid {
		if i > 0 {
			g = g.predict(float64(day-grid[i-1]), m.qs, m.ql)
		}
		if seen >= minFitObservations && i+1 < len(grid) && i > skip {
			if e, ok := m.departure(g, i, grid, clearest, z, zc, opts); ok {
				out = append(out, e)
				// The change is real: the level and slope restart from it,
				// and its confirming observation is no second event.
				g.p00 += breakLevel
				g.p11 += breakSlope
				skip = i + 1
			}
		}
		for ; k < len(m.rows) && m.rows[k].day == day; k++ {
			g, _, _ = g.update(m.rows[k].y, m.rows[k].r)
			seen++
		}
	}
	return out, nil
}

// departure tests grid day i's clearest observation against the prediction
// g and, when it departs beyond z, the next day's clearest against g
// carried forward, beyond zc on the same side.
func (m *Model) departure(g gauss, i int, grid, clearest []int, z, zc float64, opts EventOptions) (Event, bool) {
	b := clearest[i]
	o := m.rows[b]
	sd := math.Sqrt(m.sigma2 * (g.p00 + m.base[b]))
	dev := o.y - g.x0
	if math.Abs(dev) <= z*sd || math.Abs(dev) < opts.MinMagnitude {
		return Event{}, false
	}
	n := clearest[i+1]
	q := g.predict(float64(grid[i+1]-grid[i]), m.qs, m.ql)
	dev2 := m.rows[n].y - q.x0
	if dev2*dev <= 0 || math.Abs(dev2) <= zc*math.Sqrt(m.sigma2*(q.p00+m.base[n])) {
		return Event{}, false
	}
	kind := Rise
	if dev < 0 {
		kind = Drop
	}
	return Event{Date: dayTime(grid[i]), Kind: kind, Index: opts.Index, Sensor: m.obs[b].Sensor,
		Magnitude: dev, Observed: o.y, Expected: g.x0, Lower: g.x0 - z*sd, Upper: g.x0 + z*sd,
		ConfirmedBy: dayTime(grid[i+1])}, true
}
