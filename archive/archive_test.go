package archive_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/archive/backend"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/imagery"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/webhook"
)

func openTest(t *testing.T, dir string) *archive.Archive {
	t.Helper()
	a, err := backend.Open(context.Background(), dir, true, archive.Config{SweepGrace: -1})
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() })
	return a
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
	st := srv.Store()
	u, err := st.CreateUser(ctx, archive.NewUser{Name: "u"}, "")
	require.NoError(t, err)
	var fields []archive.Field
	for i, ft := range feats[:3] {
		f, err := st.InsertField(ctx, archive.Field{OwnerID: u.ID, Name: "f" + string(rune('0'+i)), Indices: []string{"ndvi", "ndre"}, Geometry: ft.Geometry}, 0)
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
		_, err := srv.IngestFieldSafe(ctx, scene, scene.Bands(), f)
		assert.ErrorIs(t, err, archive.ErrFieldChanged, f.Name)
		ps, err := st.Products(ctx, archive.ProductQuery{FieldID: f.ID})
		require.NoError(t, err)
		assert.Empty(t, ps, f.Name)
		entries, _ := os.ReadDir(filepath.Join(dir, "products", fmt.Sprint(f.ID)))
		assert.Empty(t, entries, "no bundle left for %s", f.Name)
	}

	out, err := srv.IngestFieldSafe(ctx, scene, scene.Bands(), fields[2])
	require.NoError(t, err)
	assert.Equal(t, 2, out.Usable+out.Unusable)
	ps, err := st.Products(ctx, archive.ProductQuery{FieldID: fields[2].ID})
	require.NoError(t, err)
	assert.Len(t, ps, 2)

	// A new field never takes the deleted one's id (nor its files).
	f, err := st.InsertField(ctx, archive.Field{OwnerID: u.ID, Name: "new", Indices: []string{"ndvi"}, Geometry: feats[0].Geometry}, 0)
	require.NoError(t, err)
	assert.Greater(t, f.ID, fields[2].ID)

	// Same outline again: not a change, the products stay.
	same, err := st.FieldByName(ctx, u.ID, fields[2].Name)
	require.NoError(t, err)
	assert.True(t, archive.SameGeometry(same.Geometry, fields[2].Geometry))
	assert.False(t, archive.SameGeometry(same.Geometry, fields[0].Geometry))
}

// A panic while ingesting one field is that field's error.
func TestIngestFieldPanicIsFieldError(t *testing.T) {
	ctx := context.Background()
	srv := openTest(t, t.TempDir())
	// A nil scene makes ingestField panic once it needs the scene.
	_, err := srv.IngestFieldSafe(ctx, nil, []string{"B04", "B08"}, archive.Field{Name: "f", Indices: []string{"ndvi"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "internal error")
}

func TestClosestDate(t *testing.T) {
	ps := []archive.Product{{Date: "2019-04-01"}, {Date: "2019-04-21"}, {Date: "2019-05-16"}}
	for _, tc := range []struct {
		date string
		want int
	}{
		{"", 2}, {"2019-04-21", 1}, {"2019-04-11", 0}, {"2019-04-12", 1}, {"2018-01-01", 0}, {"2020-01-01", 2}, {"2019-05-03", 1}, {"2019-05-04", 2},
		// Beyond a time.Duration's ±292 years: still the latest / the earliest.
		{"2311-06-01", 2}, {"2312-01-01", 2}, {"9999-12-31", 2}, {"0001-01-01", 0}, {"1500-06-01", 0},
	} {
		assert.Equal(t, tc.want, archive.ClosestDate(ps, tc.date), tc.date)
	}
}

// Recording the same content again notifies nobody; changed values notify.
func TestRecordNotifiesChangedOnly(t *testing.T) {
	ctx := context.Background()
	a := openTest(t, t.TempDir())
	u, err := a.CreateUser(ctx, archive.NewUser{Name: "u"})
	require.NoError(t, err)
	_, err = a.RegisterWebhook(ctx, u, "https://farm.example.com/hook")
	require.NoError(t, err)
	poly := orb.MultiPolygon{{{{4.06, 50.74}, {4.07, 50.74}, {4.07, 50.75}, {4.06, 50.74}}}}
	f, err := a.Store().InsertField(ctx, archive.Field{OwnerID: u.ID, Name: "f", Indices: []string{"ndvi"}, Geometry: poly}, 0)
	require.NoError(t, err)
	record := func(digest string, mean float64) archive.RecordResult {
		p := archive.Product{FieldID: f.ID, Index: "ndvi", Date: "2019-06-20", Usable: true, Mean: mean, Bundle: "products/x-" + digest, Digest: digest, IngestedAt: time.Now()}
		res, err := a.Store().RecordProducts(ctx, archive.ProductRecord{Field: f, Date: p.Date, Products: []archive.Product{p},
			Notify: func(changed []archive.Product, prev map[string]archive.Product) webhook.Payload {
				return archive.Notification(f, changed, prev)
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
