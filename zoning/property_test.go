package zoning

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/geo/crs"
	"github.com/cropkit/cropkit/imagery"
	"github.com/cropkit/cropkit/internal/outlinetest"
	"github.com/cropkit/cropkit/internal/testenv"
)

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
			kind, ring := outlinetest.Random(rng, g, 100, rng.IntN(3))
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
