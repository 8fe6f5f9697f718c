package geo

import (
	"math"

	"github.com/paulmach/orb"
)

// WGS 84 ellipsoid.
const (
	wgs84A = 6378137.0
	wgs84F = 1 / 298.257223563
)

// GeodesicArea is the area in m² of lon/lat multipolygon mp on the WGS 84
// ellipsoid: exterior rings count positive, holes negative, whatever their
// orientation.
//
// Latitudes are mapped to authalic latitudes, which carry the ellipsoid
// onto the sphere of equal total area (the authalic radius) preserving area
// everywhere, and each ring's area is then the exact spherical polygon
// area with great-circle edges. The only approximation is that a geodesic
// edge maps to a curve close to, not exactly, a great circle. Against
// Karney's geodesic polygons (pyproj) the relative error is at most 1.2e-8
// on the real fields (rounding), 2e-7 for 1° boxes, 2e-5 for a 10° box and
// 4e-6 for a continent outline with edges of a few degrees; it nears 1e-4
// only for single edges of thousands of kilometres (a 30° box drawn with 4
// vertices).
func GeodesicArea(mp orb.MultiPolygon) float64 {
	au := newAuthalic()
	total := 0.0
	for _, p := range mp {
		for j, rg := range p {
			if j == 0 {
				total += au.ringArea(rg)
			} else {
				total -= au.ringArea(rg)
			}
		}
	}
	return total
}

// authalic maps geodetic to authalic latitudes of WGS 84.
type authalic struct {
	e2, e, qp, r float64
}

func newAuthalic() authalic {
	e2 := wgs84F * (2 - wgs84F)
	au := authalic{e2: e2, e: math.Sqrt(e2)}
	au.qp = au.q(1)
	au.r = wgs84A * math.Sqrt(au.qp/2)
	return au
}

// q is Snyder's q (Map Projections: A Working Manual, eq. 3-12) of sin φ.
func (au authalic) q(sinPhi float64) float64 {
	return (1 - au.e2) * (sinPhi/(1-au.e2*sinPhi*sinPhi) + math.Atanh(au.e*sinPhi)/au.e)
}

// tanHalfBeta is tan(β/2) of the authalic latitude β of latitude lat in
// degrees, from sin β = q(sin φ)/q_p without an inverse sine:
// tan(β/2) = sin β / (1 + cos β).
func (au authalic) tanHalfBeta(lat float64) float64 {
	s := max(-1, min(1, au.q(math.Sin(lat*math.Pi/180))/au.qp))
	return s / (1 + math.Sqrt(1-s*s))
}

// ringArea is the unsigned area in m² of ring rg (first point repeated
// last) on the authalic sphere. Each edge contributes the signed spherical
// excess of the quadrilateral it forms with the equator,
// 2·atan(tan(Δλ/2)·(tan(β₁/2)+tan(β₂/2)) / (1+tan(β₁/2)·tan(β₂/2))), which
// is exact for a great-circle edge. An edge spanning 180° of longitude or
// more has no shortest path that follows the ring as drawn in lon/lat (the
// reading of every other part of cropkit: bounding boxes, rasterization),
// so it is cut in steps of at most 90° first; a box around the world then keeps
// its large area instead of collapsing to a sliver across 180°.
func (au authalic) ringArea(rg orb.Ring) float64 {
	if len(rg) < 4 {
		return 0
	}
	s := 0.0
	lon1, t1 := rg[0][0], au.tanHalfBeta(rg[0][1])
	edge := func(lon2, lat2 float64) {
		t2 := au.tanHalfBeta(lat2)
		dl := (lon2 - lon1) * math.Pi / 180
		s += 2 * math.Atan2(math.Tan(dl/2)*(t1+t2), 1+t1*t2)
		lon1, t1 = lon2, t2
	}
	for i := 0; i+1 < len(rg); i++ {
		a, b := rg[i], rg[i+1]
		if w := math.Abs(b[0] - a[0]); w >= 180 {
			n := math.Ceil(w / 90)
			for k := 1.0; k < n; k++ {
				edge(a[0]+k/n*(b[0]-a[0]), a[1]+k/n*(b[1]-a[1]))
			}
		}
		edge(b[0], b[1])
	}
	return math.Abs(s) * au.r * au.r
}
