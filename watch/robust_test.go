package watch_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
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
