package crs

import (
	"fmt"
	"math"
)

// projection maps geodetic longitude (relative to the prime meridian) and
// latitude in radians to easting and northing in metres, false origin
// included, and back. Formulas follow IOGP Guidance Note 7-2 (EPSG) and,
// where PROJ deviates from it, PROJ, since pyproj is the reference.
type projection interface {
	forward(lon, lat float64) (e, n float64)
	inverse(e, n float64) (lon, lat float64)
}

const deg = math.Pi / 180

func newProjection(en *entry, el ellipsoid) (projection, error) {
	p := en.p
	switch en.method {
	case mTM:
		return newTM(el, p), nil
	case mLCC:
		return newLCC(el, p), nil
	case mAlbers:
		return newAlbers(el, p), nil
	case mLAEA:
		return newLAEA(el, p), nil
	case mObliqueStereo:
		return newObliqueStereo(el, p), nil
	case mPolarStereo:
		return newPolarStereo(el, p, en.flags&flagLatTS != 0), nil
	case mMercator:
		return newMercator(el, p, en.flags&flagLatTS != 0), nil
	case mWebMercator:
		return newMercator(newEllipsoid(el.a, 0), p, false), nil
	case mSwissOblique:
		return newSwiss(el, p), nil
	case mObliqueMercator:
		return newHotine(el, p, en.flags&flagNoUOff != 0), nil
	case mKrovak:
		return newKrovak(el, p), nil
	}
	return nil, fmt.Errorf("EPSG:%d: projection method %d not implemented", en.code, en.method)
}

// ---- Transverse Mercator: Krüger series to n⁶ (Karney 2011), accurate to
// a few nanometres within 4000 km of the central meridian.

type tm struct {
	el         ellipsoid
	lon0       float64
	k0, x0, y0 float64
	a          float64 // rectifying radius A
	alp, bet   [7]float64
	m0         float64 // A·ξ at the latitude of origin
}

func newTM(el ellipsoid, p [10]float64) *tm {
	n := el.f / (2 - el.f)
	n2 := n * n
	n3 := n2 * n
	n4, n5, n6 := n2*n2, n2*n2*n, n3*n3
	t := &tm{el: el, lon0: p[pLon0] * deg, k0: p[pK0], x0: p[pX0], y0: p[pY0]}
	t.a = el.a / (1 + n) * (1 + n2/4 + n4/64 + n6/256)
	t.alp = [7]float64{0,
		n/2 - 2*n2/3 + 5*n3/16 + 41*n4/180 - 127*n5/288 + 7891*n6/37800,
		13*n2/48 - 3*n3/5 + 557*n4/1440 + 281*n5/630 - 1983433*n6/1935360,
		61*n3/240 - 103*n4/140 + 15061*n5/26880 + 167603*n6/181440,
		49561*n4/161280 - 179*n5/168 + 6601661*n6/7257600,
		34729*n5/80640 - 3418889*n6/1995840,
		212378941 * n6 / 319334400,
	}
	t.bet = [7]float64{0,
		n/2 - 2*n2/3 + 37*n3/96 - n4/360 - 81*n5/512 + 96199*n6/604800,
		n2/48 + n3/15 - 437*n4/1440 + 46*n5/105 - 1118711*n6/3870720,
		17*n3/480 - 37*n4/840 - 209*n5/4480 + 5569*n6/90720,
		4397*n4/161280 - 11*n5/504 - 830251*n6/7257600,
		4583*n5/161280 - 108847*n6/3991680,
		20648693 * n6 / 638668800,
	}
	if lat0 := p[pLat0] * deg; lat0 != 0 {
		xi := math.Atan(el.taupf(math.Tan(lat0)))
		m := xi
		for j := 1; j <= 6; j++ {
			m += t.alp[j] * math.Sin(float64(2*j)*xi)
		}
		t.m0 = t.a * m
	}
	return t
}

