package geo

import (
	"fmt"
	"testing"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
)

func TestCountCentres(t *testing.T) {
	g := Grid{EPSG: 32631, X0: 0, Y0: 0, DX: 10, DY: 10, Cols: 70, Rows: 5000}
	tests := []struct {
		name    string
		ring    orb.Ring
		centres int // pixels whose centre is inside
		touched int // pixels RasterizeAllTouched marks
	}{
		// Pixel-aligned: 20 columns × 3000 rows, across several strips.
		{"rectangle", orb.Ring{{100, -100}, {300, -100}, {300, -30100}, {100, -30100}, {100, -100}}, 60000, 60000},
		// A sliver 0.5 m thick along 10 pixels: no centre, 10 touched.
		{"sliver", orb.Ring{{0, -4.9}, {100, -4.9}, {100, -4.4}, {0, -4.4}, {0, -4.9}}, 0, 10},
		// Off the grid, across every strip: compared with the masks only.
		{"triangle", orb.Ring{{3, -7}, {683, -7}, {3, -49987}, {3, -7}}, -1, -1},
	}
	count := func(mask []bool) int {
		n := 0
		for _, in := range mask {
			if in {
				n++
			}
		}
		return n
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mp := orb.MultiPolygon{{tc.ring}}
			centres, touched := CountCentres(mp, g), CountTouched(mp, g)
			if tc.centres >= 0 {
				assert.Equal(t, tc.centres, centres)
				assert.Equal(t, tc.touched, touched)
			}
			// The same counts as the masks over the whole grid (Rasterize
			// falls back to the touched pixels when no centre is inside).
			if centres > 0 {
				assert.Equal(t, count(Rasterize(mp, g)), centres)
			}
			assert.Equal(t, count(RasterizeAllTouched(mp, g)), touched)
		})
	}
}

// A field's pixels are counted without a mask over them: here 300 × 200
// pixels of 10 m, of which a 64 × 64 scene would hold a corner.
func ExampleCountCentres() {
	g := Grid{EPSG: 32631, X0: 0, Y0: 0, DX: 10, DY: 10, Cols: 300, Rows: 200}
	field := orb.MultiPolygon{{{{0.5, -0.5}, {2999.5, -0.5}, {2999.5, -1999.5}, {0.5, -1999.5}, {0.5, -0.5}}}}
	fmt.Println(CountCentres(field, g), CountTouched(field, g))
	// Output: 60000 60000
}
