package timeseries_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/timeseries"
)

func TestEventsSynthetic(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	var obs []timeseries.Observation
	for d := 0; d < 365; d += 5 {
		v := seasonal(d) + 0.02*rng.NormFloat64()
		if d >= 200 { // harvest on day 200
			v = 0.2 + 0.02*rng.NormFloat64()
		}
		if d == 100 { // one cloudy outlier
			v -= 0.4
		}
		obs = append(obs, timeseries.Observation{Date: day(d), Value: v, Sensor: "sentinel-2", Clear: 1})
	}
	m, err := timeseries.Fit(obs)
	require.NoError(t, err)
	events, err := m.Events(timeseries.EventOptions{Index: "ndvi"})
	require.NoError(t, err)
	// The harvest is a drop found within a revisit of day 200; the cloudy
	// outlier of day 100 is no event.
	var harvest []timeseries.Event
	for _, e := range events {
		assert.False(t, e.Date.After(day(95)) && e.Date.Before(day(110)), "outlier taken for an event: %+v", e)
		if e.Kind == timeseries.Drop && !e.Date.Before(day(195)) && !e.Date.After(day(205)) {
			harvest = append(harvest, e)
		}
	}
	require.NotEmpty(t, harvest, "%+v", events)
	e := harvest[0]
	assert.Equal(t, "ndvi", e.Index)
	assert.Equal(t, "sentinel-2", e.Sensor)
	assert.Negative(t, e.Magnitude)
	assert.InDelta(t, e.Observed-e.Expected, e.Magnitude, 1e-12)
	assert.Less(t, e.Observed, e.Lower)
	assert.Equal(t, e.Date.AddDate(0, 0, 5), e.ConfirmedBy)
	big := 0
	for _, e := range harvest {
		if e.Magnitude < -0.3 {
			big++
		}
	}
	assert.Equal(t, 1, big, "the 0.6 fall is one event: %+v", harvest)

	_, err = m.Events(timeseries.EventOptions{Level: 2})
	require.Error(t, err)
}

// TestEventsRealData counts the harvest drops of the winter-cereal parcels
// (mid-June to August) in their Sentinel-2 NDVI, and prints every event.
func TestEventsRealData(t *testing.T) {
	harvests, cereals := 0, 0
	var table strings.Builder
	for _, place := range []string{"flanders-31UDS", "flanders-31UES"} {
		c := loadChip(t, place, "s2", "ndvi")
		for fi, obs := range c.obs {
			m, err := timeseries.Fit(timeseries.Usable(obs, 0.6))
			require.NoError(t, err)
			events, err := m.Events(timeseries.EventOptions{Index: "ndvi"})
			require.NoError(t, err)
			cereal := winterCereal(c.props[fi]["crop_code"].(float64))
			if cereal {
				cereals++
			}
			found := false
			for _, e := range events {
				fmt.Fprintf(&table, "%-7s %-16s %s %-4s %+.3f (expected %.3f, observed %.3f)\n", c.fields[fi], c.props[fi]["crop"],
					e.Date.Format(time.DateOnly), e.Kind, e.Magnitude, e.Expected, e.Observed)
				inHarvest := e.Date.Month() >= time.June && e.Date.Month() <= time.August && (e.Date.Month() != time.June || e.Date.Day() >= 15)
				if cereal && e.Kind == timeseries.Drop && inHarvest {
					found = true
				}
			}
			if found {
				harvests++
			}
		}
	}
	t.Logf("winter-cereal parcels with a harvest drop (optical): %d of %d\n%s", harvests, cereals, table.String())
	assert.GreaterOrEqual(t, harvests, cereals-1)
}

// TestRadarEventsRealData counts the winter-cereal parcels whose Sentinel-1
// series alone show a change at harvest (mid-June to August): radar sees
// through the cloudy weeks. Harvest removes the canopy: VH falls and the
// VH/VV ratio falls, VV may rise over bare soil, so both kinds are counted.
func TestRadarEventsRealData(t *testing.T) {
	var table strings.Builder
	for _, idx := range []string{"vh", "vv", "vh_vv", "rvi"} {
		drops, changes, cereals := 0, 0, 0
		for _, place := range []string{"flanders-31UDS", "flanders-31UES"} {
			c := loadChip(t, place, "s1", idx)
			for fi, obs := range c.obs {
				if !winterCereal(c.props[fi]["crop_code"].(float64)) {
					continue
				}
				cereals++
				m, err := timeseries.Fit(obs)
				require.NoError(t, err)
				events, err := m.Events(timeseries.EventOptions{Index: idx})
				require.NoError(t, err)
				drop, change := false, false
				for _, e := range events {
					if e.Date.Month() >= time.June && e.Date.Month() <= time.August && (e.Date.Month() != time.June || e.Date.Day() >= 15) {
						fmt.Fprintf(&table, "%-6s %-7s %s %-4s %+.3f (expected %.3f, observed %.3f)\n", idx, c.fields[fi],
							e.Date.Format(time.DateOnly), e.Kind, e.Magnitude, e.Expected, e.Observed)
						change = true
						drop = drop || e.Kind == timeseries.Drop
					}
				}
				if drop {
					drops++
				}
				if change {
					changes++
				}
			}
		}
		fmt.Fprintf(&table, "%-6s winter-cereal parcels with a harvest drop: %d, with any change: %d, of %d\n", idx, drops, changes, cereals)
		if idx == "vh" {
			assert.Positive(t, drops, "VH falls when the canopy is cut")
		}
	}
	t.Log("\n" + table.String())
}
