package client_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/client"
	"github.com/cropkit/cropkit/internal/testenv"
)

func TestZones(t *testing.T) {
	sceneRoot := testenv.DataDir(t, "s2", "flanders-31UES")
	admin, ann, _, _ := setup(t)
	ctx := context.Background()
	_, err := ann.RegisterField(ctx, client.FieldRequest{FieldName: "wheat", Geometry: fieldGeometry(t, "UES-03"), Indices: []string{"ndvi", "ndre"}})
	require.NoError(t, err)
	_, err = ann.RegisterField(ctx, client.FieldRequest{FieldName: "empty", Geometry: fieldGeometry(t, "UES-12")})
	require.NoError(t, err)
	for _, d := range []string{"2019-06-20", "2019-07-05"} {
		_, err := admin.IngestScene(ctx, filepath.Join(sceneRoot, d), "")
		require.NoError(t, err)
	}
	require.NoError(t, ann.DeleteField(ctx, "empty"))
	_, err = ann.RegisterField(ctx, client.FieldRequest{FieldName: "empty", Geometry: fieldGeometry(t, "UES-12")})
	require.NoError(t, err)

	// §4.1: the collection, typed.
	z, err := ann.VariableRateZones(ctx, client.VariableRateZonesRequest{
		FieldName: "wheat", NZones: 3, DstCRS: "32631",
		Layers: []client.Layer{{Type: "crop_health", Weight: 1, Index: "ndvi", Date: "2019-06-20"}},
	})
	require.NoError(t, err)
	require.NotNil(t, z.Collection)
	assert.Equal(t, "urn:ogc:def:crs:EPSG::32631", z.Collection.CRS.Properties.Name)
	require.NotEmpty(t, z.Collection.Features)
	zones := map[int]bool{}
	for _, f := range z.Collection.Features {
		assert.Equal(t, "Polygon", f.Geometry.Type)
		assert.Greater(t, f.Properties.Dose, 0.0)
		zones[f.Properties.Zone] = true
	}
	assert.True(t, zones[1] && zones[2], "zones numbered from 1: %v", zones)
	assert.Equal(t, "wheat_zones.geojson", z.File.Name)

	// Shapefile format: raw bytes.
	z, err = ann.VariableRateZones(ctx, client.VariableRateZonesRequest{
		FieldName: "wheat", NZones: 3, Format: "shapefile", Type: "seeding", Rates: client.Rates{BaseRate: 70000},
		Layers: []client.Layer{{Type: "crop_health", Weight: 1, Index: "ndvi", StartDate: "2019-06-01", EndDate: "2019-07-31"}},
	})
	require.NoError(t, err)
	assert.Nil(t, z.Collection)
	assert.Equal(t, "application/zip", z.File.ContentType)
	zr, err := zip.NewReader(bytes.NewReader(z.File.Data), int64(len(z.File.Data)))
	require.NoError(t, err)
	assert.Len(t, zr.File, 4)

	// §4.3 with the image date.
	p, err := ann.PrescriptionZones(ctx, client.PrescriptionZonesRequest{FieldName: "wheat", Type: "n_fertilizer", NZones: 3, Index: "ndvi", Date: "2019-06-21"})
	require.NoError(t, err)
	assert.Equal(t, "2019-06-20", p.File.Date)
	require.NotNil(t, p.Collection)
	assert.Equal(t, "urn:ogc:def:crs:EPSG::4326", p.Collection.CRS.Properties.Name)

	// Errors are typed.
	_, err = ann.PrescriptionZones(ctx, client.PrescriptionZonesRequest{FieldName: "wheat", Type: "seeding", NZones: 3, Index: "ndvi", Date: "2019-06-21"})
	assert.True(t, errors.Is(err, client.ErrBadRequest), "%v", err)
	_, err = ann.PrescriptionZones(ctx, client.PrescriptionZonesRequest{FieldName: "empty", Type: "seeding", NZones: 3, Index: "ndvi"})
	assert.True(t, errors.Is(err, client.ErrNotFound), "%v", err)
	var apiErr *client.APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, "no_imagery", apiErr.Code)
	_, err = ann.PrescriptionZones(ctx, client.PrescriptionZonesRequest{FieldName: "wheat", Type: "n_fertilizer", NZones: 3, Index: "ndwi"})
	assert.True(t, errors.Is(err, client.ErrForbidden), "%v", err)

	// Uploads: stored, listed, used by name.
	dir := testenv.DataDir(t, "shapefiles", "slovenia-raba-lulc")
	files := map[string][]byte{}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		files[e.Name()] = data
	}
	ul, err := ann.UploadFiles(ctx, "wheat", files)
	require.NoError(t, err)
	require.Len(t, ul.Uploads, 1)
	assert.Equal(t, "slovenia_raba_lulc.shp", ul.Uploads[0].Filename)
	assert.Equal(t, 32633, ul.Uploads[0].EPSG)
	assert.False(t, ul.Uploads[0].UploadedAt.IsZero())
	ul, err = ann.ListUploads(ctx, "wheat")
	require.NoError(t, err)
	require.Len(t, ul.Uploads, 1)
	// The Slovenian land use does not reach the Flemish field: 400 naming the layer.
	_, err = ann.VariableRateZones(ctx, client.VariableRateZonesRequest{FieldName: "wheat", NZones: 3, Layers: []client.Layer{
		{Type: "crop_health", Weight: 1, Index: "ndvi", Date: "2019-06-20"},
		{Type: "custom", Weight: 1, Filename: "slovenia_raba_lulc.shp", Attribute: "RABA_ID"}}})
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, 400, apiErr.StatusCode)
	assert.Contains(t, apiErr.Message, "RABA_ID")

	// Conversion of the collection to a shapefile.
	geo, err := json.Marshal(p.Collection)
	require.NoError(t, err)
	f, err := ann.ConvertGeoJSONToShapefile(ctx, geo)
	require.NoError(t, err)
	assert.Equal(t, "application/zip", f.ContentType)
	zr, err = zip.NewReader(bytes.NewReader(f.Data), int64(len(f.Data)))
	require.NoError(t, err)
	assert.Len(t, zr.File, 4)
}

// Zones from two weighted layers, one of them a soil shapefile sent with
// the request, clipped to a parcel, as a shapefile for a terminal.
func ExampleClient_VariableRateZones() {
	c, err := client.New("http://127.0.0.1:8080", client.WithToken(os.Getenv("CROPKIT_TOKEN")))
	if err != nil {
		return
	}
	files := map[string][]byte{}
	for _, ext := range []string{".shp", ".shx", ".dbf", ".prj"} {
		data, err := os.ReadFile("soil" + ext)
		if err != nil {
			return
		}
		files["soil"+ext] = data
	}
	z, err := c.VariableRateZones(context.Background(), client.VariableRateZonesRequest{
		FieldName: "north",
		NZones:    4,
		Layers: []client.Layer{
			{Type: "crop_health", Weight: 2, Index: "ndvi", StartDate: "2019-06-01", EndDate: "2019-07-31"},
			{Type: "custom", Weight: 1, Filename: "soil.shp", Attribute: "clay"},
		},
		ParcelGeoJSON: json.RawMessage(`{"type":"Polygon","coordinates":[[[4.0618,50.7451],[4.064,50.7451],[4.064,50.7465],[4.0618,50.7465],[4.0618,50.7451]]]}`),
		Files:         files,
		Format:        "shapefile",
	})
	if err != nil {
		return
	}
	_ = os.WriteFile(z.File.Name, z.File.Data, 0o644)
}