func (t *tm) forward(lon, lat float64) (float64, float64) {
	lam := wrapPi(lon - t.lon0)
	taup := t.el.taupf(math.Tan(lat))
	sl, cl := math.Sincos(lam)
	xip := math.Atan2(taup, cl)
	etap := math.Asinh(sl / math.Hypot(taup, cl))
	xi, eta := xip, etap
	for j := 1; j <= 6; j++ {
		k := float64(2 * j)
		xi += t.alp[j] * math.Sin(k*xip) * math.Cosh(k*etap)
		eta += t.alp[j] * math.Cos(k*xip) * math.Sinh(k*etap)
	}
	return t.x0 + t.k0*t.a*eta, t.y0 + t.k0*(t.a*xi-t.m0)
}

func (t *tm) inverse(e, n float64) (float64, float64) {
	eta := (e - t.x0) / (t.k0 * t.a)
	xi := (n - t.y0 + t.k0*t.m0) / (t.k0 * t.a)
	xip, etap := xi, eta
	for j := 1; j <= 6; j++ {
		k := float64(2 * j)
		xip -= t.bet[j] * math.Sin(k*xi) * math.Cosh(k*eta)
		etap -= t.bet[j] * math.Cos(k*xi) * math.Sinh(k*eta)
	}
	sx, cx := math.Sincos(xip)
	sh := math.Sinh(etap)
	taup := sx / math.Hypot(sh, cx)
	lat := math.Atan(t.el.tauf(taup))
	return t.lon0 + math.Atan2(sh, cx), lat
}

// ---- Lambert Conic Conformal, 1SP (lat1 = lat0, k0) and 2SP (EPSG 9801/9802).

type lcc struct {
	el                ellipsoid
	lon0, n, af, rho0 float64 // af = a·F·k0
	x0, y0            float64
}

func newLCC(el ellipsoid, p [10]float64) *lcc {
	phi1, phi2 := p[pLat1]*deg, p[pLat2]*deg
	t := func(phi float64) float64 { return math.Exp(-el.psi(phi)) }
	var n float64
	if math.Abs(phi1-phi2) < 1e-12 {
		n = math.Sin(phi1)
	} else {
		n = (math.Log(el.m(phi1)) - math.Log(el.m(phi2))) / (math.Log(t(phi1)) - math.Log(t(phi2)))
	}
	f := el.m(phi1) / (n * math.Pow(t(phi1), n))
	l := &lcc{el: el, lon0: p[pLon0] * deg, n: n, af: el.a * f * p[pK0], x0: p[pX0], y0: p[pY0]}
	l.rho0 = l.rho(p[pLat0] * deg)
	return l
}

func (l *lcc) rho(phi float64) float64 {
	if math.Abs(phi) >= math.Pi/2 && phi*l.n > 0 {
		return 0
	}
	return l.af * math.Exp(-l.n*l.el.psi(phi))
}

func (l *lcc) forward(lon, lat float64) (float64, float64) {
	r := l.rho(lat)
	s, c := math.Sincos(l.n * wrapPi(lon-l.lon0))
	return l.x0 + r*s, l.y0 + l.rho0 - r*c
}

func (l *lcc) inverse(e, n float64) (float64, float64) {
	dx, dy := e-l.x0, l.rho0-(n-l.y0)
	sg := math.Copysign(1, l.n)
	r := sg * math.Hypot(dx, dy)
	theta := math.Atan2(sg*dx, sg*dy)
	if r == 0 {
		return l.lon0, math.Copysign(math.Pi/2, l.n)
	}
	psi := -math.Log(r/l.af) / l.n
	return l.lon0 + theta/l.n, l.el.phiOfPsi(psi)
}

// ---- Albers Equal Area (EPSG 9822).

type albers struct {
	el               ellipsoid
	lon0, n, c, rho0 float64
	x0, y0           float64
}

func newAlbers(el ellipsoid, p [10]float64) *albers {
	phi1, phi2 := p[pLat1]*deg, p[pLat2]*deg
	m1, m2 := el.m(phi1), el.m(phi2)
	q1, q2 := el.q(phi1), el.q(phi2)
	var n float64
	if math.Abs(phi1-phi2) < 1e-12 {
		n = math.Sin(phi1)
	} else {
		n = (m1*m1 - m2*m2) / (q2 - q1)
	}
	a := &albers{el: el, lon0: p[pLon0] * deg, n: n, c: m1*m1 + n*q1, x0: p[pX0], y0: p[pY0]}
	a.rho0 = a.rho(p[pLat0] * deg)
	return a
}

