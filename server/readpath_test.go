package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/server"
	"github.com/cropkit/cropkit/server/servertest"
)

// discardWriter is a ResponseWriter that keeps the status and length only,
// reused across requests (its allocations are not the server's).
type discardWriter struct {
	header http.Header
	status int
	n      int
}

func (d *discardWriter) Header() http.Header { return d.header }
func (d *discardWriter) WriteHeader(code int) {
	if d.status == 0 {
		d.status = code
	}
}
func (d *discardWriter) Write(b []byte) (int, error) {
	d.WriteHeader(http.StatusOK)
	d.n += len(b)
	return len(b), nil
}

// maxDownloadAllocs bounds the allocations of a download answered from
// memory: 25 when set (2026-11-27; 88 before the read path's work), with
// room for a Go release's own changes.
const maxDownloadAllocs = 30

// A download answered from memory allocates a bounded number of objects
// per request (request, parameters, answer headers, log line): the read
// path's CPU is mostly allocation and collection once the database is out
// of it (docs/performance.md, row 3).
func TestDownloadAllocations(t *testing.T) {
	if servertest.Backend() != "sqlite" {
		t.Skip("the bound counts on the SQLite store's query-free freshness check")
	}
	sceneRoot := testenv.DataDir(t, "s2", "flanders-31UES")
	env := servertest.New(t, server.Config{})
	ctx := context.Background()
	admin, err := env.Archive.UserByName(ctx, "admin")
	require.NoError(t, err)
	fields := flandersFields(t)
	_, err = env.Archive.Store().InsertField(ctx, archive.Field{OwnerID: admin.ID, Name: "UES-03", Indices: []string{"ndvi"}, Geometry: fields["UES-03"].Geometry}, 0)
	require.NoError(t, err)
	for _, d := range []string{"2019-06-20", "2019-07-05"} {
		_, err := env.Archive.Ingest(ctx, filepath.Join(sceneRoot, d), archive.IngestOptions{})
		require.NoError(t, err)
	}
	req := httptest.NewRequest("POST", "/download/ndvi/json?field_name=UES-03&date=2019-07-01", nil)
	req.Header.Set("Authorization", "Bearer "+env.AdminToken)
	w := &discardWriter{header: http.Header{}}
	serve := func() {
		clear(w.header)
		w.status, w.n = 0, 0
		env.Server.ServeHTTP(w, req)
	}
	serve() // caches filled
	require.Equal(t, http.StatusOK, w.status)
	require.Positive(t, w.n)
	assert.Equal(t, "2019-07-05", w.header.Get("X-Image-Date"))

	allocs := testing.AllocsPerRun(200, serve)
	t.Logf("allocations per download: %.1f", allocs)
	assert.LessOrEqual(t, allocs, float64(maxDownloadAllocs))
}
