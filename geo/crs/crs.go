// Package crs transforms coordinates between the EPSG coordinate reference
// systems cropkit supports, behind a small interface over github.com/wroge/wgs84/v2.
//
// Supported codes: EPSG:4326 (WGS 84), EPSG:4258 (ETRS89 geographic),
// EPSG:3857 and its old alias 900913 (Web Mercator), EPSG:32601–32660 and
// 32701–32760 (WGS 84 / UTM north and south), EPSG:25828–25838 (ETRS89 / UTM)
// and EPSG:3035 (ETRS89 / LAEA Europe). ETRS89 and WGS 84 are treated as the
// same datum (a null transformation, as PROJ does without a time-dependent
// grid), which is exact to well under a metre and far below a Sentinel-2 pixel.
//
// EPSG:27700 (British National Grid) is deliberately not supported: the
// library resolves its OSTN15 grid from the process's working directory and
// otherwise silently falls back to a 2 m Helmert approximation.
package crs

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/paulmach/orb"
	"github.com/wroge/wgs84/v2"
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
// A coordinate the transformation cannot map (outside the datum's area of
// use) comes back as NaN, NaN: Transformer has no error result, so callers
// that need to report it check with math.IsNaN (geo.Transform does).
type Transformer interface {
	Transform(x, y float64) (float64, float64)
}

// Supported reports whether EPSG code epsg can be used with New.
func Supported(epsg int) bool {
	switch {
	case epsg == 4326, epsg == 4258, epsg == 3857, epsg == 900913, epsg == 3035:
		return true
	case epsg >= 32601 && epsg <= 32660, epsg >= 32701 && epsg <= 32760:
		return true
	case epsg >= 25828 && epsg <= 25838:
		return true
	}
	return false
}

// New returns the transformer from EPSG code from to EPSG code to, or an
// *UnsupportedError when either is not supported. The same code twice gives
// the identity.
func New(from, to int) (Transformer, error) {
	for _, code := range [...]int{from, to} {
		if !Supported(code) {
			return nil, &UnsupportedError{EPSG: code}
		}
	}
	if from == to {
		return identity{}, nil
	}
	src, ok := wgs84.EPSG[from]
	if !ok {
		return nil, &UnsupportedError{EPSG: from}
	}
	dst, ok := wgs84.EPSG[to]
	if !ok {
		return nil, &UnsupportedError{EPSG: to}
	}
	// The library converts between different ellipsoids through geocentric
	// coordinates and refuses points outside ETRS89's European area of use.
	// WGS 84 and ETRS89 share every defining parameter cropkit relies on
	// (GRS80 and WGS84 ellipsoids differ by 0.1 mm in the semi-minor axis),
	// so a direct geographic hand-over is both faster and usable worldwide.
	return &transformer{from: fixed(src.CoordinateSystem), to: fixed(dst.CoordinateSystem), fromS: src.Datum.Spheroid, toS: dst.Datum.Spheroid}, nil
}

// fixed swaps in corrected implementations where the library has a known error.
func fixed(cs wgs84.CoordinateSystem) wgs84.CoordinateSystem {
	switch c := cs.(type) {
	case wgs84.TransverseMercator:
		return tmerc{c}
	case wgs84.LambertAzimuthalEqualArea:
		return laea{c}
	}
	return cs
}

type identity struct{}

func (identity) Transform(x, y float64) (float64, float64) { return x, y }

type transformer struct {
	from, to   wgs84.CoordinateSystem
	fromS, toS wgs84.Spheroid
}

func (t *transformer) Transform(x, y float64) (float64, float64) {
	if math.IsNaN(x) || math.IsNaN(y) || math.IsInf(x, 0) || math.IsInf(y, 0) {
		return math.NaN(), math.NaN()
	}
	lon, lat, _ := t.from.ToGeographic(x, y, 0, t.fromS)
	if math.IsNaN(lon) || math.IsNaN(lat) || lat < -90 || lat > 90 {
		return math.NaN(), math.NaN()
	}
	if _, merc := t.to.(wgs84.WebMercator); merc && math.Abs(lat) >= 90 {
		return math.NaN(), math.NaN() // the poles are at infinity
	}
	a, b, _ := t.to.FromGeographic(lon, lat, 0, t.toS)
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return math.NaN(), math.NaN()
	}
	return a, b
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
