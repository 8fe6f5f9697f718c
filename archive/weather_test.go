package archive_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/archive/backend"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/metadata"
	"github.com/cropkit/cropkit/weather"
	"github.com/cropkit/cropkit/weather/weathertest"
)

// clock is a settable clock for the weather cache.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// square is a GeoJSON polygon of about 100 m at (lon, lat).
func square(lon, lat float64) []byte {
	d := 0.001
	return fmt.Appendf(nil, `{"type":"Polygon","coordinates":[[[%g,%g],[%g,%g],[%g,%g],[%g,%g],[%g,%g]]]}`,
		lon, lat, lon+d, lat, lon+d, lat+d, lon, lat+d, lon, lat)
}

type weatherEnv struct {
	dir   string
	srv   *weathertest.Server
	table *weather.Table
	clock *clock
}

func newWeatherEnv(t *testing.T) *weatherEnv {
	table, err := weather.ReadTableFile(testenv.DataDir(t, "weather", "flanders-31UES.csv"))
	require.NoError(t, err)
	srv := weathertest.New(table.All())
	t.Cleanup(srv.Close)
	return &weatherEnv{dir: t.TempDir(), srv: srv, table: table, clock: &clock{t: time.Date(2019, 12, 20, 8, 0, 0, 0, time.UTC)}}
}

// open opens the archive of the environment (again: a restart).
func (e *weatherEnv) open(t *testing.T) *archive.Archive {
	cfg, err := archive.OpenMeteoWeather(e.srv.URL, true)
	require.NoError(t, err)
	om := cfg.Source.(*weather.OpenMeteo)
	om.Now, om.BaseBackoff, om.MaxBackoff, om.MaxRetries = e.clock.now, time.Millisecond, 5*time.Millisecond, 2
	cfg.Now = e.clock.now
	core, err := backend.Open(context.Background(), e.dir, true, archive.Config{Weather: cfg})
	require.NoError(t, err)
	t.Cleanup(func() { core.Close() })
	return core
}

func TestFieldWeatherCache(t *testing.T) {
	ctx := context.Background()
	env := newWeatherEnv(t)
	core := env.open(t)
	u, err := core.CreateUser(ctx, archive.NewUser{Name: "farmer"})
	require.NoError(t, err)
	// 16 fields in the 0.1° cell centred on 50.7°N 4.1°E.
	var names []string
	for i := range 16 {
		name := fmt.Sprintf("f%02d", i)
		_, err := core.RegisterField(ctx, u, archive.FieldInput{Name: name, Geometry: square(4.06+0.005*float64(i%4), 50.70+0.005*float64(i/4))})
		require.NoError(t, err)
		_, _, _, err = core.RegisterSeason(ctx, u, metadata.Record{FieldName: name, StartDate: "2019-04-20", HarvestDate: "2019-10-15", CropType: "Maize"})
		require.NoError(t, err)
		names = append(names, name)
	}
	from, to := mustParse(t, "2019-04-20"), mustParse(t, "2019-10-15")
	tableDays, err := env.table.Daily(ctx, weather.Query{From: from, To: to})
	require.NoError(t, err)
	maize, err := weather.ParamsFor("maize", nil, nil)
	require.NoError(t, err)
	want := weather.Accumulate(tableDays, maize)

	var wg sync.WaitGroup
	results := make([]archive.FieldWeather, len(names))
	errs := make([]error, len(names))
	for i, name := range names {
		wg.Go(func() { results[i], errs[i] = core.FieldWeather(ctx, u, archive.WeatherRequest{Field: name}) })
	}
	wg.Wait()
	for i := range names {
		require.NoError(t, errs[i])
		r := results[i]
		assert.Equal(t, "2019-04-20", r.SeasonStart)
		assert.Equal(t, "0.1:50.7:4.1", r.Cell)
		assert.Equal(t, "Maize", r.Crop, "the crop_type as registered")
		assert.Equal(t, want.Totals, r.Totals)
		assert.Equal(t, sums(want.Rows), sums(r.Rows))
	}
	assert.Equal(t, 1, env.srv.Requests(), "16 fields in one cell: one upstream request")

	// A restart (or a second replica on the same database) fetches nothing.
	core.Close()
	core = env.open(t)
	got, err := core.FieldWeather(ctx, u, archive.WeatherRequest{Field: "f07"})
	require.NoError(t, err)
	assert.Equal(t, want.Totals, got.Totals)
	assert.Equal(t, 1, env.srv.Requests())

	// A longer range fetches only the days not stored, in one request.
	got, err = core.FieldWeather(ctx, u, archive.WeatherRequest{Field: "f07", From: "2019-04-01", To: "2019-10-31", Crop: "potato"})
	require.NoError(t, err)
	assert.Len(t, got.Rows, 214)
	assert.Equal(t, 2, env.srv.Requests())
	q := env.srv.Queries()[1]
	assert.Contains(t, q, "start_date=2019-04-01")
	assert.Contains(t, q, "end_date=2019-10-31", "one request spans the missing days")

	// Two seasons of one field, joined by date over a span crossing both.
	_, _, _, err = core.RegisterSeason(ctx, u, metadata.Record{FieldName: "f05", StartDate: "2018-10-05", HarvestDate: "2019-04-10", CropType: "winter barley"})
	require.NoError(t, err)
	span, err := core.FieldGDDSpan(ctx, u, "f05", "2019-03-01", "2019-05-31")
	require.NoError(t, err)
	barley, err := core.FieldWeather(ctx, u, archive.WeatherRequest{Field: "f05", Season: "2018-10-05"})
	require.NoError(t, err)
	assert.Equal(t, "winter barley", barley.Crop)
	assert.Equal(t, barley.Totals.GDD, span["2019-04-10"].GDDCum, "the barley season's sum at its harvest")
	assert.NotContains(t, span, "2019-04-15", "between the seasons")
	assert.Equal(t, want.Rows[0].GDD, span["2019-04-20"].GDDCum, "the maize season starts again from zero")
	assert.Equal(t, want.Rows[41].GDDCum, span["2019-05-31"].GDDCum)
	assert.Len(t, span, 41+42)

	// GDD by date for the time series join.
	gdd, err := core.FieldGDD(ctx, u, archive.WeatherRequest{Field: "f03"})
	require.NoError(t, err)
	assert.Equal(t, want.Rows[10].GDD, gdd[want.Rows[10].Date].GDD)
	assert.Equal(t, want.Totals.GDD, gdd["2019-10-15"].GDDCum)
}

