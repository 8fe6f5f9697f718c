package archive_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/archive/backend"
	"github.com/cropkit/cropkit/archive/blobs"
	"github.com/cropkit/cropkit/archive/store"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/internal/testenv"
)

// twoArchives opens two archives (two processes' worth: own caches) on one
// data directory and database, with a user and the demo fields' first
// outline registered through the first.
func twoArchives(t *testing.T, cfg archive.Config) (dir string, a, b *archive.Archive, u archive.User, feats []geo.Feature) {
	t.Helper()
	dir = t.TempDir()
	ctx := context.Background()
	var err error
	a, err = backend.Open(ctx, dir, true, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() })
	b, err = backend.Open(ctx, dir, false, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	require.True(t, a.CachesReads())
	require.True(t, b.CachesReads())
	u, err = a.CreateUser(ctx, archive.NewUser{Name: "farmer"})
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(testenv.DataDir(t, "fields"), "flanders-31UES.geojson"))
	require.NoError(t, err)
	feats, err = geo.ReadFeatures(data)
	require.NoError(t, err)
	return dir, a, b, u, feats
}

// Revocation, refresh and expiry take effect at once, on every archive of
// the database, although each caches tokens.
func TestTokenCacheRevocationAcrossArchives(t *testing.T) {
	ctx := context.Background()
	dir, a, b, u, _ := twoArchives(t, archive.Config{SweepGrace: -1})

	tok, err := a.CreateToken(ctx, u.Name)
	require.NoError(t, err)
	for range 3 { // cached on both
		_, _, err = b.Authenticate(ctx, tok)
		require.NoError(t, err)
		_, _, err = a.Authenticate(ctx, tok)
		require.NoError(t, err)
	}
	require.True(t, b.TokenCached(tok), "b keeps the token in memory")

	// The cache answers without the database: a row deleted behind the
	// archives' back (no generation bump) still authenticates...
	db, err := sql.Open("sqlite", filepath.Join(dir, store.DBFile))
	require.NoError(t, err)
	defer db.Close()
	_, err = db.ExecContext(ctx, `DELETE FROM tokens`)
	require.NoError(t, err)
	_, _, err = b.Authenticate(ctx, tok)
	require.NoError(t, err, "served from b's cache")
	// ...which is why every revocation bumps the generation: here through a.
	tok2, err := a.CreateToken(ctx, u.Name)
	require.NoError(t, err)
	user, t2, err := b.Authenticate(ctx, tok2)
	require.NoError(t, err)
	n, err := a.RevokeTokens(ctx, user, t2.ID)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	for _, arch := range []*archive.Archive{b, a} {
		for _, tk := range []string{tok, tok2} {
			_, _, err = arch.Authenticate(ctx, tk)
			assert.ErrorIs(t, err, archive.ErrUnauthenticated, "a revoked token is refused at once")
		}
	}

	// Refresh through b: the old token stops on a at once.
	tok3, err := b.CreateToken(ctx, u.Name)
	require.NoError(t, err)
	user, t3, err := a.Authenticate(ctx, tok3)
	require.NoError(t, err)
	fresh, err := b.RefreshToken(ctx, user, t3)
	require.NoError(t, err)
	_, _, err = a.Authenticate(ctx, tok3)
	assert.ErrorIs(t, err, archive.ErrUnauthenticated, "a refreshed token is refused at once")
	_, _, err = a.Authenticate(ctx, fresh)
	assert.NoError(t, err)

	// Revoking every token of the account through a.
	_, _, err = b.Authenticate(ctx, fresh)
	require.NoError(t, err)
	_, err = a.RevokeTokens(ctx, user, 0)
	require.NoError(t, err)
	_, _, err = b.Authenticate(ctx, fresh)
	assert.ErrorIs(t, err, archive.ErrUnauthenticated)
}

func TestTokenCacheExpiry(t *testing.T) {
	ctx := context.Background()
	_, a, b, u, _ := twoArchives(t, archive.Config{SweepGrace: -1, TokenTTL: 2 * time.Second}) // stored to the second
	tok, err := a.CreateToken(ctx, u.Name)
	require.NoError(t, err)
	_, _, err = b.Authenticate(ctx, tok)
	require.NoError(t, err)
	time.Sleep(2100 * time.Millisecond)
	_, _, err = b.Authenticate(ctx, tok)
	assert.ErrorIs(t, err, archive.ErrUnauthenticated, "an expired token is refused though cached")
}

