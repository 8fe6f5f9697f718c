package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
)

// openTest opens (creating it) the SQLite store of the data directory dir.
func openTest(t *testing.T, dir string) archive.Store {
	t.Helper()
	st, err := OpenSQLite(context.Background(), filepath.Join(dir, DBFile), true)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return st
}

// A write refused with SQLITE_BUSY (another process holding the lock past
// the busy timeout) is ErrBusy.
func TestBusyIsErrBusy(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	openTest(t, dir)
	other, err := sql.Open("sqlite", "file:"+filepath.Join(dir, DBFile)+"?_pragma=busy_timeout(0)")
	require.NoError(t, err)
	defer other.Close()
	conn, err := other.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(ctx, `BEGIN IMMEDIATE`)
	require.NoError(t, err)
	defer conn.ExecContext(ctx, `ROLLBACK`)

	impatient, err := sql.Open("sqlite", "file:"+filepath.Join(dir, DBFile)+"?_pragma=busy_timeout(0)")
	require.NoError(t, err)
	defer impatient.Close()
	_, err = impatient.ExecContext(ctx, `INSERT INTO users (name, created_at) VALUES ('x', 'now')`)
	require.Error(t, err)
	assert.ErrorIs(t, dbError("insert", err), archive.ErrBusy)
	assert.NotErrorIs(t, dbError("query", sql.ErrNoRows), archive.ErrBusy)
}

// Writers of one process queue on the single writer connection instead of
// failing: many concurrent read-modify-write transactions all succeed.
func TestConcurrentWritersDoNotFail(t *testing.T) {
	ctx := context.Background()
	st := openTest(t, t.TempDir())
	u, err := st.CreateUser(ctx, archive.NewUser{Name: "u"}, "")
	require.NoError(t, err)
	poly := orb.MultiPolygon{{{{4.06, 50.74}, {4.07, 50.74}, {4.07, 50.75}, {4.06, 50.74}}}}
	f, err := st.InsertField(ctx, archive.Field{OwnerID: u.ID, Name: "f", Indices: []string{"ndvi"}, Geometry: poly}, 0)
	require.NoError(t, err)
	const writers, rounds = 32, 20
	errs := make(chan error, writers*rounds)
	for w := range writers {
		go func() {
			for i := range rounds {
				name := fmt.Sprintf("g%d-%d", w, i)
				_, err := st.InsertField(ctx, archive.Field{OwnerID: u.ID, Name: name, Indices: []string{"ndvi"}, Geometry: poly}, 0)
				if err == nil {
					err = st.UpdateSeasons(ctx, f.ID, func(cur []archive.Season) ([]archive.Season, error) {
						return append(cur, archive.Season{StartDate: name, Record: []byte(`{}`)}), nil
					})
				}
				errs <- err
			}
		}()
	}
	for range writers * rounds {
		require.NoError(t, <-errs)
	}
	seasons, err := st.Seasons(ctx, f.ID)
	require.NoError(t, err)
	assert.Len(t, seasons, writers*rounds, "no lost update")
}

// A version-1 database keeps its fields, seasons and products through the
// rebuild of the fields table, and ids are not reused afterwards.
func TestMigrateV1KeepsData(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "products"), 0o755))
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, DBFile)+"?_pragma=foreign_keys(1)")
	require.NoError(t, err)
	for _, q := range []string{
		migrations[0],
		`PRAGMA user_version = 1`,
		`INSERT INTO users (id, name, created_at) VALUES (1, 'u', 't')`,
		`INSERT INTO fields (id, user_id, name, indices, geometry, min_lon, min_lat, max_lon, max_lat, created_at, updated_at)
		 VALUES (1, 1, 'a', ',ndvi', '{"type":"MultiPolygon","coordinates":[[[[4.06,50.74],[4.07,50.74],[4.07,50.75],[4.06,50.74]]]]}', 4.06, 50.74, 4.07, 50.75, 't', 't'),
		        (2, 1, 'b', ',ndvi', '{"type":"MultiPolygon","coordinates":[[[[4.06,50.74],[4.07,50.74],[4.07,50.75],[4.06,50.74]]]]}', 4.06, 50.74, 4.07, 50.75, 't', 't')`,
		`INSERT INTO seasons (field_id, start_date, record) VALUES (1, '2019-01-01', '{}')`,
		`INSERT INTO products (field_id, idx, date, scene_id, usable, cloud_cover, num, field_pixels, epsg, x0, y0, dx, dy, cols, rows, ingested_at)
		 VALUES (1, 'ndvi', '2019-06-20', 's', 1, 0, 1, 1, 32631, 0, 0, 10, -10, 1, 1, 't')`,
	} {
		_, err := db.ExecContext(ctx, q)
		require.NoError(t, err, q)
	}
	require.NoError(t, db.Close())

	st := openTest(t, dir)
	f, err := st.FieldByName(ctx, 1, "a")
	require.NoError(t, err)
	assert.Equal(t, int64(1), f.ID)
	seasons, err := st.Seasons(ctx, 1)
	require.NoError(t, err)
	assert.Len(t, seasons, 1)
	ps, err := st.Products(ctx, archive.ProductQuery{FieldID: 1})
	require.NoError(t, err)
	assert.Len(t, ps, 1)
	b, err := st.FieldByName(ctx, 1, "b")
	require.NoError(t, err)
	require.NoError(t, st.DeleteField(ctx, b.ID))
	c, err := st.InsertField(ctx, archive.Field{OwnerID: 1, Name: "c", Indices: []string{"ndvi"}, Geometry: f.Geometry}, 0)
	require.NoError(t, err)
	assert.Equal(t, int64(3), c.ID, "id 2 is not reused")
	// Foreign keys are on again: deleting a field cascades.
	require.NoError(t, st.DeleteField(ctx, f.ID))
	seasons, err = st.Seasons(ctx, 1)
	require.NoError(t, err)
	assert.Empty(t, seasons)
}
