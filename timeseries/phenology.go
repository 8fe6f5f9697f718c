package timeseries

import (
	"errors"
	"fmt"
	"time"
)

// DefaultShare is the share of the amplitude whose crossings mark the
// start and end of a season when PhenologyOptions.Share is 0.
const DefaultShare = 0.2

// DefaultPeakShare is the share of the amplitude above which the curve is
// in its middle of season when PhenologyOptions.PeakShare is 0.
const DefaultPeakShare = 0.8

// ErrNoSeason is returned when a window holds no rise and fall to measure:
// fewer than three days of series, or a peak on its first or last day.
var ErrNoSeason = errors.New("timeseries: no season in the window")

// Season is a window of days (inclusive) in which one growing cycle is measured.
type Season struct {
	From, To time.Time
}

// CalendarSeason is the growing season of a year when a field has no
// metadata season: 1 March to 30 September in the northern hemisphere,
// 1 September to 31 March (of year+1) in the southern one (lat < 0). It
// holds the spring rise and summer harvest of winter and spring crops
// alike, and stops before autumn cover crops green up again.
func CalendarSeason(year int, lat float64) Season {
	if lat < 0 {
		return Season{From: time.Date(year, time.September, 1, 0, 0, 0, 0, time.UTC), To: time.Date(year+1, time.March, 31, 0, 0, 0, 0, time.UTC)}
	}
	return Season{From: time.Date(year, time.March, 1, 0, 0, 0, 0, time.UTC), To: time.Date(year, time.September, 30, 0, 0, 0, 0, time.UTC)}
}

// MetadataSeason is the window of a field's metadata season: its start
// (sowing) date to 30 days after its harvest date, or a year from the
// start when the harvest is unknown (harvest zero).
func MetadataSeason(start, harvest time.Time) Season {
	if harvest.IsZero() || !harvest.After(start) {
		return Season{From: start, To: start.AddDate(1, 0, -1)}
	}
	return Season{From: start, To: harvest.AddDate(0, 0, 30)}
}

// PhenologyOptions tune Phenology.
type PhenologyOptions struct {
	// Share of the amplitude, in (0, 1), at which the rising and falling
	// curve mark the start and end of season; 0 means DefaultShare.
	Share float64
	// PeakShare of the amplitude, in (Share, 1), at which the rising and
	// falling curve bound the middle of season whose midpoint is the peak
	// date; 0 means DefaultPeakShare.
	PeakShare float64
}

// Metrics are one season's phenology, measured on the daily estimate.
// A window may hold several growth cycles (a winter cover crop before
// maize, grass cuts): each peak whose prominence is at least
// MinProminence of the window's range starts a cycle, bounded by the
// lowest estimates between it and the neighbouring peaks; the cycle with
// the largest Integral is the season's. Of that cycle:
//
//   - PeakValue is its highest estimate, Max the day of it;
//   - LeftBase and RightBase are its lowest estimates before and after Max;
//   - Peak is the middle of season (TIMESAT's definition): the midpoint of
//     the days around Max on which the curve stays at or above
//     PeakShare of the amplitude (LeftBase + PeakShare·(PeakValue −
//     LeftBase) on the rising side, RightBase + PeakShare·(PeakValue −
//     RightBase) on the falling side). On a plateau the highest day is a
//     matter of noise; the middle of the plateau is not;
//   - Start is the first day after the left base's day on which the
//     estimate reaches LeftBase + Share·(PeakValue − LeftBase); End the
//     first day after the peak on which it falls to RightBase +
//     Share·(PeakValue − RightBase);
//   - Amplitude is PeakValue minus the mean of the two bases;
//   - Integral is the sum over the days from Start to End of the estimate
//     above that mean base (index × days).
type Metrics struct {
	Season                        Season
	Start, Peak, End              time.Time
	Max                           time.Time
	PeakValue, Amplitude          float64
	LeftBase, RightBase, Integral float64
	// Cycles counts the growth cycles found in the window.
	Cycles int
}

// MinProminence is the share of a window's range (highest minus lowest
// estimate) by which a peak must rise above the higher of the lowest
// estimates separating it from taller peaks on either side (a side
// without a taller peak up to the window's end does not count; the
// highest peak counts from the window's lowest estimate) to count as a
// growth cycle.
const MinProminence = 0.25

