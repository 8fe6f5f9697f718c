package watch_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/archive/backend"
	"github.com/cropkit/cropkit/archive/store"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/stac/stactest"
	"github.com/cropkit/cropkit/watch"
)

// BenchmarkBackfill measures the backfill of every date of the place since
// 2018-08-01 (max cloud 100: every item is read) over its 16 fields, from
// a local catalogue paging 10 items at a time.
func BenchmarkBackfill(b *testing.B) {
	root := testenv.DataDir(b, "s2", place)
	entries, err := os.ReadDir(root)
	if err != nil {
		b.Fatal(err)
	}
	var dates []string
	for _, e := range entries {
		if e.IsDir() {
			dates = append(dates, e.Name())
		}
	}
	chips := stactest.Chips(b, place, dates...)
	data, err := os.ReadFile(filepath.Join(testenv.DataDir(b, "fields"), place+".geojson"))
	if err != nil {
		b.Fatal(err)
	}
	feats, err := geo.ReadFeatures(data)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		cat := stactest.New(b, stactest.Options{})
		cat.Publish(chips...)
		core, err := backend.Open(ctx, b.TempDir(), true, archive.Config{})
		if err != nil {
			b.Fatal(err)
		}
		_, _, _ = core.EnsureAdmin(ctx)
		u, _ := core.UserByName(ctx, "admin")
		for _, f := range feats {
			g, _ := archive.EncodeGeometry(f.Geometry)
			if _, err := core.RegisterField(ctx, u, archive.FieldInput{Name: f.Name, Geometry: []byte(g), Indices: []string{"ndvi", "evi"}}); err != nil {
				b.Fatal(err)
			}
		}
		drv, closeDrv, err := store.JobsDriver(ctx, core.Store())
		if err != nil {
			b.Fatal(err)
		}
		m := watch.NewMetrics(prometheus.NewRegistry())
		runCtx, cancel := context.WithCancel(ctx)
		w, err := watch.New(runCtx, watch.Config{Archive: core, Catalog: cat.URL(), MaxCloud: 100, AllowPrivate: true,
			Backfill: watch.Backfill{From: time.Date(2018, 8, 1, 0, 0, 0, 0, time.UTC)}, Poll: -1,
			FieldCheck: 20 * time.Millisecond, JobPoll: 20 * time.Millisecond, Metrics: m}, drv)
		if err != nil {
			b.Fatal(err)
		}
		done := make(chan error, 1)
		b.StartTimer()
		start := time.Now()
		go func() { done <- w.Run(runCtx) }()
		for {
			items, err := core.SceneItems(ctx, archive.ItemQuery{})
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for _, it := range items {
				if it.State == archive.ItemIngested && len(it.Fields) > 0 {
					n++
				}
			}
			if n == len(chips) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		elapsed := time.Since(start)
		b.StopTimer()
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		closeDrv()
		b.ReportMetric(float64(len(chips)), "items")
		b.ReportMetric(float64(len(feats)), "fields")
		b.ReportMetric(testutil.ToFloat64(m.Bytes)/float64(len(chips)), "catalogue-B/item")
		b.Logf("backfill of %d items over %d fields (%s): %v, %.1f MB read", len(chips), len(feats),
			strings.Join([]string{dates[0], dates[len(dates)-1]}, "…"), elapsed, testutil.ToFloat64(m.Bytes)/1e6)
		core.Close()
		b.StartTimer()
	}
}