func (a *albers) rho(phi float64) float64 {
	return a.el.a * math.Sqrt(math.Max(0, a.c-a.n*a.el.q(phi))) / a.n
}

func (a *albers) forward(lon, lat float64) (float64, float64) {
	r := a.rho(lat)
	s, c := math.Sincos(a.n * wrapPi(lon-a.lon0))
	return a.x0 + r*s, a.y0 + a.rho0 - r*c
}

func (a *albers) inverse(e, n float64) (float64, float64) {
	dx, dy := e-a.x0, a.rho0-(n-a.y0)
	sg := math.Copysign(1, a.n)
	r := math.Hypot(dx, dy)
	theta := math.Atan2(sg*dx, sg*dy)
	q := (a.c - r*r*a.n*a.n/(a.el.a*a.el.a)) / a.n
	return a.lon0 + theta/a.n, a.el.phiOfQ(q)
}

// ---- Lambert Azimuthal Equal Area (EPSG 9820), oblique and polar.

type laeaProj struct {
	el                      ellipsoid
	lon0, qp, rq, d, x0, y0 float64
	sb0, cb0                float64
	pole                    float64 // +1 north polar, −1 south polar, 0 oblique
	lat0                    float64
}

func newLAEA(el ellipsoid, p [10]float64) *laeaProj {
	lat0 := p[pLat0] * deg
	l := &laeaProj{el: el, lon0: p[pLon0] * deg, qp: el.q(math.Pi / 2), x0: p[pX0], y0: p[pY0], lat0: lat0}
	l.rq = el.a * math.Sqrt(l.qp/2)
	if math.Abs(math.Abs(lat0)-math.Pi/2) < 1e-12 {
		l.pole = math.Copysign(1, lat0)
		return l
	}
	b0 := math.Asin(el.q(lat0) / l.qp)
	l.sb0, l.cb0 = math.Sincos(b0)
	l.d = el.a * el.m(lat0) / (l.rq * l.cb0)
	return l
}

func (l *laeaProj) forward(lon, lat float64) (float64, float64) {
	lam := wrapPi(lon - l.lon0)
	sl, cl := math.Sincos(lam)
	q := l.el.q(lat)
	if l.pole != 0 {
		r := l.el.a * math.Sqrt(math.Max(0, l.qp-l.pole*q))
		return l.x0 + r*sl, l.y0 - l.pole*r*cl
	}
	sb, cb := math.Sincos(math.Asin(math.Max(-1, math.Min(1, q/l.qp))))
	b := l.rq * math.Sqrt(2/(1+l.sb0*sb+l.cb0*cb*cl))
	return l.x0 + b*l.d*cb*sl, l.y0 + b/l.d*(l.cb0*sb-l.sb0*cb*cl)
}

func (l *laeaProj) inverse(e, n float64) (float64, float64) {
	dx, dy := e-l.x0, n-l.y0
	if l.pole != 0 {
		r := math.Hypot(dx, dy)
		q := l.pole * (l.qp - r*r/(l.el.a*l.el.a))
		return l.lon0 + math.Atan2(dx, -l.pole*dy), l.el.phiOfQ(q)
	}
	rho := math.Hypot(dx/l.d, l.d*dy)
	if rho == 0 {
		return l.lon0, l.lat0
	}
	sc, cc := math.Sincos(2 * math.Asin(math.Min(1, rho/(2*l.rq))))
	beta := math.Asin(cc*l.sb0 + l.d*dy*sc*l.cb0/rho)
	lam := math.Atan2(dx*sc, l.d*rho*l.cb0*cc-l.d*l.d*dy*l.sb0*sc)
	return l.lon0 + lam, l.el.phiOfQ(l.qp * math.Sin(beta))
}

// ---- Oblique Stereographic (EPSG 9809, PROJ sterea): conformal sphere
// of Gauss, then a stereographic projection of the sphere.

