package crs

import "math"

// ellipsoid holds the derived constants the projections share.
type ellipsoid struct {
	a, f, e2, e float64
}

func newEllipsoid(a, rf float64) ellipsoid {
	f := 0.0
	if rf != 0 {
		f = 1 / rf
	}
	e2 := f * (2 - f)
	return ellipsoid{a: a, f: f, e2: e2, e: math.Sqrt(e2)}
}

// eatanh is e·atanh(e·x), the ellipsoidal correction of the isometric
// latitude; zero on a sphere.
func (el ellipsoid) eatanh(x float64) float64 { return el.e * math.Atanh(el.e*x) }

// taupf maps τ = tan φ to τ′ = tan χ, χ the conformal latitude (Karney 2011, eq. 7).
func (el ellipsoid) taupf(tau float64) float64 {
	if math.IsInf(tau, 0) {
		return tau
	}
	tau1 := math.Hypot(1, tau)
	sig := math.Sinh(el.eatanh(tau / tau1))
	return math.Hypot(1, sig)*tau - sig*tau1
}

// tauf inverts taupf by Newton's method (Karney 2011, eqs. 19–21).
func (el ellipsoid) tauf(taup float64) float64 {
	if math.IsInf(taup, 0) {
		return taup
	}
	e2m := 1 - el.e2
	tau := taup / e2m
	stol := 1e-15 * math.Max(1, math.Abs(taup))
	for range 8 {
		taupa := el.taupf(tau)
		dtau := (taup - taupa) * (1 + e2m*tau*tau) / (e2m * math.Hypot(1, tau) * math.Hypot(1, taupa))
		tau += dtau
		if !(math.Abs(dtau) >= stol) {
			break
		}
	}
	return tau
}

// psi is the isometric latitude of φ.
func (el ellipsoid) psi(phi float64) float64 { return math.Asinh(el.taupf(math.Tan(phi))) }

// phiOfPsi inverts psi.
func (el ellipsoid) phiOfPsi(psi float64) float64 { return math.Atan(el.tauf(math.Sinh(psi))) }

// m is cos φ / √(1 − e² sin² φ).
func (el ellipsoid) m(phi float64) float64 {
	s := math.Sin(phi)
	return math.Cos(phi) / math.Sqrt(1-el.e2*s*s)
}

// q is the authalic function of Snyder (3-12).
func (el ellipsoid) q(phi float64) float64 {
	s := math.Sin(phi)
	if el.e == 0 {
		return 2 * s
	}
	return (1 - el.e2) * (s/(1-el.e2*s*s) + math.Atanh(el.e*s)/el.e)
}

// phiOfQ inverts q by Newton's method (Snyder 3-16).
func (el ellipsoid) phiOfQ(q float64) float64 {
	qp := el.q(math.Pi / 2)
	if math.Abs(q) >= qp {
		return math.Copysign(math.Pi/2, q)
	}
	phi := math.Asin(q / 2)
	for range 20 {
		s, c := math.Sincos(phi)
		one := 1 - el.e2*s*s
		d := one * one / (2 * c) * (q/(1-el.e2) - s/one - math.Atanh(el.e*s)/el.e)
		if el.e == 0 {
			d = one * one / (2 * c) * (q - 2*s)
		}
		phi += d
		if math.Abs(d) < 1e-15 {
			break
		}
	}
	return phi
}

// toGeocentric converts geodetic φ, λ (radians) and height h to Earth-centred X, Y, Z.
func (el ellipsoid) toGeocentric(lon, lat, h float64) (x, y, z float64) {
	sp, cp := math.Sincos(lat)
	sl, cl := math.Sincos(lon)
	n := el.a / math.Sqrt(1-el.e2*sp*sp)
	return (n + h) * cp * cl, (n + h) * cp * sl, (n*(1-el.e2) + h) * sp
}

// fromGeocentric inverts toGeocentric (height dropped) by fixed-point
// iteration on the latitude, which converges to 1e-12 rad near the
// Earth's surface in a few steps.
func (el ellipsoid) fromGeocentric(x, y, z float64) (lon, lat float64) {
	p := math.Hypot(x, y)
	lon = math.Atan2(y, x)
	lat = math.Atan2(z, p*(1-el.e2))
	for range 10 {
		s := math.Sin(lat)
		n := el.a / math.Sqrt(1-el.e2*s*s)
		next := math.Atan2(z+el.e2*n*s, p)
		if math.Abs(next-lat) < 1e-14 {
			lat = next
			break
		}
		lat = next
	}
	return lon, lat
}

// wrapPi brings an angle into [−π, π).
func wrapPi(x float64) float64 {
	if x >= -math.Pi && x < math.Pi {
		return x
	}
	x = math.Mod(x+math.Pi, 2*math.Pi)
	if x < 0 {
		x += 2 * math.Pi
	}
	return x - math.Pi
}