// After a re-ingestion (and an outline change) through one archive, the
// other never answers the previous product, although it cached the field,
// its products and their documents.
func TestProductCacheReingestionAcrossArchives(t *testing.T) {
	scene := testenv.DataDir(t, "s2", "flanders-31UES", "2019-06-20")
	ctx := context.Background()
	dir, a, b, u, feats := twoArchives(t, archive.Config{SweepGrace: -1})
	outline := func(i int) []byte {
		g, err := archive.EncodeGeometry(feats[i].Geometry)
		require.NoError(t, err)
		return []byte(g)
	}
	_, err := a.RegisterField(ctx, u, archive.FieldInput{Name: "F", Indices: []string{"ndvi"}, Geometry: outline(0)})
	require.NoError(t, err)
	_, err = a.Ingest(ctx, scene, archive.IngestOptions{})
	require.NoError(t, err)

	q := archive.ImageQuery{Field: "F", Index: "ndvi"}
	first, err := b.Image(ctx, u, q)
	require.NoError(t, err)
	doc1, err := b.ReportJSON(ctx, first)
	require.NoError(t, err)
	for range 3 { // cached
		again, err := b.Image(ctx, u, q)
		require.NoError(t, err)
		assert.Equal(t, first.Product, again.Product)
		d, err := b.ReportJSON(ctx, again)
		require.NoError(t, err)
		assert.Equal(t, doc1, d)
	}

	// a reshapes the field: its products are gone, at once, for b too.
	_, err = a.UpdateField(ctx, u, archive.FieldInput{Name: "F", Geometry: outline(1)})
	require.NoError(t, err)
	_, err = b.Image(ctx, u, q)
	assert.ErrorIs(t, err, archive.ErrNoImagery, "b answered the previous outline's product")

	// a ingests again: b answers the new product and its document.
	_, err = a.Ingest(ctx, scene, archive.IngestOptions{})
	require.NoError(t, err)
	second, err := b.Image(ctx, u, q)
	require.NoError(t, err)
	want, err := a.Store().Products(ctx, archive.ProductQuery{FieldID: second.Field.ID, Index: "ndvi", UsableOnly: true})
	require.NoError(t, err)
	require.Len(t, want, 1)
	assert.Equal(t, want[0], second.Product)
	assert.NotEqual(t, first.Product.Bundle, second.Product.Bundle)
	assert.NotEqual(t, first.Product.Mean, second.Product.Mean)
	doc2, err := b.ReportJSON(ctx, second)
	require.NoError(t, err)
	third, err := backend.Open(ctx, dir, false, archive.Config{SweepGrace: -1}) // nothing cached
	require.NoError(t, err)
	defer third.Close()
	fresh, err := third.ReportJSON(ctx, second)
	require.NoError(t, err)
	assert.Equal(t, fresh, doc2)
	assert.NotEqual(t, doc1, doc2)

	// Deleted through a: gone for b.
	require.NoError(t, a.DeleteField(ctx, u, "F"))
	_, err = b.Image(ctx, u, q)
	assert.ErrorIs(t, err, archive.ErrNotFound)
}

// On PostgreSQL too (two stores: two replicas), a revocation through one
// archive is refused at once by the other, which had the token cached.
func TestPostgresTokenCacheAcrossArchives(t *testing.T) {
	dsn := testenv.Postgres(t)
	ctx := context.Background()
	newArchive := func() *archive.Archive {
		st, err := store.OpenPostgres(ctx, dsn)
		require.NoError(t, err)
		t.Cleanup(func() { st.Close() })
		a, err := archive.New(archive.Config{Store: st, Blobs: blobs.Dir{Root: t.TempDir()}, TempDir: t.TempDir()})
		require.NoError(t, err)
		require.True(t, a.CachesReads())
		return a
	}
	a, b := newArchive(), newArchive()
	u, err := a.CreateUser(ctx, archive.NewUser{Name: "farmer"})
	require.NoError(t, err)
	tok, err := a.CreateToken(ctx, u.Name)
	require.NoError(t, err)
	for range 2 {
		_, _, err = b.Authenticate(ctx, tok)
		require.NoError(t, err)
	}
	_, err = a.RevokeTokens(ctx, u, 0)
	require.NoError(t, err)
	_, _, err = b.Authenticate(ctx, tok)
	assert.ErrorIs(t, err, archive.ErrUnauthenticated)
}
