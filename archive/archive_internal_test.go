package archive

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/imagery"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/webhook"
)

func openTest(t *testing.T, dir string) *Archive {
	t.Helper()
	a, err := Open(context.Background(), dir, true, Config{SweepGrace: -1})
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() })
	return a
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
	assert.ErrorIs(t, dbError("insert", err), ErrBusy)
	assert.NotErrorIs(t, dbError("query", sql.ErrNoRows), ErrBusy)
}

// Writers of one process queue on the single writer connection instead of
// failing: many concurrent read-modify-write transactions all succeed.
func TestConcurrentWritersDoNotFail(t *testing.T) {
	ctx := context.Background()
	st := openTest(t, t.TempDir()).store
	u, err := st.CreateUser(ctx, NewUser{Name: "u"}, "")
	require.NoError(t, err)
	poly := orb.MultiPolygon{{{{4.06, 50.74}, {4.07, 50.74}, {4.07, 50.75}, {4.06, 50.74}}}}
	f, err := st.InsertField(ctx, Field{OwnerID: u.ID, Name: "f", Indices: []string{"ndvi"}, Geometry: poly}, 0)
	require.NoError(t, err)
	const writers, rounds = 32, 20
	errs := make(chan error, writers*rounds)
	for w := range writers {
		go func() {
			for i := range rounds {
				name := fmt.Sprintf("g%d-%d", w, i)
				_, err := st.InsertField(ctx, Field{OwnerID: u.ID, Name: name, Indices: []string{"ndvi"}, Geometry: poly}, 0)
				if err == nil {
					err = st.UpdateSeasons(ctx, f.ID, func(cur []Season) ([]Season, error) {
						return append(cur, Season{StartDate: name, Record: []byte(`{}`)}), nil
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

// A field deleted, or reshaped, while ingestion processed its old outline
// gets no products and leaves no files; the others are stored.
func TestIngestFieldChangedMeanwhile(t *testing.T) {
	sceneDir := testenv.DataDir(t, "s2", "flanders-31UES", "2019-06-20")
	data, err := os.ReadFile(filepath.Join(testenv.DataDir(t, "fields"), "flanders-31UES.geojson"))
	require.NoError(t, err)
	feats, err := geo.ReadFeatures(data)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(feats), 3)
	ctx := context.Background()
	dir := t.TempDir()
	srv := openTest(t, dir)
	st := srv.store
	u, err := st.CreateUser(ctx, NewUser{Name: "u"}, "")
	require.NoError(t, err)
	var fields []Field
	for i, ft := range feats[:3] {
		f, err := st.InsertField(ctx, Field{OwnerID: u.ID, Name: "f" + string(rune('0'+i)), Indices: []string{"ndvi", "ndre"}, Geometry: ft.Geometry}, 0)
		require.NoError(t, err)
		fields = append(fields, f)
	}
	scene, err := imagery.OpenScene(ctx, sceneDir, imagery.SceneOptions{})
	require.NoError(t, err)
	defer scene.Close()

	// fields[0] is reshaped after ingestion read it, fields[1] deleted.
	reshaped := fields[0]
	reshaped.Geometry = fields[2].Geometry
	_, _, err = st.UpdateField(ctx, reshaped, true)
	require.NoError(t, err)
	require.NoError(t, st.DeleteField(ctx, fields[1].ID))

	for _, f := range fields[:2] {
		_, err := srv.ingestFieldSafe(ctx, scene, scene.Bands(), f)
		assert.ErrorIs(t, err, ErrFieldChanged, f.Name)
		ps, err := st.Products(ctx, ProductQuery{FieldID: f.ID})
		require.NoError(t, err)
		assert.Empty(t, ps, f.Name)
		entries, _ := os.ReadDir(filepath.Join(dir, "products", fmt.Sprint(f.ID)))
		assert.Empty(t, entries, "no bundle left for %s", f.Name)
	}

	out, err := srv.ingestFieldSafe(ctx, scene, scene.Bands(), fields[2])
	require.NoError(t, err)
	assert.Equal(t, 2, out.usable+out.unusable)
	ps, err := st.Products(ctx, ProductQuery{FieldID: fields[2].ID})
	require.NoError(t, err)
	assert.Len(t, ps, 2)

	// A new field never takes the deleted one's id (nor its files).
	f, err := st.InsertField(ctx, Field{OwnerID: u.ID, Name: "new", Indices: []string{"ndvi"}, Geometry: feats[0].Geometry}, 0)
	require.NoError(t, err)
	assert.Greater(t, f.ID, fields[2].ID)

	// Same outline again: not a change, the products stay.
	same, err := st.FieldByName(ctx, u.ID, fields[2].Name)
	require.NoError(t, err)
	assert.True(t, sameGeometry(same.Geometry, fields[2].Geometry))
	assert.False(t, sameGeometry(same.Geometry, fields[0].Geometry))
}

// A panic while ingesting one field is that field's error.
func TestIngestFieldPanicIsFieldError(t *testing.T) {
	ctx := context.Background()
	srv := openTest(t, t.TempDir())
	// A nil scene makes ingestField panic once it needs the scene.
	_, err := srv.ingestFieldSafe(ctx, nil, []string{"B04", "B08"}, Field{Name: "f", Indices: []string{"ndvi"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "internal error")
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

	st := openTest(t, dir).store
	f, err := st.FieldByName(ctx, 1, "a")
	require.NoError(t, err)
	assert.Equal(t, int64(1), f.ID)
	seasons, err := st.Seasons(ctx, 1)
	require.NoError(t, err)
	assert.Len(t, seasons, 1)
	ps, err := st.Products(ctx, ProductQuery{FieldID: 1})
	require.NoError(t, err)
	assert.Len(t, ps, 1)
	b, err := st.FieldByName(ctx, 1, "b")
	require.NoError(t, err)
	require.NoError(t, st.DeleteField(ctx, b.ID))
	c, err := st.InsertField(ctx, Field{OwnerID: 1, Name: "c", Indices: []string{"ndvi"}, Geometry: f.Geometry}, 0)
	require.NoError(t, err)
	assert.Equal(t, int64(3), c.ID, "id 2 is not reused")
	// Foreign keys are on again: deleting a field cascades.
	require.NoError(t, st.DeleteField(ctx, f.ID))
	seasons, err = st.Seasons(ctx, 1)
	require.NoError(t, err)
	assert.Empty(t, seasons)
}

func TestClosestDate(t *testing.T) {
	ps := []Product{{Date: "2019-04-01"}, {Date: "2019-04-21"}, {Date: "2019-05-16"}}
	for _, tc := range []struct {
		date string
		want int
	}{
		{"", 2}, {"2019-04-21", 1}, {"2019-04-11", 0}, {"2019-04-12", 1}, {"2018-01-01", 0}, {"2020-01-01", 2}, {"2019-05-03", 1}, {"2019-05-04", 2},
		// Beyond a time.Duration's ±292 years: still the latest / the earliest.
		{"2311-06-01", 2}, {"2312-01-01", 2}, {"9999-12-31", 2}, {"0001-01-01", 0}, {"1500-06-01", 0},
	} {
		assert.Equal(t, tc.want, ClosestDate(ps, tc.date), tc.date)
	}
}

// Recording the same content again notifies nobody; changed values notify.
func TestRecordNotifiesChangedOnly(t *testing.T) {
	ctx := context.Background()
	a := openTest(t, t.TempDir())
	u, err := a.CreateUser(ctx, NewUser{Name: "u"})
	require.NoError(t, err)
	_, err = a.RegisterWebhook(ctx, u, "https://farm.example.com/hook")
	require.NoError(t, err)
	poly := orb.MultiPolygon{{{{4.06, 50.74}, {4.07, 50.74}, {4.07, 50.75}, {4.06, 50.74}}}}
	f, err := a.store.InsertField(ctx, Field{OwnerID: u.ID, Name: "f", Indices: []string{"ndvi"}, Geometry: poly}, 0)
	require.NoError(t, err)
	record := func(digest string, mean float64) RecordResult {
		p := Product{FieldID: f.ID, Index: "ndvi", Date: "2019-06-20", Usable: true, Mean: mean, Bundle: "products/x-" + digest, Digest: digest, IngestedAt: time.Now()}
		res, err := a.store.RecordProducts(ctx, ProductRecord{Field: f, Date: p.Date, Products: []Product{p},
			Notify: func(changed []Product, prev map[string]Product) webhook.Payload {
				return notification(f, changed, prev)
			}})
		require.NoError(t, err)
		return res
	}
	assert.Equal(t, 1, record("aaa", 0.5).Notified, "first image")
	res := record("aaa", 0.5)
	assert.Equal(t, 0, res.Notified, "identical content")
	assert.Equal(t, []string(nil), res.Replaced, "same bundle still referenced")
	res = record("bbb", 0.6)
	assert.Equal(t, 1, res.Notified, "changed values")
	assert.Equal(t, []string{"products/x-aaa"}, res.Replaced)
	ds, err := a.Deliveries(ctx, u, 10)
	require.NoError(t, err)
	assert.Len(t, ds, 2)
}

// Scene uploads being received live in DATA/tmp; what a crash left there,
// and temporary or unreferenced files, are gone after a restart.
func TestOpenCleansLeftovers(t *testing.T) {
	dir := t.TempDir()
	a := openTest(t, dir)
	require.NoError(t, a.Close())
	leftovers := []string{
		filepath.Join(dir, "tmp", "upload-123", "upload", "B04.tif"),
		filepath.Join(dir, "products", "7", ".tmp-2019-06-20-abc.zip123"),
		filepath.Join(dir, "products", "7", "2019-06-20-0123456789ab.zip"), // no row references it
		filepath.Join(dir, "uploads", "7", "v0", "soil.shp.zip"),           // no such field
	}
	for _, p := range leftovers {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("x"), 0o644))
	}
	b := openTest(t, dir)
	_, err := b.Sweep(context.Background())
	require.NoError(t, err)
	for _, p := range leftovers {
		assert.NoFileExists(t, p)
	}
}
