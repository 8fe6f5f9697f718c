package client_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image/png"
	"io"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/client"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/geo/crs"
	"github.com/cropkit/cropkit/imagery"
	"github.com/cropkit/cropkit/imagery/geotiff"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/server"
	"github.com/cropkit/cropkit/server/servertest"
)

func ptr[T any](v T) *T { return &v }

// setup starts the real server handler (responses validated against the
// OpenAPI document) and returns clients for admin and a user "ann".
func setup(t *testing.T) (admin, ann *client.Client, env *servertest.Env, base string) {
	t.Helper()
	env = servertest.New(t, server.Config{MaxBodyBytes: 256 << 10})
	ts := httptest.NewServer(env.Handler)
	t.Cleanup(ts.Close)
	annTok := env.AddUser(t, "ann", []string{"ndvi", "ndre", "evi"})
	var err error
	admin, err = client.New(ts.URL, client.WithToken(env.AdminToken), client.WithHTTPClient(ts.Client()))
	require.NoError(t, err)
	ann, err = client.New(ts.URL+"/", client.WithToken(annTok))
	require.NoError(t, err)
	return admin, ann, env, ts.URL
}

func fieldGeometry(t *testing.T, name string) json.RawMessage {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.DataDir(t, "fields"), "flanders-31UES.geojson"))
	require.NoError(t, err)
	feats, err := geo.ReadFeatures(data)
	require.NoError(t, err)
	for _, f := range feats {
		if f.Name == name {
			b, err := json.Marshal(map[string]any{"type": "MultiPolygon", "coordinates": f.Geometry})
			require.NoError(t, err)
			return b
		}
	}
	t.Fatalf("no field %s", name)
	return nil
}