type obliqueStereo struct {
	el                     ellipsoid
	lon0, n, c, chi0, r2k0 float64
	sc0, cc0               float64
	x0, y0                 float64
}

func newObliqueStereo(el ellipsoid, p [10]float64) *obliqueStereo {
	phi0 := p[pLat0] * deg
	s0, c0 := math.Sincos(phi0)
	one := 1 - el.e2*s0*s0
	rho0 := el.a * (1 - el.e2) / math.Pow(one, 1.5)
	nu0 := el.a / math.Sqrt(one)
	r := math.Sqrt(rho0 * nu0)
	n := math.Sqrt(1 + el.e2*c0*c0*c0*c0/(1-el.e2))
	s1 := (1 + s0) / (1 - s0)
	s2 := (1 - el.e*s0) / (1 + el.e*s0)
	w1 := math.Pow(s1*math.Pow(s2, el.e), n)
	sinChi := (w1 - 1) / (w1 + 1)
	c := (n + s0) * (1 - sinChi) / ((n - s0) * (1 + sinChi))
	w2 := c * w1
	chi0 := math.Asin((w2 - 1) / (w2 + 1))
	o := &obliqueStereo{el: el, lon0: p[pLon0] * deg, n: n, c: c, chi0: chi0, r2k0: 2 * r * p[pK0], x0: p[pX0], y0: p[pY0]}
	o.sc0, o.cc0 = math.Sincos(chi0)
	return o
}

func (o *obliqueStereo) forward(lon, lat float64) (float64, float64) {
	lam := o.n * wrapPi(lon-o.lon0)
	s := math.Sin(lat)
	sa := (1 + s) / (1 - s)
	sb := (1 - o.el.e*s) / (1 + o.el.e*s)
	w := o.c * math.Pow(sa*math.Pow(sb, o.el.e), o.n)
	chi := math.Asin((w - 1) / (w + 1))
	sc, cc := math.Sincos(chi)
	sl, cl := math.Sincos(lam)
	b := 1 + sc*o.sc0 + cc*o.cc0*cl
	return o.x0 + o.r2k0*cc*sl/b, o.y0 + o.r2k0*(sc*o.cc0-cc*o.sc0*cl)/b
}

func (o *obliqueStereo) inverse(e, n float64) (float64, float64) {
	dx, dy := e-o.x0, n-o.y0
	// Invert the stereographic projection of the conformal sphere
	// (Snyder 21-15, 21-16 with ρ, c), robust at the origin.
	rho := math.Hypot(dx, dy)
	chi, lam := o.chi0, 0.0
	if rho > 0 {
		c := 2 * math.Atan(rho/o.r2k0)
		sc, cc := math.Sincos(c)
		chi = math.Asin(cc*o.sc0 + dy*sc*o.cc0/rho)
		lam = math.Atan2(dx*sc, rho*o.cc0*cc-dy*o.sc0*sc)
	}
	// Conformal sphere latitude χ to geodetic φ: ψ = ½·ln((1+sin χ)/(c·(1−sin χ)))/n.
	sx := math.Sin(chi)
	psi := 0.5 * math.Log((1+sx)/(o.c*(1-sx))) / o.n
	return o.lon0 + lam/o.n, o.el.phiOfPsi(psi)
}

// ---- Polar Stereographic, variants A (k0) and B (latitude of true scale).

type polarStereo struct {
	el          ellipsoid
	lon0, s, ak float64 // s = +1 north, −1 south; ak = 2·a·k0/√((1+e)^(1+e)(1−e)^(1−e))
	x0, y0      float64
}

func newPolarStereo(el ellipsoid, p [10]float64, latTS bool) *polarStereo {
	s := math.Copysign(1, p[pLat0])
	e := el.e
	kk := math.Sqrt(math.Pow(1+e, 1+e) * math.Pow(1-e, 1-e))
	k0 := p[pK0]
	if latTS {
		phic := s * p[pLatTS] * deg
		if math.Abs(phic-math.Pi/2) < 1e-12 {
			k0 = 1
		} else {
			tc := math.Exp(-el.psi(phic))
			k0 = el.m(phic) * kk / (2 * tc)
		}
	}
	return &polarStereo{el: el, lon0: p[pLon0] * deg, s: s, ak: 2 * el.a * k0 / kk, x0: p[pX0], y0: p[pY0]}
}

