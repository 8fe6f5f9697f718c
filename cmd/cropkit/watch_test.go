package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
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

// adminGet GETs path of the server with the admin token.
func adminGet(t *testing.T, base, path, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// TestServeCatalogAcceptance is the monitoring acceptance: a server started
// with --catalog on an empty database, a field and a webhook registered
// through the API: the field's usable history since the backfill start
// appears in /files/list, each (field, date) is notified once, signed; an
// item published later is notified within two poll intervals; after a
// restart nothing is fetched or notified again.
func TestServeCatalogAcceptance(t *testing.T) {
	if testing.Short() {
		t.Skip("starts cropkit serve twice")
	}
	const poll = time.Second
	ctx := context.Background()
	fieldsData, err := os.ReadFile(filepath.Join(testenv.DataDir(t, "fields"), "flanders-31UES.geojson"))
	require.NoError(t, err)
	feats, err := geo.ReadFeatures(fieldsData)
	require.NoError(t, err)
	var outline json.RawMessage
	for _, f := range feats {
		if f.Name == "UES-03" {
			g, err := archive.EncodeGeometry(f.Geometry)
			require.NoError(t, err)
			outline = json.RawMessage(g)
		}
	}
	require.NotNil(t, outline)

	cat := stactest.New(t, stactest.Options{PageSize: 2, Ascending: true})
	// Before the backfill start (05-16) and above --max-cloud 50 (06-15, 06-25): never read.
	cat.Publish(stactest.Chips(t, "flanders-31UES", "2019-05-16", "2019-06-10", "2019-06-15", "2019-06-20", "2019-06-25", "2019-06-30")...)

	dir := t.TempDir()
	serveArgs := []string{"--catalog", cat.URL(), "--poll", poll.String(), "--backfill", "2019-06-01", "--max-cloud", "50",
		"--ingest-allow-private", "--webhook-allow-private", "--webhook-retry-base", "50ms", "--webhook-timeout", "2s"}
	p1 := startServeProcess(t, dir, serveArgs...)
	st, err := backend.Open(ctx, dir, false, archive.Config{})
	require.NoError(t, err)
	adminTok, err := st.CreateToken(ctx, "admin")
	require.NoError(t, err)
	_, err = st.CreateUser(ctx, archive.NewUser{Name: "farmer"})
	require.NoError(t, err)
	farmerTok, err := st.CreateToken(ctx, "farmer")
	require.NoError(t, err)
	require.NoError(t, st.Close())

	rc := newHookReceiver(t, true)
	farmer, err := client.New(p1.base, client.WithToken(farmerTok))
	require.NoError(t, err)
	reg, err := farmer.RegisterWebhook(ctx, rc.srv.URL+"/hook")
	require.NoError(t, err)
	start := time.Now()
	_, err = farmer.RegisterField(ctx, client.FieldRequest{FieldName: "UES-03", Geometry: outline, Indices: []string{"ndvi", "evi"}})
	require.NoError(t, err)

	// Backfill: the usable history since 2019-06-01 appears in /files/list.
	history := []string{"2019-06-10", "2019-06-20", "2019-06-30"}
	dates := func() []string {
		fl, err := farmer.ListFiles(ctx, client.ListFilesRequest{FieldName: "UES-03", Index: "ndvi"})
		if err != nil {
			return nil
		}
		var out []string
		for _, e := range fl.Indices["ndvi"] {
			out = append(out, e.Date)
		}
		sort.Strings(out)
		return out
	}
	require.Eventually(t, func() bool { return len(dates()) == len(history) }, 30*time.Second, 50*time.Millisecond)
	assert.Equal(t, history, dates())
	t.Logf("backfill of %d items for one field through the server: %v", len(history), time.Since(start))

	// notified maps "field date" to the signed notifications received,
	// elements maps "field date index" to their data elements.
	elements := map[string]int{}
	notified := func() map[string]int {
		out := map[string]int{}
		clear(elements)
		for _, q := range rc.requests() {
			require.NoError(t, webhook.Verify(reg.Secret, q.header, q.body, webhook.VerifyOptions{}))
			var p webhook.Payload
			require.NoError(t, json.Unmarshal(q.body, &p))
			require.NotEmpty(t, p.Data)
			out[p.Field+" "+p.Data[0].Date[:len("2006-01-02")]]++
			for _, d := range p.Data {
				elements[p.Field+" "+d.Date[:len("2006-01-02")]+" "+d.Index]++
			}
		}
		return out
	}
	require.Eventually(t, func() bool { return len(notified()) == len(history) }, 15*time.Second, 50*time.Millisecond)

	// A new item published later is notified within two poll intervals.
	cat.Publish(stactest.Chips(t, "flanders-31UES", "2019-07-05")...)
	published := time.Now()
	require.Eventually(t, func() bool { return notified()["UES-03 2019-07-05"] > 0 }, 2*poll, 20*time.Millisecond)
	t.Logf("new item notified %v after publication (poll %v)", time.Since(published), poll)
	for _, d := range []string{"2019-05-16", "2019-06-15", "2019-06-25"} {
		assert.Zero(t, cat.ItemStats("S2A_31UES_"+strings.ReplaceAll(d, "-", "")+"_0_L2A").Requests, "%s never read", d)
	}
	assert.Zero(t, cat.Stats().WholeFileGETs)

	// /scenes/list and /metrics (admin).
	code, body := adminGet(t, p1.base, "/scenes/list", adminTok)
	require.Equal(t, http.StatusOK, code, body)
	var list struct {
		Items []struct {
			ID     string `json:"id"`
			State  string `json:"state"`
			Usable int    `json:"usable"`
			Fields []struct {
				Owner string `json:"owner"`
				Field string `json:"field_name"`
			} `json:"fields"`
		} `json:"items"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &list))
	require.Len(t, list.Items, 4)
	assert.Equal(t, "S2A_31UES_20190705_0_L2A", list.Items[0].ID)
	for _, it := range list.Items {
		assert.Equal(t, "ingested", it.State, it.ID)
		assert.Equal(t, 2, it.Usable, it.ID) // ndvi and evi
		require.Len(t, it.Fields, 1)
		assert.Equal(t, "farmer", it.Fields[0].Owner)
		assert.Equal(t, "UES-03", it.Fields[0].Field)
	}
	wants := []string{
		`cropkit_http_request_duration_seconds_count{code="201",method="POST",route="POST /fields/register"} 1`,
		`cropkit_items_ingested_total{state="ingested"} 4`,
		`cropkit_products_ingested_total 8`,
		`cropkit_jobs_total{kind="cropkit_item_ingest",state="job_completed"} 4`,
		`cropkit_webhook_deliveries_total{outcome="delivered"} 4`,
		`cropkit_catalogue_bytes_read_total `,
	}
	// Job events are counted as river reports them, just after the jobs.
	require.Eventually(t, func() bool {
		code, body = adminGet(t, p1.base, "/metrics", adminTok)
		for _, want := range wants {
			if !strings.Contains(body, want) {
				return false
			}
		}
		return code == http.StatusOK
	}, 5*time.Second, 50*time.Millisecond)
	for _, want := range wants {
		assert.True(t, strings.Contains(body, want), "/metrics lacks %s", want)
	}
	code, _ = adminGet(t, p1.base, "/metrics", farmerTok)
	assert.Equal(t, http.StatusForbidden, code)

	// Restart: nothing fetched, nothing notified again.
	require.NoError(t, p1.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, <-p1.done)
	before := len(rc.requests())
	cat.ResetStats()
	p2 := startServeProcess(t, dir, serveArgs...)
	require.Eventually(t, func() bool { return cat.Stats().Search >= 3 }, 20*time.Second, 50*time.Millisecond, "polls after the restart")
	assert.Zero(t, cat.Stats().AssetRequests, "band requests after the restart")
	time.Sleep(500 * time.Millisecond) // let a delivery that should not exist show up
	assert.Equal(t, before, len(rc.requests()), "notifications after the restart")
	got := notified()
	assert.Len(t, got, 4)
	for k, n := range got {
		assert.Equal(t, 1, n, "one notification per (field, date): %s", k)
	}
	assert.Len(t, elements, 8)
	for k, n := range elements {
		assert.Equal(t, 1, n, "one data element per index: %s", k)
	}
	require.NoError(t, p2.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, <-p2.done)
}

// allIngested reports whether a has recorded exactly n scene items, each
// ingested with usable images for that many fields.
func allIngested(ctx context.Context, a *archive.Archive, n, usable int) bool {
	items, err := a.SceneItems(ctx, archive.ItemQuery{})
	if err != nil || len(items) != n {
		return false
	}
	for _, it := range items {
		if it.State != archive.ItemIngested || it.Usable != usable {
			return false
		}
	}
	return true
}

func TestWatchCommand(t *testing.T) {
	ctx := context.Background()
	fieldsData, err := os.ReadFile(filepath.Join(testenv.DataDir(t, "fields"), "flanders-31UES.geojson"))
	require.NoError(t, err)
	feats, err := geo.ReadFeatures(fieldsData)
	require.NoError(t, err)
	cat := stactest.New(t, stactest.Options{})
	cat.Publish(stactest.Chips(t, "flanders-31UES", "2019-06-20", "2019-06-30")...)

	// Fields registered by another process (here, before the watcher starts).
	dir := t.TempDir()
	st, err := backend.Open(ctx, dir, true, archive.Config{})
	require.NoError(t, err)
	_, _, err = st.EnsureAdmin(ctx)
	require.NoError(t, err)
	admin, err := st.UserByName(ctx, "admin")
	require.NoError(t, err)
	for _, f := range feats[:2] {
		_, err := st.Store().InsertField(ctx, archive.Field{OwnerID: admin.ID, Name: f.Name, Indices: []string{"ndvi"}, Geometry: f.Geometry}, 0)
		require.NoError(t, err)
	}
	require.NoError(t, st.Close())

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	var out, errOut strings.Builder
	go func() {
		done <- runWatch(runCtx, []string{"--data", dir, "--catalog", cat.URL(), "--backfill", "2019-06-01", "--ingest-allow-private"},
			nil, &out, &errOut)
	}()
	require.Eventually(t, func() bool {
		ro, err := backend.Open(ctx, dir, false, archive.Config{})
		if err != nil {
			return false
		}
		defer ro.Close()
		return allIngested(ctx, ro, 2, 2)
	}, 30*time.Second, 100*time.Millisecond)
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("cropkit watch did not stop")
	}
	assert.Contains(t, out.String(), "cropkit watching "+cat.URL())
}

func TestWatchFlags(t *testing.T) {
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"watch", "-h"}, 0, "-catalog"},
		{[]string{"watch", "-h"}, 0, "-ingest-allow-host"},
		{[]string{"watch", "--catalog", "http://127.0.0.1:9/", "--ingest-allow-private", "--ingest-allow-host", "bad host:80"}, 1, "allowed hosts"},
		{[]string{"watch", "--catalog", "http://127.0.0.1:9/", "--ingest-allow-host", "127.0.0.1:10"}, 1, "catalogue address 127.0.0.1 refused"},
		{[]string{"watch", "--data", "DIR"}, 1, "--catalog is required"},
		{[]string{"watch", "--catalog", "https://earth-search.aws.element84.com/v1", "--backfill", "soon"}, 1, "backfill"},
		{[]string{"watch", "--catalog", "https://earth-search.aws.element84.com/v1", "--max-cloud", "120"}, 1, "not a percentage"},
		{[]string{"serve", "--catalog", "https://earth-search.aws.element84.com/v1", "--poll", "-1s"}, 1, "--poll must not be negative"},
		{[]string{"serve", "--catalog", "https://earth-search.aws.element84.com/v1", "--jobs=false"}, 1, "--catalog needs --jobs"},
		{[]string{"worker", "--catalog", "https://earth-search.aws.element84.com/v1"}, 1, "--db and --blobs are required"},
		{[]string{"worker", "--db", "sqlite:x.db", "--blobs", "file://x", "--catalog", "https://earth-search.aws.element84.com/v1", "--max-cloud", "120"}, 1, "not a percentage"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			args := tt.args
			if tt.args[0] == "watch" || tt.args[0] == "serve" {
				args = append(args, "--data", t.TempDir())
			}
			code, _, errOut := runCmd(t, "", args...)
			assert.Equal(t, tt.code, code, errOut)
			assert.Contains(t, errOut, tt.want)
		})
	}
}

func TestWatchOnce(t *testing.T) {
	ctx := context.Background()
	fieldsData, err := os.ReadFile(filepath.Join(testenv.DataDir(t, "fields"), "flanders-31UES.geojson"))
	require.NoError(t, err)
	feats, err := geo.ReadFeatures(fieldsData)
	require.NoError(t, err)
	cat := stactest.New(t, stactest.Options{PageSize: 1, Ascending: true})
	cat.Publish(stactest.Chips(t, "flanders-31UES", "2019-06-20", "2019-06-30")...)
	dir := t.TempDir()
	st, err := backend.Open(ctx, dir, true, archive.Config{})
	require.NoError(t, err)
	_, _, err = st.EnsureAdmin(ctx)
	require.NoError(t, err)
	admin, err := st.UserByName(ctx, "admin")
	require.NoError(t, err)
	_, err = st.Store().InsertField(ctx, archive.Field{OwnerID: admin.ID, Name: feats[0].Name, Indices: []string{"ndvi"}, Geometry: feats[0].Geometry}, 0)
	require.NoError(t, err)
	require.NoError(t, st.Close())
	args := []string{"watch", "--once", "--once-grace", "0s", "--data", dir, "--catalog", cat.URL(), "--backfill", "2019-06-01", "--ingest-allow-private"}

	// Run 1: the backfill; run 2: the item published in between, nothing else read.
	code, out, errOut := runCmd(t, "", args...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "2 items recorded")
	cat.Publish(stactest.Chips(t, "flanders-31UES", "2019-07-05")...)
	cat.ResetStats()
	code, out, errOut = runCmd(t, "", args...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "3 items recorded")
	assert.Zero(t, cat.ItemStats("S2A_31UES_20190620_0_L2A").Requests)
	assert.Zero(t, cat.ItemStats("S2A_31UES_20190630_0_L2A").Requests)
	assert.Positive(t, cat.ItemStats("S2A_31UES_20190705_0_L2A").Requests)

	ro, err := backend.Open(ctx, dir, false, archive.Config{})
	require.NoError(t, err)
	defer ro.Close()
	items, err := ro.SceneItems(ctx, archive.ItemQuery{})
	require.NoError(t, err)
	require.Len(t, items, 3)
	for _, it := range items {
		assert.Equal(t, archive.ItemIngested, it.State, it.ID)
		assert.Equal(t, 1, it.Usable, it.ID)
	}
}

func TestWatchCollectionsFlag(t *testing.T) {
	for in, want := range map[string][]string{
		"sentinel-2-l2a": {"sentinel-2-l2a"},
		"sentinel-2-l2a,landsat-c2-l2, sentinel-1-rtc": {"sentinel-2-l2a", "landsat-c2-l2", "sentinel-1-rtc"},
		"a,,a": {"a"},
	} {
		o := watchOptions{collection: in}
		assert.Equal(t, want, o.collections(), in)
	}
	o := watchOptions{collection: " , ", catalog: "https://example.com", jobTimeout: 1}
	assert.ErrorContains(t, o.check(), "no collection")
}
