package geo_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/internal/testenv"
)

// unit is a 4×3 grid of 1×1 pixels with its upper-left corner at (0, 3),
// so pixel (c, r) has its centre at (c+0.5, 2.5−r).
var unit = geo.Grid{X0: 0, Y0: 3, DX: 1, DY: 1, Cols: 4, Rows: 3}

func box(x0, y0, x1, y1 float64) orb.Ring {
	return orb.Ring{{x0, y0}, {x1, y0}, {x1, y1}, {x0, y1}, {x0, y0}}
}

func reverse(r orb.Ring) orb.Ring {
	out := make(orb.Ring, len(r))
	for i, p := range r {
		out[len(r)-1-i] = p
	}
	return out
}

// maskString draws a mask row by row, north first.
func maskString(m []bool, cols int) string {
	s := ""
	for i, v := range m {
		if i > 0 && i%cols == 0 {
			s += "|"
		}
		if v {
			s += "#"
		} else {
			s += "."
		}
	}
	return s
}

func TestRasterize(t *testing.T) {
	for _, tc := range []struct {
		name string
		mp   orb.MultiPolygon
		want string
	}{
		{"one centre", orb.MultiPolygon{{box(0.2, 0.2, 0.8, 0.8)}}, "....|....|#..."},
		{"three by three", orb.MultiPolygon{{box(0.4, 0.4, 2.6, 2.6)}}, "###.|###.|###."},
		{"pixel aligned", orb.MultiPolygon{{box(1, 0, 3, 2)}}, "....|.##.|.##."},
		{"clockwise ring gives the same", orb.MultiPolygon{{reverse(box(1, 0, 3, 2))}}, "....|.##.|.##."},
		{"hole", orb.MultiPolygon{{box(0, 0, 3, 3), box(1, 1, 2, 2)}}, "###.|#.#.|###."},
		{"even-odd over two polygons", orb.MultiPolygon{{box(0, 0, 3, 3)}, {box(1, 1, 2, 2)}}, "###.|#.#.|###."},
		{"beyond the grid", orb.MultiPolygon{{box(-10, -10, 1, 10)}}, "#...|#...|#..."},
		{"triangle", orb.MultiPolygon{{{{0, 0}, {4, 0}, {0, 3}, {0, 0}}}}, "#...|##..|###."},
		// Centres exactly on edges follow GDAL: a vertical edge through a
		// centre includes it on the polygon's right side only...
		{"centre on left edge", orb.MultiPolygon{{box(0.5, 0.2, 1.8, 0.8)}}, "....|....|.#.."},
		{"centre on right edge", orb.MultiPolygon{{box(0.2, 0.2, 1.5, 0.8)}}, "....|....|##.."},
		// ...and a horizontal one on the region's side below, or above
		// on a ring's bottom edge; either ring direction.
		{"centre on top edge", orb.MultiPolygon{{box(0.2, 0.2, 0.8, 1.5)}}, "....|#...|#..."},
		{"centre on bottom edge", orb.MultiPolygon{{box(0.2, 0.5, 0.8, 1.8)}}, "....|#...|#..."},
		{"centre on bottom edge, cw", orb.MultiPolygon{{reverse(box(0.2, 0.5, 2.8, 1.8))}}, "....|###.|###."},
		{"centres on a hole's top and bottom", orb.MultiPolygon{{box(-1, -1, 5, 4), box(1.2, 0.5, 2.8, 2.5)}}, "#..#|#..#|####"},
		{"same with ring directions swapped", orb.MultiPolygon{{reverse(box(-1, -1, 5, 4)), reverse(box(1.2, 0.5, 2.8, 2.5))}}, "#..#|#..#|####"},
		{"thin parcel falls back to all touched", orb.MultiPolygon{{box(0.6, 0.1, 2.4, 0.3)}}, "....|....|###."},
		{"thin diagonal sliver", orb.MultiPolygon{{{{0.1, 0.1}, {3.9, 2.9}, {3.9, 2.95}, {0.1, 0.1}}}}, "..##|.##.|##.."},
		{"empty", nil, "....|....|...."},
		{"outside", orb.MultiPolygon{{box(10, 10, 12, 12)}}, "....|....|...."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := geo.Rasterize(tc.mp, unit)
			require.Len(t, got, unit.Cols*unit.Rows)
			assert.Equal(t, tc.want, maskString(got, unit.Cols))
		})
	}
}