// Phenology measures one season on a daily series (as Daily returns it;
// days outside the window are ignored).
func Phenology(days []Day, season Season, opts PhenologyOptions) (Metrics, error) {
	share := opts.Share
	if share == 0 {
		share = DefaultShare
	}
	if !(share > 0 && share < 1) {
		return Metrics{}, fmt.Errorf("timeseries: phenology share %v outside (0, 1)", opts.Share)
	}
	peakShare := opts.PeakShare
	if peakShare == 0 {
		peakShare = DefaultPeakShare
	}
	if !(peakShare > share && peakShare < 1) {
		return Metrics{}, fmt.Errorf("timeseries: phenology peak share %v outside (%v, 1)", opts.PeakShare, share)
	}
	from, to := epochDay(season.From), epochDay(season.To)
	var w []Day
	for _, d := range days {
		if e := epochDay(d.Date); e >= from && e <= to {
			w = append(w, d)
		}
	}
	if len(w) < 3 {
		return Metrics{Season: season}, ErrNoSeason
	}
	peaks := prominentPeaks(w)
	var best Metrics
	found := false
	for k, p := range peaks {
		lo, hi := 0, len(w)-1
		if k > 0 {
			lo = peaks[k-1]
		}
		if k+1 < len(peaks) {
			hi = peaks[k+1]
		}
		m := cycle(w, lo, p, hi, share, peakShare)
		m.Season = season
		if !found || m.Integral > best.Integral {
			best, found = m, true
		}
	}
	if !found {
		return Metrics{Season: season}, ErrNoSeason
	}
	best.Cycles = len(peaks)
	return best, nil
}

// prominentPeaks are the indices of w's local maxima, inside the window
// (not on its first or last day), whose prominence is at least
// MinProminence of the window's range, in date order.
func prominentPeaks(w []Day) []int {
	lo, hi := w[0].Estimate, w[0].Estimate
	for _, d := range w {
		lo, hi = min(lo, d.Estimate), max(hi, d.Estimate)
	}
	need := MinProminence * (hi - lo)
	if !(need > 0) {
		return nil
	}
	var peaks []int
	for i := 1; i < len(w)-1; i++ {
		v := w[i].Estimate
		if !(v >= w[i-1].Estimate && v > w[i+1].Estimate) {
			continue
		}
		// The lowest estimate on each side before a higher one. A side that
		// reaches the window's end without one does not bound the peak: a
		// crop already green when the window opens still has its cycle.
		left, right := v, v
		leftBounded, rightBounded := false, false
		for j := i - 1; j >= 0; j-- {
			if w[j].Estimate > v {
				leftBounded = true
				break
			}
			left = min(left, w[j].Estimate)
		}
		for j := i + 1; j < len(w); j++ {
			if w[j].Estimate > v {
				rightBounded = true
				break
			}
			right = min(right, w[j].Estimate)
		}
		switch {
		case leftBounded && !rightBounded:
			right = left
		case rightBounded && !leftBounded:
			left = right
		case !leftBounded && !rightBounded:
			left, right = min(left, right), min(left, right)
		}
		if v-max(left, right) >= need {
			peaks = append(peaks, i)
		}
	}
	return peaks
}

// cycle measures the growth cycle peaking at w[p] between w[lo] and w[hi].
func cycle(w []Day, lo, p, hi int, share, peakShare float64) Metrics {
	left, right := lo, p+1
	for i := lo; i < p; i++ {
		if w[i].Estimate < w[left].Estimate {
			left = i
		}
	}
	for i := p + 1; i <= hi; i++ {
		if w[i].Estimate < w[right].Estimate {
			right = i
		}
	}
	m := Metrics{Max: w[p].Date, PeakValue: w[p].Estimate, LeftBase: w[left].Estimate, RightBase: w[right].Estimate}
	base := (m.LeftBase + m.RightBase) / 2
	m.Amplitude = m.PeakValue - base
	start, end := -1, -1
	up := m.LeftBase + share*(m.PeakValue-m.LeftBase)
	for i := left; i <= p; i++ {
		if w[i].Estimate >= up {
			start = i
			break
		}
	}
	down := m.RightBase + share*(m.PeakValue-m.RightBase)
	for i := p; i <= right; i++ {
		if w[i].Estimate <= down {
			end = i
			break
		}
	}
	// The middle of season: between the rising edge's first day at and
	// the falling edge's last day at peakShare of the amplitude (dips on a
	// plateau in between do not move it).
	rise := p
	for i := left; i <= p; i++ {
		if w[i].Estimate >= m.LeftBase+peakShare*(m.PeakValue-m.LeftBase) {
			rise = i
			break
		}
	}
	fall := p
	for i := right; i >= p; i-- {
		if w[i].Estimate >= m.RightBase+peakShare*(m.PeakValue-m.RightBase) {
			fall = i
			break
		}
	}
	m.Peak = w[(rise+fall)/2].Date
	if start >= 0 {
		m.Start = w[start].Date
	}
	if end >= 0 {
		m.End = w[end].Date
	}
	if start >= 0 && end >= 0 {
		for i := start; i <= end; i++ {
			m.Integral += max(w[i].Estimate-base, 0)
		}
	}
	return m
}
