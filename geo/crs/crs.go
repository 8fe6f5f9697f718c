// Package crs transforms coordinates between EPSG coordinate reference
// systems, in pure Go, from a table generated from the EPSG dataset.
//
// Supported: every EPSG projected and geographic 2D CRS whose conversion is
// Transverse Mercator (also south-orientated), Lambert Conic Conformal
// (1SP, 2SP, Michigan, Belgium), Albers Equal Area, Lambert Azimuthal Equal
// Area, Oblique Stereographic, Polar Stereographic (variants A and B),
// Mercator (variants A and B), Popular Visualisation Pseudo Mercator (3857;
// 900913 is an alias) or Hotine Oblique Mercator (variants A and B), in any
// linear unit (metre, US survey foot, foot, …), on a datum that is either
// equal to WGS 84 for mapping purposes (ETRS89, NAD83, GDA94, GDA2020,
// NZGD2000, SIRGAS, …: PROJ's best transformation is a null one) or has a
// published Helmert transformation to WGS 84 within 1 m of PROJ's best one
// (BD72, OSGB36, Amersfoort, CH1903+, …). Lookup tells which.
//
// The table (zz_epsg_table.go) and the reference coordinates the tests
// check it against (testdata/pyproj_reference.json) come from
// gen/gen_epsg.py, run with Debian's python3-pyproj and proj-data:
//
//	cd geo/crs && go generate
//
// Datums equal to WGS 84 hand geographic coordinates over unchanged (as PROJ
// does without a time-dependent grid): exact to a metre or two at most and
// far below a Sentinel-2 pixel. Helmert datums go through Earth-centred
// coordinates at zero ellipsoidal height, as PROJ's pipelines do.
// Grid-based shifts (OSTN15, NADCON, BETA2007, …) are not applied: a datum
// whose Helmert is more than 1 m from PROJ's grid is refused.
package crs

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/paulmach/orb"
)

// ErrUnsupportedCRS is matched (errors.Is) by every error about an EPSG code
// this package cannot transform.
var ErrUnsupportedCRS = errors.New("unsupported CRS")

// ErrMalformedCRS is matched (errors.Is) by ParseEPSG errors about text that
// names no EPSG code at all.
var ErrMalformedCRS = errors.New("malformed CRS name")

// UnsupportedError names the EPSG code that cannot be used.
type UnsupportedError struct{ EPSG int }

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("unsupported CRS EPSG:%d", e.EPSG)
}

// Is makes errors.Is(err, ErrUnsupportedCRS) true.
func (e *UnsupportedError) Is(target error) bool { return target == ErrUnsupportedCRS }

// Transformer maps coordinates from one CRS to another. X is easting or
// longitude, Y northing or latitude (GeoJSON axis order, whatever the EPSG axis order).
//
// A coordinate the transformation cannot map (outside the projection's
// domain) comes back as NaN, NaN: Transformer has no error result, so callers
// that need to report it check with math.IsNaN (geo.Transform does).
type Transformer interface {
	Transform(x, y float64) (float64, float64)
}

// Info describes a supported EPSG code.
type Info struct {
	EPSG       int
	Name       string  // EPSG name, e.g. "RGF93 v1 / Lambert-93"
	Method     string  // projection method, "Geographic 2D" for longitude/latitude
	Datum      string  // EPSG datum name
	Geographic bool    // coordinates are longitude, latitude in degrees
	Unit       float64 // metres per axis unit (projected CRSs); 1 for geographic ones
	// Helmert is true when the datum shift to WGS 84 is a Helmert
	// transformation rather than none. HelmertAccuracy is its accuracy as
	// EPSG states it (m, 0 when unknown); the generator checked it against
	// PROJ's best available transformation (within 1 m), which for some
	// datums (OSGB36 without the OSTN15 grid) is the same Helmert.
	Helmert         bool
	HelmertAccuracy float64
}

// Lookup returns what the table knows about an EPSG code, or an
// *UnsupportedError naming it.
func Lookup(epsg int) (Info, error) {
	en, ok := find(epsg)
	if !ok {
		return Info{}, &UnsupportedError{EPSG: epsg}
	}
	d := &datums[en.datum]
	return Info{EPSG: epsg, Name: en.name, Method: en.method.String(), Datum: d.name,
		Geographic: en.method == mGeographic, Unit: en.unit, Helmert: d.shift == shiftHelmert,
		HelmertAccuracy: d.helmertAcc}, nil
}

// Supported reports whether EPSG code epsg can be used with New.
func Supported(epsg int) bool {
	_, ok := find(epsg)
	return ok
}

