package imagery

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/geo/crs"
	"github.com/cropkit/cropkit/imagery/geotiff"
)

// grid10 is an 8×8 10 m grid in UTM 31N; grid20 the 4×4 20 m grid nesting it.
var (
	grid10 = geo.Grid{EPSG: 32631, X0: 574680, Y0: 5622440, DX: 10, DY: 10, Cols: 8, Rows: 8}
	grid20 = geo.Grid{EPSG: 32631, X0: 574680, Y0: 5622440, DX: 20, DY: 20, Cols: 4, Rows: 4}
)

// writeBand writes a single-band GeoTIFF dir/name.tif with pixel(col, row).
func writeBand(t testing.TB, dir, name string, g geo.Grid, typ geotiff.DataType, md map[string]string, pixel func(col, row int) float64) {
	t.Helper()
	r := geotiff.NewRaster(g.Full(), typ)
	for row := 0; row < g.Rows; row++ {
		for col := 0; col < g.Cols; col++ {
			v := pixel(col, row)
			i := row*g.Cols + col
			switch typ {
			case geotiff.Uint8:
				r.U8[i] = uint8(v)
			case geotiff.Uint16:
				r.U16[i] = uint16(v)
			}
		}
	}
	f, err := os.Create(filepath.Join(dir, name+".tif"))
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, geotiff.Write(f, g, r, geotiff.WriteOptions{TileSize: 16, Metadata: md}))
}

// dn values of the synthetic scene: B08 = 3000 + 10·col, B04 = 1500 + row,
// B05 (20 m) = 2000 + 100·col20 + row20; B08 is 0 (no data) at (7, 0);
// SCL is 4 (vegetation) except 9 (cloud) at 20 m pixel (1, 1) = 10 m pixels (2..3, 2..3).
func b08(col, row int) float64 {
	if col == 7 && row == 0 {
		return 0
	}
	return 3000 + 10*float64(col)
}
func b04(col, row int) float64 { return 1500 + float64(row) }
func b05(col, row int) float64 { return 2000 + 100*float64(col) + float64(row) }
func scl(col, row int) float64 {
	if col == 1 && row == 1 {
		return 9
	}
	return 4
}

func writeSyntheticScene(t testing.TB, dir string, md map[string]string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	writeBand(t, dir, "B08", grid10, geotiff.Uint16, md, b08)
	writeBand(t, dir, "B04", grid10, geotiff.Uint16, md, b04)
	writeBand(t, dir, "B05", grid20, geotiff.Uint16, md, b05)
	writeBand(t, dir, "SCL", grid20, geotiff.Uint8, md, scl)
}

// lonLat returns the UTM 31N ring as an EPSG:4326 field.
func lonLat(t testing.TB, ring orb.Ring) orb.MultiPolygon {
	t.Helper()
	return toLonLat(t, 32631, ring)
}

// toLonLat returns a ring in EPSG:epsg as an EPSG:4326 field.
func toLonLat(t testing.TB, epsg int, ring orb.Ring) orb.MultiPolygon {
	t.Helper()
	tr, err := crs.New(epsg, 4326)
	require.NoError(t, err)
	mp, err := geo.Transform(orb.MultiPolygon{{ring}}, tr)
	require.NoError(t, err)
	return mp
}

// wholeChip is a field covering the 8×8 chip with a 1 m margin inside.
func wholeChip(t testing.TB) orb.MultiPolygon {
	x0, y0 := grid10.X0+1, grid10.Y0-1
	x1, y1 := grid10.X0+79, grid10.Y0-79
	return lonLat(t, orb.Ring{{x0, y0}, {x1, y0}, {x1, y1}, {x0, y1}, {x0, y0}})
}

