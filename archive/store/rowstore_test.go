package store

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/internal/testenv"
)

// eachStore runs test on a new SQLite store and a new PostgreSQL store
// (where testenv can start one): the flows of rowStore are written once and
// must answer alike on both.
func eachStore(t *testing.T, test func(t *testing.T, st archive.Store)) {
	t.Run("sqlite", func(t *testing.T) {
		st, err := OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "cropkit.db"), true)
		require.NoError(t, err)
		t.Cleanup(func() { st.Close() })
		test(t, st)
	})
	t.Run("postgres", func(t *testing.T) { test(t, openPG(t, testenv.Postgres(t))) })
}

func TestDBTimeScan(t *testing.T) {
	at := time.Date(2026, 5, 1, 10, 11, 12, 345000000, time.UTC)
	for _, c := range []struct {
		name string
		src  any
		want time.Time
	}{
		{"NULL", nil, time.Time{}},
		{"RFC 3339 text", "2026-05-01T10:11:12Z", at.Truncate(time.Second)},
		{"with fraction", []byte("2026-05-01T10:11:12.345Z"), at},
		{"offset to UTC", "2026-05-01T12:11:12.345+02:00", at},
		{"timestamp", at.In(time.FixedZone("CEST", 7200)), at},
		{"legacy text", "t", time.Time{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := time.Unix(1, 0)
			require.NoError(t, dbTime{&got}.Scan(c.src))
			assert.True(t, c.want.Equal(got), "got %v", got)
			assert.Equal(t, time.UTC, got.Location())
		})
	}
	var got time.Time
	require.Error(t, dbTime{&got}.Scan(42))
}

// Times are stored to the second (acquisitions to the microsecond), read in
// UTC; names order bytewise; a token past its expiry is not found.
func TestRowStoreTimesAndOrder(t *testing.T) {
	eachStore(t, func(t *testing.T, st archive.Store) {
		ctx := context.Background()
		b, err := st.CreateUser(ctx, archive.NewUser{Name: "b"}, "")
		require.NoError(t, err)
		a, err := st.CreateUser(ctx, archive.NewUser{Name: "a", Admin: true, Indices: []string{"ndvi"}}, "hash")
		require.NoError(t, err)
		_, err = st.CreateUser(ctx, archive.NewUser{Name: "a"}, "")
		require.ErrorIs(t, err, archive.ErrExists)

		created := time.Date(2026, 5, 1, 12, 0, 0, 700000000, time.FixedZone("CEST", 7200))
		expires := created.Add(time.Hour)
		id, err := st.InsertToken(ctx, a.ID, "h1", created, expires)
		require.NoError(t, err)
		_, err = st.InsertToken(ctx, a.ID, "h2", created, time.Time{})
		require.NoError(t, err)
		toks, err := st.Tokens(ctx, a.ID)
		require.NoError(t, err)
		require.Len(t, toks, 2)
		assert.Equal(t, id, toks[0].ID)
		assert.Equal(t, time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC), toks[0].Created)
		assert.Equal(t, time.Date(2026, 5, 1, 11, 0, 0, 0, time.UTC), toks[0].Expires)
		assert.True(t, toks[1].Expires.IsZero(), "never expires")
		u, tok, err := st.UserByToken(ctx, "h1", expires.Add(-time.Minute))
		require.NoError(t, err)
		assert.Equal(t, a, u)
		assert.Equal(t, toks[0].Created, tok.Created)
		_, _, err = st.UserByToken(ctx, "h1", expires)
		require.ErrorIs(t, err, archive.ErrNotFound)
		n, err := st.RevokeTokens(ctx, a.ID, id)
		require.NoError(t, err)
		assert.Equal(t, 1, n)

		for _, f := range []archive.Field{{OwnerID: b.ID, Name: "x"}, {OwnerID: a.ID, Name: "a"}, {OwnerID: a.ID, Name: "Z"}} {
			f.Geometry = testPoly
			got, err := st.InsertField(ctx, f, 0)
			require.NoError(t, err)
			assert.Equal(t, time.UTC, got.Created.Location())
			assert.WithinDuration(t, time.Now(), got.Created, time.Minute)
		}
		fields, err := st.Fields(ctx, 0)
		require.NoError(t, err)
		var names []string
		for _, f := range fields {
			names = append(names, f.Owner+"/"+f.Name)
		}
		assert.Equal(t, []string{"a/Z", "a/a", "b/x"}, names)

		dt := time.Date(2026, 5, 1, 10, 56, 29, 24123000, time.UTC)
		require.NoError(t, st.RecordItem(ctx, archive.SceneItem{Collection: "s2", ID: "i1", Datetime: dt, State: archive.ItemIngested,
			IngestedAt: dt, Fields: map[int64]int64{fields[0].ID: 0}}))
		it, err := st.SceneItem(ctx, "s2", "i1")
		require.NoError(t, err)
		assert.Equal(t, dt, it.Datetime)
		assert.Equal(t, map[int64]int64{fields[0].ID: 0}, it.Fields)
		newest, err := st.NewestItem(ctx, "s2")
		require.NoError(t, err)
		assert.Equal(t, dt, newest)
		newest, err = st.NewestItem(ctx, "none")
		require.NoError(t, err)
		assert.True(t, newest.IsZero())
	})
}

// Rows that are gone are ErrNotFound on both databases, including the
// owner of a new field and the field of a seasons update.
func TestRowStoreMissingRows(t *testing.T) {
	eachStore(t, func(t *testing.T, st archive.Store) {
		ctx := context.Background()
		_, err := st.InsertField(ctx, archive.Field{OwnerID: 99, Name: "f", Geometry: testPoly}, 0)
		require.ErrorIs(t, err, archive.ErrNotFound)
		err = st.UpdateSeasons(ctx, 99, func(s []archive.Season) ([]archive.Season, error) {
			return append(s, archive.Season{StartDate: "2026-03-01", Record: json.RawMessage(`{}`)}), nil
		})
		require.ErrorIs(t, err, archive.ErrNotFound)
		require.ErrorIs(t, st.DeleteField(ctx, 99), archive.ErrNotFound)
		_, err = st.FieldByID(ctx, 99)
		require.ErrorIs(t, err, archive.ErrNotFound)
		_, err = st.SceneItem(ctx, "s2", "none")
		require.ErrorIs(t, err, archive.ErrNotFound)
	})
}
