package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/archive/backend"
	"github.com/cropkit/cropkit/client"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/stac/stactest"
	"github.com/cropkit/cropkit/webhook"
)

// TestScaleOut is the scale-out acceptance, with real processes on one
// PostgreSQL database and one bucket: two `serve --jobs=false` replicas and
// two `worker`s. Fields are registered through both replicas while a
// catalogue publishes items; one worker is killed (SIGKILL) once ingestions
// have started and restarted. At the end every product is downloadable
// from both replicas, byte-identical, with no duplicate rows or objects,
// and every notification was delivered once, under a unique webhook-id.
func TestScaleOut(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four cropkit processes")
	}
	ctx := context.Background()
	dsn, bucket := testenv.Postgres(t), testenv.S3(t)
	fieldsData, err := os.ReadFile(filepath.Join(testenv.DataDir(t, "fields"), "flanders-31UES.geojson"))
	require.NoError(t, err)
	feats, err := geo.ReadFeatures(fieldsData)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(feats), 4)
	feats = feats[:4]

	// Above --max-cloud 50 (06-15, 06-25) and before the backfill start
	// (05-16): never ingested.
	cat := stactest.New(t, stactest.Options{PageSize: 2, Ascending: true})
	cat.Publish(stactest.Chips(t, "flanders-31UES", "2019-05-16", "2019-06-10", "2019-06-15", "2019-06-20")...)
	wantItems := 2 // 06-10, 06-20; 06-30 and 07-05 are published later

	storage := []string{"--db", dsn, "--blobs", bucket}
	serveArgs := append([]string{"--jobs=false", "--webhook-allow-private"}, storage...)
	workerArgs := append([]string{"worker", "--catalog", cat.URL(), "--poll", "1s", "--backfill", "2019-06-01", "--max-cloud", "50",
		"--ingest-allow-private", "--webhook-allow-private", "--webhook-retry-base", "50ms", "--webhook-timeout", "2s"}, storage...)
	const workerReady = "cropkit worker watching "
	replicas := []*cropkitProcess{startServeProcess(t, t.TempDir(), serveArgs...), startServeProcess(t, t.TempDir(), serveArgs...)}
	workers := []*cropkitProcess{startCropkitProcess(t, workerReady, workerArgs...), startCropkitProcess(t, workerReady, workerArgs...)}

	core, err := backend.OpenURL(ctx, dsn, bucket, archive.Config{})
	require.NoError(t, err)
	defer core.Close()
	_, err = core.CreateUser(ctx, archive.NewUser{Name: "farmer"})
	require.NoError(t, err)
	farmerTok, err := core.CreateToken(ctx, "farmer")
	require.NoError(t, err)
	clients := make([]*client.Client, len(replicas))
	for i, r := range replicas {
		clients[i], err = client.New(r.base, client.WithToken(farmerTok))
		require.NoError(t, err)
	}
	rc := newHookReceiver(t, true)
	reg, err := clients[0].RegisterWebhook(ctx, rc.srv.URL+"/hook")
	require.NoError(t, err)
	start := time.Now()
	for i, f := range feats {
		g, err := archive.EncodeGeometry(f.Geometry)
		require.NoError(t, err)
		_, err = clients[i%2].RegisterField(ctx, client.FieldRequest{FieldName: f.Name, Geometry: json.RawMessage(g), Indices: []string{"ndvi", "evi"}})
		require.NoError(t, err, f.Name)
	}

	db, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	defer db.Close()
	count := func(q string) int {
		var n int
		require.NoError(t, db.QueryRow(q).Scan(&n))
		return n
	}
	// Kill (SIGKILL) a worker while it runs a job, then restart it. River's
	// client ID in attempted_by names the process (pidN).
	var killed, jobID int64
	require.Eventually(t, func() bool {
		for i, w := range workers {
			err := db.QueryRow(`SELECT id FROM river_job WHERE state = 'running' AND kind IN ('cropkit_item_ingest', 'cropkit_field_backfill')
				AND attempted_by[array_length(attempted_by, 1)] LIKE $1 LIMIT 1`,
				fmt.Sprintf("%%\\_pid%d\\_%%", w.cmd.Process.Pid)).Scan(&jobID)
			if err == nil {
				killed = int64(i)
				return true
			}
		}
		return false
	}, 60*time.Second, 2*time.Millisecond)
	var kind string
	require.NoError(t, db.QueryRow(`SELECT kind FROM river_job WHERE id = $1`, jobID).Scan(&kind))
	require.NoError(t, workers[killed].cmd.Process.Signal(syscall.SIGKILL))
	<-workers[killed].done
	killedAt := time.Now()
	t.Logf("worker %d killed %v after the first field registration, running job %d (%s)", killed, killedAt.Sub(start), jobID, kind)
	cat.Publish(stactest.Chips(t, "flanders-31UES", "2019-06-25", "2019-06-30")...)
	wantItems++
	workers[killed] = startCropkitProcess(t, workerReady, workerArgs...)
	cat.Publish(stactest.Chips(t, "flanders-31UES", "2019-07-05")...)
	wantItems++

	// Every item ingested (a job of the killed worker is rescued).
	require.Eventually(t, func() bool {
		items, err := core.SceneItems(ctx, archive.ItemQuery{})
		if err != nil || len(items) != wantItems {
			return false
		}
		for _, it := range items {
			if it.State != archive.ItemIngested {
				return false
			}
		}
		return true
	}, 150*time.Second, 100*time.Millisecond)
	t.Logf("%d items ingested for %d fields %v after the first registration", wantItems, len(feats), time.Since(start))
	// The killed worker's job ran again elsewhere: rescued, then completed.
	require.Eventually(t, func() bool {
		var state string
		require.NoError(t, db.QueryRow(`SELECT state FROM river_job WHERE id = $1`, jobID).Scan(&state))
		return state == "completed"
	}, 90*time.Second, 100*time.Millisecond)
	t.Logf("the killed worker's job %d completed %v after the kill", jobID, time.Since(killedAt))
	assert.Less(t, time.Since(killedAt), 65*time.Second, "a dead worker's job runs again within a minute (+ its run)")

	// Every product on both replicas, byte-identical.
	products := 0
	for _, f := range feats {
		for _, idx := range []string{"ndvi", "evi"} {
			var lists [2][]string
			for i, c := range clients {
				fl, err := c.ListFiles(ctx, client.ListFilesRequest{FieldName: f.Name, Index: idx})
				require.NoError(t, err)
				for _, e := range fl.Indices[idx] {
					lists[i] = append(lists[i], e.Date)
				}
				sort.Strings(lists[i])
			}
			require.Equal(t, lists[0], lists[1], "%s %s", f.Name, idx)
			for _, date := range lists[0] {
				var files [2][]byte
				for i, c := range clients {
					file, err := c.DownloadPNG(ctx, client.DownloadRequest{FieldName: f.Name, Index: idx, Date: date})
					require.NoError(t, err, "%s %s %s from replica %d", f.Name, idx, date, i)
					files[i] = file.Data
				}
				require.NotEmpty(t, files[0])
				assert.True(t, bytes.Equal(files[0], files[1]), "%s %s %s differs between the replicas", f.Name, idx, date)
				products++
			}
		}
	}
	require.Positive(t, products)
	ues03, err := clients[1].ListFiles(ctx, client.ListFilesRequest{FieldName: "UES-03", Index: "ndvi"})
	if err == nil { // one field known to be clear on each date
		var dates []string
		for _, e := range ues03.Indices["ndvi"] {
			dates = append(dates, e.Date)
		}
		sort.Strings(dates)
		assert.Equal(t, []string{"2019-06-10", "2019-06-20", "2019-06-30", "2019-07-05"}, dates)
	}

	// The same fields and catalogue on the embedded default, one process
	// (`cropkit watch --once` on SQLite and files): the same products, byte
	// for byte.
	embeddedDir := t.TempDir()
	emb, err := backend.Open(ctx, embeddedDir, true, archive.Config{})
	require.NoError(t, err)
	_, err = emb.CreateUser(ctx, archive.NewUser{Name: "farmer"})
	require.NoError(t, err)
	farmer, err := emb.UserByName(ctx, "farmer")
	require.NoError(t, err)
	for _, f := range feats {
		g, err := archive.EncodeGeometry(f.Geometry)
		require.NoError(t, err)
		_, err = emb.RegisterField(ctx, farmer, archive.FieldInput{Name: f.Name, Geometry: []byte(g), Indices: []string{"ndvi", "evi"}})
		require.NoError(t, err)
	}
	require.NoError(t, emb.Close())
	code, out, errOut := runCmd(t, "", "watch", "--once", "--data", embeddedDir, "--catalog", cat.URL(), "--backfill", "2019-06-01",
		"--max-cloud", "50", "--ingest-allow-private")
	require.Equal(t, 0, code, "%s\n%s", out, errOut)
	emb, err = backend.Open(ctx, embeddedDir, false, archive.Config{})
	require.NoError(t, err)
	defer emb.Close()
	embedded := 0
	for _, f := range feats {
		for _, idx := range []string{"ndvi", "evi"} {
			fl, err := clients[0].ListFiles(ctx, client.ListFilesRequest{FieldName: f.Name, Index: idx})
			require.NoError(t, err)
			ef, err := emb.Field(ctx, farmer, f.Name, false)
			require.NoError(t, err)
			eps, err := emb.Products(ctx, ef, archive.ProductQuery{Index: idx, UsableOnly: true})
			require.NoError(t, err)
			require.Len(t, eps, len(fl.Indices[idx]), "%s %s: the same usable dates embedded and scaled out", f.Name, idx)
			for _, e := range fl.Indices[idx] {
				file, err := clients[1].DownloadPNG(ctx, client.DownloadRequest{FieldName: f.Name, Index: idx, Date: e.Date})
				require.NoError(t, err)
				img, err := emb.Image(ctx, farmer, archive.ImageQuery{Field: f.Name, Index: idx, Date: e.Date})
				require.NoError(t, err)
				require.Equal(t, e.Date, img.Product.Date)
				png, err := emb.PNG(ctx, img)
				require.NoError(t, err)
				assert.True(t, bytes.Equal(file.Data, png), "%s %s %s differs from the embedded run", f.Name, idx, e.Date)
				embedded++
			}
		}
	}
	require.Equal(t, products, embedded)

	// API downloads with 1 and 2 replicas (both on this machine: a sizing
	// figure for the README, not a gate).
	measure := func(cs []*client.Client) float64 {
		const n, conc = 400, 8
		var wg sync.WaitGroup
		begin := time.Now()
		for g := range conc {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := g; i < n; i += conc {
					_, err := cs[i%len(cs)].DownloadJSON(ctx, client.DownloadRequest{FieldName: feats[0].Name, Index: "ndvi"})
					assert.NoError(t, err)
				}
			}()
		}
		wg.Wait()
		return n / time.Since(begin).Seconds()
	}
	t.Logf("JSON downloads over loopback, 8 concurrent clients: 1 replica %.0f/s, 2 replicas %.0f/s", measure(clients[:1]), measure(clients))

	// No duplicate rows or objects: one product row per (field, index,
	// date), every object in the bucket referenced, once.
	assert.Equal(t, count(`SELECT count(*) FROM products`), count(`SELECT count(DISTINCT (field_id, idx, date)) FROM products`))
	bundles, err := core.Store().Bundles(ctx)
	require.NoError(t, err)
	var objects []string
	require.NoError(t, core.Blobs().List(ctx, "products", func(b archive.BlobInfo) error {
		objects = append(objects, b.Key)
		return nil
	}))
	var referenced []string
	for k := range bundles {
		referenced = append(referenced, k)
	}
	sort.Strings(objects)
	sort.Strings(referenced)
	assert.Equal(t, referenced, objects, "objects in the bucket")
	assert.Equal(t, count(`SELECT count(DISTINCT (field_id, date)) FROM products`), len(objects), "one bundle per (field, date)")

	// Every notification delivered once, under a unique webhook-id: one per
	// (field, date) with products.
	wantNotified := count(`SELECT count(DISTINCT (field_id, date)) FROM products WHERE usable`)
	require.Eventually(t, func() bool { return len(rc.acked()) >= wantNotified }, 30*time.Second, 50*time.Millisecond)
	time.Sleep(time.Second) // a duplicate delivery would show up now
	seen := map[string]int{}
	for id, n := range rc.acked() {
		assert.Equal(t, 1, n, "webhook-id %s delivered %d times", id, n)
	}
	for _, q := range rc.requests() {
		require.NoError(t, webhook.Verify(reg.Secret, q.header, q.body, webhook.VerifyOptions{}))
		var p webhook.Payload
		require.NoError(t, json.Unmarshal(q.body, &p))
		require.NotEmpty(t, p.Data)
		seen[fmt.Sprintf("%s %s", p.Field, p.Data[0].Date[:len("2006-01-02")])]++
	}
	assert.Len(t, seen, wantNotified)
	for k, n := range seen {
		assert.Equal(t, 1, n, "notifications of %s", k)
	}
	assert.Equal(t, len(rc.requests()), len(rc.acked()), "every request acknowledged")
	assert.Equal(t, wantNotified, count(`SELECT count(*) FROM webhook_deliveries WHERE status = 'delivered'`))
	assert.Zero(t, count(`SELECT count(*) FROM webhook_deliveries WHERE status <> 'delivered'`))
	t.Logf("%d products, %d objects, %d notifications", products, len(objects), wantNotified)

	for _, p := range append(replicas, workers...) {
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	}
	for _, p := range append(replicas, workers...) {
		require.NoError(t, <-p.done)
	}
}

