package weather

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
)

// Day is the weather of one day at one place, in the package's units.
// Temperatures and precipitation are always present; the others are nil
// when the source does not offer them.
type Day struct {
	Date            string  `json:"date"` // YYYY-MM-DD
	TminC           float64 `json:"tmin_c"`
	TmaxC           float64 `json:"tmax_c"`
	TmeanC          float64 `json:"tmean_c"`
	PrecipitationMM float64 `json:"precipitation_mm"`
	// RadiationMJ is the day's global (shortwave) radiation, MJ m-2.
	RadiationMJ *float64 `json:"radiation_mj_m2,omitempty"`
	// ET0MM is the FAO-56 reference evapotranspiration, mm.
	ET0MM *float64 `json:"et0_mm,omitempty"`
	// VapourPressureHPa is the day's mean vapour pressure, hPa.
	VapourPressureHPa *float64 `json:"vapour_pressure_hpa,omitempty"`
	// WindSpeedMS is the day's mean wind speed at 10 m (AgERA5: at 2 m), m s-1.
	WindSpeedMS *float64 `json:"wind_speed_ms,omitempty"`
	// WindMaxMS is the day's highest wind speed at 10 m, m s-1.
	WindMaxMS *float64 `json:"wind_max_ms,omitempty"`
}

// Query asks a Source for the days From..To (inclusive) at a point.
type Query struct {
	Lat, Lon float64
	From, To time.Time // dates (UTC midnight); To not before From
}

// MaxDays bounds the days of one Query (about 30 years).
const MaxDays = 11000

// Validate checks the point and the range.
func (q Query) Validate() error {
	switch {
	case !(q.Lat >= -90 && q.Lat <= 90):
		return fmt.Errorf("%w: latitude %v outside [-90, 90]", ErrInvalid, q.Lat)
	case !(q.Lon >= -180 && q.Lon <= 180):
		return fmt.Errorf("%w: longitude %v outside [-180, 180]", ErrInvalid, q.Lon)
	case q.From.IsZero() || q.To.IsZero():
		return fmt.Errorf("%w: from and to dates are required", ErrInvalid)
	case q.To.Before(q.From):
		return fmt.Errorf("%w: to %s is before from %s", ErrInvalid, q.To.Format(time.DateOnly), q.From.Format(time.DateOnly))
	case Days(q.From, q.To) > MaxDays:
		return fmt.Errorf("%w: %d days asked, at most %d", ErrInvalid, Days(q.From, q.To), MaxDays)
	}
	return nil
}

// Source gives daily weather. Daily returns one Day per date of q, in date
// order, or an error: *RangeError (ErrOutOfRange) when the source has no
// data for some of the dates, *UpstreamError (ErrUnavailable) when a remote
// source kept failing.
type Source interface {
	Daily(ctx context.Context, q Query) ([]Day, error)
}

// Errors callers branch on.
var (
	// ErrInvalid: the query or a table is malformed.
	ErrInvalid = errors.New("weather: invalid")
	// ErrOutOfRange: the source has no data for some asked dates.
	ErrOutOfRange = errors.New("weather: dates outside the source's data")
	// ErrUnavailable: a remote source answered errors (or nothing) after its retries.
	ErrUnavailable = errors.New("weather: source unavailable")
)

// RangeError reports dates a source cannot answer.
type RangeError struct {
	From, To string // the dates asked
	// First and Last are the dates the source holds ("" when unknown).
	First, Last string
	// Missing is the first date without data.
	Missing string
}

func (e *RangeError) Error() string {
	if e.First != "" {
		return fmt.Sprintf("weather: no data for %s (asked %s..%s, the source holds %s..%s)", e.Missing, e.From, e.To, e.First, e.Last)
	}
	return fmt.Sprintf("weather: no data for %s (asked %s..%s)", e.Missing, e.From, e.To)
}

// Unwrap makes errors.Is(err, ErrOutOfRange) true.
func (e *RangeError) Unwrap() error { return ErrOutOfRange }

// ParseDate parses a YYYY-MM-DD date as UTC midnight.
func ParseDate(s string) (time.Time, error) {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: date %q: want YYYY-MM-DD", ErrInvalid, s)
	}
	return t, nil
}

// Days counts the dates from..to inclusive (0 when to is before from).
func Days(from, to time.Time) int {
	if to.Before(from) {
		return 0
	}
	return int(to.Sub(from).Hours()/24+0.5) + 1
}

// Complete checks that days holds exactly one day per date of from..to in
// order, returning a *RangeError naming the first missing date.
func Complete(days []Day, from, to time.Time) error {
	n := Days(from, to)
	for i := range n {
		want := from.AddDate(0, 0, i).Format(time.DateOnly)
		if i >= len(days) || days[i].Date != want {
			e := &RangeError{From: from.Format(time.DateOnly), To: to.Format(time.DateOnly), Missing: want}
			return e
		}
	}
	if len(days) != n {
		return fmt.Errorf("%w: %d days for a range of %d", ErrInvalid, len(days), n)
	}
	return nil
}

// checkDay refuses non-finite or absurd values, so a broken source cannot
// poison sums.
func checkDay(d Day) error {
	for _, v := range []struct {
		name     string
		v        float64
		min, max float64
	}{
		{"tmin", d.TminC, -100, 70}, {"tmax", d.TmaxC, -100, 70}, {"tmean", d.TmeanC, -100, 70},
		{"precipitation", d.PrecipitationMM, 0, 2000},
	} {
		if math.IsNaN(v.v) || v.v < v.min || v.v > v.max {
			return fmt.Errorf("%w: %s %s = %v outside [%v, %v]", ErrInvalid, d.Date, v.name, v.v, v.min, v.max)
		}
	}
	for _, p := range []*float64{d.RadiationMJ, d.ET0MM, d.VapourPressureHPa, d.WindSpeedMS, d.WindMaxMS} {
		if p != nil && (math.IsNaN(*p) || math.IsInf(*p, 0)) {
			return fmt.Errorf("%w: %s: a value is not finite", ErrInvalid, d.Date)
		}
	}
	if d.TmaxC < d.TminC {
		return fmt.Errorf("%w: %s tmax %v below tmin %v", ErrInvalid, d.Date, d.TmaxC, d.TminC)
	}
	return nil
}