func TestRasterizeAllTouched(t *testing.T) {
	for _, tc := range []struct {
		name string
		mp   orb.MultiPolygon
		want string
	}{
		{"inside one pixel", orb.MultiPolygon{{box(0.2, 0.2, 0.8, 0.8)}}, "....|....|#..."},
		{"pixel aligned adds nothing", orb.MultiPolygon{{box(1, 0, 3, 2)}}, "....|.##.|.##."},
		{"grazing a border by less than 1/1000", orb.MultiPolygon{{box(0.9995, 0.0005, 3.0004, 2.0003)}}, "....|.##.|.##."},
		{"crossing borders", orb.MultiPolygon{{box(0.5, 0.5, 1.5, 1.5)}}, "....|##..|##.."},
		{"hole keeps its rim", orb.MultiPolygon{{box(0, 0, 3, 3), box(0.5, 0.5, 2.5, 2.5)}}, "###.|#.#.|###."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, maskString(geo.RasterizeAllTouched(tc.mp, unit), unit.Cols))
		})
	}
}

func TestRasterizeBadGrid(t *testing.T) {
	mp := orb.MultiPolygon{{box(0, 0, 3, 3)}}
	assert.Empty(t, geo.Rasterize(mp, geo.Grid{DX: 1, DY: 1}))
	assert.Equal(t, "...|...", maskString(geo.Rasterize(mp, geo.Grid{Y0: 3, Cols: 3, Rows: 2}), 3), "zero pixel size")
	nan := orb.MultiPolygon{{{{math.NaN(), 0}, {1, 1}, {0, 1}, {math.NaN(), 0}}}}
	assert.Equal(t, "....|....|....", maskString(geo.Rasterize(nan, unit), 4))
}

func count(m []bool) int {
	n := 0
	for _, v := range m {
		if v {
			n++
		}
	}
	return n
}

func TestRasterizeRealFlanders(t *testing.T) {
	for _, place := range []struct {
		name string
		grid geo.Grid
	}{{"flanders-31UES", gridUES}, {"flanders-31UDS", gridUDS}} {
		fields := realFields(t, place.name, 32631)
		require.NotEmpty(t, fields)
		for _, f := range fields {
			want := int(f.Properties["pixels_10m"].(float64))
			assert.Equal(t, want, count(geo.Rasterize(f.Geometry, place.grid)), "%s centre rule", f.Name)
			// Pixel-aligned: all touched selects the same pixels.
			assert.Equal(t, want, count(geo.RasterizeAllTouched(f.Geometry, place.grid)), "%s all touched", f.Name)
		}
	}
}

func TestRasterizeRealSlovenia(t *testing.T) {
	fields := realFields(t, "slovenia-eolearn", 32633)
	want := map[string][2]int{"SI-01": {296, 360}, "SI-02": {285, 331}, "SI-03": {211, 262}} // README reference counts
	seen := 0
	for _, f := range fields {
		w, ok := want[f.Name]
		if !ok {
			continue
		}
		seen++
		assert.Equal(t, w[0], count(geo.Rasterize(f.Geometry, gridSI)), "%s centre rule", f.Name)
		assert.Equal(t, w[1], count(geo.RasterizeAllTouched(f.Geometry, gridSI)), "%s all touched", f.Name)
	}
	assert.Equal(t, 3, seen)
}

// gdalBurn burns each of mps (in g's CRS) with gdal_rasterize, value i+1
// for mps[i], and returns the raster (0 = not burned; later features win).
func gdalBurn(t *testing.T, mps []orb.MultiPolygon, g geo.Grid, allTouched bool) []byte {
	t.Helper()
	tool := testenv.RequireTool(t, "gdal_rasterize")
	require.Less(t, len(mps), 256)
	dir := t.TempDir()
	var features []any
	for i, mp := range mps {
		coords := make([][][][2]float64, len(mp))
		for j, p := range mp {
			for _, r := range p {
				var ring [][2]float64
				for _, pt := range r {
					ring = append(ring, [2]float64{pt[0], pt[1]})
				}
				coords[j] = append(coords[j], ring)
			}
		}
		features = append(features, map[string]any{
			"type": "Feature", "properties": map[string]any{"id": i + 1},
			"geometry": map[string]any{"type": "MultiPolygon", "coordinates": coords},
		})
	}
	data, err := json.Marshal(map[string]any{"type": "FeatureCollection", "features": features})
	require.NoError(t, err)
	in := filepath.Join(dir, "in.geojson")
	require.NoError(t, os.WriteFile(in, data, 0o600))
	out := filepath.Join(dir, "out.bin")
	b := g.Bound()
	args := []string{"-q", "-a", "id", "-ot", "Byte", "-of", "ENVI", "-init", "0",
		"-te", fmt.Sprint(b.Min[0]), fmt.Sprint(b.Min[1]), fmt.Sprint(b.Max[0]), fmt.Sprint(b.Max[1]),
		"-ts", fmt.Sprint(g.Cols), fmt.Sprint(g.Rows)}
	if allTouched {
		args = append(args, "-at")
	}
	msg, err := exec.Command(tool, append(args, in, out)...).CombinedOutput()
	require.NoError(t, err, "%s", msg)
	raw, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Len(t, raw, g.Cols*g.Rows)
	return raw
}