// TestScaleOutThroughput measures ingestion with 1 and 2 worker processes
// (the README's "Scale out" numbers): 16 fields, the 2019-04-01..2019-08-29
// items of the shared data, ndvi and evi. Run with CROPKIT_MEASURE=1.
func TestScaleOutThroughput(t *testing.T) {
	if os.Getenv("CROPKIT_MEASURE") != "1" {
		t.Skip("a measurement: CROPKIT_MEASURE=1")
	}
	fieldsData, err := os.ReadFile(filepath.Join(testenv.DataDir(t, "fields"), "flanders-31UES.geojson"))
	require.NoError(t, err)
	feats, err := geo.ReadFeatures(fieldsData)
	require.NoError(t, err)
	entries, err := os.ReadDir(testenv.DataDir(t, "s2", "flanders-31UES"))
	require.NoError(t, err)
	var dates []string
	for _, e := range entries {
		if e.IsDir() && e.Name() >= "2019-04-01" && e.Name() <= "2019-08-29" {
			dates = append(dates, e.Name())
		}
	}
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprintf("workers=%d", n), func(t *testing.T) {
			ctx := context.Background()
			dsn, bucket := testenv.Postgres(t), testenv.S3(t)
			cat := stactest.New(t, stactest.Options{PageSize: 10})
			cat.Publish(stactest.Chips(t, "flanders-31UES", dates...)...)
			core, err := backend.OpenURL(ctx, dsn, bucket, archive.Config{})
			require.NoError(t, err)
			defer core.Close()
			_, _, err = core.EnsureAdmin(ctx)
			require.NoError(t, err)
			admin, err := core.UserByName(ctx, "admin")
			require.NoError(t, err)
			for _, f := range feats {
				_, err := core.Store().InsertField(ctx, archive.Field{OwnerID: admin.ID, Name: f.Name, Indices: []string{"ndvi", "evi"}, Geometry: f.Geometry}, 0)
				require.NoError(t, err)
			}
			args := []string{"worker", "--db", dsn, "--blobs", bucket, "--catalog", cat.URL(), "--poll", "0", "--backfill", "2019-04-01",
				"--max-cloud", "100", "--ingest-allow-private"}
			start := time.Now()
			for range n {
				startCropkitProcess(t, "cropkit worker watching ", args...)
			}
			require.Eventually(t, func() bool {
				items, err := core.SceneItems(ctx, archive.ItemQuery{})
				if err != nil || len(items) != len(dates) {
					return false
				}
				for _, it := range items {
					if it.State != archive.ItemIngested {
						return false
					}
				}
				return true
			}, 10*time.Minute, 50*time.Millisecond)
			took := time.Since(start)
			db, err := sql.Open("pgx", dsn)
			require.NoError(t, err)
			defer db.Close()
			var products int
			require.NoError(t, db.QueryRow(`SELECT count(*) FROM products`).Scan(&products))
			t.Logf("%d workers: %d items, %d fields, %d products in %v: %.1f products/s", n, len(dates), len(feats), products, took.Round(10*time.Millisecond),
				float64(products)/took.Seconds())
		})
	}
}
