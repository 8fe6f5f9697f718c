package zoning

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/cropkit/cropkit/geo"
	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// unionStats returns, from shapely, the number of invalid polygons, the
// overlap area (sum of areas minus union area), the union's area and its
// number of holes; ok is false without python3-shapely.
func unionStats(t *testing.T, polys []ZonePolygon) (invalid int, overlap, area float64, holes int, ok bool) {
	t.Helper()
	py := "/usr/bin/python3"
	if exec.Command(py, "-c", "import shapely").Run() != nil {
		return 0, 0, 0, 0, false
	}
	var coords [][][][2]float64
	for _, p := range polys {
		coords = append(coords, ringsCoords(p.Polygon))
	}
	in, err := json.Marshal(coords)
	require.NoError(t, err)
	script := `
import json, sys
from shapely.geometry import Polygon
from shapely.ops import unary_union
ps = [Polygon(p[0], p[1:]) for p in json.load(sys.stdin)]
u = unary_union(ps)
parts = list(u.geoms) if hasattr(u, "geoms") else [u]
print(json.dumps([sum(not p.is_valid for p in ps), sum(p.area for p in ps) - u.area, u.area, sum(len(p.interiors) for p in parts)]))
`
	cmd := exec.Command(py, "-c", script)
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	require.NoError(t, err)
	var r [4]float64
	require.NoError(t, json.Unmarshal(out, &r))
	return int(r[0]), r[1], r[2], int(r[3]), true
}

func vertexCount(polys []ZonePolygon) int {
	n := 0
	for _, p := range polys {
		for _, r := range p.Polygon {
			n += len(r)
		}
	}
	return n
}

func TestComputeSimplify(t *testing.T) {
	g, mask, layers := syntheticField(120, 90, 11)
	plain, err := Compute(context.Background(), g, mask, layers, Options{Zones: 5, Seed: 1})
	require.NoError(t, err)
	for _, tol := range []float64{8, 15, 30} {
		res, err := Compute(context.Background(), g, mask, layers, Options{Zones: 5, Seed: 1, SimplifyTolerance: tol})
		require.NoError(t, err)
		require.True(t, res.Simplified, "tolerance %v", tol)
		assert.Equal(t, plain.Labels, res.Labels)
		require.Len(t, res.Polygons, len(plain.Polygons))
		assert.Less(t, vertexCount(res.Polygons), vertexCount(plain.Polygons)*3/4, "tolerance %v removes vertices", tol)
		for i, p := range res.Polygons {
			assert.Equal(t, plain.Polygons[i].Zone, p.Zone)
			assertValidPolygon(t, p.Polygon)
		}
		// Areas change little.
		var a0, a1 float64
		for i := range res.Polygons {
			a0 += geo.Area(orb.MultiPolygon{plain.Polygons[i].Polygon})
			a1 += geo.Area(orb.MultiPolygon{res.Polygons[i].Polygon})
		}
		assert.InDelta(t, a0, a1, 0.001*tol*a0, "tolerance %v: area change within 0.1 %% per metre of tolerance", tol)
		t.Logf("tolerance %v m: %d → %d vertices, area %.0f → %.0f m²", tol, vertexCount(plain.Polygons), vertexCount(res.Polygons), a0, a1)

		bad, overlap, area, holes, ok := unionStats(t, res.Polygons)
		if !ok {
			continue
		}
		_, _, _, holes0, _ := unionStats(t, plain.Polygons)
		assert.Zero(t, bad, "shapely-valid polygons")
		assert.InDelta(t, 0, overlap, 1e-6*area, "no overlap")
		assert.Equal(t, holes0, holes, "no gap opened between zones")
	}
}

func TestSimplifySharedRefusesCrossing(t *testing.T) {
	// Two zones sharing a zigzag boundary: a huge tolerance would collapse
	// rings; the result must then be the unchanged input.
	a := orb.Polygon{{{0, 0}, {10, 0}, {10, 10}, {20, 10}, {20, 20}, {0, 20}, {0, 0}}}
	b := orb.Polygon{{{10, 0}, {30, 0}, {30, 20}, {20, 20}, {20, 10}, {10, 10}, {10, 0}}}
	in := []ZonePolygon{{Zone: 1, Polygon: a}, {Zone: 2, Polygon: b}}
	out, ok := simplifyShared(in, 1000, false)
	assert.False(t, ok)
	assert.Equal(t, in, out)
	// A moderate tolerance straightens the shared zigzag for both zones.
	out, ok = simplifyShared(in, 7.1, false)
	require.True(t, ok)
	assert.Equal(t, orb.Ring{{10, 0}, {20, 20}, {0, 20}, {0, 0}, {10, 0}}, out[0].Polygon[0])
	assert.Equal(t, orb.Ring{{10, 0}, {30, 0}, {30, 20}, {20, 20}, {10, 0}}, out[1].Polygon[0])
}
