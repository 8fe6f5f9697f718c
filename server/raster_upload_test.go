package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/imagery/geotiff"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/server"
	"github.com/cropkit/cropkit/server/servertest"
)

// yieldRaster is a 2 m float32 GeoTIFF over grid g's box with a west–east
// gradient (a yield map), nodata -9999.
func yieldRaster(t *testing.T, g geo.Grid) []byte {
	t.Helper()
	b := g.Bound()
	src := geo.Grid{EPSG: g.EPSG, X0: b.Min[0] - 20, Y0: b.Max[1] + 20, DX: 2, DY: 2}
	src.Cols, src.Rows = int((b.Max[0]-b.Min[0]+40)/2), int((b.Max[1]-b.Min[1]+40)/2)
	vals := make([]float32, src.Cols*src.Rows)
	for i := range vals {
		vals[i] = float32(5 + 5*float64(i%src.Cols)/float64(src.Cols) + 0.5*math.Sin(float64(i/src.Cols)/7))
	}
	var buf bytes.Buffer
	require.NoError(t, geotiff.WriteFloat32(&buf, src, vals, -9999))
	return buf.Bytes()
}

// A GeoTIFF uploaded with /files/upload is stored per field, listed, and
// usable by name as a custom layer of the zone operations.
func TestRasterUploadAsCustomLayer(t *testing.T) {
	scene := testenv.DataDir(t, "s2", "slovenia-eolearn", "2015-07-11")
	env := servertest.New(t, server.Config{})
	tok := env.AddUser(t, "farmer", nil)
	r := do(t, env.Handler, "POST", "/fields/register", tok, map[string]any{
		"field_name": "block", "indices": "ndvi", "geometry": map[string]any{"type": "Polygon", "coordinates": sloveniaBlock(t)}})
	require.Equal(t, 201, r.Status, "%s", r.Body)
	_, err := env.Archive.Ingest(context.Background(), scene, archive.IngestOptions{})
	require.NoError(t, err)
	tif := yieldRaster(t, sloveniaGrid(t, env))

	up := postForm(t, env, "/files/upload", tok, map[string]string{"field_name": "block"}, map[string][]byte{"yield.tif": tif})
	require.Equal(t, 201, up.Status, "%s", up.Body)
	var ul struct {
		Uploads []struct {
			Filename  string  `json:"filename"`
			Kind      string  `json:"kind"`
			EPSG      int     `json:"epsg"`
			Width     int     `json:"width"`
			PixelSize float64 `json:"pixel_size"`
			NoData    float64 `json:"nodata"`
		} `json:"uploads"`
	}
	require.NoError(t, json.Unmarshal(up.Body, &ul))
	require.Len(t, ul.Uploads, 1)
	assert.Equal(t, "raster", ul.Uploads[0].Kind)
	assert.Equal(t, 2.0, ul.Uploads[0].PixelSize)
	assert.Equal(t, -9999.0, ul.Uploads[0].NoData)

	r = do(t, env.Handler, "GET", "/files/list?field_name=block", tok, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	assert.Equal(t, "yield.tif", r.JSON(t)["uploads"].([]any)[0].(map[string]any)["filename"])

	zones := func(layers string, files map[string][]byte) response {
		r := postForm(t, env, "/v1/variable-rate-zones", tok, map[string]string{
			"field_name": "block", "n_zones": "3", "layers": layers}, files)
		require.Equal(t, 200, r.Status, "%s", r.Body)
		return r
	}
	withYield := `[{"type":"crop_health","weight":1,"date":"2015-07-11","index":"ndvi"},{"type":"custom","weight":10,"filename":"yield.tif"}]`
	only := zones(ndviLayerSI, nil)
	stored := zones(withYield, nil)
	sent := zones(withYield, map[string][]byte{"yield.tif": tif})
	assert.NotEqual(t, only.Body, stored.Body, "the yield layer changes the zones")
	assert.Equal(t, sent.Body, stored.Body, "the stored raster gives the zones the request's file gives")

	// Not a GeoTIFF, or not covering the field: 400 naming the file.
	bad := postForm(t, env, "/files/upload", tok, map[string]string{"field_name": "block"}, map[string][]byte{"junk.tif": []byte("II*\x00junk")})
	assert.Equal(t, 400, bad.Status, "%s", bad.Body)
	assert.Contains(t, string(bad.Body), "junk.tif")
	far := sloveniaGrid(t, env)
	far.X0 += 50000
	farTif := yieldRaster(t, far)
	r = postForm(t, env, "/v1/variable-rate-zones", tok, map[string]string{"field_name": "block", "n_zones": "3",
		"layers": `[{"type":"crop_health","weight":1,"date":"2015-07-11","index":"ndvi"},{"type":"custom","weight":1,"filename":"far.tif"}]`},
		map[string][]byte{"far.tif": farTif})
	assert.Equal(t, 400, r.Status, "%s", r.Body)
	assert.Contains(t, string(r.Body), "does not cover the field")
}
