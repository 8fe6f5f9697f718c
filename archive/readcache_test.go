package archive

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/internal/testenv"
)

// A caller of freshness.current gets generations read after it called:
// every value a writer committed before the call is seen; concurrent
// callers share reads.
func TestFreshnessSeesEveryEarlierChange(t *testing.T) {
	var committed, reads atomic.Int64
	f := freshness{gap: 200 * time.Microsecond, read: func() (generations, error) {
		reads.Add(1)
		g := generations{data: committed.Load()}
		time.Sleep(100 * time.Microsecond) // a query's time
		return g, nil
	}}
	stop := make(chan struct{})
	var writer sync.WaitGroup
	writer.Add(1)
	go func() {
		defer writer.Done()
		for {
			select {
			case <-stop:
				return
			default:
				committed.Add(1)
				time.Sleep(50 * time.Microsecond)
			}
		}
	}()
	const callers, calls = 50, 40
	var stale atomic.Int64
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range calls {
				before := committed.Load()
				g, err := f.current(context.Background())
				if err != nil || g.data < before {
					stale.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	writer.Wait()
	assert.Zero(t, stale.Load(), "a call saw generations older than a change committed before it")
	assert.Less(t, reads.Load(), int64(callers*calls/4), "concurrent callers share reads")
}

// twoArchives opens two archives (two processes' worth: own caches) on one
// data directory and database, with a user and the demo fields' first
// outline registered through the first.
func twoArchives(t *testing.T, cfg Config) (a, b *Archive, u User, feats []geo.Feature) {
	t.Helper()
	dir := t.TempDir()
	ctx := context.Background()
	var err error
	a, err = Open(ctx, dir, true, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() })
	b, err = Open(ctx, dir, false, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	require.NotNil(t, a.cache)
	require.NotNil(t, b.cache)
	u, err = a.CreateUser(ctx, NewUser{Name: "farmer"})
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(testenv.DataDir(t, "fields"), "flanders-31UES.geojson"))
	require.NoError(t, err)
	feats, err = geo.ReadFeatures(data)
	require.NoError(t, err)
	return a, b, u, feats
}

// Revocation, refresh and expiry take effect at once, on every archive of
// the database, although each caches tokens.
func TestTokenCacheRevocationAcrossArchives(t *testing.T) {
	ctx := context.Background()
	a, b, u, _ := twoArchives(t, Config{SweepGrace: -1})

	tok, err := a.CreateToken(ctx, u.Name)
	require.NoError(t, err)
	for range 3 { // cached on both
		_, _, err = b.Authenticate(ctx, tok)
		require.NoError(t, err)
		_, _, err = a.Authenticate(ctx, tok)
		require.NoError(t, err)
	}
	_, cached := b.cache.tokens.get(tokenHash(tok))
	require.True(t, cached, "b keeps the token in memory")

	// The cache answers without the database: a row deleted behind the
	// archives' back (no generation bump) still authenticates...
	_, err = a.store.(*sqliteStore).db.ExecContext(ctx, `DELETE FROM tokens WHERE hash = ?`, tokenHash(tok))
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
	for _, arch := range []*Archive{b, a} {
		for _, tk := range []string{tok, tok2} {
			_, _, err = arch.Authenticate(ctx, tk)
			assert.ErrorIs(t, err, ErrUnauthenticated, "a revoked token is refused at once")
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
	assert.ErrorIs(t, err, ErrUnauthenticated, "a refreshed token is refused at once")
	_, _, err = a.Authenticate(ctx, fresh)
	assert.NoError(t, err)

	// Revoking every token of the account through a.
	_, _, err = b.Authenticate(ctx, fresh)
	require.NoError(t, err)
	_, err = a.RevokeTokens(ctx, user, 0)
	require.NoError(t, err)
	_, _, err = b.Authenticate(ctx, fresh)
	assert.ErrorIs(t, err, ErrUnauthenticated)
}

func TestTokenCacheExpiry(t *testing.T) {
	ctx := context.Background()
	a, b, u, _ := twoArchives(t, Config{SweepGrace: -1, TokenTTL: 2 * time.Second}) // stored to the second
	tok, err := a.CreateToken(ctx, u.Name)
	require.NoError(t, err)
	_, _, err = b.Authenticate(ctx, tok)
	require.NoError(t, err)
	time.Sleep(2100 * time.Millisecond)
	_, _, err = b.Authenticate(ctx, tok)
	assert.ErrorIs(t, err, ErrUnauthenticated, "an expired token is refused though cached")
}

// After a re-ingestion (and an outline change) through one archive, the
// other never answers the previous product, although it cached the field,
// its products and their documents.
func TestProductCacheReingestionAcrossArchives(t *testing.T) {
	scene := testenv.DataDir(t, "s2", "flanders-31UES", "2019-06-20")
	ctx := context.Background()
	a, b, u, feats := twoArchives(t, Config{SweepGrace: -1})
	outline := func(i int) []byte {
		g, err := EncodeGeometry(feats[i].Geometry)
		require.NoError(t, err)
		return []byte(g)
	}
	_, err := a.RegisterField(ctx, u, FieldInput{Name: "F", Indices: []string{"ndvi"}, Geometry: outline(0)})
	require.NoError(t, err)
	_, err = a.Ingest(ctx, scene, IngestOptions{})
	require.NoError(t, err)

	q := ImageQuery{Field: "F", Index: "ndvi"}
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
	_, err = a.UpdateField(ctx, u, FieldInput{Name: "F", Geometry: outline(1)})
	require.NoError(t, err)
	_, err = b.Image(ctx, u, q)
	assert.ErrorIs(t, err, ErrNoImagery, "b answered the previous outline's product")

	// a ingests again: b answers the new product and its document.
	_, err = a.Ingest(ctx, scene, IngestOptions{})
	require.NoError(t, err)
	second, err := b.Image(ctx, u, q)
	require.NoError(t, err)
	want, err := a.store.Products(ctx, ProductQuery{FieldID: second.Field.ID, Index: "ndvi", UsableOnly: true})
	require.NoError(t, err)
	require.Len(t, want, 1)
	assert.Equal(t, want[0], second.Product)
	assert.NotEqual(t, first.Product.Bundle, second.Product.Bundle)
	assert.NotEqual(t, first.Product.Mean, second.Product.Mean)
	doc2, err := b.ReportJSON(ctx, second)
	require.NoError(t, err)
	fresh, err := a.readFile(ctx, second, "json")
	require.NoError(t, err)
	assert.Equal(t, len(fresh), len(doc2))
	assert.NotEqual(t, doc1, doc2)

	// Deleted through a: gone for b.
	require.NoError(t, a.DeleteField(ctx, u, "F"))
	_, err = b.Image(ctx, u, q)
	assert.ErrorIs(t, err, ErrNotFound)
}

// On PostgreSQL too (two stores: two replicas), a revocation through one
// archive is refused at once by the other, which had the token cached.
func TestPostgresTokenCacheAcrossArchives(t *testing.T) {
	dsn := testenv.Postgres(t)
	ctx := context.Background()
	newArchive := func() *Archive {
		a, err := New(Config{Store: openPG(t, dsn), Blobs: DirBlobs{Root: t.TempDir()}, TempDir: t.TempDir()})
		require.NoError(t, err)
		require.NotNil(t, a.cache)
		return a
	}
	a, b := newArchive(), newArchive()
	u, err := a.CreateUser(ctx, NewUser{Name: "farmer"})
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
	assert.ErrorIs(t, err, ErrUnauthenticated)
}
