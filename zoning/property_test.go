package zoning

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/geo/crs"
	"github.com/cropkit/cropkit/imagery"
	"github.com/cropkit/cropkit/internal/testenv"
)

// randomOutline is a small rectangle, a thin sliver or a triangle, turned
// by a random angle, somewhere over g or up to 100 m beyond its edges, in
// g's CRS.
func randomOutline(rng *rand.Rand, g geo.Grid) (string, orb.Ring) {
	w, h := float64(g.Cols)*g.DX, float64(g.Rows)*g.DY
	cx, cy := g.X0-100+rng.Float64()*(w+200), g.Y0+100-rng.Float64()*(h+200)
	var kind string
	var pts []orb.Point
	switch rng.IntN(3) {
	case 0:
		kind = "rectangle"
		a, b := 5+rng.Float64()*80, 5+rng.Float64()*80
		pts = []orb.Point{{-a / 2, -b / 2}, {a / 2, -b / 2}, {a / 2, b / 2}, {-a / 2, b / 2}}
	case 1:
		kind = "sliver"
		a, b := 20+rng.Float64()*280, 0.3+rng.Float64()*4.7
		pts = []orb.Point{{-a / 2, -b / 2}, {a / 2, -b / 2}, {a / 2, b / 2}, {-a / 2, b / 2}}
	default:
		kind = "triangle"
		for range 3 {
			pts = append(pts, orb.Point{(rng.Float64() - 0.5) * 100, (rng.Float64() - 0.5) * 100})
		}
	}
	th := rng.Float64() * math.Pi
	ring := make(orb.Ring, 0, len(pts)+1)
	for _, p := range pts {
		ring = append(ring, orb.Point{cx + p[0]*math.Cos(th) - p[1]*math.Sin(th), cy + p[0]*math.Sin(th) + p[1]*math.Cos(th)})
	}
	ring = append(ring, ring[0])
	if geo.Area(orb.MultiPolygon{{ring}}) < 0 {
		for i, j := 0, len(ring)-1; i < j; i, j = i+1, j-1 {
			ring[i], ring[j] = ring[j], ring[i]
		}
	}
	return kind, ring
}

// TestRunRandomOutlines: random small, thin and triangular outlines over the
// real chips, inside them or reaching beyond their extent, never make Run
// fail but for too few pixels, and their zones tile the outline (area
// outside and uncovered each ≤ 0.1 % of it).
func TestRunRandomOutlines(t *testing.T) {
	scenes := []string{"flanders-31UES/2019-07-05", "flanders-31UDS/2018-07-15", "slovenia-eolearn/2015-07-11"}
	const perScene = 40
	for si, name := range scenes {
		dir := testenv.DataDir(t, "s2", name)
		sc, err := imagery.OpenScene(context.Background(), dir, imagery.SceneOptions{})
		require.NoError(t, err)
		g := sc.Grid()
		back, err := crs.New(g.EPSG, 4326)
		require.NoError(t, err)
		rng := rand.New(rand.NewPCG(uint64(si), 7))
		zoned := 0
		for i := range perScene {
			kind, ring := randomOutline(rng, g)
			k := 1 + rng.IntN(3)
			t.Run(fmt.Sprintf("%s/%d-%s-k%d", name, i, kind, k), func(t *testing.T) {
				outline, err := geo.Transform(orb.MultiPolygon{{ring}}, back)
				require.NoError(t, err)
				ps, err := sc.FieldProducts(context.Background(), outline, []string{"ndvi"}, nil)
				if errors.Is(err, imagery.ErrNoOverlap) || errors.Is(err, imagery.ErrNoClearPixels) {
					return // no image to zone: the server answers 404 before zoning
				}
				require.NoError(t, err)
				p := ps[0]
				col, err := Run(context.Background(), Request{Grid: p.Grid, Outline: outline,
					Layers:  []Layer{{Name: "ndvi", Type: CropHealth, Values: p.Values, Weight: 1}},
					Options: Options{Zones: k, Seed: 1}, Prescription: Prescription{Type: NFertilizer}, DstEPSG: g.EPSG})
				if errors.Is(err, ErrTooFewPixels) {
					assert.Less(t, p.Stats.Num, k, "only fewer usable pixels than zones fail")
					return
				}
				require.NoError(t, err, "ring %v", ring)
				zoned++
				st := shapelyTiling(t, col, orb.MultiPolygon{{ring}})
				assert.Empty(t, st.Invalid)
				assert.LessOrEqual(t, st.Outside, 1e-3*st.Area, "outside")
				assert.LessOrEqual(t, st.Uncovered, 1e-3*st.Area, "uncovered")
				assert.LessOrEqual(t, st.Overlap, 1e-6*st.Area, "overlap")
			})
		}
		sc.Close()
		t.Logf("%s: %d of %d outlines zoned", name, zoned, perScene)
		assert.Greater(t, zoned, perScene/4, "enough outlines reach zoning")
	}
}

