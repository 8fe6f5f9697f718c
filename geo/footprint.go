package geo

import (
	"fmt"
	"math"

	"github.com/paulmach/orb"

	"github.com/cropkit/cropkit/geo/crs"
)

// LonLatBound is the lon/lat box of grid g: its edges, sampled every 1/16
// of their length (projected edges curve in lon/lat), transformed to
// EPSG:4326.
func LonLatBound(g Grid) (orb.Bound, error) {
	t, err := crs.New(g.EPSG, 4326)
	if err != nil {
		return orb.Bound{}, fmt.Errorf("lon/lat bound: %w", err)
	}
	out := TransformBound(g.Bound(), t)
	if math.IsNaN(out.Min[0]) || math.IsInf(out.Min[0], 0) || math.IsNaN(out.Max[1]) || math.IsInf(out.Max[1], 0) {
		return orb.Bound{}, fmt.Errorf("lon/lat bound: grid %+v does not map to lon/lat", g)
	}
	return out, nil
}

// BoundArea is the area in m² of a lon/lat box (GeodesicArea of its polygon).
func BoundArea(b orb.Bound) float64 {
	return GeodesicArea(orb.MultiPolygon{b.ToPolygon()})
}

// TransformBound is the box, in t's target CRS, of box b: its edges sampled
// every 1/16 of their length (projected edges curve) and transformed.
func TransformBound(b orb.Bound, t crs.Transformer) orb.Bound {
	out := orb.Bound{Min: orb.Point{math.Inf(1), math.Inf(1)}, Max: orb.Point{math.Inf(-1), math.Inf(-1)}}
	const steps = 16
	for i := 0; i <= steps; i++ {
		f := float64(i) / steps
		x := b.Min[0] + f*(b.Max[0]-b.Min[0])
		y := b.Min[1] + f*(b.Max[1]-b.Min[1])
		for _, p := range [4][2]float64{{x, b.Min[1]}, {x, b.Max[1]}, {b.Min[0], y}, {b.Max[0], y}} {
			tx, ty := t.Transform(p[0], p[1])
			out = out.Extend(orb.Point{tx, ty})
		}
	}
	return out
}
