package geo

import (
	"fmt"
	"math"

	"github.com/paulmach/orb"

	"github.com/cropkit/cropkit/geo/crs"
)

// Area is the planar area of mp in square CRS units: shells minus holes,
// whatever the ring orientation.
func Area(mp orb.MultiPolygon) float64 {
	a := 0.0
	for _, p := range mp {
		a += polygonArea(p)
	}
	return a
}

func polygonArea(p orb.Polygon) float64 {
	if len(p) == 0 {
		return 0
	}
	a := math.Abs(ringArea(p[0]))
	for _, h := range p[1:] {
		a -= math.Abs(ringArea(h))
	}
	return a
}

// ringArea is the signed shoelace area, positive for counter-clockwise rings.
// Coordinates are taken relative to the first point to keep precision with
// large UTM values.
func ringArea(r orb.Ring) float64 {
	n := len(r)
	if n < 3 {
		return 0
	}
	x0, y0 := r[0][0], r[0][1]
	s := 0.0
	for i := range n {
		a, b := r[i], r[(i+1)%n]
		s += (a[0]-x0)*(b[1]-y0) - (b[0]-x0)*(a[1]-y0)
	}
	return s / 2
}

// Transform reprojects mp with t and fails when a coordinate cannot be
// transformed (outside the target CRS's domain: the transformer returns NaN).
func Transform(mp orb.MultiPolygon, t crs.Transformer) (orb.MultiPolygon, error) {
	out := make(orb.MultiPolygon, len(mp))
	for i, p := range mp {
		out[i] = make(orb.Polygon, len(p))
		for j, r := range p {
			nr := make(orb.Ring, len(r))
			for k, pt := range r {
				x, y := t.Transform(pt[0], pt[1])
				if math.IsNaN(x) || math.IsNaN(y) || math.IsInf(x, 0) || math.IsInf(y, 0) {
					return nil, fmt.Errorf("transform polygon %d ring %d point %d (%g, %g): outside the target CRS", i, j, k, pt[0], pt[1])
				}
				nr[k] = orb.Point{x, y}
			}
			out[i][j] = nr
		}
	}
	return out, nil
}
