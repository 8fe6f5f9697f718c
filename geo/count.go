package geo

import "github.com/paulmach/orb"

// countStripPixels bounds the mask CountCentres and CountTouched allocate
// at a time.
const countStripPixels = 1 << 16

// CountCentres returns how many pixels of g have their centre inside mp,
// by Rasterize's rule but without its fallback for parcels thinner than a
// pixel. It rasterizes strips of rows, so its memory is O(g.Cols) however
// many rows g has: it counts a field's pixels outside a scene's extent
// without allocating a mask for them.
func CountCentres(mp orb.MultiPolygon, g Grid) int {
	n := 0
	forStrips(g, func(s Grid, mask []bool) { n += fillCentres(mp, s, mask) })
	return n
}

// CountTouched returns how many pixels RasterizeAllTouched(mp, g) marks, in
// strips of rows like CountCentres.
func CountTouched(mp orb.MultiPolygon, g Grid) int {
	n := 0
	forStrips(g, func(s Grid, mask []bool) {
		fillCentres(mp, s, mask)
		touchEdges(mp, s, mask)
		for _, in := range mask {
			if in {
				n++
			}
		}
	})
	return n
}

// forStrips calls f with consecutive strips of g's rows and a cleared mask
// for each.
func forStrips(g Grid, f func(strip Grid, mask []bool)) {
	if g.Cols <= 0 || g.Rows <= 0 {
		return
	}
	h := max(1, countStripPixels/g.Cols)
	buf := make([]bool, min(h, g.Rows)*g.Cols)
	for r := 0; r < g.Rows; r += h {
		s := g.Sub(Window{Row: r, Cols: g.Cols, Rows: min(h, g.Rows-r)})
		mask := buf[:s.Cols*s.Rows]
		clear(mask)
		f(s, mask)
	}
}