func TestSyntheticFolderScene(t *testing.T) {
	tests := []struct {
		name    string
		md      map[string]string
		wantAdd float64
	}{
		{"baseline 04.00 not harmonized", map[string]string{"PROCESSING_BASELINE": "04.00"}, -1000},
		{"baseline 04.00 harmonized", map[string]string{"PROCESSING_BASELINE": "04.00", "BOA_OFFSET_APPLIED": "TRUE"}, 0},
		{"baseline 03.00", map[string]string{"PROCESSING_BASELINE": "03.00"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "S2B_20220315")
			writeSyntheticScene(t, dir, tt.md)
			s, err := OpenScene(context.Background(), dir, SceneOptions{})
			require.NoError(t, err)
			defer s.Close()
			assert.Equal(t, time.Date(2022, 3, 15, 0, 0, 0, 0, time.UTC), s.Date(), "date from the folder name")
			assert.Equal(t, grid10, s.Grid())

			ps, err := s.FieldProducts(context.Background(), wholeChip(t), []string{"ndvi", "ndre"}, nil)
			require.NoError(t, err)
			require.Len(t, ps, 2)
			refl := func(dn float64) float64 { return (dn + tt.wantAdd) / 10000 }
			for _, p := range ps {
				assert.Equal(t, 64, p.Stats.FieldPixels)
				assert.Equal(t, 59, p.Stats.Num, "4 cloudy + 1 no-data pixels out")
				assert.InDelta(t, 100*5.0/64, p.Stats.CloudCover, 1e-12)
				assert.Equal(t, grid10, p.Grid)
				var sum float64
				for row := 0; row < 8; row++ {
					for col := 0; col < 8; col++ {
						v := p.Values[row*8+col]
						cloudy := col >= 2 && col <= 3 && row >= 2 && row <= 3
						if cloudy || (col == 7 && row == 0) {
							assert.True(t, math.IsNaN(v), "%s (%d,%d) masked", p.Index, col, row)
							continue
						}
						nir := refl(b08(col, row))
						var want float64
						switch p.Index {
						case "ndvi":
							red := refl(b04(col, row))
							want = (nir - red) / (nir + red)
						case "ndre":
							re := refl(b05(col/2, row/2)) // the 20 m pixel holding the centre
							want = (nir - re) / (nir + re)
						}
						assert.InDelta(t, want, v, 1e-15, "%s (%d,%d)", p.Index, col, row)
						sum += want
					}
				}
				assert.InDelta(t, sum/59, p.Stats.Mean, 1e-14)
			}
		})
	}
}

func TestSceneDateSources(t *testing.T) {
	root := t.TempDir()
	undated := filepath.Join(root, "scene")
	writeSyntheticScene(t, undated, nil)
	_, err := OpenScene(context.Background(), undated, SceneOptions{})
	assert.ErrorIs(t, err, ErrNoDate)

	given := time.Date(2021, 5, 4, 0, 0, 0, 0, time.UTC)
	s, err := OpenScene(context.Background(), undated, SceneOptions{Date: given})
	require.NoError(t, err)
	assert.Equal(t, given, s.Date())
	s.Close()

	// Metadata wins over the folder name and the caller.
	md := filepath.Join(root, "2020-01-01")
	writeSyntheticScene(t, md, map[string]string{"ACQUISITION_DATETIME_UTC": "2019-06-20T10:57:03Z"})
	s, err = OpenScene(context.Background(), md, SceneOptions{Date: given})
	require.NoError(t, err)
	assert.Equal(t, time.Date(2019, 6, 20, 10, 57, 3, 0, time.UTC), s.Date())
	s.Close()

	_, err = OpenScene(context.Background(), filepath.Join(root, "missing"), SceneOptions{})
	assert.Error(t, err)
	_, err = OpenScene(context.Background(), t.TempDir(), SceneOptions{Date: given})
	assert.ErrorContains(t, err, "no band found")
}

func TestMaskClassesOption(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "2022-03-15")
	writeSyntheticScene(t, dir, nil)
	s, err := OpenScene(context.Background(), dir, SceneOptions{MaskClasses: []int{0}})
	require.NoError(t, err)
	defer s.Close()
	ps, err := s.FieldProducts(context.Background(), wholeChip(t), []string{"ndvi"}, nil)
	require.NoError(t, err)
	assert.Equal(t, 63, ps[0].Stats.Num, "cloud class 9 not masked; only the no-data pixel is out")

	_, err = OpenScene(context.Background(), dir, SceneOptions{MaskClasses: []int{300}})
	assert.Error(t, err)
}

func TestFieldOutsideScene(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "2022-03-15")
	writeSyntheticScene(t, dir, nil)
	s, err := OpenScene(context.Background(), dir, SceneOptions{})
	require.NoError(t, err)
	defer s.Close()
	x0, y0 := grid10.X0+1000, grid10.Y0
	far := lonLat(t, orb.Ring{{x0, y0}, {x0 + 50, y0}, {x0 + 50, y0 - 50}, {x0, y0 - 50}, {x0, y0}})
	_, err = s.FieldProducts(context.Background(), far, []string{"ndvi"}, nil)
	assert.ErrorIs(t, err, ErrNoOverlap)
	_, err = s.FieldProducts(context.Background(), wholeChip(t), []string{"ndwi"}, nil)
	assert.ErrorIs(t, err, ErrMissingBand, "no B11 in the scene")
	_, err = s.FieldProducts(context.Background(), wholeChip(t), []string{"bogus"}, nil)
	assert.ErrorIs(t, err, ErrUnknownIndex)
}

