package geo_test

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/internal/testenv"
)

// parseLabels reads a picture: one string per row, '.' is nodata (0), a
// digit or letter is a label.
func parseLabels(pic ...string) ([]int32, int, int) {
	rows, cols := len(pic), len(pic[0])
	out := make([]int32, 0, rows*cols)
	for _, line := range pic {
		for _, ch := range line {
			if ch == '.' {
				out = append(out, 0)
			} else {
				out = append(out, int32(ch))
			}
		}
	}
	return out, cols, rows
}

func signedArea(r orb.Ring) float64 {
	s := 0.0
	for i := 0; i+1 < len(r); i++ {
		s += r[i][0]*r[i+1][1] - r[i+1][0]*r[i][1]
	}
	return s / 2
}

// checkPolygons asserts everything Polygonize promises for labels on g:
// each polygon valid (our validator), RFC 7946 ring orientation, no
// collinear vertices, area equal to its region's pixel count, and its
// pixel-centre rasterization exactly its own pixels, so together they cover
// every labelled pixel once: no gap, no overlap.
func checkPolygons(t *testing.T, labels []int32, g geo.Grid, nodata int32, polys []geo.LabeledPolygon) {
	t.Helper()
	owner := make([]int, len(labels))
	for i := range owner {
		owner[i] = -1
	}
	total := 0.0
	for k, lp := range polys {
		require.NoError(t, geo.ValidatePolygon(lp.Polygon), "polygon %d", k)
		assert.Greater(t, signedArea(lp.Polygon[0]), 0.0, "exterior ring counter-clockwise")
		for _, h := range lp.Polygon[1:] {
			assert.Less(t, signedArea(h), 0.0, "hole clockwise")
		}
		for _, r := range lp.Polygon {
			n := len(r) - 1
			for i := range n {
				a, b, c := r[(i+n-1)%n], r[i], r[(i+1)%n]
				cross := (b[0]-a[0])*(c[1]-b[1]) - (b[1]-a[1])*(c[0]-b[0])
				assert.NotZero(t, cross, "collinear vertex %v in polygon %d", b, k)
			}
		}
		mask := geo.Rasterize(orb.MultiPolygon{lp.Polygon}, g)
		pixels := 0
		for i, in := range mask {
			if !in {
				continue
			}
			pixels++
			require.Equal(t, lp.Label, labels[i], "polygon %d covers pixel %d of another label", k, i)
			require.Equal(t, -1, owner[i], "pixel %d in polygons %d and %d", i, owner[i], k)
			owner[i] = k
		}
		area := geo.Area(orb.MultiPolygon{lp.Polygon})
		assert.InDelta(t, float64(pixels)*g.PixelArea(), area, 1e-9*area+1e-9, "polygon %d area", k)
		total += area
	}
	labelled := 0
	for i, v := range labels {
		if v != nodata {
			labelled++
			assert.NotEqual(t, -1, owner[i], "pixel %d (label %d) in no polygon", i, v)
		}
	}
	assert.InDelta(t, float64(labelled)*g.PixelArea(), total, 1e-9*total+1e-9, "total area")
}

func TestPolygonizeShapes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pic   []string
		want  []string // WKT-like: label and rings
		holes []int
	}{
		{name: "one pixel", pic: []string{"a"}, holes: []int{0}},
		{name: "ring with a hole", pic: []string{"aaa", "a.a", "aaa"}, holes: []int{1}},
		{name: "hole of another label", pic: []string{"aaa", "aba", "aaa"}, holes: []int{1, 0}},
		{name: "diagonal pixels are separate regions", pic: []string{"a.", ".a"}, holes: []int{0, 0}},
		// A region touching itself diagonally: a hole touching the shell at a corner.
		{name: "pinch makes a hole touching the shell", pic: []string{"aaa.", "a.a.", "aa.a", "...a"}, holes: []int{1, 0}},
		{name: "pinch closing a hole", pic: []string{
			"aaaa",
			"a..a",
			"a.aa",
			"aa..",
		}, holes: []int{1}},
		{name: "two holes touching at a corner", pic: []string{
			"aaaa",
			"a.aa",
			"aa.a",
			"aaaa",
		}, holes: []int{2}},
		{name: "nodata everywhere", pic: []string{"..", ".."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			labels, cols, rows := parseLabels(tc.pic...)
			g := geo.Grid{X0: 100, Y0: 200, DX: 10, DY: 10, Cols: cols, Rows: rows}
			polys := geo.Polygonize(labels, g, 0)
			require.Len(t, polys, len(tc.holes))
			for i, lp := range polys {
				assert.Len(t, lp.Polygon, 1+tc.holes[i], "polygon %d rings", i)
			}
			checkPolygons(t, labels, g, 0, polys)
		})
	}
}

func TestPolygonizeExactRings(t *testing.T) {
	labels, cols, rows := parseLabels("aab", "abb")
	g := geo.Grid{X0: 0, Y0: 2, DX: 1, DY: 1, Cols: cols, Rows: rows}
	polys := geo.Polygonize(labels, g, 0)
	require.Len(t, polys, 2)
	assert.Equal(t, int32('a'), polys[0].Label)
	assert.Equal(t, orb.Polygon{{{0, 2}, {0, 0}, {1, 0}, {1, 1}, {2, 1}, {2, 2}, {0, 2}}}, polys[0].Polygon)
	assert.Equal(t, int32('b'), polys[1].Label)
	assert.Equal(t, orb.Polygon{{{3, 2}, {2, 2}, {2, 1}, {1, 1}, {1, 0}, {3, 0}, {3, 2}}}, polys[1].Polygon)
}

