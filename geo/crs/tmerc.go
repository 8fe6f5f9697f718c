package crs

import (
	"math"

	"github.com/wroge/wgs84/v2"
)

// tmerc is the library's transverse Mercator with a corrected inverse.
//
// wgs84/v2 v2.0.0-alpha.20 has the wrong sign on the n³ term of the second
// inverse Krüger coefficient (β₂ = n²/48 + n³/15 − 437n⁴/1440, Karney 2011
// eq. 36), which moves inverse UTM latitudes by up to ~3 mm. The forward
// series is correct and is used as is.
type tmerc struct{ wgs84.TransverseMercator }

func (t tmerc) ToGeographic(east, north, h float64, s wgs84.Spheroid) (lon, lat, height float64) {
	n := s.F() / (2 - s.F())
	n2, n3, n4 := n*n, n*n*n, n*n*n*n
	e := s.E()
	B := (s.A / (1 + n)) * (1 + n2/4 + n4/64)

	// Meridian arc to the latitude of origin (forward series, as the library).
	mo := 0.0
	if phi0 := t.Latf * math.Pi / 180; phi0 != 0 {
		a := [4]float64{
			n/2 - 2*n2/3 + 5*n3/16 + 41*n4/180,
			13*n2/48 - 3*n3/5 + 557*n4/1440,
			61*n3/240 - 103*n4/140,
			49561 * n4 / 161280,
		}
		q := math.Asinh(math.Tan(phi0)) - e*math.Atanh(e*math.Sin(phi0))
		xi := math.Atan(math.Sinh(q))
		x := xi
		for j, c := range a {
			x += c * math.Sin(float64(2*(j+1))*xi)
		}
		mo = B * x
	}

	beta := [4]float64{
		n/2 - 2*n2/3 + 37*n3/96 - n4/360,
		n2/48 + n3/15 - 437*n4/1440,
		17*n3/480 - 37*n4/840,
		4397 * n4 / 161280,
	}
	eta := (east - t.Eastf) / (B * t.Scale)
	xi := ((north - t.Northf) + t.Scale*mo) / (B * t.Scale)
	xi0, eta0 := xi, eta
	for j, c := range beta {
		k := float64(2 * (j + 1))
		xi0 -= c * math.Sin(k*xi) * math.Cosh(k*eta)
		eta0 -= c * math.Cos(k*xi) * math.Sinh(k*eta)
	}
	chi := math.Asin(math.Sin(xi0) / math.Cosh(eta0)) // conformal latitude
	q := math.Asinh(math.Tan(chi))
	qq := q + e*math.Atanh(e*math.Tanh(q))
	for range 20 {
		next := q + e*math.Atanh(e*math.Tanh(qq))
		if math.Abs(next-qq) < 1e-15 {
			qq = next
			break
		}
		qq = next
	}
	lat = math.Atan(math.Sinh(qq)) * 180 / math.Pi
	lon = wrapLon(t.Lonf + math.Atan2(math.Sinh(eta0), math.Cos(xi0))*180/math.Pi)
	return lon, lat, h
}

// wrapLon brings a longitude into [-180, 180), as PROJ does: a zone near
// the antimeridian (UTM 60, 1) otherwise yields e.g. 182° for -178°.
func wrapLon(lon float64) float64 {
	if lon >= -180 && lon < 180 {
		return lon
	}
	lon = math.Mod(lon+180, 360)
	if lon < 0 {
		lon += 360
	}
	return lon - 180
}

// laea is the library's Lambert azimuthal equal-area (EPSG:3035) with the
// projection centre handled: its inverse divides by ρ, the distance from
// the false origin, and returns NaN exactly there.
type laea struct {
	wgs84.LambertAzimuthalEqualArea
}

func (l laea) ToGeographic(east, north, h float64, s wgs84.Spheroid) (lon, lat, height float64) {
	if east == l.Eastf && north == l.Northf {
		return l.Lonf, l.Latf, h
	}
	lon, lat, height = l.LambertAzimuthalEqualArea.ToGeographic(east, north, h, s)
	return wrapLon(lon), lat, height
}
