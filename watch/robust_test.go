package watch_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/stac/stactest"
	"github.com/cropkit/cropkit/watch"
)

// syncBuffer is a log destination safe for the watcher's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// assertValidSearches checks that every search the catalogue received had
// a valid geometry (what a PostGIS catalogue checks).
func assertValidSearches(t *testing.T, cat *stactest.Catalog) {
	t.Helper()
	n := 0
	for _, s := range cat.Searches() {
		var body struct {
			Intersects json.RawMessage `json:"intersects"`
		}
		if s.Method != http.MethodPost || json.Unmarshal(s.Body, &body) != nil || len(body.Intersects) == 0 {
			continue
		}
		mp, err := geo.ParseGeometry(body.Intersects)
		require.NoError(t, err)
		require.NoError(t, geo.ValidateMultiPolygon(mp), "search geometry %s", body.Intersects)
		n++
	}
	assert.Positive(t, n, "searches with a geometry")
	assert.Zero(t, cat.Stats().InvalidGeometries)
}

var allFields = []string{"UES-01", "UES-02", "UES-03", "UES-04", "UES-05", "UES-06", "UES-07", "UES-08",
	"UES-09", "UES-10", "UES-11", "UES-12", "UES-13", "UES-14", "UES-15", "UES-16"}

// The 16 adjacent real parcels of a chip, against a catalogue that
// validates search geometries as PostGIS does: the backfill and the polls
// succeed (their overlapping boxes used to make an invalid MultiPolygon,
// answered 500 TopologyException, and nothing was ever ingested).
func TestGeometryValidatingCatalog(t *testing.T) {
	tests := []struct {
		name   string
		fields []string
	}{
		{"two fields whose boxes overlap", []string{"UES-03", "UES-12"}},
		{"16 adjacent fields", allFields},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cat := stactest.New(t, stactest.Options{ValidateGeometry: true, PageSize: 2})
			cat.Publish(stactest.Chips(t, place, "2019-06-20", "2019-06-30")...)
			e := openEnv(t, t.TempDir())
			fields := e.registerFields(t, tt.fields...)
			if len(fields) == 2 {
				require.True(t, fields[0].Bound.Intersects(fields[1].Bound), "the boxes of %v overlap", tt.fields)
			}
			r := startWatcher(t, e, cat, nil)
			got := waitItems(t, e.core, len(fields), id("2019-06-20"), id("2019-06-30"))
			for _, d := range []string{"2019-06-20", "2019-06-30"} {
				assert.Equal(t, archive.ItemIngested, got[id(d)].State, d)
				assert.Len(t, got[id(d)].Fields, len(fields), d)
			}
			// A poll finds an item published later, for every field.
			cat.Publish(stactest.Chips(t, place, "2019-07-05")...)
			got = waitItems(t, e.core, len(fields), id("2019-07-05"))
			assert.Len(t, got[id("2019-07-05")].Fields, len(fields))
			assert.Positive(t, testutil.ToFloat64(r.metrics.Polls.WithLabelValues("ok")))
			assert.Zero(t, testutil.ToFloat64(r.metrics.Searches.WithLabelValues("backfill", "error")))
			r.stop()
			assertValidSearches(t, cat)
			for _, f := range fields {
				assert.NotEmpty(t, usableDates(t, e.core, f), f.Name)
			}
		})
	}
}

