package watch_test

import (
	"context"
	"database/sql"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/archive/backend"
	"github.com/cropkit/cropkit/archive/store"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/stac/stactest"
	"github.com/cropkit/cropkit/watch"
)

const place = "flanders-31UES"

// env is an archive in a data directory with fields of the real data.
type env struct {
	dir  string
	core *archive.Archive
	user archive.User
}

func openEnv(t *testing.T, dir string) *env {
	t.Helper()
	ctx := context.Background()
	core, err := backend.Open(ctx, dir, true, archive.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { core.Close() })
	_, _, err = core.EnsureAdmin(ctx)
	require.NoError(t, err)
	u, err := core.UserByName(ctx, "admin")
	require.NoError(t, err)
	return &env{dir: dir, core: core, user: u}
}

// registerFields registers the named real fields of the place for ndvi.
func (e *env) registerFields(t *testing.T, names ...string) []archive.Field {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.DataDir(t, "fields"), place+".geojson"))
	require.NoError(t, err)
	feats, err := geo.ReadFeatures(data)
	require.NoError(t, err)
	byName := map[string]geo.Feature{}
	for _, f := range feats {
		byName[f.Name] = f
	}
	var out []archive.Field
	for _, n := range names {
		g, err := archive.EncodeGeometry(byName[n].Geometry)
		require.NoError(t, err)
		f, err := e.core.RegisterField(context.Background(), e.user, archive.FieldInput{Name: n, Geometry: []byte(g), Indices: []string{"ndvi"}})
		require.NoError(t, err)
		out = append(out, f)
	}
	return out
}

// running is a watcher running in the background.
type running struct {
	w       *watch.Watcher
	metrics *watch.Metrics
	stop    func()
}

func startWatcher(t *testing.T, e *env, cat *stactest.Catalog, tweak func(*watch.Config)) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	drv, closeDrv, err := store.JobsDriver(ctx, e.core.Store())
	require.NoError(t, err)
	m := watch.NewMetrics(prometheus.NewRegistry())
	cfg := watch.Config{
		Archive: e.core, Catalog: cat.URL(), Poll: 300 * time.Millisecond, MaxCloud: 50,
		Backfill:     watch.Backfill{From: time.Date(2019, 6, 1, 0, 0, 0, 0, time.UTC)},
		AllowPrivate: true, FieldCheck: 50 * time.Millisecond, JobPoll: 50 * time.Millisecond,
		RetryBase: 20 * time.Millisecond, RetryMax: 100 * time.Millisecond, MaxAttempts: 2, Metrics: m,
	}
	if os.Getenv("WATCH_DEBUG") != "" {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if tweak != nil {
		tweak(&cfg)
	}
	w, err := watch.New(ctx, cfg, drv)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		assert.NoError(t, <-done)
		assert.NoError(t, closeDrv())
	}
	t.Cleanup(stop)
	return &running{w: w, metrics: m, stop: stop}
}

// items maps item id → recorded item.
func items(t *testing.T, core *archive.Archive) map[string]archive.SceneItem {
	t.Helper()
	list, err := core.SceneItems(context.Background(), archive.ItemQuery{})
	require.NoError(t, err)
	out := map[string]archive.SceneItem{}
	for _, it := range list {
		out[it.ID] = it
	}
	return out
}

func waitItems(t *testing.T, core *archive.Archive, fields int, ids ...string) map[string]archive.SceneItem {
	t.Helper()
	var got map[string]archive.SceneItem
	require.Eventually(t, func() bool {
		got = items(t, core)
		for _, id := range ids {
			if it, ok := got[id]; !ok || it.State == archive.ItemRetrying || (it.State == archive.ItemIngested && len(it.Fields) < fields) {
				return false
			}
		}
		return true
	}, 60*time.Second, 50*time.Millisecond, "items %v", ids)
	return got
}

func id(date string) string { return "S2A_31UES_" + date[0:4] + date[5:7] + date[8:10] + "_0_L2A" }

func usableDates(t *testing.T, core *archive.Archive, f archive.Field) []string {
	t.Helper()
	ps, err := core.UsableProducts(context.Background(), f, "ndvi", "", "")
	require.NoError(t, err)
	var out []string
	for _, p := range ps {
		out = append(out, p.Date)
	}
	sort.Strings(out)
	return out
}

