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
)

// checkSimplified asserts PolygonizeSimplified's promises on labels: valid
// polygons of the right labels; no point covered twice; every point of a
// labelled pixel whose neighbourhood (tol around) is all labelled covered
// exactly once (no gaps). Points are tested on a 4×4 subsample per pixel.
func checkSimplified(t *testing.T, labels []int32, g geo.Grid, tol float64, polys []geo.LabeledPolygon) {
	t.Helper()
	const sub = 4
	fine := geo.Grid{X0: g.X0, Y0: g.Y0, DX: g.DX / sub, DY: g.DY / sub, Cols: g.Cols * sub, Rows: g.Rows * sub}
	// Nudge the sample points off the pixel-edge lattice.
	fine.X0 += g.DX * 0.0123
	fine.Y0 -= g.DY * 0.0321
	cover := make([]int, fine.Cols*fine.Rows)
	labelAt := make([]int32, len(cover))
	for k, lp := range polys {
		require.NoError(t, geo.ValidatePolygon(lp.Polygon), "polygon %d", k)
		for i, in := range geo.Rasterize(orb.MultiPolygon{lp.Polygon}, fine) {
			if in {
				cover[i]++
				labelAt[i] = lp.Label
			}
		}
	}
	reach := int(tol/min(g.DX, g.DY)) + 1
	for i, n := range cover {
		require.LessOrEqual(t, n, 1, "sample %d covered by %d polygons", i, n)
		c, r := (i%fine.Cols)/sub, (i/fine.Cols)/sub
		interior := true
		for dr := -reach; dr <= reach && interior; dr++ {
			for dc := -reach; dc <= reach; dc++ {
				rr, cc := r+dr, c+dc
				if rr < 0 || cc < 0 || rr >= g.Rows || cc >= g.Cols || labels[rr*g.Cols+cc] == 0 {
					interior = false
					break
				}
			}
		}
		if interior {
			require.Equal(t, 1, n, "sample %d deep inside the labelled pixels is in no polygon (a gap)", i)
		}
	}
}

func TestPolygonizeSimplified(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for i := range 25 {
		cols, rows := 5+rng.IntN(30), 5+rng.IntN(30)
		labels := randomLabels(rng, cols, rows, 2+rng.IntN(4), 0.05*float64(i%3))
		g := geo.Grid{X0: 1000, Y0: 2000, DX: 10, DY: 10, Cols: cols, Rows: rows}
		tol := []float64{3, 7, 15, 40}[i%4]
		polys := geo.PolygonizeSimplified(labels, g, 0, tol)
		plain := geo.Polygonize(labels, g, 0)
		require.Len(t, polys, len(plain), "one polygon per region, as Polygonize")
		verts, plainVerts := 0, 0
		for k := range polys {
			assert.Equal(t, plain[k].Label, polys[k].Label)
			verts += len(polys[k].Polygon[0])
			plainVerts += len(plain[k].Polygon[0])
		}
		if tol >= g.DX { // below ~0.7 pixel the staircase corners all stay
			assert.Less(t, verts, plainVerts, "raster %d: simplification removes vertices", i)
		}
		checkSimplified(t, labels, g, tol, polys)
	}
}

func TestPolygonizeSimplifiedStaircase(t *testing.T) {
	// A diagonal staircase between two labels becomes one straight edge.
	labels, cols, rows := parseLabels(
		"abbbb",
		"aabbb",
		"aaabb",
		"aaaab",
	)
	g := geo.Grid{X0: 0, Y0: 4, DX: 1, DY: 1, Cols: cols, Rows: rows}
	polys := geo.PolygonizeSimplified(labels, g, 0, 0.8)
	require.Len(t, polys, 2)
	assert.Equal(t, orb.Polygon{{{1, 4}, {0, 4}, {0, 0}, {4, 0}, {1, 4}}}, polys[0].Polygon)
	assert.Equal(t, orb.Polygon{{{4, 0}, {5, 0}, {5, 4}, {1, 4}, {4, 0}}}, polys[1].Polygon)
	assert.Equal(t, geo.Polygonize(labels, g, 0), geo.PolygonizeSimplified(labels, g, 0, 0))
	assert.Nil(t, geo.PolygonizeSimplified([]int32{1}, g, 0, 1))
}

func TestPolygonizeSimplifiedShapely(t *testing.T) {
	py := refPython(t, "shapely")
	rng := rand.New(rand.NewPCG(23, 24))
	type raster struct {
		Tol      float64          `json:"tol"`
		Polygons [][][][2]float64 `json:"polygons"`
		Plain    [][][][2]float64 `json:"plain"`
	}
	conv := func(ps []geo.LabeledPolygon) [][][][2]float64 {
		var out [][][][2]float64
		for _, lp := range ps {
			var p [][][2]float64
			for _, r := range lp.Polygon {
				var ring [][2]float64
				for _, pt := range r {
					ring = append(ring, [2]float64{pt[0], pt[1]})
				}
				p = append(p, ring)
			}
			out = append(out, p)
		}
		return out
	}
	var cases []raster
	for i := range 30 {
		cols, rows := 5+rng.IntN(40), 5+rng.IntN(40)
		labels := randomLabels(rng, cols, rows, 2+rng.IntN(5), 0.1)
		g := geo.Grid{X0: 0, Y0: float64(rows), DX: 1, DY: 1, Cols: cols, Rows: rows}
		tol := []float64{0.3, 0.8, 1.5, 4}[i%4]
		cases = append(cases, raster{Tol: tol, Polygons: conv(geo.PolygonizeSimplified(labels, g, 0, tol)), Plain: conv(geo.Polygonize(labels, g, 0))})
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
    plain = unary_union([Polygon(p[0], p[1:]) for p in c["plain"]])
    for j, p in enumerate(polys):
        if not p.is_valid:
            bad.append("raster %d polygon %d: %s" % (i, j, explain_validity(p)))
    total = sum(p.area for p in polys)
    union = unary_union(polys)
    if abs(total - union.area) > 1e-6:
        bad.append("raster %d: polygons overlap: areas sum %r, union %r" % (i, total, union.area))
    # No gaps: the union differs from the pixels' union only along the
    # outer boundary, within the tolerance.
    diff = union.symmetric_difference(plain)
    if not diff.is_empty and diff.buffer(-c["tol"] * 1.01).area > 1e-9:
        bad.append("raster %d: union differs from the pixels by more than the tolerance" % i)
    if not plain.difference(union).difference(plain.boundary.buffer(c["tol"] * 1.01)).is_empty:
        bad.append("raster %d: a gap away from the outer boundary" % i)
print("\n".join(bad) if bad else "ok")
`
	out, err := exec.Command(py, "-c", script, in).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, "ok", strings.TrimSpace(string(out)))
}

func BenchmarkPolygonizeSimplified(b *testing.B) {
	rng := rand.New(rand.NewPCG(11, 12))
	labels := randomLabels(rng, 1000, 1000, 5, 0)
	if err := geo.Sieve(labels, 1000, 1000, 10, 0); err != nil { // as zoning does: 0.1 ha at 10 m
		b.Fatal(err)
	}
	g := geo.Grid{X0: 0, Y0: 10000, DX: 10, DY: 10, Cols: 1000, Rows: 1000}
	for b.Loop() {
		geo.PolygonizeSimplified(labels, g, 0, 10)
	}
}