// New returns the transformer from EPSG code from to EPSG code to, or an
// *UnsupportedError when either is not supported. The same code twice gives
// the identity.
func New(from, to int) (Transformer, error) {
	src, err := newSystem(from)
	if err != nil {
		return nil, err
	}
	dst, err := newSystem(to)
	if err != nil {
		return nil, err
	}
	if from == to || (from == 3857 && to == 900913) || (from == 900913 && to == 3857) {
		return identity{}, nil
	}
	t := &transformer{src: src, dst: dst}
	sd, dd := src.datum, dst.datum
	// Datums equal to WGS 84 share geographic coordinates; otherwise go
	// through WGS 84 geocentric coordinates unless both are the same datum.
	t.shift = !(sd.shift == shiftNone && dd.shift == shiftNone) &&
		(sd.helmert != dd.helmert || sd.a != dd.a || sd.rf != dd.rf)
	return t, nil
}

type identity struct{}

func (identity) Transform(x, y float64) (float64, float64) { return x, y }

// system is one side of a transformation: projection, unit, axes and datum.
type system struct {
	en    *entry
	datum *datum
	el    ellipsoid
	proj  projection // nil for geographic CRSs
	pm    float64    // prime meridian, radians
}

func newSystem(code int) (*system, error) {
	en, ok := find(code)
	if !ok {
		return nil, &UnsupportedError{EPSG: code}
	}
	d := &datums[en.datum]
	s := &system{en: en, datum: d, el: newEllipsoid(d.a, d.rf), pm: d.pm * deg}
	if en.method != mGeographic {
		p, err := newProjection(en, s.el)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", &UnsupportedError{EPSG: code}, err)
		}
		s.proj = p
	}
	return s, nil
}

// toGeographic gives Greenwich longitude and latitude in radians.
func (s *system) toGeographic(x, y float64) (lon, lat float64) {
	if s.proj == nil {
		return x*deg + s.pm, y * deg
	}
	if s.en.flags&flagWest != 0 {
		x = -x
	}
	if s.en.flags&flagSouth != 0 {
		y = -y
	}
	lon, lat = s.proj.inverse(x*s.en.unit, y*s.en.unit)
	return lon + s.pm, lat
}

func (s *system) fromGeographic(lon, lat float64) (x, y float64) {
	lon -= s.pm
	if s.proj == nil {
		return wrapPi(lon) / deg, lat / deg
	}
	x, y = s.proj.forward(lon, lat)
	x, y = x/s.en.unit, y/s.en.unit
	if s.en.flags&flagWest != 0 {
		x = -x
	}
	if s.en.flags&flagSouth != 0 {
		y = -y
	}
	return x, y
}

type transformer struct {
	src, dst *system
	shift    bool
}

// Transform maps one coordinate; see Transformer.
func (t *transformer) Transform(x, y float64) (float64, float64) {
	if math.IsNaN(x) || math.IsNaN(y) || math.IsInf(x, 0) || math.IsInf(y, 0) {
		return math.NaN(), math.NaN()
	}
	lon, lat := t.src.toGeographic(x, y)
	if math.IsNaN(lon) || math.IsNaN(lat) || math.Abs(lat) > math.Pi/2 {
		return math.NaN(), math.NaN()
	}
	if t.shift {
		lon, lat = shiftDatum(t.src, t.dst, lon, lat)
	}
	a, b := t.dst.fromGeographic(lon, lat)
	if math.IsNaN(a) || math.IsNaN(b) || math.IsInf(a, 0) || math.IsInf(b, 0) {
		return math.NaN(), math.NaN()
	}
	return a, b
}

// shiftDatum moves geographic coordinates (radians) from src's datum to
// dst's through WGS 84 Earth-centred coordinates at zero height.
func shiftDatum(src, dst *system, lon, lat float64) (float64, float64) {
	x, y, z := src.el.toGeocentric(lon, lat, 0)
	if src.datum.shift == shiftHelmert {
		x, y, z = helmert(src.datum.helmert, x, y, z)
	}
	if dst.datum.shift == shiftHelmert {
		x, y, z = helmertInverse(dst.datum.helmert, x, y, z)
	}
	return dst.el.fromGeocentric(x, y, z)
}

const arcsec = math.Pi / (180 * 3600)

// helmert applies a position-vector 7-parameter transformation (EPSG 1033,
// the small-angle form PROJ and EPSG use).
func helmert(p [7]float64, x, y, z float64) (float64, float64, float64) {
	rx, ry, rz, m := p[3]*arcsec, p[4]*arcsec, p[5]*arcsec, 1+p[6]*1e-6
	return p[0] + m*(x-rz*y+ry*z),
		p[1] + m*(rz*x+y-rx*z),
		p[2] + m*(-ry*x+rx*y+z)
}

// helmertInverse undoes helmert with the transposed rotation, as PROJ does.
func helmertInverse(p [7]float64, x, y, z float64) (float64, float64, float64) {
	rx, ry, rz, m := p[3]*arcsec, p[4]*arcsec, p[5]*arcsec, 1+p[6]*1e-6
	x, y, z = (x-p[0])/m, (y-p[1])/m, (z-p[2])/m
	return x + rz*y - ry*z,
		-rz*x + y + rx*z,
		ry*x - rx*y + z
}