func TestFieldWeatherUpstreamFailure(t *testing.T) {
	ctx := context.Background()
	env := newWeatherEnv(t)
	core := env.open(t)
	u, err := core.CreateUser(ctx, archive.NewUser{Name: "farmer"})
	require.NoError(t, err)
	_, err = core.RegisterField(ctx, u, archive.FieldInput{Name: "a", Geometry: square(4.06, 50.745)})
	require.NoError(t, err)
	req := archive.WeatherRequest{Field: "a", From: "2019-05-01", To: "2019-05-31", Crop: "sugar beet"}
	env.srv.FailNext(503, 3)
	_, err = core.FieldWeather(ctx, u, req)
	require.ErrorIs(t, err, archive.ErrBusy)
	assert.Contains(t, err.Error(), "HTTP 503")
	assert.Equal(t, 3, env.srv.Requests(), "retried, then reported")
	stored, err := core.Store().WeatherDays(ctx, "open-meteo "+env.srv.URL, "0.1:50.7:4.1", "2019-01-01", "2019-12-31")
	require.NoError(t, err)
	assert.Empty(t, stored, "an error is never stored as data")

	env.srv.FailNext(429, 2)
	got, err := core.FieldWeather(ctx, u, req)
	require.NoError(t, err, "429 retried until data")
	assert.Len(t, got.Rows, 31)
	assert.Nil(t, got.CapC)
	assert.Equal(t, 6, env.srv.Requests())

	// Dates the source does not hold: a clear 400-kind error, nothing stored.
	_, err = core.FieldWeather(ctx, u, archive.WeatherRequest{Field: "a", From: "2017-01-01", To: "2017-01-31", Crop: "maize"})
	require.ErrorIs(t, err, archive.ErrInvalid)
	assert.Contains(t, err.Error(), "out of allowed range")
	// No season and no from: a clear error.
	_, err = core.FieldWeather(ctx, u, archive.WeatherRequest{Field: "a"})
	require.ErrorIs(t, err, archive.ErrInvalid)
	assert.Contains(t, err.Error(), "no metadata season")
	_, err = core.FieldWeather(ctx, u, archive.WeatherRequest{Field: "nope", From: "2019-05-01", Crop: "maize"})
	require.ErrorIs(t, err, archive.ErrNotFound)
	// A season still to come (the clock is at 2019-12-20).
	_, _, _, err = core.RegisterSeason(ctx, u, metadata.Record{FieldName: "a", StartDate: "2020-03-01", HarvestDate: "2020-09-01", CropType: "maize"})
	require.NoError(t, err)
	_, err = core.FieldWeather(ctx, u, archive.WeatherRequest{Field: "a"})
	require.ErrorIs(t, err, archive.ErrInvalid)
	assert.Contains(t, err.Error(), "after today")
}