func (ps *polarStereo) forward(lon, lat float64) (float64, float64) {
	rho := ps.ak * math.Exp(-ps.el.psi(ps.s*lat))
	sl, cl := math.Sincos(wrapPi(lon - ps.lon0))
	return ps.x0 + rho*sl, ps.y0 - ps.s*rho*cl
}

func (ps *polarStereo) inverse(e, n float64) (float64, float64) {
	dx, dy := e-ps.x0, n-ps.y0
	rho := math.Hypot(dx, dy)
	if rho == 0 {
		return ps.lon0, ps.s * math.Pi / 2
	}
	return ps.lon0 + math.Atan2(dx, -ps.s*dy), ps.s * ps.el.phiOfPsi(-math.Log(rho/ps.ak))
}

// ---- Mercator variants A (k0) and B (latitude of true scale), and on a
// sphere Web Mercator (EPSG 1024: WGS 84 coordinates used as spherical ones).

type mercator struct {
	el       ellipsoid
	lon0, ak float64
	x0, y0   float64
}

func newMercator(el ellipsoid, p [10]float64, latTS bool) *mercator {
	k0 := p[pK0]
	if latTS {
		k0 = el.m(p[pLatTS] * deg)
	}
	return &mercator{el: el, lon0: p[pLon0] * deg, ak: el.a * k0, x0: p[pX0], y0: p[pY0]}
}

func (m *mercator) forward(lon, lat float64) (float64, float64) {
	if math.Abs(lat) >= math.Pi/2 {
		return math.NaN(), math.NaN() // the poles are at infinity
	}
	return m.x0 + m.ak*wrapPi(lon-m.lon0), m.y0 + m.ak*m.el.psi(lat)
}

func (m *mercator) inverse(e, n float64) (float64, float64) {
	return m.lon0 + (e-m.x0)/m.ak, m.el.phiOfPsi((n - m.y0) / m.ak)
}

// ---- Swiss Oblique Mercator (EPSG 9815 with α = γ = 90°, PROJ somerc):
// PROJ's formulation, conformal sphere then oblique Mercator of it.

type swiss struct {
	el                           ellipsoid
	lon0, k, c, kr, sinp0, cosp0 float64
	x0, y0                       float64
}

func newSwiss(el ellipsoid, p [10]float64) *swiss {
	phi0 := p[pLat0] * deg
	cp := math.Cos(phi0)
	cp *= cp
	c := math.Sqrt(1 + el.e2*cp*cp/(1-el.e2))
	sp := math.Sin(phi0)
	sinp0 := sp / c
	phip0 := math.Asin(sinp0)
	sp *= el.e
	k := math.Log(math.Tan(math.Pi/4+phip0/2)) - c*(math.Log(math.Tan(math.Pi/4+phi0/2))-0.5*el.e*math.Log((1+sp)/(1-sp)))
	kr := p[pK0] * math.Sqrt(1-el.e2) / (1 - sp*sp)
	return &swiss{el: el, lon0: p[pLon0] * deg, k: k, c: c, kr: kr, sinp0: sinp0, cosp0: math.Cos(phip0), x0: p[pX0], y0: p[pY0]}
}

func (s *swiss) forward(lon, lat float64) (float64, float64) {
	sp := s.el.e * math.Sin(lat)
	phip := 2*math.Atan(math.Exp(s.c*(math.Log(math.Tan(math.Pi/4+lat/2))-0.5*s.el.e*math.Log((1+sp)/(1-sp)))+s.k)) - math.Pi/2
	lamp := s.c * wrapPi(lon-s.lon0)
	cp := math.Cos(phip)
	phipp := math.Asin(s.cosp0*math.Sin(phip) - s.sinp0*cp*math.Cos(lamp))
	lampp := math.Asin(cp * math.Sin(lamp) / math.Cos(phipp))
	return s.x0 + s.el.a*s.kr*lampp, s.y0 + s.el.a*s.kr*math.Log(math.Tan(math.Pi/4+phipp/2))
}