// TestRunEdgeOutlines: outlines that failed with "outline not covered by
// labelled pixels" (a 500): a field reaching beyond the 640 m chip, a small
// triangle whose corner lies past its last pixel centre, and a sliver.
func TestRunEdgeOutlines(t *testing.T) {
	tests := []struct {
		name, scene string
		ring        orb.Ring // EPSG:4326
		zones       int
	}{
		{"beyond the chip", "flanders-31UES/2019-07-05", orb.Ring{{4.0094016, 50.746340065}, {4.0595016, 50.746340065},
			{4.0595016, 50.747340065}, {4.0094016, 50.747340065}, {4.0094016, 50.746340065}}, 2},
		{"huge square", "flanders-31UES/2019-07-05", orb.Ring{{3.9, 50.6}, {4.25, 50.6}, {4.25, 50.85}, {3.9, 50.85}, {3.9, 50.6}}, 2},
		{"small triangle", "flanders-31UDS/2018-07-15", orb.Ring{{3.0253, 50.8178}, {3.0260, 50.8178}, {3.0260, 50.8172}, {3.0253, 50.8178}}, 2},
		{"small triangle, one zone", "flanders-31UDS/2018-07-15", orb.Ring{{3.0253, 50.8178}, {3.0260, 50.8178}, {3.0260, 50.8172}, {3.0253, 50.8178}}, 1},
		{"sliver", "flanders-31UES/2019-07-05", orb.Ring{{4.061436155, 50.746340065}, {4.063436155, 50.746340065},
			{4.063436155, 50.746345065}, {4.061436155, 50.746345065}, {4.061436155, 50.746340065}}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			outline := orb.MultiPolygon{{tc.ring}}
			p := realIndex(t, testenv.DataDir(t, "s2", tc.scene), outline, "ndvi")
			col, err := Run(context.Background(), Request{Grid: p.Grid, Outline: outline,
				Layers:  []Layer{{Name: "ndvi", Type: CropHealth, Values: p.Values, Weight: 1}},
				Options: Options{Zones: tc.zones, Seed: 1}, Prescription: Prescription{Type: NFertilizer}, DstEPSG: p.Grid.EPSG})
			require.NoError(t, err)
			assert.Equal(t, tc.zones, col.Quality.Zones)
			to, err := crs.New(4326, p.Grid.EPSG)
			require.NoError(t, err)
			o, err := geo.Transform(outline, to)
			require.NoError(t, err)
			st := shapelyTiling(t, col, o)
			assert.Empty(t, st.Invalid)
			assert.LessOrEqual(t, st.Outside, 1e-3*st.Area, "outside")
			assert.LessOrEqual(t, st.Uncovered, 1e-3*st.Area, "uncovered")
			t.Logf("%d pixels of %d (%d clear), %.4g ha, %d polygons", p.Grid.Cols*p.Grid.Rows, p.Stats.FieldPixels, p.Stats.Num, st.Area/1e4, len(col.Features))
		})
	}
}