func TestClientEveryOperation(t *testing.T) {
	sceneRoot := testenv.DataDir(t, "s2", "flanders-31UES")
	admin, ann, env, _ := setup(t)
	ctx := context.Background()

	// Fields.
	f, err := ann.RegisterField(ctx, client.FieldRequest{FieldName: "wheat", Geometry: fieldGeometry(t, "UES-03"),
		Group: ptr("north"), Labels: map[string]string{"crop": "winter wheat"}})
	require.NoError(t, err)
	assert.Equal(t, "wheat", f.FieldName)
	assert.Equal(t, []string{"evi", "ndre", "ndvi"}, f.Indices, "default: every index ann may use")
	assert.Equal(t, "MultiPolygon", f.Geometry.Type)
	assert.InDelta(t, 4.06, f.BBox[0], 0.01)
	_, err = ann.RegisterField(ctx, client.FieldRequest{FieldName: "beet", Geometry: fieldGeometry(t, "UES-12"), Indices: []string{"ndvi"}})
	require.NoError(t, err)
	f, err = ann.UpdateField(ctx, client.FieldRequest{FieldName: "beet", Group: ptr("south"), Indices: []string{"ndvi", "ndre"}})
	require.NoError(t, err)
	assert.Equal(t, "south", f.Group)
	assert.Equal(t, []string{"ndvi", "ndre"}, f.Indices)
	list, err := ann.ListFields(ctx, "")
	require.NoError(t, err)
	require.Len(t, list, 2)
	list, err = ann.ListFields(ctx, "north")
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "wheat", list[0].FieldName)
	assert.Equal(t, map[string]string{"crop": "winter wheat"}, list[0].Labels)

	// Ingest: one scene by path, one uploaded.
	for _, d := range []string{"2019-06-20", "2019-06-25", "2019-07-05"} {
		res, err := admin.IngestScene(ctx, filepath.Join(sceneRoot, d), "")
		require.NoError(t, err)
		assert.Equal(t, d, res.Date)
		assert.Equal(t, 2, res.Fields)
	}
	bands := map[string]io.Reader{}
	for _, b := range []string{"B02", "B04", "B05", "B08", "SCL"} {
		fh, err := os.Open(filepath.Join(sceneRoot, "2019-05-16", b+".tif"))
		require.NoError(t, err)
		defer fh.Close()
		bands[b] = fh
	}
	res, err := admin.UploadScene(ctx, "2019-05-16", bands)
	require.NoError(t, err)
	assert.Equal(t, "2019-05-16", res.Date)
	assert.Equal(t, 5, res.Usable, "wheat: ndvi, ndre, evi; beet: ndvi, ndre")
	_, err = ann.IngestScene(ctx, sceneRoot, "")
	assert.ErrorIs(t, err, client.ErrForbidden)

	// Files.
	files, err := ann.ListFiles(ctx, client.ListFilesRequest{FieldName: "wheat"})
	require.NoError(t, err)
	var dates []string
	for _, e := range files.Indices["ndvi"] {
		dates = append(dates, e.Date)
	}
	assert.Equal(t, []string{"2019-05-16", "2019-06-20", "2019-07-05"}, dates, "2019-06-25 is cloudy")
	files, err = ann.ListFiles(ctx, client.ListFilesRequest{FieldName: "wheat", Index: "evi", StartDate: "2019-06-01", EndDate: "2019-06-30"})
	require.NoError(t, err)
	require.Len(t, files.Indices, 1)
	require.Len(t, files.Indices["evi"], 1)
	assert.Equal(t, "2019-06-20", files.Indices["evi"][0].Date)

	// Downloads: the cloudy date falls back to 2019-06-20.
	pngFile, err := ann.DownloadPNG(ctx, client.DownloadRequest{FieldName: "wheat", Date: "2019-06-25"})
	require.NoError(t, err)
	assert.Equal(t, "2019-06-20", pngFile.Date)
	assert.Equal(t, "wheat_ndvi_20190620.png", pngFile.Name)
	_, err = png.Decode(bytes.NewReader(pngFile.Data))
	require.NoError(t, err)
	rep, err := ann.DownloadReport(ctx, client.DownloadRequest{FieldName: "wheat", Index: "ndvi", Date: "2019-06-20"})
	require.NoError(t, err)
	assert.InDelta(t, 0.849754, rep.Mean, 1e-6)
	assert.Equal(t, 352, rep.Num)
	require.NotNil(t, rep.PreviousDate)
	prev, err := ann.DownloadReport(ctx, client.DownloadRequest{FieldName: "wheat", Index: "ndvi", Date: "2019-05-16"})
	require.NoError(t, err)
	assert.Nil(t, prev.PreviousDate, "first image")
	assert.Zero(t, prev.MeanVariation, "first image")
	assert.InDelta(t, imagery.MeanVariation(rep.Mean, prev.Mean), rep.MeanVariation, 1e-12)
	latest, err := ann.DownloadJSON(ctx, client.DownloadRequest{FieldName: "wheat", Index: "ndre"})
	require.NoError(t, err)
	assert.Equal(t, "2019-07-05", latest.Date)
	zf, err := ann.DownloadZip(ctx, client.DownloadRequest{FieldName: "beet", Index: "ndre", Date: "2019-07-01"})
	require.NoError(t, err)
	assert.Equal(t, "2019-07-05", zf.Date, "07-05 is 4 days away, 06-20 eleven")
	zr, err := zip.NewReader(bytes.NewReader(zf.Data), int64(len(zf.Data)))
	require.NoError(t, err)
	require.Len(t, zr.File, 2)
	assert.Equal(t, "beet_ndre_20190705.png", zr.File[0].Name)
	assert.Equal(t, "beet_ndre_20190705.json", zr.File[1].Name)

	// Value at the centre of the first clear pixel, and the raster.
	g := geotiffGrid(t, ann, "wheat")
	idx := slices.IndexFunc(rep.Values, func(v float64) bool { return !math.IsNaN(v) })
	c := g.PixelCenter(idx%g.Cols, idx/g.Cols)
	tr, err := crs.New(g.EPSG, 4326)
	require.NoError(t, err)
	lon, lat := tr.Transform(c[0], c[1])
	v, err := ann.Value(ctx, client.ValueRequest{FieldName: "wheat", Index: "ndvi", Lat: lat, Lon: lon, Date: "2019-06-20"})
	require.NoError(t, err)
	assert.Equal(t, "2019-06-20", v.Date)
	assert.Equal(t, float32(rep.Values[idx]), float32(v.Value))

	// Metadata.
	mr, err := ann.RegisterMetadata(ctx, client.MetadataRecord{FieldName: "wheat", StartDate: "2018-10-20", CropType: ptr("winter wheat"),
		HarvestDate: ptr("2019-07-29"), YieldAmount: ptr(9), YieldUnit: ptr("t/ha"), IsTilled: ptr(true), TillingType: ptr("plough")})
	require.NoError(t, err)
	assert.Equal(t, 1, mr.Seasons)
	mr, err = ann.RegisterMetadata(ctx, client.MetadataRecord{FieldName: "wheat", StartDate: "2019-08-15", CropType: ptr("mustard"), IsCoverCrop: ptr(true)})
	require.NoError(t, err)
	assert.Equal(t, 2, mr.Seasons)
	mr, err = ann.RegisterMetadata(ctx, client.MetadataRecord{FieldName: "wheat", StartDate: "2018-10-20", CropType: ptr("winter wheat"), HarvestDate: ptr("2019-07-31")})
	require.NoError(t, err)
	assert.Equal(t, 2, mr.Seasons)
	assert.Contains(t, mr.Message, "replaced")
	seasons, err := ann.ListMetadata(ctx, "wheat")
	require.NoError(t, err)
	require.Len(t, seasons, 2)
	assert.Equal(t, "2019-07-31", *seasons[0].HarvestDate)
	assert.Nil(t, seasons[0].YieldAmount, "a replaced season is replaced whole")
	assert.Equal(t, "mustard", *seasons[1].CropType)

	// Indices and login.
	ix, err := ann.Indices(ctx)
	require.NoError(t, err)
	var names []string
	for _, i := range ix {
		names = append(names, i.Name)
	}
	assert.Equal(t, []string{"evi", "ndre", "ndvi"}, names)

	// Typed errors.
	_, err = ann.DownloadPNG(ctx, client.DownloadRequest{FieldName: "nope"})
	var apiErr *client.APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, 404, apiErr.StatusCode)
	assert.Equal(t, "not_found", apiErr.Code)
	assert.Contains(t, apiErr.Message, "nope")
	assert.ErrorIs(t, err, client.ErrNotFound)
	_, err = ann.DownloadPNG(ctx, client.DownloadRequest{FieldName: "wheat", Index: "lai"})
	assert.ErrorIs(t, err, client.ErrForbidden)
	_, err = ann.DownloadPNG(ctx, client.DownloadRequest{FieldName: "wheat", Date: "2019-13-01"})
	assert.ErrorIs(t, err, client.ErrBadRequest)
	_, err = ann.RegisterField(ctx, client.FieldRequest{FieldName: "big", Geometry: json.RawMessage(`{"type":"Polygon","coordinates":[[` + strings.Repeat("[4.06,50.74],", 30000) + `[4.06,50.74]]]}`)})
	assert.ErrorIs(t, err, client.ErrTooLarge)
	assert.False(t, errors.Is(err, client.ErrNotFound))
	_, err = admin.Login(ctx, "admin", "wrong")
	assert.ErrorIs(t, err, client.ErrUnauthorized)

	// Deleting removes the field and its products.
	require.NoError(t, ann.DeleteField(ctx, "beet"))
	_, err = ann.DownloadJSON(ctx, client.DownloadRequest{FieldName: "beet"})
	assert.ErrorIs(t, err, client.ErrNotFound)
	require.Greater(t, env.Responses.N(), 25)
}