// writeItem writes a STAC item with Earth Search keys next to the bands.
func writeItem(t testing.TB, dir string, props map[string]any, redOffset *float64) string {
	t.Helper()
	asset := func(href string) map[string]any { return map[string]any{"href": href, "type": "image/tiff"} }
	red := asset("./B04.tif")
	if redOffset != nil {
		red["raster:bands"] = []map[string]any{{"scale": 0.0001, "offset": *redOffset}}
	}
	item := map[string]any{
		"type": "Feature", "stac_version": "1.0.0", "id": "S2B_31UES_20220315_0_L2A",
		"properties": props,
		"assets": map[string]any{
			"red": red, "nir": asset("B08.tif"), "rededge1": asset("B05.tif"), "scl": asset("SCL.tif"),
			"thumbnail": asset("thumb.jpg"),
		},
	}
	data, err := json.Marshal(item)
	require.NoError(t, err)
	path := filepath.Join(dir, "item.json")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}

func TestSTACItem(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bands")
	writeSyntheticScene(t, dir, nil)
	off := -0.1
	item := writeItem(t, dir, map[string]any{
		"datetime": "2022-03-15T10:56:31.024Z", "s2:processing_baseline": "04.00", "earthsearch:boa_offset_applied": false,
	}, &off)

	check := func(t *testing.T, s *Scene) {
		assert.Equal(t, "S2B_31UES_20220315_0_L2A", s.ID())
		assert.Equal(t, time.Date(2022, 3, 15, 10, 56, 31, 24e6, time.UTC), s.Date())
		assert.Equal(t, []string{"B04", "B05", "B08"}, s.Bands())
		assert.Equal(t, "SCL", s.MaskBand())
		fr, err := s.ReadField(context.Background(), wholeChip(t), []string{"B04", "B08", "B05"})
		require.NoError(t, err)
		// B04 by raster:bands (offset −0.1), B08 and B05 by the baseline rule: both −1000 DN.
		assert.InDelta(t, (1500+2-1000)/1e4, fr.Bands["B04"][2*8+5], 1e-15)
		assert.InDelta(t, (3000+50-1000)/1e4, fr.Bands["B08"][2*8+5], 1e-15)
		assert.InDelta(t, (2000+200+1-1000)/1e4, fr.Bands["B05"][2*8+5], 1e-15)
		assert.True(t, math.IsNaN(fr.Bands["B08"][7]), "DN 0 is no data")
		assert.False(t, fr.Clear[2*8+2], "SCL 9 masked")
		assert.True(t, fr.Clear[0])
	}
	t.Run("file", func(t *testing.T) {
		s, err := OpenScene(context.Background(), item, SceneOptions{})
		require.NoError(t, err)
		defer s.Close()
		check(t, s)
	})
	t.Run("http", func(t *testing.T) {
		srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
		defer srv.Close()
		s, err := OpenScene(context.Background(), srv.URL+"/item.json", SceneOptions{HTTPClient: srv.Client()})
		require.NoError(t, err)
		defer s.Close()
		check(t, s)
	})
	t.Run("harmonized", func(t *testing.T) {
		hdir := t.TempDir()
		writeSyntheticScene(t, hdir, nil)
		item := writeItem(t, hdir, map[string]any{
			"datetime": "2022-03-15T10:56:31Z", "s2:processing_baseline": "04.00", "earthsearch:boa_offset_applied": true,
		}, nil)
		s, err := OpenScene(context.Background(), item, SceneOptions{})
		require.NoError(t, err)
		defer s.Close()
		fr, err := s.ReadField(context.Background(), wholeChip(t), []string{"B08"})
		require.NoError(t, err)
		assert.InDelta(t, 0.305, fr.Bands["B08"][5], 1e-15)
	})
	t.Run("bad item", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "bad.json")
		require.NoError(t, os.WriteFile(bad, []byte(`{"type":"FeatureCollection"}`), 0o644))
		_, err := OpenScene(context.Background(), bad, SceneOptions{})
		assert.Error(t, err)
	})
}
