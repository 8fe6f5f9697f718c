// Package outlinetest makes random field outlines for property tests: the
// small, thin and triangular shapes that trip up rasterizing, tiling and
// zoning, placed over a grid or beyond its edges.
package outlinetest

import (
	"math"
	"math/rand/v2"

	"github.com/paulmach/orb"

	"github.com/cropkit/cropkit/geo"
)

// Kinds are the shapes Random makes, in the order of its kind argument.
var Kinds = [...]string{"rectangle", "sliver", "triangle"}

// Random returns a counter-clockwise ring in g's CRS: Kinds[kind%3] — a
// rectangle of 5–85 m sides, a sliver 20–300 m long and 0.3–5 m wide, or a
// triangle within 100 m — turned by a random angle, centred anywhere over g
// or up to margin metres beyond its edges.
func Random(rng *rand.Rand, g geo.Grid, margin float64, kind int) (string, orb.Ring) {
	w, h := float64(g.Cols)*g.DX, float64(g.Rows)*g.DY
	cx, cy := g.X0-margin+rng.Float64()*(w+2*margin), g.Y0+margin-rng.Float64()*(h+2*margin)
	var pts []orb.Point
	switch kind % len(Kinds) {
	case 0:
		a, b := 5+rng.Float64()*80, 5+rng.Float64()*80
		pts = []orb.Point{{-a / 2, -b / 2}, {a / 2, -b / 2}, {a / 2, b / 2}, {-a / 2, b / 2}}
	case 1:
		a, b := 20+rng.Float64()*280, 0.3+rng.Float64()*4.7
		pts = []orb.Point{{-a / 2, -b / 2}, {a / 2, -b / 2}, {a / 2, b / 2}, {-a / 2, b / 2}}
	default:
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
	return Kinds[kind%len(Kinds)], ring
}
