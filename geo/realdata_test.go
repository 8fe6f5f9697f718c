package geo_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/geo/crs"
	"github.com/cropkit/cropkit/internal/testenv"
)

// Grids of the real scenes' 10 m bands, from /work/shared/data/README.md.
var (
	gridUES = geo.Grid{EPSG: 32631, X0: 574680, Y0: 5622440, DX: 10, DY: 10, Cols: 64, Rows: 64}
	gridUDS = geo.Grid{EPSG: 32631, X0: 501360, Y0: 5629680, DX: 10, DY: 10, Cols: 64, Rows: 64}
	gridSI  = geo.Grid{EPSG: 32633, X0: 465181.0522318204, Y0: 5080254.63349641,
		DX: 9.99479222007154, DY: 9.997448467363668, Cols: 100, Rows: 101}
)

// realFields reads fields/<place>.geojson and reprojects every feature to epsg.
func realFields(t testing.TB, place string, epsg int) []geo.Feature {
	t.Helper()
	path := filepath.Join(testenv.DataDir(t, "fields"), place+".geojson")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	fs, err := geo.ReadFeatures(data)
	require.NoError(t, err)
	tr, err := crs.New(4326, epsg)
	require.NoError(t, err)
	for i := range fs {
		require.NoError(t, geo.ValidateLonLat(fs[i].Geometry), fs[i].Name)
		fs[i].Geometry, err = geo.Transform(fs[i].Geometry, tr)
		require.NoError(t, err)
	}
	return fs
}

// TestZonePipelineReal runs what zoning does on the real UES fields: their
// pixels become labels, are sieved, then polygonized; the polygons must be
// valid, disjoint and cover exactly the labelled pixels.
func TestZonePipelineReal(t *testing.T) {
	fields := realFields(t, "flanders-31UES", 32631)
	labels := make([]int32, gridUES.Cols*gridUES.Rows)
	want := 0
	for k, f := range fields {
		want += int(f.Properties["pixels_10m"].(float64))
		for i, in := range geo.Rasterize(f.Geometry, gridUES) {
			if in {
				require.Zero(t, labels[i], "fields %d and %d overlap", labels[i], k+1)
				labels[i] = int32(k + 1)
			}
		}
	}
	labelled := func() int {
		n := 0
		for _, v := range labels {
			if v != 0 {
				n++
			}
		}
		return n
	}
	require.Equal(t, want, labelled())

	polys := geo.Polygonize(labels, gridUES, 0)
	checkPolygons(t, labels, gridUES, 0, polys)
	byLabel := map[int32]float64{}
	for _, lp := range polys {
		byLabel[lp.Label] += geo.Area(orb.MultiPolygon{lp.Polygon})
	}
	for k, f := range fields {
		assert.InDelta(t, f.Properties["pixels_10m"].(float64)*100, byLabel[int32(k+1)], 1e-6, f.Name)
	}

	require.NoError(t, geo.Sieve(labels, gridUES.Cols, gridUES.Rows, 40, 0)) // UES-15 (38 px) and UES-16 (27 px) go
	assert.Equal(t, want, labelled(), "sieving keeps every labelled pixel")
	polys = geo.Polygonize(labels, gridUES, 0)
	checkPolygons(t, labels, gridUES, 0, polys)
	for _, lp := range polys {
		assert.GreaterOrEqual(t, geo.Area(orb.MultiPolygon{lp.Polygon}), 40*100.0-1e-6, "label %d", lp.Label)
	}
}
