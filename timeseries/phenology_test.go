package timeseries_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/timeseries"
)

// winterCereal are the WorldCereal codes of winter wheat and winter barley.
func winterCereal(code float64) bool { return code == 1110 || code == 1510 }

// TestPhenologyRealData measures the calendar season of every field of both
// Flanders chips from all their usable Sentinel-2 observations: winter
// cereals end at harvest (July–August), maize peaks in summer.
func TestPhenologyRealData(t *testing.T) {
	for _, tt := range []struct {
		place string
		year  int
	}{{"flanders-31UDS", 2018}, {"flanders-31UES", 2019}} {
		c := loadChip(t, tt.place, "s2", "ndvi")
		season := timeseries.CalendarSeason(tt.year, 50.8)
		var table strings.Builder
		fmt.Fprintf(&table, "\n%-7s %-16s %-10s %-10s %-10s %-10s %5s %5s %6s\n", "field", "crop", "start", "peak", "max", "end", "peak", "ampl", "integ")
		checked, maize, maizeLate := 0, 0, 0
		for fi, obs := range c.obs {
			days, err := timeseries.Daily(timeseries.Usable(obs, 0.6), season.From, season.To, timeseries.Options{Range: [2]float64{-1, 1}, Smooth: true})
			require.NoError(t, err)
			m, err := timeseries.Phenology(days, season, timeseries.PhenologyOptions{})
			code := c.props[fi]["crop_code"].(float64)
			if err != nil {
				fmt.Fprintf(&table, "%-7s %-16s %v\n", c.fields[fi], c.props[fi]["crop"], err)
				assert.False(t, winterCereal(code) || code == 1200, "%s: %v", c.fields[fi], err)
				continue
			}
			f := func(t time.Time) string {
				if t.IsZero() {
					return "-"
				}
				return t.Format(time.DateOnly)
			}
			fmt.Fprintf(&table, "%-7s %-16s %-10s %-10s %-10s %-10s %5.3f %5.3f %6.1f\n", c.fields[fi], c.props[fi]["crop"],
				f(m.Start), f(m.Peak), f(m.Max), f(m.End), m.PeakValue, m.Amplitude, m.Integral)
			switch {
			case winterCereal(code):
				checked++
				assert.Contains(t, []time.Month{time.July, time.August}, m.End.Month(), "%s end of season %s", c.fields[fi], f(m.End))
			case code == 1200:
				// Maize peaks in summer, after the cereals. The middle of its
				// late-June to early-September plateau falls at the end of July
				// on 4 of 7 parcels and in August on 2 (UDS-13 senesced early
				// in the 2018 drought: July 1), so July–September is asserted
				// and August–September counted (docs/timeseries.md).
				checked++
				if m.Peak.Month() == time.August || m.Peak.Month() == time.September {
					maizeLate++
				}
				maize++
				assert.Contains(t, []time.Month{time.July, time.August, time.September}, m.Peak.Month(), "%s maize peak %s", c.fields[fi], f(m.Peak))
			}
		}
		t.Logf("%s: maize peaks in August–September: %d of %d%s", tt.place, maizeLate, maize, table.String())
		assert.Positive(t, checked)
	}
}

func TestPhenologySynthetic(t *testing.T) {
	// seasonal peaks on day 180 (2019-06-30) at 0.85 over a 0.2 base
	var obs []timeseries.Observation
	for d := 0; d < 365; d += 5 {
		obs = append(obs, timeseries.Observation{Date: day(d), Value: seasonal(d), Clear: 1})
	}
	season := timeseries.CalendarSeason(2019, 50)
	days, err := timeseries.Daily(obs, season.From, season.To, timeseries.Options{})
	require.NoError(t, err)
	m, err := timeseries.Phenology(days, season, timeseries.PhenologyOptions{})
	require.NoError(t, err)
	// the Gaussian bump crosses 20 % of its amplitude 45·√ln5 ≈ 57 days from the peak
	assert.WithinDuration(t, day(180), m.Peak, 2*24*time.Hour)
	assert.WithinDuration(t, day(123), m.Start, 3*24*time.Hour)
	assert.WithinDuration(t, day(237), m.End, 3*24*time.Hour)
	assert.InDelta(t, 0.85, m.PeakValue, 0.01)
	assert.InDelta(t, 0.65, m.Amplitude, 0.02)
	assert.Equal(t, m.Max, m.Peak, "a symmetric bump's middle of season is its maximum")
	_, err = timeseries.Phenology(days[:2], season, timeseries.PhenologyOptions{})
	require.ErrorIs(t, err, timeseries.ErrNoSeason)
	_, err = timeseries.Phenology(days, season, timeseries.PhenologyOptions{Share: 2})
	require.Error(t, err)
	_, err = timeseries.Phenology(days, season, timeseries.PhenologyOptions{PeakShare: 0.1})
	require.Error(t, err, "the peak share must lie above the start/end share")
}

// TestPhenologyPlateau: on a plateau the peak date is the middle of season
// (TIMESAT: midway between the rising edge reaching and the falling edge
// leaving 80 % of the amplitude), not the plateau's highest day, which a
// small bump at its start would otherwise decide.
func TestPhenologyPlateau(t *testing.T) {
	// 0.2 base; rises over days 150–170 to 0.8, plateau to day 250 with a
	// 0.03 bump around day 175, falls by day 270 (2019-06-24 … 2019-09-27).
	curve := func(d int) float64 {
		v := 0.2
		switch {
		case d >= 150 && d < 170:
			v = 0.2 + 0.6*float64(d-150)/20
		case d >= 170 && d <= 250:
			v = 0.8 + 0.03*math.Exp(-math.Pow(float64(d-175)/4, 2))
		case d > 250 && d < 270:
			v = 0.8 - 0.6*float64(d-250)/20
		}
		return v
	}
	var days []timeseries.Day
	for d := 0; d < 365; d++ {
		days = append(days, timeseries.Day{Date: day(d), Estimate: curve(d)})
	}
	season := timeseries.CalendarSeason(2019, 50)
	m, err := timeseries.Phenology(days, season, timeseries.PhenologyOptions{})
	require.NoError(t, err)
	assert.Equal(t, day(175), m.Max)
	assert.InDelta(t, 0.83, m.PeakValue, 1e-9)
	// the 80 % level (0.2 + 0.8·0.63 ≈ 0.704) is reached on day 167 and
	// left after day 253: the middle is day 210
	assert.WithinDuration(t, day(210), m.Peak, 24*time.Hour)
}
