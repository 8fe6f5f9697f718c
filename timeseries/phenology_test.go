package timeseries_test

import (
	"fmt"
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
		fmt.Fprintf(&table, "\n%-7s %-16s %-10s %-10s %-10s %5s %5s %6s\n", "field", "crop", "start", "peak", "end", "peak", "ampl", "integ")
		checked, maize, maizeLate := 0, 0, 0
		for fi, obs := range c.obs {
			days, err := timeseries.Daily(timeseries.Usable(obs, 0.6), season.From, season.To, timeseries.Options{Range: [2]float64{-1, 1}})
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
			fmt.Fprintf(&table, "%-7s %-16s %-10s %-10s %-10s %5.3f %5.3f %6.1f\n", c.fields[fi], c.props[fi]["crop"],
				f(m.Start), f(m.Peak), f(m.End), m.PeakValue, m.Amplitude, m.Integral)
			switch {
			case winterCereal(code):
				checked++
				assert.Contains(t, []time.Month{time.July, time.August}, m.End.Month(), "%s end of season %s", c.fields[fi], f(m.End))
			case code == 1200:
				// Maize peaks in summer, after the cereals; on a July–September
				// plateau (and in the 2018 drought) the highest day falls
				// anywhere from late June, so only summer is asserted.
				checked++
				if m.Peak.Month() == time.August || m.Peak.Month() == time.September {
					maizeLate++
				}
				maize++
				assert.Contains(t, []time.Month{time.June, time.July, time.August, time.September}, m.Peak.Month(), "%s maize peak %s", c.fields[fi], f(m.Peak))
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
	_, err = timeseries.Phenology(days[:2], season, timeseries.PhenologyOptions{})
	require.ErrorIs(t, err, timeseries.ErrNoSeason)
	_, err = timeseries.Phenology(days, season, timeseries.PhenologyOptions{Share: 2})
	require.Error(t, err)
}
