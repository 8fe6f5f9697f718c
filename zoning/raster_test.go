package zoning

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/imagery"
	"github.com/cropkit/cropkit/imagery/geotiff"
	"github.com/cropkit/cropkit/internal/testenv"
)

// realFieldGrid is the 10 m product grid of a real field (UES-03 on the
// flanders-31UES scene of 2019-06-20).
func realFieldGrid(t *testing.T) geo.Grid {
	t.Helper()
	scene, err := imagery.OpenScene(context.Background(), testenv.DataDir(t, "s2", "flanders-31UES", "2019-06-20"), imagery.SceneOptions{})
	require.NoError(t, err)
	defer scene.Close()
	data, err := os.ReadFile(filepath.Join(testenv.DataDir(t, "fields"), "flanders-31UES.geojson"))
	require.NoError(t, err)
	feats, err := geo.ReadFeatures(data)
	require.NoError(t, err)
	for _, f := range feats {
		if f.Name == "UES-03" {
			ps, err := scene.FieldProducts(context.Background(), f.Geometry, []string{"ndvi"}, nil)
			require.NoError(t, err)
			return ps[0].Grid
		}
	}
	t.Fatal("UES-03 not found")
	return geo.Grid{}
}

// writeSurface writes a smooth yield-like surface with noise and a nodata
// hole over the grid's box (padded) at the given cell size and offset.
func writeSurface(t *testing.T, g geo.Grid, cell, offset float64) string {
	t.Helper()
	b := g.Bound()
	src := geo.Grid{EPSG: g.EPSG, X0: b.Min[0] - 50 + offset, Y0: b.Max[1] + 50 - offset, DX: cell, DY: cell}
	src.Cols = int((b.Max[0]-b.Min[0]+100)/cell) + 1
	src.Rows = int((b.Max[1]-b.Min[1]+100)/cell) + 1
	vals := make([]float32, src.Cols*src.Rows)
	for r := range src.Rows {
		for c := range src.Cols {
			x, y := float64(c)*cell, float64(r)*cell
			v := 8 + 2*math.Sin(x/60) + 1.5*math.Cos(y/45) + 0.3*math.Sin(float64(c*7919+r*104729))
			if c > src.Cols/3 && c < src.Cols/3+3 && r > src.Rows/2 && r < src.Rows/2+3 {
				v = -9999 // a hole of nodata
			}
			vals[r*src.Cols+c] = float32(v)
		}
	}
	path := filepath.Join(t.TempDir(), "yield.tif")
	var buf bytes.Buffer
	require.NoError(t, geotiff.WriteFloat32(&buf, src, vals, -9999))
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
	return path
}

// ResampleRaster matches rasterio/GDAL's warp on a real field's grid: the
// mean of finer cells (Resampling.average on an aligned 2 m raster), and
// the cell under the centre for a coarser one (Resampling.nearest, 20 m).
func TestResampleRasterMatchesRasterio(t *testing.T) {
	py := testenv.RequireTool(t, "/usr/bin/python3")
	if err := exec.Command(py, "-c", "import rasterio").Run(); err != nil {
		testenv.RequireTool(t, "python3-rasterio")
	}
	g := realFieldGrid(t)
	for _, tc := range []struct {
		name         string
		cell, offset float64
		method       string
		tol          float64
	}{
		{"2 m yield map: average", 2, 0, "average", 1e-4},
		{"20 m soil map: nearest", 20, 5, "nearest", 1e-6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeSurface(t, g, tc.cell, tc.offset)
			f, err := geotiff.OpenFile(path)
			require.NoError(t, err)
			defer f.Close()
			got, err := ResampleRaster(context.Background(), f, g, 0)
			require.NoError(t, err)
			out, err := exec.Command(py, filepath.Join("testdata", "resample_reference.py"), path, strconv.Itoa(g.EPSG),
				ff(g.X0), ff(g.Y0), ff(g.DX), ff(g.DY), strconv.Itoa(g.Cols), strconv.Itoa(g.Rows), tc.method).Output()
			require.NoError(t, err, "%s", out)
			var want []*float64
			require.NoError(t, json.Unmarshal(out, &want))
			require.Len(t, want, len(got))
			compared := 0
			for i, w := range want {
				if w == nil || math.IsNaN(got[i]) {
					// GDAL's average drops a pixel with any nodata cell; ours
					// averages the valid ones: compare where both have a value.
					continue
				}
				assert.InDelta(t, *w, got[i], tc.tol, "pixel %d", i)
				compared++
			}
			assert.Greater(t, compared, len(got)*9/10, "most pixels compared")
		})
	}
}

func ff(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func TestResampleRasterLimits(t *testing.T) {
	g := geo.Grid{EPSG: 32631, X0: 500000, Y0: 5600000, DX: 10, DY: 10, Cols: 50, Rows: 50}
	path := writeSurface(t, g, 1, 0)
	f, err := geotiff.OpenFile(path)
	require.NoError(t, err)
	defer f.Close()
	_, err = ResampleRaster(context.Background(), f, g, 1000)
	assert.ErrorIs(t, err, ErrRaster)
	assert.ErrorContains(t, err, "at most 1000")
	far := g
	far.X0 += 100000
	_, err = ResampleRaster(context.Background(), f, far, 0)
	assert.ErrorContains(t, err, "does not cover the field")
}
