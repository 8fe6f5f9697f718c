package store

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/webhook"
)

var testPoly = orb.MultiPolygon{{{{4.06, 50.74}, {4.07, 50.74}, {4.07, 50.75}, {4.06, 50.74}}}}

func openPG(t *testing.T, dsn string) archive.Store {
	t.Helper()
	st, err := OpenPostgres(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return st
}

// Four processes' worth of stores opening one empty database at once all
// succeed, and the schema is created once.
func TestPostgresConcurrentMigrations(t *testing.T) {
	dsn := testenv.Postgres(t)
	const n = 4
	stores := make([]archive.Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { stores[i], errs[i] = OpenPostgres(context.Background(), dsn) })
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i], "store %d", i)
		defer stores[i].Close()
	}
	db := stores[0].(*pgStore).db
	rows, err := db.Query(`SELECT component, version FROM cropkit_schema ORDER BY component`)
	require.NoError(t, err)
	defer rows.Close()
	got := map[string]int{}
	for rows.Next() {
		var c string
		var v int
		require.NoError(t, rows.Scan(&c, &v))
		got[c] = v
	}
	assert.Equal(t, map[string]int{"archive": len(pgMigrations), "webhook": 2}, got)
	// Reopening migrates nothing and keeps data.
	u, err := stores[1].CreateUser(context.Background(), archive.NewUser{Name: "u"}, "")
	require.NoError(t, err)
	again := openPG(t, dsn)
	u2, err := again.UserByName(context.Background(), "u")
	require.NoError(t, err)
	assert.Equal(t, u.ID, u2.ID)
}

// Two archives on one database registering the same field name at once:
// exactly one wins, the other gets ErrExists.
func TestPostgresFieldNameRace(t *testing.T) {
	ctx := context.Background()
	dsn := testenv.Postgres(t)
	a, b := openPG(t, dsn), openPG(t, dsn)
	u, err := a.CreateUser(ctx, archive.NewUser{Name: "u"}, "")
	require.NoError(t, err)
	for round := range 20 {
		name := fmt.Sprintf("f%d", round)
		var wg sync.WaitGroup
		var errA, errB error
		wg.Go(func() { _, errA = a.InsertField(ctx, archive.Field{OwnerID: u.ID, Name: name, Geometry: testPoly}, 0) })
		wg.Go(func() { _, errB = b.InsertField(ctx, archive.Field{OwnerID: u.ID, Name: name, Geometry: testPoly}, 0) })
		wg.Wait()
		if errA == nil {
			require.ErrorIs(t, errB, archive.ErrExists, "round %d", round)
		} else {
			require.ErrorIs(t, errA, archive.ErrExists, "round %d", round)
			require.NoError(t, errB, "round %d", round)
		}
	}
	fs, err := a.Fields(ctx, u.ID)
	require.NoError(t, err)
	assert.Len(t, fs, 20)
}

// The field quota holds when two archives insert concurrently.
func TestPostgresQuotaUnderConcurrency(t *testing.T) {
	ctx := context.Background()
	dsn := testenv.Postgres(t)
	stores := []archive.Store{openPG(t, dsn), openPG(t, dsn)}
	u, err := stores[0].CreateUser(ctx, archive.NewUser{Name: "u"}, "")
	require.NoError(t, err)
	const max, tries = 5, 24
	errs := make([]error, tries)
	var wg sync.WaitGroup
	for i := range tries {
		wg.Go(func() {
			_, errs[i] = stores[i%2].InsertField(ctx, archive.Field{OwnerID: u.ID, Name: fmt.Sprintf("f%d", i), Geometry: testPoly}, max)
		})
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
		} else {
			require.ErrorIs(t, err, archive.ErrQuota)
		}
	}
	assert.Equal(t, max, ok)
	fs, err := stores[1].Fields(ctx, u.ID)
	require.NoError(t, err)
	assert.Len(t, fs, max)
}

