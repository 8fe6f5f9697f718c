package server_test

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/api"
	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/server"
	"github.com/cropkit/cropkit/server/servertest"
	"github.com/cropkit/cropkit/weather"
	"github.com/cropkit/cropkit/weather/weathertest"
)

// weatherServer is a server whose weather source is a loopback
// Open-Meteo-compatible API serving the AgERA5 days of table.
func weatherServer(t *testing.T, table string) (*servertest.Env, *weathertest.Server, *weather.Table) {
	tab, err := weather.ReadTableFile(testenv.DataDir(t, "weather", table))
	require.NoError(t, err)
	upstream := weathertest.New(tab.All())
	t.Cleanup(upstream.Close)
	cfg, err := archive.OpenMeteoWeather(upstream.URL, true)
	require.NoError(t, err)
	now := func() time.Time { return time.Date(2019, 12, 20, 9, 0, 0, 0, time.UTC) }
	om := cfg.Source.(*weather.OpenMeteo)
	om.Now, om.MaxRetries, om.BaseBackoff, om.MaxBackoff = now, 2, time.Millisecond, 5*time.Millisecond
	cfg.Now = now
	return servertest.NewWith(t, archive.Config{Weather: cfg}, server.Config{}), upstream, tab
}

func TestFieldWeatherEndpoint(t *testing.T) {
	env, upstream, tab := weatherServer(t, "flanders-31UES.csv")
	tok := env.AddUser(t, "farmer", nil)
	crops := []string{"maize", "winter wheat", "sugar beet", "potato"}
	// 16 fields of the 31UES chip's cell (0.1° around 50.7°N 4.1°E).
	for i := range 16 {
		name := fmt.Sprintf("UES-%02d", i)
		lon, lat := 4.06+0.004*float64(i%4), 50.74+0.002*float64(i/4)
		r := do(t, env.Handler, "POST", "/fields/register", tok, map[string]any{"field_name": name, "geometry": polygonJSON(lon, lat, lon+0.001, lat+0.001), "indices": []string{"ndvi"}})
		require.Equal(t, 201, r.Status, "%s", r.Body)
		r = do(t, env.Handler, "POST", "/fields/metadata/register", tok, map[string]any{"field_name": name,
			"start_date": "2019-03-15", "harvest_date": "2019-09-30", "crop_type": crops[i%4]})
		require.Equal(t, 201, r.Status, "%s", r.Body)
	}
	from, _ := weather.ParseDate("2019-03-15")
	to, _ := weather.ParseDate("2019-09-30")
	days, err := tab.Daily(t.Context(), weather.Query{From: from, To: to})
	require.NoError(t, err)

	var wg sync.WaitGroup
	docs := make([]api.WeatherSeason, 16)
	status := make([]int, 16)
	for i := range 16 {
		wg.Go(func() {
			r := do(t, env.Handler, "GET", fmt.Sprintf("/fields/weather?field_name=UES-%02d", i), tok, nil)
			status[i] = r.Status
			json.Unmarshal(r.Body, &docs[i])
		})
	}
	wg.Wait()
	assert.Equal(t, 1, upstream.Requests(), "16 fields in one cell: one upstream request")
	for i, doc := range docs {
		require.Equal(t, 200, status[i])
		p, err := weather.ParamsFor(crops[i%4], nil, nil)
		require.NoError(t, err)
		want := weather.Accumulate(days, p)
		assert.Equal(t, fmt.Sprintf("UES-%02d", i), doc.Field)
		assert.Equal(t, "2019-03-15", doc.SeasonStart)
		assert.Equal(t, "2019-03-15", doc.From)
		assert.Equal(t, "2019-09-30", doc.To)
		assert.Equal(t, p.Crop, doc.Crop)
		assert.Equal(t, p.BaseC, doc.BaseC)
		assert.Equal(t, p.CapC, doc.CapC)
		assert.Equal(t, "0.1:50.7:4.1", doc.Cell)
		assert.Equal(t, weather.OpenMeteoAttribution, doc.Attribution)
		require.Len(t, doc.Daily, len(want.Rows))
		for j, r := range want.Rows {
			got := doc.Daily[j]
			assert.Equal(t, [7]any{r.Date, r.TminC, r.TmaxC, r.PrecipitationMM, r.GDD, r.GDDCum, r.PrecipitationCumMM},
				[7]any{got.Date, got.TminC, got.TmaxC, got.PrecipitationMM, got.GDD, got.GDDCum, got.PrecipitationCumMM})
		}
		assert.Equal(t, api.WeatherTotals{GDD: want.Totals.GDD, PrecipitationMM: want.Totals.PrecipitationMM,
			FrostDays: want.Totals.FrostDays, HeatDays: want.Totals.HeatDays}, doc.Totals)
	}
	assert.Greater(t, docs[1].Totals.FrostDays, 0, "March has frost")
	assert.Greater(t, docs[0].Totals.HeatDays, 0, "summer 2019 has heat days")

	// CSV: one row per day and a total row; explicit range and overrides.
	r := do(t, env.Handler, "GET", "/fields/weather?field_name=UES-00&from=2019-05-01&to=2019-05-31&crop=maize&base=8&format=csv", tok, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	assert.Equal(t, "text/csv; charset=utf-8", r.Header.Get("Content-Type"))
	recs, err := csv.NewReader(bytesReader(r.Body)).ReadAll()
	require.NoError(t, err)
	require.Len(t, recs, 33)
	assert.Equal(t, []string{"field_name", "crop", "date", "tmin_c", "tmax_c", "tmean_c", "precipitation_mm", "gdd", "gdd_cum", "precipitation_cum_mm", "frost_day", "heat_day"}, recs[0][:12])
	assert.Equal(t, "2019-05-01", recs[1][2])
	total := recs[32]
	assert.Equal(t, "total", total[2])
	p := weather.Params{BaseC: 8, CapC: ptrTo(30.0)}
	may := weather.Accumulate(days[47:78], p)
	require.Equal(t, "2019-05-01", may.Rows[0].Date)
	assert.Equal(t, strconv.FormatFloat(may.Totals.GDD, 'g', -1, 64), total[7])
	assert.Equal(t, strconv.FormatFloat(may.Totals.PrecipitationMM, 'g', -1, 64), total[6])
	assert.Equal(t, 1, upstream.Requests(), "a sub-range of stored days: no fetch")
}

func ptrTo(x float64) *float64 { return &x }

func TestFieldWeatherEndpointErrors(t *testing.T) {
	env, upstream, _ := weatherServer(t, "flanders-31UES.csv")
	tok := env.AddUser(t, "farmer", nil)
	r := do(t, env.Handler, "POST", "/fields/register", tok, map[string]any{"field_name": "a", "geometry": polygonJSON(4.06, 50.74, 4.061, 50.741), "indices": []string{"ndvi"}})
	require.Equal(t, 201, r.Status, "%s", r.Body)
	for _, tc := range []struct {
		query  string
		status int
		msg    string
	}{
		{"field_name=a", 400, "no metadata season"},
		{"field_name=a&from=2019-05-01&to=2019-05-31", 400, "names no crop_type"},
		{"field_name=a&from=2019-05-31&to=2019-05-01&crop=maize", 400, "before"},
		{"field_name=a&from=2019-05-01&to=2019-05-31&crop=sunflower", 400, "give its base temperature"},
		{"field_name=a&from=2019-05-01&to=2019-05-31&crop=maize&cap=5", 400, "above the base"},
		{"field_name=a&from=2019-5-1&crop=maize", 400, "from"},
		{"field_name=a&from=2019-05-01&start_date=2019-05-02&crop=maize", 400, "disagree"},
		{"field_name=a&from=2019-05-01&to=2019-05-31&crop=maize&format=xml", 400, "format"},
		{"field_name=a&from=2017-01-01&to=2017-01-31&crop=maize", 400, "out of allowed range"},
		{"field_name=b&from=2019-05-01&crop=maize", 404, ""},
		{"from=2019-05-01&crop=maize", 400, "field_name"},
	} {
		r := do(t, env.Handler, "GET", "/fields/weather?"+tc.query, tok, nil)
		assert.Equal(t, tc.status, r.Status, "%s: %s", tc.query, r.Body)
		assert.Contains(t, string(r.Body), tc.msg, tc.query)
	}
	before := upstream.Requests()
	upstream.FailNext(http.StatusInternalServerError, 3)
	r = do(t, env.Handler, "GET", "/fields/weather?field_name=a&from=2019-05-01&to=2019-05-31&crop=maize", tok, nil)
	assert.Equal(t, 503, r.Status, "%s", r.Body)
	assert.Contains(t, string(r.Body), "HTTP 500")
	assert.NotEmpty(t, r.Header.Get("Retry-After"))
	assert.Equal(t, before+3, upstream.Requests(), "retried, then reported")
	r = do(t, env.Handler, "GET", "/fields/weather?field_name=a&from=2019-05-01&to=2019-05-31&crop=maize", tok, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	assert.Equal(t, before+4, upstream.Requests(), "the failure was not stored: fetched now")
}

// /fields/timeseries carries the thermal time of the field's season by
// date (gdd, gdd_cum), equal to /fields/weather's.
func TestTimeSeriesGDDColumn(t *testing.T) {
	env, _, _ := weatherServer(t, "flanders-31UES.csv")
	tok := env.AddUser(t, "farmer", nil)
	registerRealFields(t, env.Handler, tok, []string{"UES-03"}, []string{"ndvi"})
	r := do(t, env.Handler, "POST", "/fields/metadata/register", tok, map[string]any{"field_name": "UES-03",
		"start_date": "2019-04-01", "harvest_date": "2019-09-15", "crop_type": "maize"})
	require.Equal(t, 201, r.Status, "%s", r.Body)
	for _, d := range []string{"2019-05-16", "2019-06-20", "2019-07-05"} {
		ingest(t, env, filepath.Join(testenv.DataDir(t, "s2", "flanders-31UES"), d))
	}
	r = do(t, env.Handler, "GET", "/fields/weather?field_name=UES-03", tok, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	var w api.WeatherSeason
	require.NoError(t, json.Unmarshal(r.Body, &w))
	byDate := map[string]api.WeatherDay{}
	for _, d := range w.Daily {
		byDate[d.Date] = d
	}
	r = do(t, env.Handler, "GET", "/fields/timeseries?field_name=UES-03&index=ndvi&start_date=2019-03-20&end_date=2019-07-05", tok, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	var ts api.TimeSeries
	require.NoError(t, json.Unmarshal(r.Body, &ts))
	require.NotEmpty(t, ts.Series)
	with := 0
	for _, d := range ts.Series {
		if d.Date < "2019-04-01" {
			assert.Nil(t, d.GDDCum, "before the season: %s", d.Date)
			continue
		}
		require.NotNil(t, d.GDDCum, d.Date)
		assert.Equal(t, byDate[d.Date].GDDCum, *d.GDDCum, d.Date)
		assert.Equal(t, byDate[d.Date].GDD, *d.GDD, d.Date)
		with++
	}
	assert.Equal(t, 96, with, "2019-04-01..2019-07-05")
}

// The time series never waits on the weather source (issue 21): with an
// upstream that hangs, or refuses connections while the client retries
// with its default backoff, /fields/timeseries answers within
// SeriesWeatherWait without the GDD column; the fetch goes on in the
// background, once per cell, and the next request after it has the column.
func TestTimeSeriesDoesNotWaitOnWeather(t *testing.T) {
	for _, mode := range []string{"hangs", "refuses"} {
		t.Run(mode, func(t *testing.T) {
			tab, err := weather.ReadTableFile(testenv.DataDir(t, "weather", "flanders-31UES.csv"))
			require.NoError(t, err)
			upstream := weathertest.New(tab.All())
			t.Cleanup(upstream.Close)
			t.Cleanup(upstream.Release)
			cfg, err := archive.OpenMeteoWeather(upstream.URL, true)
			require.NoError(t, err)
			now := func() time.Time { return time.Date(2019, 12, 20, 9, 0, 0, 0, time.UTC) }
			cfg.Source.(*weather.OpenMeteo).Now, cfg.Now = now, now // default timeout and retries
			env := servertest.NewWith(t, archive.Config{Weather: cfg}, server.Config{})
			tok := env.AddUser(t, "farmer", nil)
			registerRealFields(t, env.Handler, tok, []string{"UES-03"}, []string{"ndvi"})
			r := do(t, env.Handler, "POST", "/fields/metadata/register", tok, map[string]any{"field_name": "UES-03",
				"start_date": "2019-04-01", "harvest_date": "2019-09-15", "crop_type": "maize"})
			require.Equal(t, 201, r.Status, "%s", r.Body)
			ingest(t, env, filepath.Join(testenv.DataDir(t, "s2", "flanders-31UES"), "2019-06-20"))

			series := func() (api.TimeSeries, time.Duration) {
				began := time.Now()
				r := do(t, env.Handler, "GET", "/fields/timeseries?field_name=UES-03&index=ndvi&start_date=2019-06-01&end_date=2019-06-30", tok, nil)
				took := time.Since(began)
				require.Equal(t, 200, r.Status, "%s", r.Body)
				var ts api.TimeSeries
				require.NoError(t, json.Unmarshal(r.Body, &ts))
				require.Len(t, ts.Series, 30)
				return ts, took
			}
			noGDD := func(ts api.TimeSeries) {
				for _, d := range ts.Series {
					assert.Nil(t, d.GDDCum, d.Date)
				}
			}
			if mode == "hangs" {
				upstream.Hold()
			} else {
				upstream.Close() // connections refused
			}
			for range 2 {
				ts, took := series()
				assert.Less(t, took, 1500*time.Millisecond)
				noGDD(ts)
			}
			if mode == "refuses" {
				return
			}
			assert.Equal(t, 1, upstream.Requests(), "one background fetch for the cell, not one per request")

			// The held fetch is answered: the next request finds the days stored.
			upstream.Release()
			var ts api.TimeSeries
			require.Eventually(t, func() bool {
				ts, _ = series()
				return ts.Series[0].GDDCum != nil
			}, 10*time.Second, 50*time.Millisecond)
			r = do(t, env.Handler, "GET", "/fields/weather?field_name=UES-03", tok, nil)
			require.Equal(t, 200, r.Status, "%s", r.Body)
			var w api.WeatherSeason
			require.NoError(t, json.Unmarshal(r.Body, &w))
			byDate := map[string]api.WeatherDay{}
			for _, d := range w.Daily {
				byDate[d.Date] = d
			}
			for _, d := range ts.Series {
				require.NotNil(t, d.GDDCum, d.Date)
				assert.Equal(t, byDate[d.Date].GDDCum, *d.GDDCum, d.Date)
			}
			assert.Equal(t, 1, upstream.Requests(), "the season fetched once, then read from the cache")
		})
	}
}