func TestBackfillPollRestart(t *testing.T) {
	cat := stactest.New(t, stactest.Options{PageSize: 1, Ascending: true})
	// 05-16 is before the backfill start; 06-15 (96 %) and 06-25 (100 %)
	// are above the cloud limit: none of them may ever be read.
	cat.Publish(stactest.Chips(t, place, "2019-05-16", "2019-06-10", "2019-06-15", "2019-06-20", "2019-06-25", "2019-06-30")...)
	dir := t.TempDir()
	e := openEnv(t, dir)
	fields := e.registerFields(t, "UES-01", "UES-02", "UES-03")

	start := time.Now()
	r := startWatcher(t, e, cat, nil)
	got := waitItems(t, e.core, 3, id("2019-06-10"), id("2019-06-20"), id("2019-06-30"))
	t.Logf("backfill of 3 items over %d fields: %v", len(fields), time.Since(start))
	for _, d := range []string{"2019-05-16", "2019-06-15", "2019-06-25"} {
		assert.NotContains(t, got, id(d))
		assert.Zero(t, cat.ItemStats(id(d)).Requests, "no band request for %s", d)
	}
	for _, d := range []string{"2019-06-10", "2019-06-20", "2019-06-30"} {
		it := got[id(d)]
		assert.Equal(t, archive.ItemIngested, it.State, d)
		assert.Len(t, it.Fields, 3, d)
		assert.Equal(t, cat.ItemURL(stactest.Item{ID: id(d)}), it.Source)
	}
	assert.Zero(t, cat.Stats().WholeFileGETs)
	assert.Equal(t, []string{"2019-06-10", "2019-06-20", "2019-06-30"}, usableDates(t, e.core, fields[0]))

	// A new item published mid-run is found by a poll.
	cat.Publish(stactest.Chips(t, place, "2019-07-05")...)
	got = waitItems(t, e.core, 3, id("2019-07-05"))
	assert.Equal(t, archive.ItemIngested, got[id("2019-07-05")].State)
	assert.Contains(t, usableDates(t, e.core, fields[1]), "2019-07-05")

	// An item whose band files 404 is recorded as failed after its attempts.
	late := stactest.Chips(t, place, "2019-07-20")
	cat.FailAsset(late[0].ID)
	cat.Publish(late...)
	got = waitItems(t, e.core, 3, late[0].ID)
	assert.Equal(t, archive.ItemFailed, got[late[0].ID].State)
	assert.Contains(t, got[late[0].ID].Error, "404")

	// A catalogue that is down: polls fail, nothing breaks; back up, the
	// item published meanwhile is ingested.
	cat.SetDown(true)
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(r.metrics.Polls.WithLabelValues("error")) >= 1
	}, 30*time.Second, 50*time.Millisecond)
	cat.Publish(stactest.Chips(t, place, "2019-07-25")...)
	cat.SetDown(false)
	waitItems(t, e.core, 3, id("2019-07-25"))
	assert.Positive(t, testutil.ToFloat64(r.metrics.Bytes))
	assert.Positive(t, testutil.ToFloat64(r.metrics.Products))
	r.stop()

	// Restart: nothing is read again, nothing re-ingested.
	before := items(t, e.core)
	cat.ResetStats()
	r2 := startWatcher(t, e, cat, nil)
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(r2.metrics.Polls.WithLabelValues("ok")) >= 2
	}, 90*time.Second, 50*time.Millisecond)
	r2.stop()
	assert.Zero(t, cat.Stats().AssetRequests, "band requests after a restart")
	after := items(t, e.core)
	assert.Equal(t, len(before), len(after))
	for id, it := range before {
		assert.Equal(t, it.IngestedAt, after[id].IngestedAt, id)
	}
}