// The Store contract on PostgreSQL: users, tokens, fields, seasons,
// products with digests and notifications, scenes.
func TestPostgresStore(t *testing.T) {
	ctx := context.Background()
	st := openPG(t, testenv.Postgres(t))
	u, err := st.CreateUser(ctx, archive.NewUser{Name: "u", Indices: []string{"ndvi"}}, "hash")
	require.NoError(t, err)
	_, err = st.CreateUser(ctx, archive.NewUser{Name: "u"}, "")
	require.ErrorIs(t, err, archive.ErrExists)
	got, hash, err := st.PasswordHash(ctx, "u")
	require.NoError(t, err)
	assert.Equal(t, "hash", hash)
	assert.Equal(t, []string{"ndvi"}, got.Indices)
	n, err := st.CountUsers(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)

	now := time.Now()
	id, err := st.InsertToken(ctx, u.ID, "h1", now, now.Add(time.Hour))
	require.NoError(t, err)
	_, err = st.InsertToken(ctx, u.ID, "h2", now, time.Time{})
	require.NoError(t, err)
	tu, tok, err := st.UserByToken(ctx, "h1", now)
	require.NoError(t, err)
	assert.Equal(t, u.ID, tu.ID)
	assert.Equal(t, id, tok.ID)
	_, _, err = st.UserByToken(ctx, "h1", now.Add(2*time.Hour))
	require.ErrorIs(t, err, archive.ErrNotFound, "expired")
	toks, err := st.Tokens(ctx, u.ID)
	require.NoError(t, err)
	require.Len(t, toks, 2)
	assert.True(t, toks[1].Expires.IsZero())
	revoked, err := st.RevokeTokens(ctx, u.ID, id)
	require.NoError(t, err)
	assert.Equal(t, 1, revoked)

	f, err := st.InsertField(ctx, archive.Field{OwnerID: u.ID, Name: "f", Labels: map[string]string{"crop": "wheat"}, Indices: []string{"ndvi"}, Geometry: testPoly}, 0)
	require.NoError(t, err)
	assert.Equal(t, "u", f.Owner)
	assert.Equal(t, map[string]string{"crop": "wheat"}, f.Labels)
	sum, err := st.FieldSummary(ctx, u.ID, "f")
	require.NoError(t, err)
	assert.Equal(t, f.Bound, sum.Bound)
	in, err := st.FieldsIntersecting(ctx, orb.Bound{Min: orb.Point{4, 50}, Max: orb.Point{5, 51}})
	require.NoError(t, err)
	assert.Len(t, in, 1)
	require.NoError(t, st.UpdateSeasons(ctx, f.ID, func([]archive.Season) ([]archive.Season, error) {
		return []archive.Season{{StartDate: "2019-03-01", Record: []byte(`{"crop":"wheat"}`)}}, nil
	}))
	seasons, err := st.Seasons(ctx, f.ID)
	require.NoError(t, err)
	assert.Equal(t, []archive.Season{{StartDate: "2019-03-01", Record: []byte(`{"crop":"wheat"}`)}}, seasons)

	_, err = st.Webhooks().RegisterLimit(ctx, "u", "https://farm.example.com/hook", 0)
	require.NoError(t, err)
	record := func(digest string, mean float64) archive.RecordResult {
		p := archive.Product{FieldID: f.ID, Index: "ndvi", Date: "2019-06-20", Usable: true, Mean: mean, Bundle: "products/x-" + digest, Digest: digest, IngestedAt: time.Now()}
		res, err := st.RecordProducts(ctx, archive.ProductRecord{Field: f, Date: p.Date, Products: []archive.Product{p},
			Notify: func(changed []archive.Product, prev map[string]archive.Product) webhook.Payload {
				return archive.Notification(f, changed, prev)
			}})
		require.NoError(t, err)
		return res
	}
	assert.Equal(t, 1, record("aaa", 0.5).Notified, "first image")
	res := record("aaa", 0.5)
	assert.Equal(t, 0, res.Notified, "identical content")
	assert.Nil(t, res.Replaced)
	res = record("bbb", 0.6)
	assert.Equal(t, 1, res.Notified, "changed values")
	assert.Equal(t, []string{"products/x-aaa"}, res.Replaced)
	ps, err := st.Products(ctx, archive.ProductQuery{FieldID: f.ID, UsableOnly: true})
	require.NoError(t, err)
	require.Len(t, ps, 1)
	assert.InDelta(t, 0.6, ps[0].Mean, 1e-12)
	bundles, err := st.Bundles(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{"products/x-bbb": true}, bundles)
	ds, err := st.Webhooks().Deliveries(ctx, "u", 10)
	require.NoError(t, err)
	require.Len(t, ds, 2)
	assert.NotEqual(t, ds[0].MessageID, ds[1].MessageID)

	// A changed outline makes an ingestion of the old one fail.
	f2, dropped, err := st.UpdateField(ctx, f, true)
	require.NoError(t, err)
	assert.Equal(t, []string{"products/x-bbb"}, dropped)
	assert.Equal(t, f.Version+1, f2.Version)
	_, err = st.RecordProducts(ctx, archive.ProductRecord{Field: f, Date: "2019-06-21"})
	require.ErrorIs(t, err, archive.ErrFieldChanged)

	require.NoError(t, st.RecordScene(ctx, archive.SceneRecord{ID: "S2A_1", Source: "/scenes/1", Date: "2019-06-20", Bound: orb.Bound{Min: orb.Point{4, 50}, Max: orb.Point{5, 51}}}))
	scenes, err := st.ScenesIntersecting(ctx, orb.Bound{Min: orb.Point{4.5, 50.5}, Max: orb.Point{4.6, 50.6}}, "2019-06-01", "")
	require.NoError(t, err)
	require.Len(t, scenes, 1)
	assert.Equal(t, "/scenes/1", scenes[0].Source)
	require.NoError(t, st.DeleteField(ctx, f.ID))
	require.ErrorIs(t, st.DeleteField(ctx, f.ID), archive.ErrNotFound)
}

