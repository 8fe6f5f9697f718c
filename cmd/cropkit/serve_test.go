package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A request outliving the grace period is cancelled, and shutdown returns
// (nil: an expected timeout) only once its handler has returned.
func TestShutdownCancelsAndWaitsForHandlers(t *testing.T) {
	started := make(chan struct{})
	var finished atomic.Bool
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()              // a long ingestion honouring ctx
		time.Sleep(50 * time.Millisecond) // finishing its field
		finished.Store(true)
	})
	hs, cancelRequests, inFlight := newHTTPServer(h, slog.New(slog.DiscardHandler))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String() + "/slow")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	<-started
	start := time.Now()
	err = shutdown(hs, serveErr, cancelRequests, inFlight, 20*time.Millisecond, slog.New(slog.DiscardHandler))
	require.NoError(t, err, "a grace period running out is not an error")
	assert.True(t, finished.Load(), "shutdown returned before the handler finished")
	assert.GreaterOrEqual(t, time.Since(start), 70*time.Millisecond)
}

func TestShutdownIdle(t *testing.T) {
	hs, cancelRequests, inFlight := newHTTPServer(http.NotFoundHandler(), slog.New(slog.DiscardHandler))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()
	require.NoError(t, shutdown(hs, serveErr, cancelRequests, inFlight, time.Second, slog.New(slog.DiscardHandler)))
}

func TestServeAddressInUseWritesNothing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	err = runServe(context.Background(), []string{"--addr", ln.Addr().String(), "--data", dir, "--demo"}, nil, &stdout, &stderr)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "address already in use")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing is written when the address is taken")
	assert.Empty(t, stdout.String())
}