// A catalogue that keeps refusing the searches of one field: the failure
// shows (an ERROR log with the answer's body, a failed record in the items
// list, the metrics), the other field is not blocked, and once the
// catalogue answers again the field is backfilled and the record cleared.
func TestSearchFailureVisibleAndIsolated(t *testing.T) {
	cat := stactest.New(t, stactest.Options{ValidateGeometry: true})
	cat.Publish(stactest.Chips(t, place, "2019-06-20", "2019-06-30")...)
	e := openEnv(t, t.TempDir())
	fields := e.registerFields(t, "UES-15", "UES-16")
	good, bad := fields[0], fields[1]
	require.False(t, good.Bound.Intersects(bad.Bound))
	const body = `{"code":"InternalServerError","description":"function st_intersects(geometry, jsonb) does not exist"}`
	cat.FailSearches(func(area orb.Bound) bool { return area.Intersects(bad.Bound) }, http.StatusInternalServerError, body)

	var logs syncBuffer
	r := startWatcher(t, e, cat, func(c *watch.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		c.RetryBase, c.RetryMax, c.MaxAttempts = time.Second, 2*time.Second, 20
	})
	recordID := watch.SearchRecordPrefix + "backfill:" + itoa(bad.ID)
	var rec archive.SceneItem
	require.Eventually(t, func() bool {
		rec = items(t, e.core)[recordID]
		return rec.State == archive.ItemFailed
	}, 60*time.Second, 50*time.Millisecond)
	assert.Contains(t, rec.Error, "HTTP 500")
	assert.Contains(t, rec.Error, "st_intersects")
	assert.Equal(t, map[int64]int64{bad.ID: 0}, rec.Fields)
	assert.Equal(t, cat.URL(), rec.Source)
	assert.Contains(t, logs.String(), "level=ERROR msg=\"catalogue search failed\"")
	assert.Contains(t, logs.String(), "status=500")
	assert.Contains(t, logs.String(), "st_intersects")
	assert.Positive(t, testutil.ToFloat64(r.metrics.Searches.WithLabelValues("backfill", "error")))

	// The other field is not blocked.
	got := waitItems(t, e.core, 1, id("2019-06-20"), id("2019-06-30"))
	assert.Equal(t, map[int64]int64{good.ID: 0}, got[id("2019-06-20")].Fields)
	assert.Equal(t, []string{"2019-06-20", "2019-06-30"}, usableDates(t, e.core, good))
	assert.Empty(t, usableDates(t, e.core, bad))

	// The catalogue mends: the retry backfills the field, the record clears.
	cat.FailSearches(nil, 0, "")
	require.Eventually(t, func() bool {
		return items(t, e.core)[recordID].State == watch.SearchOK && len(usableDates(t, e.core, bad)) == 2
	}, 60*time.Second, 50*time.Millisecond)

	// Every search fails (a 400 on anything): the poll's record shows it.
	cat.FailSearches(func(orb.Bound) bool { return true }, http.StatusBadRequest, `{"code":"BadRequest","description":"unknown collection"}`)
	require.Eventually(t, func() bool {
		return items(t, e.core)[watch.SearchRecordPrefix+"poll"].State == archive.ItemFailed
	}, 60*time.Second, 50*time.Millisecond)
	poll := items(t, e.core)[watch.SearchRecordPrefix+"poll"]
	assert.Contains(t, poll.Error, "HTTP 400")
	assert.Contains(t, poll.Error, "unknown collection")
	assert.Len(t, poll.Fields, 2)
	assert.Positive(t, testutil.ToFloat64(r.metrics.Searches.WithLabelValues("poll", "error")))
	assert.True(t, strings.Contains(logs.String(), "unknown collection"))
	cat.FailSearches(nil, 0, "")
	require.Eventually(t, func() bool {
		return items(t, e.core)[watch.SearchRecordPrefix+"poll"].State == watch.SearchOK
	}, 60*time.Second, 50*time.Millisecond)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// Defect 8: a band host that never answers. The reads end at the job's
// time limit, the item ends "failed" with the reason after its attempts and
// is not queued again by the following polls, another item is ingested
// meanwhile, and stopping the watcher is prompt even while a read hangs.
func TestStalledBandHost(t *testing.T) {
	cat := stactest.New(t, stactest.Options{})
	stuck := stactest.Chips(t, place, "2019-06-20")
	cat.StallAsset(stuck[0].ID)
	cat.Publish(stuck...)
	cat.Publish(stactest.Chips(t, place, "2019-06-30")...)
	e := openEnv(t, t.TempDir())
	e.registerFields(t, "UES-01")
	start := time.Now()
	r := startWatcher(t, e, cat, func(c *watch.Config) {
		c.JobTimeout, c.MaxAttempts, c.Workers = time.Second, 2, 1
		c.RetryBase, c.RetryMax = 100*time.Millisecond, 200*time.Millisecond
	})
	got := waitItems(t, e.core, 1, stuck[0].ID, id("2019-06-30"))
	took := time.Since(start)
	t.Logf("stalled item failed after %v", took)
	assert.Less(t, took, 15*time.Second)
	assert.Equal(t, archive.ItemIngested, got[id("2019-06-30")].State)
	failed := got[stuck[0].ID]
	assert.Equal(t, archive.ItemFailed, failed.State)
	assert.Contains(t, failed.Error, "time limit 1s reached")

	// Polls go on and do not queue the failed item again.
	requests := cat.ItemStats(stuck[0].ID).Requests
	polls := testutil.ToFloat64(r.metrics.Polls.WithLabelValues("ok"))
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(r.metrics.Polls.WithLabelValues("ok")) >= polls+4
	}, 30*time.Second, 50*time.Millisecond)
	assert.Equal(t, requests, cat.ItemStats(stuck[0].ID).Requests, "band requests after the item failed")
	assert.Equal(t, failed.IngestedAt, items(t, e.core)[stuck[0].ID].IngestedAt)

	// Stopping while a read hangs is prompt.
	late := stactest.Chips(t, place, "2019-07-05")
	cat.StallAsset(late[0].ID)
	cat.Publish(late...)
	require.Eventually(t, func() bool { return cat.ItemStats(late[0].ID).Requests > 0 }, 30*time.Second, 20*time.Millisecond)
	stopAt := time.Now()
	r.stop()
	assert.Less(t, time.Since(stopAt), 3*time.Second)
}

