package archive_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/archive/backend"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/internal/demodata"
	"github.com/cropkit/cropkit/internal/testenv"
)

// On PostgreSQL and S3, ingestion writes new objects, commits the rows and
// then deletes the replaced objects; Sweep removes objects no row
// references (a crash between the PUT and the commit) and keeps the others.
func TestBucketIngestAndSweep(t *testing.T) {
	ctx := context.Background()
	dsn, bucket := testenv.Postgres(t), testenv.S3(t)
	scenes, err := demodata.Extract(t.TempDir())
	require.NoError(t, err)
	a, err := backend.OpenURL(ctx, dsn, bucket, archive.Config{SweepGrace: -1, TempDir: t.TempDir()})
	require.NoError(t, err)
	defer a.Close()
	_, _, err = a.EnsureAdmin(ctx)
	require.NoError(t, err)
	admin, err := a.UserByName(ctx, "admin")
	require.NoError(t, err)
	feats, err := geo.ReadFeatures(demodata.Fields())
	require.NoError(t, err)
	for _, ft := range feats[:3] {
		geom, err := archive.EncodeGeometry(ft.Geometry)
		require.NoError(t, err)
		_, err = a.RegisterField(ctx, admin, archive.FieldInput{Name: ft.Name, Geometry: []byte(geom), Indices: []string{"ndvi"}})
		require.NoError(t, err)
	}
	keys := func() map[string]bool {
		out := map[string]bool{}
		require.NoError(t, a.Blobs().List(ctx, "products", func(b archive.BlobInfo) error {
			out[b.Key] = true
			return nil
		}))
		return out
	}
	for range 2 { // the second ingestion replaces every bundle
		_, err = a.Ingest(ctx, scenes[0], archive.IngestOptions{})
		require.NoError(t, err)
		referenced, err := a.Store().Bundles(ctx)
		require.NoError(t, err)
		require.NotEmpty(t, referenced)
		assert.Equal(t, referenced, keys(), "exactly the referenced objects exist")
	}
	// A crash between an object's PUT and its row's commit leaves an orphan.
	orphan := "products/1/2000-01-01-000000000000.zip"
	require.NoError(t, a.Blobs().Put(ctx, orphan, []byte("orphan")))
	n, err := a.Sweep(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	referenced, err := a.Store().Bundles(ctx)
	require.NoError(t, err)
	assert.Equal(t, referenced, keys())
}
