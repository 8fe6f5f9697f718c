package server_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/archive/backend"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/server"
	"github.com/cropkit/cropkit/server/servertest"
)

// Two replicas (two servers, each its own archive and caches, on one
// database): neither serves a revoked token's request, nor the previous
// product after a re-ingestion through the other, although both answered
// the same requests from memory just before.
func TestReplicasNeverServeRevokedOrStale(t *testing.T) {
	if servertest.Backend() != "sqlite" {
		t.Skip("the second replica opens the SQLite data directory")
	}
	sceneRoot := testenv.DataDir(t, "s2", "flanders-31UES")
	env := servertest.New(t, server.Config{})
	second, err := backend.Open(context.Background(), env.Dir, false, archive.Config{SweepGrace: -1})
	require.NoError(t, err)
	t.Cleanup(func() { second.Close() })
	srvB, err := server.New(server.Config{Archive: second})
	require.NoError(t, err)
	a, b := env.Handler, servertest.Validate(t, srvB, nil)

	tok := env.AddUser(t, "farmer", nil)
	registerRealFields(t, a, tok, []string{"UES-03"}, []string{"ndvi"})
	ingest(t, env, filepath.Join(sceneRoot, "2019-06-20"))
	const target = "/download/ndvi/json?field_name=UES-03"
	var before []byte
	for range 3 { // cached on both replicas
		ra, rb := do(t, a, "POST", target, tok, nil), do(t, b, "POST", target, tok, nil)
		require.Equal(t, 200, ra.Status, "%s", ra.Body)
		require.Equal(t, 200, rb.Status, "%s", rb.Body)
		assert.Equal(t, ra.Body, rb.Body)
		before = rb.Body
	}

	// Re-ingestion through replica A after an outline change: B answers
	// the new document at once.
	fields := flandersFields(t)
	r := do(t, a, "POST", "/fields/update", tok, map[string]any{"field_name": "UES-03",
		"geometry": map[string]any{"type": "MultiPolygon", "coordinates": fields["UES-07"].Geometry}})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	rb := do(t, b, "POST", target, tok, nil)
	assert.NotEqual(t, 200, rb.Status, "B served the product of the previous outline")
	ingest(t, env, filepath.Join(sceneRoot, "2019-06-20"))
	ra, rb := do(t, a, "POST", target, tok, nil), do(t, b, "POST", target, tok, nil)
	require.Equal(t, 200, ra.Status, "%s", ra.Body)
	require.Equal(t, 200, rb.Status, "%s", rb.Body)
	assert.Equal(t, ra.Body, rb.Body)
	assert.NotEqual(t, before, rb.Body, "B served the stale document")

	// Revocation through A: B refuses the token at the next request.
	r = do(t, a, "POST", "/tokens/revoke", tok, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	rb = do(t, b, "POST", target, tok, nil)
	assert.Equal(t, 403, rb.Status, "B served a revoked token's request: %s", rb.Body)
	assert.Contains(t, string(rb.Body), "unauthorized")
}