// ParseEPSG reads an EPSG code from the forms users and GeoJSON "crs" members
// send: "4326", "EPSG:4326", "epsg:32633", "urn:ogc:def:crs:EPSG::32633",
// "urn:ogc:def:crs:EPSG:6.6:32633", "http://www.opengis.net/def/crs/EPSG/0/32633",
// and the GeoJSON default "urn:ogc:def:crs:OGC:1.3:CRS84" / "CRS84" (= 4326).
//
// Text that names no code fails with ErrMalformedCRS; a well-formed code this
// package cannot transform returns the code and an *UnsupportedError.
func ParseEPSG(s string) (int, error) {
	t := strings.TrimSpace(s)
	low := strings.ToLower(t)
	var num string
	switch {
	case low == "crs84" || low == "urn:ogc:def:crs:ogc:1.3:crs84" || low == "urn:ogc:def:crs:ogc::crs84" ||
		low == "http://www.opengis.net/def/crs/ogc/1.3/crs84":
		return 4326, nil
	case strings.HasPrefix(low, "urn:ogc:def:crs:epsg:"):
		// urn:ogc:def:crs:EPSG:{version}:{code}; the version may be empty.
		rest := t[len("urn:ogc:def:crs:epsg:"):]
		i := strings.LastIndexByte(rest, ':')
		if i < 0 {
			return 0, fmt.Errorf("crs %q: %w", s, ErrMalformedCRS)
		}
		num = rest[i+1:]
	case strings.HasPrefix(low, "http://www.opengis.net/def/crs/epsg/"),
		strings.HasPrefix(low, "https://www.opengis.net/def/crs/epsg/"):
		num = t[strings.LastIndexByte(t, '/')+1:]
	case strings.HasPrefix(low, "epsg:"):
		num = t[len("epsg:"):]
	default:
		num = t
	}
	if num == "" || len(num) > 9 || strings.TrimLeft(num, "0123456789") != "" {
		return 0, fmt.Errorf("crs %q: %w", s, ErrMalformedCRS)
	}
	code, err := strconv.Atoi(num)
	if err != nil || code <= 0 {
		return 0, fmt.Errorf("crs %q: %w", s, ErrMalformedCRS)
	}
	if !Supported(code) {
		return code, &UnsupportedError{EPSG: code}
	}
	return code, nil
}

// URN is the OGC URN naming an EPSG code, the form the GeoJSON "crs" member uses.
func URN(epsg int) string { return "urn:ogc:def:crs:EPSG::" + strconv.Itoa(epsg) }

// Project returns a copy of g with every point transformed by t. It never
// modifies g. Bounds are projected through their four corners and then
// re-bounded. A nil geometry gives nil.
func Project(g orb.Geometry, t Transformer) orb.Geometry {
	switch g := g.(type) {
	case nil:
		return nil
	case orb.Point:
		return point(g, t)
	case orb.MultiPoint:
		return orb.MultiPoint(points(g, t))
	case orb.LineString:
		return orb.LineString(points(g, t))
	case orb.Ring:
		return orb.Ring(points(g, t))
	case orb.MultiLineString:
		out := make(orb.MultiLineString, len(g))
		for i, ls := range g {
			out[i] = points(ls, t)
		}
		return out
	case orb.Polygon:
		return polygon(g, t)
	case orb.MultiPolygon:
		out := make(orb.MultiPolygon, len(g))
		for i, p := range g {
			out[i] = polygon(p, t)
		}
		return out
	case orb.Collection:
		out := make(orb.Collection, len(g))
		for i, c := range g {
			out[i] = Project(c, t)
		}
		return out
	case orb.Bound:
		b := orb.Bound{Min: point(g.Min, t), Max: point(g.Min, t)}
		b = b.Extend(point(g.Max, t))
		b = b.Extend(point(orb.Point{g.Min[0], g.Max[1]}, t))
		return b.Extend(point(orb.Point{g.Max[0], g.Min[1]}, t))
	}
	return nil
}

func point(p orb.Point, t Transformer) orb.Point {
	x, y := t.Transform(p[0], p[1])
	return orb.Point{x, y}
}

func points[S ~[]orb.Point](ps S, t Transformer) []orb.Point {
	if ps == nil {
		return nil
	}
	out := make([]orb.Point, len(ps))
	for i, p := range ps {
		out[i] = point(p, t)
	}
	return out
}

func polygon(p orb.Polygon, t Transformer) orb.Polygon {
	if p == nil {
		return nil
	}
	out := make(orb.Polygon, len(p))
	for i, r := range p {
		out[i] = points(r, t)
	}
	return out
}