func (s *swiss) inverse(e, n float64) (float64, float64) {
	x, y := (e-s.x0)/s.el.a, (n-s.y0)/s.el.a
	phipp := 2 * (math.Atan(math.Exp(y/s.kr)) - math.Pi/4)
	lampp := x / s.kr
	cp := math.Cos(phipp)
	phip := math.Asin(s.cosp0*math.Sin(phipp) + s.sinp0*cp*math.Cos(lampp))
	lamp := math.Asin(cp * math.Sin(lampp) / math.Cos(phip))
	con := (s.k - math.Log(math.Tan(math.Pi/4+phip/2))) / s.c
	phi := phip
	for range 12 {
		esp := s.el.e * math.Sin(phi)
		delp := (con + math.Log(math.Tan(math.Pi/4+phi/2)) - 0.5*s.el.e*math.Log((1+esp)/(1-esp))) * (1 - esp*esp) * math.Cos(phi) / (1 - s.el.e2)
		phi -= delp
		if math.Abs(delp) < 1e-14 {
			break
		}
	}
	return s.lon0 + lamp/s.c, phi
}

// ---- Hotine Oblique Mercator, variants A (EPSG 9812) and B (9815).

type hotine struct {
	el                      ellipsoid
	lam0, a, b, h, sg0, cg0 float64
	sgc, cgc, uc            float64
	x0, y0                  float64
}

func newHotine(el ellipsoid, p [10]float64, variantA bool) *hotine {
	phic, lamc := p[pLat0]*deg, p[pLon0]*deg
	alpc, gamc := p[pAlpha]*deg, p[pGamma]*deg
	sp, cp := math.Sincos(phic)
	one := 1 - el.e2*sp*sp
	b := math.Sqrt(1 + el.e2*cp*cp*cp*cp/(1-el.e2))
	a := el.a * b * p[pK0] * math.Sqrt(1-el.e2) / one
	t0 := math.Exp(-el.psi(phic))
	d := b * math.Sqrt(1-el.e2) / (cp * math.Sqrt(one))
	d2 := math.Max(d*d, 1)
	f := d + math.Sqrt(d2-1)*sign(phic)
	h := f * math.Pow(t0, b)
	g := (f - 1/f) / 2
	g0 := math.Asin(math.Sin(alpc) / d)
	lam0 := lamc - math.Asin(g*math.Tan(g0))/b
	o := &hotine{el: el, lam0: lam0, a: a, b: b, h: h, x0: p[pX0], y0: p[pY0]}
	o.sg0, o.cg0 = math.Sincos(g0)
	o.sgc, o.cgc = math.Sincos(gamc)
	if !variantA {
		if math.Abs(math.Abs(alpc)-math.Pi/2) < 1e-12 {
			o.uc = a * (lamc - lam0)
		} else {
			o.uc = a / b * math.Atan(math.Sqrt(d2-1)/math.Cos(alpc)) * sign(phic)
		}
		o.uc = math.Abs(o.uc) * sign(phic)
	}
	return o
}

func sign(x float64) float64 {
	if x < 0 {
		return -1
	}
	return 1
}

func (o *hotine) forward(lon, lat float64) (float64, float64) {
	t := math.Exp(-o.el.psi(lat))
	q := o.h / math.Pow(t, o.b)
	s := (q - 1/q) / 2
	tt := (q + 1/q) / 2
	bl := o.b * wrapPi(lon-o.lam0)
	v := math.Sin(bl)
	u := (-v*o.cg0 + s*o.sg0) / tt
	vv := o.a * math.Log((1-u)/(1+u)) / (2 * o.b)
	uu := o.a*math.Atan2(s*o.cg0+v*o.sg0, math.Cos(bl))/o.b - o.uc
	return o.x0 + vv*o.cgc + uu*o.sgc, o.y0 + uu*o.cgc - vv*o.sgc
}

