package watch_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/archive/backend"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/metadata"
	"github.com/cropkit/cropkit/stac/stactest"
	"github.com/cropkit/cropkit/watch"
	"github.com/cropkit/cropkit/weather"
	"github.com/cropkit/cropkit/weather/weathertest"
)

// The watcher fetches again the provisional recent days of the cached
// weather cells (Config.WeatherRefresh).
func TestWatcherRefreshesRecentWeather(t *testing.T) {
	ctx := context.Background()
	tab, err := weather.ReadTableFile(testenv.DataDir(t, "weather", "flanders-31UES.csv"))
	require.NoError(t, err)
	upstream := weathertest.New(tab.All())
	defer upstream.Close()
	var mu sync.Mutex
	clock := time.Date(2019, 10, 20, 6, 0, 0, 0, time.UTC)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	cfg, err := archive.OpenMeteoWeather(upstream.URL, true)
	require.NoError(t, err)
	cfg.Source.(*weather.OpenMeteo).Now, cfg.Now = now, now
	core, err := backend.Open(ctx, t.TempDir(), true, archive.Config{Weather: cfg})
	require.NoError(t, err)
	t.Cleanup(func() { core.Close() })
	_, _, err = core.EnsureAdmin(ctx)
	require.NoError(t, err)
	u, err := core.UserByName(ctx, "admin")
	require.NoError(t, err)
	e := &env{core: core, user: u}
	e.registerFields(t, "UES-03")
	_, _, _, err = core.RegisterSeason(ctx, u, metadata.Record{FieldName: "UES-03", StartDate: "2019-09-01", CropType: "grassland"})
	require.NoError(t, err)
	_, err = core.FieldWeather(ctx, u, archive.WeatherRequest{Field: "UES-03"})
	require.NoError(t, err)
	require.Equal(t, 2, upstream.Requests(), "archive and forecast endpoints")

	mu.Lock()
	clock = clock.Add(25 * time.Hour) // the recent days' fetch is now a day old
	mu.Unlock()
	startWatcher(t, e, stactest.New(t, stactest.Options{}), func(c *watch.Config) { c.WeatherRefresh = time.Hour })
	require.Eventually(t, func() bool { return upstream.Requests() == 4 }, 20*time.Second, 20*time.Millisecond,
		"the watcher refreshed the provisional days (one request per endpoint)")
	time.Sleep(200 * time.Millisecond)
	assert.Equal(t, 4, upstream.Requests(), "once: the refreshed days are fresh")
}