// SIGTERM while an ingestion hangs on a band host: the watcher stops
// within its stop grace (the job is cancelled and runs again at the next
// start), not at the job's time limit.
func TestStopIsPromptWhileAReadHangs(t *testing.T) {
	cat := stactest.New(t, stactest.Options{})
	stuck := stactest.Chips(t, place, "2019-06-20")
	cat.StallAsset(stuck[0].ID)
	cat.Publish(stuck...)
	e := openEnv(t, t.TempDir())
	e.registerFields(t, "UES-01")
	r := startWatcher(t, e, cat, func(c *watch.Config) { c.JobTimeout, c.StopGrace = 30*time.Second, time.Second })
	require.Eventually(t, func() bool { return cat.ItemStats(stuck[0].ID).Requests > 0 }, 30*time.Second, 20*time.Millisecond)
	stopAt := time.Now()
	r.stop()
	took := time.Since(stopAt)
	t.Logf("stopped in %v", took)
	assert.Less(t, took, 4*time.Second)
	assert.Equal(t, archive.ItemRetrying, items(t, e.core)[stuck[0].ID].State)
}

// Defects 9 and 10: malformed items (a numeric id, a bbox of NaN or 1e400)
// are skipped with a logged reason while the rest of the page is ingested;
// an item dated 9999-12-31 is refused and does not move the poll window,
// so a later real item is still found (a catalogue without CQL2, whose
// polls search from the newest ingested acquisition).
func TestMalformedAndFutureItems(t *testing.T) {
	cat := stactest.New(t, stactest.Options{Conformance: []string{stactest.ConformanceCore, stactest.ConformanceSearch, stactest.ConformanceQuery}})
	cat.Publish(stactest.Chips(t, place, "2019-06-20", "2019-06-30")...)
	future := stactest.Chips(t, place, "2019-06-10")
	future[0].ID, future[0].Datetime = "S2A_31UES_99991231_0_L2A", time.Date(9999, 12, 31, 10, 0, 0, 0, time.UTC)
	cat.Publish(future...)
	bbox := `[3.0,50.0,4.0,51.0]`
	doc := func(id, bbox string) string {
		return `{"type":"Feature","stac_version":"1.0.0","id":` + id + `,"collection":"sentinel-2-l2a","bbox":` + bbox +
			`,"geometry":null,"properties":{"datetime":"2019-06-25T10:30:00Z","eo:cloud_cover":1},"assets":{},"links":[]}`
	}
	cat.PublishRaw(doc(`12345`, bbox), doc(`"nan-bbox"`, `[NaN,50.0,4.0,51.0]`), doc(`"huge-bbox"`, `[3.0,50.0,1e400,51.0]`))

	e := openEnv(t, t.TempDir())
	f := e.registerFields(t, "UES-01")[0]
	var logs syncBuffer
	cat.FailNext(1, http.StatusTooManyRequests, "1") // rate limited once: logged as such, then honoured
	r := startWatcher(t, e, cat, func(c *watch.Config) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	got := waitItems(t, e.core, 1, id("2019-06-20"), id("2019-06-30"))
	assert.Equal(t, archive.ItemIngested, got[id("2019-06-30")].State)
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(r.metrics.Polls.WithLabelValues("ok")) >= 2
	}, 30*time.Second, 50*time.Millisecond)
	assert.NotContains(t, items(t, e.core), future[0].ID)
	assert.Zero(t, cat.ItemStats(future[0].ID).Requests)
	assert.GreaterOrEqual(t, testutil.ToFloat64(r.metrics.BadItems.WithLabelValues("search")), 4.0)
	for _, want := range []string{"catalogue request failed; retrying", "status=429", "retry_after=1s", "catalogue item skipped", "in the future", "cannot unmarshal number into Go struct field", "1e400", "invalid character 'N'"} {
		assert.Contains(t, logs.String(), want)
	}

	// The window still starts from the newest real acquisition: a later
	// item is found.
	cat.Publish(stactest.Chips(t, place, "2019-07-05")...)
	waitItems(t, e.core, 1, id("2019-07-05"))
	assert.Equal(t, []string{"2019-06-20", "2019-06-30", "2019-07-05"}, usableDates(t, e.core, f))
	last := cat.Searches()[len(cat.Searches())-1]
	assert.Contains(t, string(last.Body), `"datetime":"2019-06-2`, "poll window from the newest real acquisition minus the margin")
}