func TestParseBackfill(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in      string
		start   time.Time
		str     string
		wantErr bool
	}{
		{"90d", now.AddDate(0, 0, -90), "90d", false},
		{"1d", now.AddDate(0, 0, -1), "1d", false},
		{"36h", now.Add(-36 * time.Hour), "36h0m0s", false},
		{"2019-06-01", time.Date(2019, 6, 1, 0, 0, 0, 0, time.UTC), "2019-06-01", false},
		{"0d", time.Time{}, "", true},
		{"-5d", time.Time{}, "", true},
		{"xd", time.Time{}, "", true},
		{"2019-13-01", time.Time{}, "", true},
		{"", time.Time{}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			b, err := watch.ParseBackfill(tt.in)
			if tt.wantErr {
				require.ErrorIs(t, err, watch.ErrConfig)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.start, b.Start(now))
			assert.Equal(t, tt.str, b.String())
		})
	}
	assert.Equal(t, now.Add(-watch.DefaultBackfill), watch.Backfill{}.Start(now))
}

func TestNewRefusesPrivateCatalog(t *testing.T) {
	e := openEnv(t, t.TempDir())
	drv, closeDrv, err := store.JobsDriver(context.Background(), e.core.Store())
	require.NoError(t, err)
	defer closeDrv()
	tests := []struct {
		name, url string
		allow     bool
		wantErr   bool
	}{
		{"loopback refused", "http://127.0.0.1:9/", false, true},
		{"private refused", "http://10.1.2.3/stac", false, true},
		{"not http", "ftp://example.com/stac", false, true},
		{"loopback allowed", "http://127.0.0.1:9/", true, false},
		{"public", "https://earth-search.aws.element84.com/v1", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := watch.New(context.Background(), watch.Config{Archive: e.core, Catalog: tt.url, AllowPrivate: tt.allow}, drv)
			if tt.wantErr {
				require.ErrorIs(t, err, watch.ErrConfig)
			} else {
				require.NoError(t, err)
			}
		})
	}
}

// TestUpdatedItemsAndNewFields: a field registered later gets the items
// already ingested for others; an item the catalogue updates is ingested
// again without notifying identical products; a new outline is backfilled.
func TestUpdatedItemsAndNewFields(t *testing.T) {
	ctx := context.Background()
	cat := stactest.New(t, stactest.Options{PageSize: 1})
	cat.Publish(stactest.Chips(t, place, "2019-06-20", "2019-06-30")...)
	dir := t.TempDir()
	core, err := backend.Open(ctx, dir, true, archive.Config{Webhooks: archive.WebhookOptions{AllowPrivate: true}})
	require.NoError(t, err)
	t.Cleanup(func() { core.Close() })
	_, _, err = core.EnsureAdmin(ctx)
	require.NoError(t, err)
	u, err := core.UserByName(ctx, "admin")
	require.NoError(t, err)
	e := &env{dir: dir, core: core, user: u}
	// Deliveries stay in the outbox (no dispatcher runs): they count the notifications.
	_, err = core.RegisterWebhook(ctx, u, "http://127.0.0.1:9/hook")
	require.NoError(t, err)
	pending := func() int {
		ds, err := core.Deliveries(ctx, u, 1000)
		require.NoError(t, err)
		return len(ds)
	}

	f1 := e.registerFields(t, "UES-01")[0]
	startWatcher(t, e, cat, nil)
	ids := []string{id("2019-06-20"), id("2019-06-30")}
	got := waitItems(t, core, 1, ids...)
	assert.Equal(t, map[int64]int64{f1.ID: 0}, got[ids[0]].Fields)
	require.Eventually(t, func() bool { return pending() == 2 }, 10*time.Second, 20*time.Millisecond)

	// A field registered later: the items are read again, for it only.
	f2 := e.registerFields(t, "UES-02")[0]
	got = waitItems(t, core, 2, ids...)
	assert.Equal(t, map[int64]int64{f1.ID: 0, f2.ID: 0}, got[ids[1]].Fields)
	require.Eventually(t, func() bool { return pending() == 4 }, 10*time.Second, 20*time.Millisecond)

	// The catalogue updates an item: ingested again, identical products notify nobody.
	again := stactest.Chips(t, place, "2019-06-20")
	again[0].Updated = time.Now().Add(time.Hour).UTC().Truncate(time.Microsecond) // as served
	before := got[ids[0]]
	cat.Publish(again...)
	require.Eventually(t, func() bool {
		it := items(t, core)[ids[0]]
		return it.Updated != before.Updated && it.State == archive.ItemIngested
	}, 20*time.Second, 20*time.Millisecond)
	assert.Equal(t, again[0].Updated.Format(time.RFC3339Nano), items(t, core)[ids[0]].Updated)
	time.Sleep(200 * time.Millisecond)
	assert.Equal(t, 4, pending(), "re-ingesting identical imagery notifies nobody")

	// Another item of the same date over the fields (an overlapping tile, a
	// reprocessed copy): the first stands, nobody is notified twice.
	dup := stactest.Chips(t, place, "2019-06-20")
	dup[0].ID = "S2B_31UES_20190620_1_L2A"
	cat.Publish(dup...)
	got = waitItems(t, core, 2, dup[0].ID)
	assert.Equal(t, archive.ItemIngested, got[dup[0].ID].State)
	assert.Zero(t, got[dup[0].ID].Usable)
	assert.Zero(t, cat.ItemStats(dup[0].ID).Requests, "not read")
	assert.Equal(t, 4, pending())

	// A new outline (UES-03's) for UES-01: backfilled for version 1.
	data, err := os.ReadFile(filepath.Join(testenv.DataDir(t, "fields"), place+".geojson"))
	require.NoError(t, err)
	feats, err := geo.ReadFeatures(data)
	require.NoError(t, err)
	var outline string
	for _, f := range feats {
		if f.Name == "UES-03" {
			outline, err = archive.EncodeGeometry(f.Geometry)
			require.NoError(t, err)
		}
	}
	_, err = core.UpdateField(ctx, u, archive.FieldInput{Name: "UES-01", Geometry: []byte(outline)})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		all := items(t, core)
		return all[ids[0]].Fields[f1.ID] == 1 && all[ids[1]].Fields[f1.ID] == 1
	}, 20*time.Second, 20*time.Millisecond)
	assert.Equal(t, []string{"2019-06-20", "2019-06-30"}, usableDates(t, core, f1))
}