// geotiffGrid downloads a field's ndvi raster of 2019-06-20 and returns its grid.
func geotiffGrid(t *testing.T, c *client.Client, field string) geo.Grid {
	t.Helper()
	f, err := c.Raster(context.Background(), client.DownloadRequest{FieldName: field, Index: "ndvi", Date: "2019-06-20"})
	require.NoError(t, err)
	assert.Equal(t, "image/tiff", f.ContentType)
	tf, err := geotiff.Open(bytes.NewReader(f.Data))
	require.NoError(t, err)
	return tf.Grid()
}

func TestClientLoginAndNew(t *testing.T) {
	_, _, env, base := setup(t)
	ctx := context.Background()
	_, err := env.Archive.CreateUser(ctx, archive.NewUser{Name: "eve", Password: "s3cret pass"})
	require.NoError(t, err)
	anon, err := client.New(base)
	require.NoError(t, err)
	_, err = anon.ListFields(ctx, "")
	assert.ErrorIs(t, err, client.ErrUnauthorized)
	lr, err := anon.Login(ctx, "eve", "s3cret pass")
	require.NoError(t, err)
	assert.Equal(t, "eve", lr.Username)
	eve, err := client.New(base, client.WithToken(lr.Token))
	require.NoError(t, err)
	fields, err := eve.ListFields(ctx, "")
	require.NoError(t, err)
	assert.Empty(t, fields)

	for _, bad := range []string{"", "ftp://x", "http://", "::"} {
		_, err := client.New(bad)
		assert.Error(t, err, bad)
	}
}

