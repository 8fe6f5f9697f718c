package main

import (
	"bytes"
	"context"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/internal/demodata"
	"github.com/cropkit/cropkit/server"
	"github.com/cropkit/cropkit/server/servertest"
)

func TestRunOnBundledSample(t *testing.T) {
	var out, log bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-field", "UES-03", "-zones", "3"}, &out, &log))

	var fc struct {
		Type string `json:"type"`
		CRS  struct {
			Properties struct{ Name string } `json:"properties"`
		} `json:"crs"`
		Features []struct {
			Properties struct {
				ZONE       int
				DOSE       float64
				RASTER_VAL float64
			} `json:"properties"`
		} `json:"features"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &fc))
	assert.Equal(t, "FeatureCollection", fc.Type)
	assert.Equal(t, "urn:ogc:def:crs:EPSG::4326", fc.CRS.Properties.Name)
	require.NotEmpty(t, fc.Features)
	zones := map[int]float64{}
	for _, f := range fc.Features {
		zones[f.Properties.ZONE] = f.Properties.RASTER_VAL
		assert.Greater(t, f.Properties.DOSE, 0.0)
	}
	assert.Len(t, zones, 3)
	assert.Less(t, zones[1], zones[2], "zones ascend by RASTER_VAL")
	assert.Less(t, zones[2], zones[3])
	assert.Contains(t, log.String(), "UES-03: NDVI mean of")
}

// One zoning door: this example's library path (zoning.Run on the mean
// NDVI of the clear dates) and the server's §4.1 variable-rate zones over
// the same dates give the same zones for a real field. The server reads
// its stored products, whose pixel values are kept to 6 decimals, so
// values agree to that precision.
func TestSameZonesAsServer(t *testing.T) {
	ctx := context.Background()
	var lib, log bytes.Buffer
	require.NoError(t, run(ctx, []string{"-field", "UES-03", "-zones", "4"}, &lib, &log))

	env := servertest.New(t, server.Config{})
	admin, err := env.Archive.UserByName(ctx, "admin")
	require.NoError(t, err)
	feats, err := geo.ReadFeatures(demodata.Fields())
	require.NoError(t, err)
	var outline []byte
	for _, f := range feats {
		if f.Name == "UES-03" {
			outline, err = json.Marshal(map[string]any{"type": "MultiPolygon", "coordinates": f.Geometry})
			require.NoError(t, err)
		}
	}
	require.NotNil(t, outline)
	_, err = env.Archive.RegisterField(ctx, admin, archive.FieldInput{Name: "UES-03", Geometry: outline, Indices: []string{"ndvi"}})
	require.NoError(t, err)
	scenes, err := demodata.Extract(t.TempDir())
	require.NoError(t, err)
	for _, dir := range scenes {
		_, err := env.Archive.Ingest(ctx, dir, archive.IngestOptions{})
		require.NoError(t, err)
	}

	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for k, v := range map[string]string{"field_name": "UES-03", "n_zones": "4",
		"layers": `[{"type":"crop_health","weight":1,"index":"ndvi","start_date":"2019-01-01","end_date":"2019-12-31"}]`} {
		require.NoError(t, mw.WriteField(k, v))
	}
	require.NoError(t, mw.Close())
	req := httptest.NewRequest(http.MethodPost, "/v1/variable-rate-zones", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+env.AdminToken)
	rec := httptest.NewRecorder()
	env.Handler.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())

	type zoneMap struct {
		Features []struct {
			Geometry struct {
				Coordinates [][][2]float64 `json:"coordinates"`
			} `json:"geometry"`
			Properties struct {
				ZONE       int
				DOSE       float64
				RASTER_VAL float64
			} `json:"properties"`
		} `json:"features"`
	}
	var fromLib, fromServer zoneMap
	require.NoError(t, json.Unmarshal(lib.Bytes(), &fromLib))
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &fromServer))
	require.Len(t, fromServer.Features, len(fromLib.Features))
	require.NotEmpty(t, fromLib.Features)
	for i, want := range fromLib.Features {
		got := fromServer.Features[i]
		assert.Equal(t, want.Properties.ZONE, got.Properties.ZONE, "feature %d", i)
		assert.InDelta(t, want.Properties.RASTER_VAL, got.Properties.RASTER_VAL, 1e-5, "feature %d", i)
		assert.InDelta(t, want.Properties.DOSE, got.Properties.DOSE, 0.01, "feature %d", i)
		assert.Equal(t, want.Geometry.Coordinates, got.Geometry.Coordinates, "feature %d: the same polygon", i)
	}
}