// TestStartWaitsOutALockedDatabase: another process holding SQLite's write
// lock for longer than river's 10 s start limit, while the watcher migrates
// its queue or while it starts it, delays the watcher; once the lock is
// released it starts, polls and ingests.
func TestStartWaitsOutALockedDatabase(t *testing.T) {
	if testing.Short() {
		t.Skip("holds the database lock for 12 s")
	}
	for _, lockBeforeNew := range []bool{true, false} {
		name := "locked while starting"
		if lockBeforeNew {
			name = "locked while migrating"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			cat := stactest.New(t, stactest.Options{})
			cat.Publish(stactest.Chips(t, place, "2019-06-20")...)
			e := openEnv(t, t.TempDir())
			e.registerFields(t, "UES-01")
			drv, closeDrv, err := store.JobsDriver(ctx, e.core.Store())
			require.NoError(t, err)
			defer closeDrv()
			cfg := watch.Config{
				Archive: e.core, Catalog: cat.URL(), Poll: 300 * time.Millisecond, AllowPrivate: true,
				Backfill:   watch.Backfill{From: time.Date(2019, 6, 1, 0, 0, 0, 0, time.UTC)},
				FieldCheck: 50 * time.Millisecond, JobPoll: 50 * time.Millisecond,
			}

			// The other process: a connection of its own in a write transaction.
			other, err := sql.Open("sqlite", "file:"+filepath.Join(e.dir, store.DBFile)+"?_pragma=busy_timeout(10000)")
			require.NoError(t, err)
			defer other.Close()
			conn, err := other.Conn(ctx)
			require.NoError(t, err)
			defer conn.Close()
			lock := func() time.Time {
				_, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE")
				require.NoError(t, err)
				time.AfterFunc(12*time.Second, func() {
					_, err := conn.ExecContext(ctx, "ROLLBACK")
					assert.NoError(t, err)
				})
				return time.Now()
			}

			var locked time.Time
			if lockBeforeNew {
				locked = lock()
			}
			w, err := watch.New(ctx, cfg, drv)
			require.NoError(t, err)
			if !lockBeforeNew {
				locked = lock()
			}
			runCtx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- w.Run(runCtx) }()
			got := waitItems(t, e.core, 1, id("2019-06-20"))
			took := time.Since(locked)
			cancel()
			require.NoError(t, <-done)
			assert.Equal(t, archive.ItemIngested, got[id("2019-06-20")].State)
			assert.Greater(t, took, 12*time.Second)
			t.Logf("ingested %v after the lock was taken", took)
		})
	}
}