// Defect 11: AllowPrivate covers the catalogue's own origin only. An item
// whose band files are on another loopback port is refused before any
// request, and fails with the guard's reason.
func TestAllowPrivateIsScopedToTheCatalogue(t *testing.T) {
	var otherHits atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { otherHits.Add(1) }))
	defer other.Close()
	cat := stactest.New(t, stactest.Options{})
	e := openEnv(t, t.TempDir())
	f := e.registerFields(t, "UES-01")[0]
	cat.PublishRaw(fmt.Sprintf(`{"type":"Feature","stac_version":"1.0.0","id":"elsewhere","collection":"sentinel-2-l2a",`+
		`"bbox":[%[1]f,%[2]f,%[3]f,%[4]f],"geometry":null,"properties":{"datetime":"2019-06-25T10:30:00Z","eo:cloud_cover":1},`+
		`"assets":{"red":{"href":"%[5]s/B04.tif","type":"image/tiff; application=geotiff; profile=cloud-optimized","eo:bands":[{"name":"B04"}]},`+
		`"nir":{"href":"%[5]s/B08.tif","type":"image/tiff; application=geotiff; profile=cloud-optimized","eo:bands":[{"name":"B08"}]}},"links":[]}`,
		f.Bound.Min[0], f.Bound.Min[1], f.Bound.Max[0], f.Bound.Max[1], other.URL))
	startWatcher(t, e, cat, nil)
	got := waitItems(t, e.core, 1, "elsewhere")
	assert.Equal(t, archive.ItemFailed, got["elsewhere"].State)
	assert.Contains(t, got["elsewhere"].Error, "catalogue address 127.0.0.1 refused: loopback address")
	assert.Zero(t, otherHits.Load())
}
