package geo

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"testing"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTileOutline(t *testing.T) {
	g := Grid{EPSG: 32631, X0: 0, Y0: 40, DX: 10, DY: 10, Cols: 4, Rows: 4}
	// Left half zone 1, right half zone 2, every pixel labelled.
	labels := make([]int32, 16)
	for i := range labels {
		labels[i] = 1 + int32(i%4/2)
	}
	sq := func(x0, y0, x1, y1 float64) orb.Polygon {
		return orb.Polygon{{{x0, y0}, {x1, y0}, {x1, y1}, {x0, y1}, {x0, y0}}}
	}
	tri := orb.Polygon{{{3, 3}, {37, 5}, {12, 36}, {3, 3}}}
	tests := []struct {
		name    string
		outline orb.MultiPolygon
		// want area per label and number of polygons
		area  map[int32]float64
		polys int
	}{
		{"off-grid square", orb.MultiPolygon{sq(3, 3, 37, 37)}, map[int32]float64{1: 17 * 34, 2: 17 * 34}, 2},
		{"pixel-aligned square", orb.MultiPolygon{sq(10, 10, 30, 30)}, map[int32]float64{1: 200, 2: 200}, 2},
		{"triangle", orb.MultiPolygon{tri}, map[int32]float64{1: -1, 2: -1}, 2},
		{"square with a hole", orb.MultiPolygon{{sq(3, 3, 37, 37)[0], {{15, 15}, {15, 25}, {25, 25}, {25, 15}, {15, 15}}}},
			map[int32]float64{1: 17*34 - 50, 2: 17*34 - 50}, 2},
		{"two parts", orb.MultiPolygon{sq(2, 2, 8, 8), sq(32, 32, 38, 38)}, map[int32]float64{1: 36, 2: 36}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lps, err := TileOutline(labels, g, tc.outline, 0)
			require.NoError(t, err)
			assert.Len(t, lps, tc.polys)
			got := map[int32]float64{}
			var total float64
			for _, lp := range lps {
				require.NoError(t, ValidatePolygon(lp.Polygon), "label %d", lp.Label)
				a := Area(orb.MultiPolygon{lp.Polygon})
				got[lp.Label] += a
				total += a
				for i, r := range lp.Polygon {
					assert.Equal(t, i == 0, ringArea(r) > 0, "exterior counter-clockwise, holes clockwise")
				}
			}
			assert.InDelta(t, Area(tc.outline), total, 1e-9, "the union is the outline")
			for l, a := range tc.area {
				if a >= 0 {
					assert.InDelta(t, a, got[l], 1e-9, "label %d", l)
				}
			}
		})
	}
}

func TestTileOutlineErrors(t *testing.T) {
	g := Grid{EPSG: 32631, X0: 0, Y0: 20, DX: 10, DY: 10, Cols: 2, Rows: 2}
	out := orb.MultiPolygon{{{{-5, 5}, {15, 5}, {15, 15}, {-5, 15}, {-5, 5}}}}
	_, err := TileOutline([]int32{1, 1, 1, 1}, g, out, 0)
	assert.True(t, errors.Is(err, ErrOutlineOutsideGrid), "%v", err)
	in := orb.MultiPolygon{{{{5, 5}, {15, 5}, {15, 15}, {5, 15}, {5, 5}}}}
	_, err = TileOutline([]int32{1, 0, 1, 1}, g, in, 0)
	assert.True(t, errors.Is(err, ErrOutlineOutsideGrid), "an unlabelled pixel under the outline: %v", err)
	_, err = TileOutline([]int32{1}, g, in, 0)
	assert.Error(t, err)
}

// Labels traced on several cores come back as on one: in label order,
// each label's polygons in their order, on a noisy raster with pinches
// and holes under an off-grid outline.
func TestTileOutlineSameOnAllCores(t *testing.T) {
	g := Grid{EPSG: 32631, X0: 0, Y0: 600, DX: 10, DY: 10, Cols: 60, Rows: 60}
	labels := make([]int32, g.Cols*g.Rows)
	for i := range labels {
		c, r := i%g.Cols, i/g.Cols
		labels[i] = 1 + int32((c/7+r/5+(c*r)%3)%6)
	}
	var ring orb.Ring
	for a := range 90 {
		th := float64(a) * math.Pi / 45
		ring = append(ring, orb.Point{300.3 + 290*math.Cos(th), 300.7 + 290*math.Sin(th)})
	}
	out := orb.MultiPolygon{{append(ring, ring[0])}}
	all, err := TileOutline(labels, g, out, 0)
	require.NoError(t, err)
	prev := runtime.GOMAXPROCS(1)
	one, err := TileOutline(labels, g, out, 0)
	runtime.GOMAXPROCS(prev)
	require.NoError(t, err)
	assert.Greater(t, len(all), 6)
	assert.Equal(t, one, all)
	assert.True(t, slices.IsSortedFunc(all, func(a, b LabeledPolygon) int { return int(a.Label - b.Label) }))
}

// The zones of a 2×1 label raster clipped to a triangle: each zone keeps
// the part of the triangle over its pixels.
func ExampleTileOutline() {
	g := Grid{EPSG: 32631, X0: 0, Y0: 10, DX: 10, DY: 10, Cols: 2, Rows: 1}
	tri := orb.MultiPolygon{{{{0, 0}, {20, 0}, {0, 10}, {0, 0}}}}
	lps, _ := TileOutline([]int32{1, 2}, g, tri, 0)
	for _, lp := range lps {
		fmt.Printf("zone %d: %.0f m² %v\n", lp.Label, math.Round(Area(orb.MultiPolygon{lp.Polygon})), lp.Polygon[0])
	}
	// Output:
	// zone 1: 75 m² [[0 10] [0 0] [10 0] [10 5] [0 10]]
	// zone 2: 25 m² [[10 5] [10 0] [20 0] [10 5]]
}

func BenchmarkTileOutline(b *testing.B) {
	// A 1000×1000-pixel grid of 10 m, 5 vertical zone bands, clipped to a
	// 720-vertex circle off the pixel grid (a 10 km-wide field).
	g := Grid{X0: 0, Y0: 10000, DX: 10, DY: 10, Cols: 1000, Rows: 1000}
	labels := make([]int32, g.Cols*g.Rows)
	for i := range labels {
		labels[i] = 1 + int32(i%g.Cols/200)
	}
	var ring orb.Ring
	for a := range 720 {
		t := float64(a) * math.Pi / 360
		ring = append(ring, orb.Point{5000.3 + 4990*math.Cos(t), 5000.7 + 4990*math.Sin(t)})
	}
	ring = append(ring, ring[0])
	out := orb.MultiPolygon{{ring}}
	for b.Loop() {
		if _, err := TileOutline(labels, g, out, 0); err != nil {
			b.Fatal(err)
		}
	}
}