func TestPolygonizeBadInput(t *testing.T) {
	assert.Nil(t, geo.Polygonize([]int32{1, 2, 3}, geo.Grid{Cols: 2, Rows: 2, DX: 1, DY: 1}, 0))
	assert.Nil(t, geo.Polygonize(nil, geo.Grid{Cols: -1, Rows: 2}, 0))
	assert.Empty(t, geo.Polygonize(nil, geo.Grid{}, 0))
}

// randomLabels is a cols×rows raster of k labels (1..k) in noisy blobs,
// with about nodataShare of the pixels nodata (0); k ≤ 7.
func randomLabels(rng *rand.Rand, cols, rows, k int, nodataShare float64) []int32 {
	labels := make([]int32, cols*rows)
	for i := range labels {
		labels[i] = int32(1 + rng.IntN(k))
	}
	// A few majority passes make blobs with ragged, pinched borders.
	for range 2 {
		next := make([]int32, len(labels))
		for r := range rows {
			for c := range cols {
				var votes [8]int
				for dr := -1; dr <= 1; dr++ {
					for dc := -1; dc <= 1; dc++ {
						if rr, cc := r+dr, c+dc; rr >= 0 && cc >= 0 && rr < rows && cc < cols {
							votes[labels[rr*cols+cc]]++
						}
					}
				}
				best, bestN := labels[r*cols+c], 0
				for l := int32(1); l <= int32(k); l++ {
					if votes[l] > bestN {
						best, bestN = l, votes[l]
					}
				}
				next[r*cols+c] = best
			}
		}
		labels = next
	}
	for i := range labels {
		if rng.Float64() < nodataShare {
			labels[i] = 0
		}
		if rng.Float64() < 0.05 { // salt noise: single pixels and pinches
			labels[i] = int32(1 + rng.IntN(k))
		}
	}
	return labels
}

func TestPolygonizeRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for i := range 20 {
		cols, rows := 5+rng.IntN(40), 5+rng.IntN(40)
		labels := randomLabels(rng, cols, rows, 2+rng.IntN(4), 0.1)
		g := geo.Grid{EPSG: 32631, X0: 574680, Y0: 5622440, DX: 10, DY: 10, Cols: cols, Rows: rows}
		polys := geo.Polygonize(labels, g, 0)
		require.NotEmpty(t, polys, "raster %d", i)
		checkPolygons(t, labels, g, 0, polys)
	}
}

// TestPolygonizeShapely checks validity and the no-overlap/no-gap union with
// an independent implementation (GEOS through shapely).
func TestPolygonizeShapely(t *testing.T) {
	py := refPython(t, "shapely")
	rng := rand.New(rand.NewPCG(9, 10))
	type raster struct {
		Pixels   int              `json:"pixels"`
		Polygons [][][][2]float64 `json:"polygons"`
	}
	var cases []raster
	for range 40 {
		cols, rows := 5+rng.IntN(50), 5+rng.IntN(50)
		labels := randomLabels(rng, cols, rows, 2+rng.IntN(5), 0.15)
		g := geo.Grid{X0: 0, Y0: float64(rows), DX: 1, DY: 1, Cols: cols, Rows: rows}
		rs := raster{}
		for _, v := range labels {
			if v != 0 {
				rs.Pixels++
			}
		}
		for _, lp := range geo.Polygonize(labels, g, 0) {
			var p [][][2]float64
			for _, r := range lp.Polygon {
				var ring [][2]float64
				for _, pt := range r {
					ring = append(ring, [2]float64{pt[0], pt[1]})
				}
				p = append(p, ring)
			}
			rs.Polygons = append(rs.Polygons, p)
		}
		cases = append(cases, rs)
	}
	data, err := json.Marshal(cases)
	require.NoError(t, err)
	in := filepath.Join(t.TempDir(), "polys.json")
	require.NoError(t, os.WriteFile(in, data, 0o600))
	script := `
import json, sys
from shapely.geometry import Polygon
from shapely.ops import unary_union
from shapely.validation import explain_validity
bad = []
for i, c in enumerate(json.load(open(sys.argv[1]))):
    polys = [Polygon(p[0], p[1:]) for p in c["polygons"]]
    for j, p in enumerate(polys):
        if not p.is_valid:
            bad.append("raster %d polygon %d: %s" % (i, j, explain_validity(p)))
    total = sum(p.area for p in polys)
    union = unary_union(polys).area
    if abs(total - c["pixels"]) > 1e-9 or abs(union - c["pixels"]) > 1e-9:
        bad.append("raster %d: %d pixels, polygon areas sum %r, union %r" % (i, c["pixels"], total, union))
print("\n".join(bad) if bad else "ok")
`
	out, err := exec.Command(py, "-c", script, in).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, "ok", strings.TrimSpace(string(out)))
}

// refPython is the system Python with the reference modules (installed from
// Debian packages; the pyenv python3 on PATH lacks them).
func refPython(t *testing.T, modules ...string) string {
	t.Helper()
	const py = "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import "+strings.Join(modules, ", ")).Run(); err != nil {
		testenv.RequireTool(t, py+" with "+strings.Join(modules, ", ")) // skips, or fails under CI
	}
	return py
}

func BenchmarkPolygonize(b *testing.B) {
	// The 10,000 ha case: 1000×1000 pixels of 10 m, ~5 labels of noisy regions.
	rng := rand.New(rand.NewPCG(11, 12))
	labels := randomLabels(rng, 1000, 1000, 5, 0)
	g := geo.Grid{X0: 0, Y0: 10000, DX: 10, DY: 10, Cols: 1000, Rows: 1000}
	for b.Loop() {
		geo.Polygonize(labels, g, 0)
	}
}
