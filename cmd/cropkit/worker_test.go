package main

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/archive/backend"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/stac/stactest"
)

// Two `cropkit worker`s on one PostgreSQL database and one bucket ingest
// the items of fields registered by another process, each item once.
func TestWorkerCommand(t *testing.T) {
	ctx := context.Background()
	dsn, bucket := testenv.Postgres(t), testenv.S3(t)
	fieldsData, err := os.ReadFile(filepath.Join(testenv.DataDir(t, "fields"), "flanders-31UES.geojson"))
	require.NoError(t, err)
	feats, err := geo.ReadFeatures(fieldsData)
	require.NoError(t, err)
	cat := stactest.New(t, stactest.Options{})
	cat.Publish(stactest.Chips(t, "flanders-31UES", "2019-06-20", "2019-06-30")...)

	st, err := backend.OpenURL(ctx, dsn, bucket, archive.Config{})
	require.NoError(t, err)
	defer st.Close()
	_, _, err = st.EnsureAdmin(ctx)
	require.NoError(t, err)
	admin, err := st.UserByName(ctx, "admin")
	require.NoError(t, err)
	for _, f := range feats[:2] {
		_, err := st.Store().InsertField(ctx, archive.Field{OwnerID: admin.ID, Name: f.Name, Indices: []string{"ndvi"}, Geometry: f.Geometry}, 0)
		require.NoError(t, err)
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	const n = 2
	done := make(chan error, n)
	outs := make([]strings.Builder, n)
	var errOuts [n]syncBuffer
	for i := range n {
		go func() {
			done <- runWorker(runCtx, []string{"--db", dsn, "--blobs", bucket, "--catalog", cat.URL(), "--backfill", "2019-06-01",
				"--ingest-allow-private"}, nil, &outs[i], &errOuts[i])
		}()
	}
	require.Eventually(t, func() bool { return allIngested(ctx, st, 2, 2) }, 60*time.Second, 100*time.Millisecond)
	cancel()
	for range n {
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(60 * time.Second):
			t.Fatal("cropkit worker did not stop")
		}
	}
	for i := range n {
		assert.Contains(t, outs[i].String(), "cropkit worker watching "+cat.URL())
	}
	db, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	defer db.Close()
	var rows, distinct int
	require.NoError(t, db.QueryRow(`SELECT count(*), count(DISTINCT (field_id, idx, date)) FROM products`).Scan(&rows, &distinct))
	assert.Equal(t, 4, rows, "2 fields × 2 dates × ndvi")
	assert.Equal(t, rows, distinct, "no duplicate product rows")
}