func ExampleClient_DownloadReport() {
	c, err := client.New("http://127.0.0.1:8080", client.WithToken("TOKEN"))
	if err != nil {
		panic(err)
	}
	rep, err := c.DownloadReport(context.Background(), client.DownloadRequest{FieldName: "north", Index: "ndvi", Date: "2019-06-25"})
	if errors.Is(err, client.ErrNotFound) {
		return // no such field, or no usable image yet
	}
	if err != nil {
		panic(err)
	}
	_ = rep.Mean // and rep.Date: the date served (the closest usable one)
}

func TestClientTokensHistoryAndNames(t *testing.T) {
	sceneRoot := testenv.DataDir(t, "s2", "flanders-31UES")
	_, ann, env, _ := setup(t)
	ctx := context.Background()
	free, err := ann.FieldNameAvailable(ctx, "wheat2")
	require.NoError(t, err)
	assert.True(t, free)
	_, err = ann.RegisterField(ctx, client.FieldRequest{FieldName: "wheat2", Geometry: fieldGeometry(t, "UES-03"), Indices: []string{"ndvi"}})
	require.NoError(t, err)
	free, err = ann.FieldNameAvailable(ctx, "wheat2")
	require.NoError(t, err)
	assert.False(t, free)
	for _, d := range []string{"2019-05-16", "2019-06-20"} {
		_, err := env.Archive.Ingest(ctx, filepath.Join(sceneRoot, d), archive.IngestOptions{})
		require.NoError(t, err)
	}
	hist, err := ann.History(ctx, client.HistoryRequest{FieldName: "wheat2"})
	require.NoError(t, err)
	require.Len(t, hist["ndvi"], 2)
	assert.Nil(t, hist["ndvi"][0].PreviousDate)
	assert.Equal(t, "2019-05-16", *hist["ndvi"][1].PreviousDate)
	csvFile, err := ann.HistoryCSV(ctx, client.HistoryRequest{FieldName: "wheat2", StartDate: "2019-06-01"})
	require.NoError(t, err)
	assert.Equal(t, 2, strings.Count(string(csvFile.Data), "\n"), "header and one row")

	toks, err := ann.Tokens(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, toks)
	old := toks[len(toks)-1]
	_, err = ann.RefreshToken(ctx)
	require.NoError(t, err)
	toks, err = ann.Tokens(ctx)
	require.NoError(t, err)
	for _, tk := range toks {
		assert.NotEqual(t, old.ID, tk.ID, "the refreshed token is revoked")
	}
	n, err := ann.RevokeToken(ctx, 0, true)
	require.NoError(t, err)
	assert.Equal(t, len(toks), n)
	_, err = ann.Tokens(ctx)
	assert.ErrorIs(t, err, client.ErrUnauthorized)
	assert.ErrorIs(t, err, client.ErrForbidden)
}
