package watch_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/stac/stactest"
	"github.com/cropkit/cropkit/watch"
)

// One watcher over two collections: the Sentinel-2 items and the
// Sentinel-1 RTC items of the same weeks are backfilled, each ingested as
// its sensor, and a field's history holds both. The radar items carry no
// eo:cloud_cover (as real catalogues serve them), so a cloud filter on
// their search would find none: with --max-cloud set they are still
// found, since the limit applies per collection, to optical ones only.
func TestWatchSeveralCollections(t *testing.T) {
	cat := stactest.New(t, stactest.Options{})
	cat.Publish(stactest.Chips(t, place, "2019-06-20")...)
	s2 := stactest.Chips(t, place, "2019-06-20")[0]
	radar := stactest.Item{ID: "S1A_IW_GRDH_1SDV_20190622_rtc", Collection: "sentinel-1-rtc", EPSG: s2.EPSG, Bbox: s2.Bbox,
		Datetime:     time.Date(2019, 6, 22, 17, 32, 0, 0, time.UTC),
		NoCloudCover: true, // were the limit applied to its search, the catalogue would return nothing
		Properties:   map[string]any{"platform": "sentinel-1a", "constellation": "sentinel-1"},
		Files: map[string]string{
			"vv": filepath.Join(testenv.DataDir(t, "s1", place, "2019-06-22"), "VV.tif"),
			"vh": filepath.Join(testenv.DataDir(t, "s1", place, "2019-06-22"), "VH.tif"),
		}}
	cat.Publish(radar)
	e := openEnv(t, t.TempDir())
	ctx := context.Background()
	f := e.registerFields(t, "UES-03")[0]
	f.Indices = []string{"ndvi", "vv"}
	_, err := e.core.UpdateField(ctx, e.user, archive.FieldInput{Name: f.Name, Indices: f.Indices})
	require.NoError(t, err)
	startWatcher(t, e, cat, func(c *watch.Config) {
		c.Collections = []string{"sentinel-2-l2a", "sentinel-1-rtc"}
		c.MaxCloud = 20
	})
	got := waitItems(t, e.core, 1, id("2019-06-20"), radar.ID)
	assert.Equal(t, archive.ItemIngested, got[radar.ID].State, got[radar.ID].Error)
	assert.Equal(t, "sentinel-1-rtc", got[radar.ID].Collection)
	_, hist, err := e.core.HistoryFor(ctx, e.user, archive.HistoryQuery{Field: "UES-03", Sensor: archive.SensorAny})
	require.NoError(t, err)
	require.Len(t, hist["vv"], 1)
	assert.Equal(t, "2019-06-22", hist["vv"][0].Date)
	assert.Equal(t, "sentinel-1a", hist["vv"][0].Sensor)
	require.Len(t, hist["ndvi"], 1)
	assert.Equal(t, "sentinel-2a", hist["ndvi"][0].Sensor)

	// One search per collection: the optical one with the cloud limit, the
	// radar one without.
	var optical, radarSearches int
	for _, s := range cat.Searches() {
		req := s.Query + string(s.Body)
		switch {
		case strings.Contains(req, "sentinel-1-rtc"):
			radarSearches++
			assert.NotContains(t, req, "eo:cloud_cover", "the radar search carries no cloud filter")
			assert.NotContains(t, req, "sentinel-2-l2a", "one collection per search")
		case strings.Contains(req, "sentinel-2-l2a"):
			optical++
			assert.Contains(t, req, "eo:cloud_cover")
		}
	}
	assert.Positive(t, optical)
	assert.Positive(t, radarSearches)
}
