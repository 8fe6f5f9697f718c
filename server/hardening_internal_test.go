package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/api"
	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/archive/backend"
)

// A storage ErrBusy (SQLite's lock held by another process past the busy
// timeout) is a 503 with Retry-After, not a 500.
func TestBusyIs503(t *testing.T) {
	err := fmt.Errorf("update seasons: %w: %w", archive.ErrBusy, fmt.Errorf("database is locked"))
	e, internal := asAPIError(err)
	assert.False(t, internal)
	assert.Equal(t, http.StatusServiceUnavailable, e.Status)
	assert.Equal(t, api.CodeUnavailable, e.Code)
	rec := httptest.NewRecorder()
	writeError(rec, e)
	assert.Equal(t, "1", rec.Header().Get("Retry-After"))
	assert.JSONEq(t, `{"error":{"code":"unavailable","message":"the database is busy; retry shortly"}}`, rec.Body.String())
}

func newTestServer(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	ctx := context.Background()
	core, err := backend.Open(ctx, t.TempDir(), true, archive.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { core.Close() })
	tok, _, err := core.EnsureAdmin(ctx)
	require.NoError(t, err)
	cfg.Archive = core
	srv, err := New(cfg)
	require.NoError(t, err)
	return srv, tok
}

// Heavy operations beyond the slots wait HeavyWait, then get 503 + Retry-After.
func TestHeavySlots(t *testing.T) {
	srv, tok := newTestServer(t, Config{HeavyRequests: 1, HeavyWait: 20 * time.Millisecond})
	convert := func() *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/convert/geojson-to-shapefile", strings.NewReader(`{"type":"FeatureCollection","features":[]}`))
		req.Header.Set("Authorization", "Bearer "+tok)
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		return rec
	}
	release, err := srv.heavy.acquire(context.Background(), 99, time.Second) // another account's heavy request running
	require.NoError(t, err)
	start := time.Now()
	rec := convert()
	assert.Equal(t, 503, rec.Code, rec.Body.String())
	assert.Equal(t, "2", rec.Header().Get("Retry-After"))
	assert.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)
	// Light operations are not held up.
	req := httptest.NewRequest("GET", "/fields/list", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	lrec := httptest.NewRecorder()
	srv.ServeHTTP(lrec, req)
	assert.Equal(t, 200, lrec.Code)
	release()
	rec = convert()
	assert.NotEqual(t, 503, rec.Code, rec.Body.String())
}

// Issue: a client disconnecting during the token lookup was logged as an
// ERROR 500. A request whose context ends is a 499 logged at INFO.
func TestClientGoneIsNotAnError(t *testing.T) {
	var logs strings.Builder
	srv, tok := newTestServer(t, Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequestWithContext(ctx, "GET", "/fields/list", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	assert.Equal(t, StatusClientClosed, rec.Code)
	assert.NotContains(t, logs.String(), "level=ERROR", logs.String())
	e, internal := asAPIError(fmt.Errorf("token: %w", context.Canceled))
	assert.False(t, internal)
	assert.Equal(t, StatusClientClosed, e.Status)
}

// Issue: there was no read timeout. A small request whose body trickles is
// cut off after ReadTimeout.
func TestReadTimeout(t *testing.T) {
	srv, tok := newTestServer(t, Config{ReadTimeout: 300 * time.Millisecond})
	ts := httptest.NewServer(srv)
	defer ts.Close()
	pr, pw := io.Pipe()
	defer pw.Close()
	req, err := http.NewRequest("POST", ts.URL+"/fields/register", pr)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	go pw.Write([]byte(`{"field_name":`))
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
		assert.GreaterOrEqual(t, resp.StatusCode, 400)
	}
	assert.Less(t, time.Since(start), 5*time.Second, "cut off near the read timeout")
}
