package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --pprof serves profiles on loopback addresses and refuses any other.
func TestStartPprof(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := slog.New(slog.DiscardHandler)
	for _, bad := range []string{"0.0.0.0:0", ":0", "192.0.2.1:6060", "localhost"} {
		_, err := startPprof(ctx, bad, log)
		assert.Error(t, err, bad)
	}
	at, err := startPprof(ctx, "127.0.0.1:0", log)
	require.NoError(t, err)
	resp, err := http.Get("http://" + at + "/debug/pprof/cmdline")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	assert.NotEmpty(t, body)
}
