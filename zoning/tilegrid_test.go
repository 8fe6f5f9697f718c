package zoning

import (
	"context"
	"testing"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/geo/crs"
)

// TestRunOutlineBeyondGrid: the field window can be smaller than the
// outline (trimmed to the pixel centres inside it, or clipped by the
// scene's extent); the zones still tile the whole outline, the parts
// outside any labelled pixel taking the nearest zone.
func TestRunOutlineBeyondGrid(t *testing.T) {
	const x0, y0 = 500000.0, 5630000.0
	rect := func(xa, ya, xb, yb float64) orb.Ring {
		return orb.Ring{{xa, ya}, {xb, ya}, {xb, yb}, {xa, yb}, {xa, ya}}
	}
	tests := []struct {
		name       string
		cols, rows int
		ring       orb.Ring // EPSG:32631
		zones      int
	}{
		// The window 9×13 pixels, the outline 20 pixels wider on each side
		// (a field extending beyond the scene).
		{"clipped by the scene", 9, 13, rect(x0-200, y0-130, x0+290, y0), 2},
		// A triangle whose tip lies 3.5 pixels past the last centre inside it.
		{"triangle tip", 6, 7, orb.Ring{{x0, y0 - 70}, {x0 + 95, y0 - 70}, {x0, y0 + 35}, {x0, y0 - 70}}, 2},
		// A sliver 0.5 m thick holding no centre, 14 pixels long over a window
		// of the two it touches inside the scene.
		{"sliver", 2, 1, rect(x0+1, y0-4.9, x0+139, y0-4.4), 1},
		// A square of 200×200 pixels over an 8×8 window.
		{"huge outline", 8, 8, rect(x0-960, y0-1040, x0+1040, y0+960), 3},
	}
	to4326, err := crs.New(32631, 4326)
	require.NoError(t, err)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := geo.Grid{EPSG: 32631, X0: x0, Y0: y0, DX: 10, DY: 10, Cols: tc.cols, Rows: tc.rows}
			vals := make([]float64, g.Cols*g.Rows)
			for i := range vals {
				vals[i] = 0.2 + 0.6*float64(i%g.Cols)/float64(g.Cols) + 0.01*float64(i/g.Cols)
			}
			utm := orb.MultiPolygon{{tc.ring}}
			outline, err := geo.Transform(utm, to4326)
			require.NoError(t, err)
			c, err := Run(context.Background(), Request{Grid: g, Outline: outline,
				Layers:  []Layer{{Name: "ndvi", Type: CropHealth, Values: vals, Weight: 1}},
				Options: Options{Zones: tc.zones, Seed: 1, MinAreaHa: -1}, DstEPSG: 32631})
			require.NoError(t, err)
			require.NotNil(t, c.Quality)
			assert.Equal(t, tc.zones, c.Quality.Zones)
			var area float64
			for _, f := range c.Features {
				require.NoError(t, geo.ValidatePolygon(f.Polygon))
				area += geo.Area(orb.MultiPolygon{f.Polygon})
			}
			// Projected to EPSG:4326 and back: the outline's area within 1e-6.
			assert.InDelta(t, geo.Area(utm), area, 1e-6*geo.Area(utm), "the zones tile the whole outline")
		})
	}
}
