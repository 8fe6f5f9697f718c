package timeseries_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/timeseries"
)

var t0 = time.Date(2019, 1, 1, 0, 0, 0, 0, time.UTC)

func day(n int) time.Time { return t0.AddDate(0, 0, n) }

// seasonal is a smooth NDVI-like curve: 0.2 in winter, 0.85 at day 180.
func seasonal(d int) float64 {
	return 0.2 + 0.65*math.Exp(-math.Pow(float64(d%365-180)/45, 2))
}

// synthetic observations every `every` days with Gaussian noise sd.
func synthetic(years, every int, sd float64, seed uint64) []timeseries.Observation {
	rng := rand.New(rand.NewPCG(seed, 1))
	var obs []timeseries.Observation
	for d := 0; d < 365*years; d += every {
		obs = append(obs, timeseries.Observation{Date: day(d), Value: seasonal(d) + sd*rng.NormFloat64(), Sensor: "sentinel-2", Clear: 1})
	}
	return obs
}

func TestDailyTracksAndCovers(t *testing.T) {
	tests := []struct {
		name     string
		every    int
		sd       float64
		maxRMSE  float64
		coverage [2]float64
	}{
		{"5-day revisit, noise 0.03", 5, 0.03, 0.03, [2]float64{0.7, 0.95}},
		{"12-day revisit, noise 0.05", 12, 0.05, 0.035, [2]float64{0.7, 0.95}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := synthetic(2, tt.every, tt.sd, 7)
			days, err := timeseries.Daily(obs, day(0), day(729), timeseries.Options{Range: [2]float64{-1, 1}})
			require.NoError(t, err)
			require.Len(t, days, 730)
			var ss float64
			covered := 0
			rng := rand.New(rand.NewPCG(99, 2))
			for i, d := range days {
				require.Equal(t, day(i), d.Date)
				e := d.Estimate - seasonal(i)
				ss += e * e
				// a fresh clear observation of that day
				y := seasonal(i) + tt.sd*rng.NormFloat64()
				if y >= d.Lower && y <= d.Upper {
					covered++
				}
				require.LessOrEqual(t, d.Lower, d.Estimate)
				require.LessOrEqual(t, d.Estimate, d.Upper)
			}
			rmse := math.Sqrt(ss / float64(len(days)))
			cov := float64(covered) / float64(len(days))
			t.Logf("RMSE %.4f coverage %.3f", rmse, cov)
			assert.Less(t, rmse, tt.maxRMSE)
			assert.GreaterOrEqual(t, cov, tt.coverage[0])
			assert.LessOrEqual(t, cov, tt.coverage[1])
			// observed days carry their observation and sensor
			assert.InDelta(t, obs[1].Value, days[tt.every].Observed, 1e-12)
			assert.Equal(t, "sentinel-2", days[tt.every].Sensor)
			assert.True(t, math.IsNaN(days[1].Observed))
			assert.Equal(t, "", days[1].Sensor)
		})
	}
}

func TestDailyIntervalWidensInGaps(t *testing.T) {
	obs := synthetic(1, 5, 0.02, 3)
	// a 60-day gap from day 100 to day 160
	var kept []timeseries.Observation
	for _, o := range obs {
		if d := int(o.Date.Sub(t0).Hours() / 24); d <= 100 || d >= 160 {
			kept = append(kept, o)
		}
	}
	days, err := timeseries.Daily(kept, day(0), day(364), timeseries.Options{})
	require.NoError(t, err)
	width := func(i int) float64 { return days[i].Upper - days[i].Lower }
	assert.Greater(t, width(130), 2*width(50), "the middle of the gap is less certain than a well observed day")
	assert.Greater(t, width(130), width(110))
	assert.Greater(t, width(130), width(150))
	// Beyond the last observation the interval keeps widening, the estimate stays flat.
	after, err := timeseries.Daily(kept, day(370), day(400), timeseries.Options{})
	require.NoError(t, err)
	assert.Greater(t, after[30].Upper-after[30].Lower, after[0].Upper-after[0].Lower)
	assert.Equal(t, after[0].Estimate, after[30].Estimate)
}

func TestDailyErrors(t *testing.T) {
	_, err := timeseries.Daily(nil, day(0), day(1), timeseries.Options{})
	require.ErrorIs(t, err, timeseries.ErrNoObservations)
	_, err = timeseries.Daily([]timeseries.Observation{{Date: day(0), Value: math.NaN()}}, day(0), day(1), timeseries.Options{})
	require.ErrorIs(t, err, timeseries.ErrNoObservations)
	obs := synthetic(1, 10, 0.02, 1)
	_, err = timeseries.Daily(obs, day(5), day(1), timeseries.Options{})
	require.Error(t, err)
	_, err = timeseries.Daily(obs, day(0), day(1), timeseries.Options{Level: 1.5})
	require.Error(t, err)
	// One or two observations still give a series.
	days, err := timeseries.Daily(obs[:1], day(0), day(3), timeseries.Options{})
	require.NoError(t, err)
	require.Len(t, days, 4)
	assert.InDelta(t, obs[0].Value, days[0].Estimate, 1e-9)
}

// BenchmarkDailyFiveYears is a field's 5-year daily series from its
// observations (a 5-day revisit): fit plus smoothing. The budget is 20 ms.
func BenchmarkDailyFiveYears(b *testing.B) {
	obs := synthetic(5, 5, 0.03, 5)
	for i := range obs {
		if i%3 == 0 { // a partly cloudy date in three: the cloud-noise fit runs
			obs[i].Clear = 0.7
		}
	}
	for b.Loop() {
		if _, err := timeseries.Daily(obs, day(0), day(5*365-1), timeseries.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDailyCombination: the estimate is the equal-weight combination of the
// smoother (Options.Smooth) and linear interpolation between the bracketing
// observations; the interval is the smoother's, recentred.
func TestDailyCombination(t *testing.T) {
	obs := synthetic(1, 10, 0.04, 3)
	m, err := timeseries.Fit(obs)
	require.NoError(t, err)
	combined, err := m.Daily(day(0), day(360), timeseries.Options{})
	require.NoError(t, err)
	smooth, err := m.Daily(day(0), day(360), timeseries.Options{Smooth: true})
	require.NoError(t, err)
	for _, d := range []int{0, 100, 105, 173, 357} {
		a, b := obs[d/10], obs[min(d/10+1, len(obs)-1)]
		w := float64(d%10) / 10
		lin := a.Value + w*(b.Value-a.Value)
		assert.InDelta(t, (smooth[d].Estimate+lin)/2, combined[d].Estimate, 1e-9, "day %d", d)
		assert.InDelta(t, smooth[d].Upper-smooth[d].Lower, combined[d].Upper-combined[d].Lower, 1e-9, "day %d", d)
	}
}