func (o *hotine) inverse(e, n float64) (float64, float64) {
	dx, dy := e-o.x0, n-o.y0
	vv := dx*o.cgc - dy*o.sgc
	uu := dy*o.cgc + dx*o.sgc + o.uc
	q := math.Exp(-o.b * vv / o.a)
	s := (q - 1/q) / 2
	tt := (q + 1/q) / 2
	v := math.Sin(o.b * uu / o.a)
	u := (v*o.cg0 + s*o.sg0) / tt
	t := math.Pow(o.h/math.Sqrt((1+u)/(1-u)), 1/o.b)
	lat := o.el.phiOfPsi(-math.Log(t))
	lon := o.lam0 - math.Atan2(s*o.cg0-v*o.sg0, math.Cos(o.b*uu/o.a))/o.b
	return lon, lat
}

// ---- Krovak, north-orientated (EPSG 1041, PROJ krovak): easting −Y,
// northing −X of the classical south/west-orientated grid (GN7-2 §3.2.5).

type krovak struct {
	el                       ellipsoid
	lon0, b, t0, n, r0, tanp float64
	sa, ca                   float64 // sin, cos of αc, the co-latitude of the cone axis
	x0, y0                   float64
}

func newKrovak(el ellipsoid, p [10]float64) *krovak {
	phic, phip := p[pLat0]*deg, p[pLatTS]*deg
	sc, cc := math.Sincos(phic)
	a := el.a * math.Sqrt(1-el.e2) / (1 - el.e2*sc*sc)
	b := math.Sqrt(1 + el.e2*cc*cc*cc*cc/(1-el.e2))
	g0 := math.Asin(sc / b)
	t0 := math.Tan(math.Pi/4+g0/2) * math.Pow((1+el.e*sc)/(1-el.e*sc), el.e*b/2) / math.Pow(math.Tan(math.Pi/4+phic/2), b)
	k := &krovak{el: el, lon0: p[pLon0] * deg, b: b, t0: t0, n: math.Sin(phip), r0: p[pK0] * a / math.Tan(phip),
		tanp: math.Tan(math.Pi/4 + phip/2), x0: p[pX0], y0: p[pY0]}
	k.sa, k.ca = math.Sincos(p[pAlpha] * deg)
	return k
}

func (k *krovak) forward(lon, lat float64) (float64, float64) {
	s := k.el.e * math.Sin(lat)
	u := 2 * (math.Atan(k.t0*math.Pow(math.Tan(lat/2+math.Pi/4), k.b)/math.Pow((1+s)/(1-s), k.el.e*k.b/2)) - math.Pi/4)
	v := k.b * wrapPi(k.lon0-lon)
	su, cu := math.Sincos(u)
	t := math.Asin(k.ca*su + k.sa*cu*math.Cos(v))
	d := math.Asin(cu * math.Sin(v) / math.Cos(t))
	theta := k.n * d
	r := k.r0 * math.Pow(k.tanp, k.n) / math.Pow(math.Tan(t/2+math.Pi/4), k.n)
	xp, yp := r*math.Cos(theta), r*math.Sin(theta)
	return k.x0 - yp, k.y0 - xp
}

func (k *krovak) inverse(e, n float64) (float64, float64) {
	yp, xp := k.x0-e, k.y0-n
	r := math.Hypot(xp, yp)
	theta := math.Atan2(yp, xp)
	d := theta / k.n
	t := 2 * (math.Atan(math.Pow(k.r0/r, 1/k.n)*k.tanp) - math.Pi/4)
	st, ct := math.Sincos(t)
	u := math.Asin(k.ca*st - k.sa*ct*math.Cos(d))
	v := math.Asin(ct * math.Sin(d) / math.Cos(u))
	lon := k.lon0 - v/k.b
	base := math.Pow(k.t0, -1/k.b) * math.Pow(math.Tan(u/2+math.Pi/4), 1/k.b)
	phi := u
	for range 20 {
		s := k.el.e * math.Sin(phi)
		next := 2 * (math.Atan(base*math.Pow((1+s)/(1-s), k.el.e/2)) - math.Pi/4)
		if math.Abs(next-phi) < 1e-14 {
			phi = next
			break
		}
		phi = next
	}
	return lon, phi
}