func TestRasterizeMatchesGDAL(t *testing.T) {
	fields := realFields(t, "slovenia-eolearn", 32633)
	require.Len(t, fields, 7)
	mps := make([]orb.MultiPolygon, len(fields))
	for i, f := range fields {
		mps[i] = f.Geometry
	}
	// One gdal_rasterize run per rule burns field i as i+1, later fields
	// over earlier ones: expect the last field selecting each pixel.
	for _, allTouched := range []bool{false, true} {
		want := gdalBurn(t, mps, gridSI, allTouched)
		got := make([]byte, len(want))
		for i, mp := range mps {
			m := geo.Rasterize(mp, gridSI)
			if allTouched {
				m = geo.RasterizeAllTouched(mp, gridSI)
			}
			n := 0
			for p, in := range m {
				if in {
					got[p] = byte(i + 1)
					n++
				}
			}
			assert.Positive(t, n, fields[i].Name)
		}
		assert.Equal(t, want, got, "all touched: %v", allTouched)
	}
}

func TestRasterizeTiesMatchGDAL(t *testing.T) {
	// Random (often self-intersecting) polygons with every vertex on a pixel
	// centre, corner or edge midpoint exercise GDAL's tie rules. Polygon i
	// lives in its own 20×20 tile of one wide grid, so one gdal_rasterize
	// run burns them all.
	const tiles, size = 120, 20
	rng := rand.New(rand.NewPCG(1, 2))
	wide := geo.Grid{X0: 0, Y0: size, DX: 1, DY: 1, Cols: tiles * size, Rows: size}
	tile := geo.Grid{Y0: size, DX: 1, DY: 1, Cols: size, Rows: size}
	mps := make([]orb.MultiPolygon, tiles)
	for i := range mps {
		var ring orb.Ring
		for range 3 + rng.IntN(8) {
			ring = append(ring, orb.Point{float64(i*size) + float64(rng.IntN(2*size+1))/2, float64(rng.IntN(2*size+1)) / 2})
		}
		mps[i] = orb.MultiPolygon{{append(ring, ring[0])}}
	}
	burnt := gdalBurn(t, mps, wide, false)
	for i, mp := range mps {
		tile.X0 = float64(i * size)
		want := make([]bool, size*size)
		for r := range size {
			for c := range size {
				want[r*size+c] = burnt[r*wide.Cols+i*size+c] == byte(i+1)
			}
		}
		got := make([]bool, len(want))
		if count(want) > 0 { // compare the centre rule alone: the fallback would differ
			got = geo.Rasterize(mp, tile)
		}
		assert.Equal(t, maskString(want, size), maskString(got, size), "polygon %d: %v", i, mp[0][0])
	}
}

func BenchmarkRasterize(b *testing.B) {
	// A 1000-vertex star-shaped polygon on a 1000×1000 grid.
	g := geo.Grid{X0: 0, Y0: 1000, DX: 1, DY: 1, Cols: 1000, Rows: 1000}
	rng := rand.New(rand.NewPCG(3, 4))
	var ring orb.Ring
	for i := range 1000 {
		a := 2 * math.Pi * float64(i) / 1000
		r := 300 + 190*rng.Float64()
		ring = append(ring, orb.Point{500 + r*math.Cos(a), 500 + r*math.Sin(a)})
	}
	ring = append(ring, ring[0])
	mp := orb.MultiPolygon{{ring}}
	for b.Loop() {
		geo.Rasterize(mp, g)
	}
}