func TestWeatherRefreshRecentDays(t *testing.T) {
	ctx := context.Background()
	env := newWeatherEnv(t)
	env.clock.t = time.Date(2019, 10, 20, 6, 0, 0, 0, time.UTC)
	core := env.open(t)
	u, err := core.CreateUser(ctx, archive.NewUser{Name: "farmer"})
	require.NoError(t, err)
	_, err = core.RegisterField(ctx, u, archive.FieldInput{Name: "a", Geometry: square(4.06, 50.745)})
	require.NoError(t, err)
	_, _, _, err = core.RegisterSeason(ctx, u, metadata.Record{FieldName: "a", StartDate: "2019-09-01", CropType: "grassland"})
	require.NoError(t, err)
	got, err := core.FieldWeather(ctx, u, archive.WeatherRequest{Field: "a"})
	require.NoError(t, err)
	assert.Equal(t, "2019-10-20", got.To, "no harvest date: up to today")
	assert.Equal(t, 2, env.srv.Requests(), "archive and forecast endpoints")

	n, err := core.RefreshWeather(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, n, "nothing stale yet")
	assert.Equal(t, 2, env.srv.Requests())

	env.clock.add(25 * time.Hour)
	n, err = core.RefreshWeather(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the cell's recent days are fetched again")
	// Only the provisional days 2019-10-13..20: the first is now in the
	// archive endpoint's range (final), the others still the forecast's.
	assert.Equal(t, 4, env.srv.Requests())
	q := env.srv.Queries()
	assert.Contains(t, q[2], "start_date=2019-10-13")
	assert.Contains(t, q[2], "end_date=2019-10-13")
	assert.Contains(t, q[3], "start_date=2019-10-14")
	assert.Contains(t, q[3], "end_date=2019-10-20")

	// A day later the source fails: the stale recent days still answer.
	env.clock.add(25 * time.Hour)
	env.srv.FailNext(503, 3)
	stale, err := core.FieldWeather(ctx, u, archive.WeatherRequest{Field: "a", To: "2019-10-20"})
	require.NoError(t, err)
	assert.Len(t, stale.Rows, 50)
	assert.Equal(t, 4+3, env.srv.Requests(), "the refresh was tried (with its retries)")
	env.clock.add(-25 * time.Hour)

	// The refreshed days serve the next request without a fetch.
	_, err = core.FieldWeather(ctx, u, archive.WeatherRequest{Field: "a", To: "2019-10-20"})
	require.NoError(t, err)
	assert.Equal(t, 7, env.srv.Requests())
	n, err = core.RefreshWeather(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, n)
}

// sums keeps what thermal time is computed from and gives.
func sums(rows []weather.Row) [][6]any {
	out := make([][6]any, len(rows))
	for i, r := range rows {
		out[i] = [6]any{r.Date, r.TminC, r.TmaxC, r.PrecipitationMM, r.GDDCum, r.PrecipitationCumMM}
	}
	return out
}

func mustParse(t *testing.T, s string) time.Time {
	d, err := weather.ParseDate(s)
	require.NoError(t, err)
	return d
}

// BenchmarkFieldWeatherCached is /fields/weather's core on stored days: a
// 179-day season read from the database and accumulated.
func BenchmarkFieldWeatherCached(b *testing.B) {
	ctx := context.Background()
	table, err := weather.ReadTableFile(testenv.DataDir(b, "weather", "flanders-31UES.csv"))
	if err != nil {
		b.Skip(err)
	}
	srv := weathertest.New(table.All())
	defer srv.Close()
	cfg, err := archive.OpenMeteoWeather(srv.URL, true)
	if err != nil {
		b.Fatal(err)
	}
	core, err := backend.Open(ctx, b.TempDir(), true, archive.Config{Weather: cfg})
	if err != nil {
		b.Fatal(err)
	}
	defer core.Close()
	u, _ := core.CreateUser(ctx, archive.NewUser{Name: "farmer"})
	if _, err := core.RegisterField(ctx, u, archive.FieldInput{Name: "a", Geometry: square(4.06, 50.745)}); err != nil {
		b.Fatal(err)
	}
	req := archive.WeatherRequest{Field: "a", From: "2019-04-20", To: "2019-10-15", Crop: "maize"}
	if _, err := core.FieldWeather(ctx, u, req); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := core.FieldWeather(ctx, u, req); err != nil {
			b.Fatal(err)
		}
	}
	if srv.Requests() != 1 {
		b.Fatalf("%d upstream requests", srv.Requests())
	}
}