// Two archives recording the same field's date with the same content at
// once: the rows are written once and one notification is enqueued.
func TestPostgresRecordOnceAcrossStores(t *testing.T) {
	ctx := context.Background()
	dsn := testenv.Postgres(t)
	a, b := openPG(t, dsn), openPG(t, dsn)
	u, err := a.CreateUser(ctx, archive.NewUser{Name: "u"}, "")
	require.NoError(t, err)
	_, err = a.Webhooks().RegisterLimit(ctx, "u", "https://farm.example.com/hook", 0)
	require.NoError(t, err)
	f, err := a.InsertField(ctx, archive.Field{OwnerID: u.ID, Name: "f", Geometry: testPoly}, 0)
	require.NoError(t, err)
	const rounds = 10
	for r := range rounds {
		date := fmt.Sprintf("2019-06-%02d", r+1)
		var wg sync.WaitGroup
		res := make([]archive.RecordResult, 2)
		errs := make([]error, 2)
		for i, st := range []archive.Store{a, b} {
			wg.Go(func() {
				var ps []archive.Product
				for _, idx := range []string{"ndvi", "ndre"} {
					ps = append(ps, archive.Product{FieldID: f.ID, Index: idx, Date: date, Usable: true, Mean: 0.5,
						Bundle: fmt.Sprintf("products/%d/%s-%d.zip", f.ID, date, i), Digest: "same", IngestedAt: time.Now()})
				}
				res[i], errs[i] = st.RecordProducts(ctx, archive.ProductRecord{Field: f, Date: date, Products: ps,
					Notify: func(changed []archive.Product, prev map[string]archive.Product) webhook.Payload {
						return archive.Notification(f, changed, prev)
					}})
			})
		}
		wg.Wait()
		require.NoError(t, errs[0])
		require.NoError(t, errs[1])
		assert.Equal(t, 1, res[0].Notified+res[1].Notified, "round %d: one notification", r)
		// The loser's write replaced the winner's bundle, which it reports for deletion.
		assert.Equal(t, 1, len(res[0].Replaced)+len(res[1].Replaced), "round %d", r)
	}
	ds, err := a.Webhooks().Deliveries(ctx, "u", 100)
	require.NoError(t, err)
	assert.Len(t, ds, rounds)
	ps, err := b.Products(ctx, archive.ProductQuery{FieldID: f.ID})
	require.NoError(t, err)
	assert.Len(t, ps, 2*rounds)
}
