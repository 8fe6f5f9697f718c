package crs_test

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/geo/crs"
)

// Reference coordinates from pyproj 3.4.1 / PROJ 9.1.1:
//
//	Transformer.from_crs(from, to, always_xy=True).transform(x, y)
var pyprojCases = []struct {
	from, to     int
	x, y         float64
	wantX, wantY float64
}{
	{4326, 32631, 4.06, 50.745, 574785.8886579134, 5622004.252467692},
	{4326, 32631, 3.02, 50.81, 501409.11586171086, 5628696.706771086},
	{4326, 32633, 14.55, 45.87, 465073.95614802564, 5079702.210653009},
	{4326, 32633, 10.2, 60.1, 233232.7383549866, 6672243.534008778},
	{4326, 32718, -77.03, -12.05, 279014.3667987534, 8667099.929406583},
	{4326, 32601, -179.5, 0.5, 221734.22170445084, 55318.039976543405},
	{4326, 32760, 177.3, -41.3, 525115.7281571963, 5427895.825089128},
	{4326, 25832, 9.99, 53.55, 565590.9406877231, 5933912.16541642},
	{4326, 25831, 4.06, 50.745, 574785.8886586509, 5622004.252344258},
	{4326, 3857, 4.06, 50.745, 451957.1326206906, 6576310.528232716},
	{4326, 3857, -122.4194, 37.7749, -13627665.271218073, 4547675.354340558},
	{4326, 900913, 4.06, 50.745, 451957.1326206906, 6576310.528232716},
	{4326, 3035, 4.06, 50.745, 3902259.6060555154, 3087378.3427503845},
	{4326, 3035, 14.55, 45.87, 4674496.0171478195, 2539384.230529651},
	{4258, 25833, 13.4, 52.52, 391440.03206915467, 5820079.666748663},
	{32631, 32632, 574680, 5622440, 151481.34678875696, 5633556.8135377895},
}

func TestTransformMatchesPyproj(t *testing.T) {
	for _, tc := range pyprojCases {
		t.Run(fmt.Sprintf("%d_to_%d_%g_%g", tc.from, tc.to, tc.x, tc.y), func(t *testing.T) {
			tr, err := crs.New(tc.from, tc.to)
			require.NoError(t, err)
			x, y := tr.Transform(tc.x, tc.y)
			// Measured agreement is below 0.2 µm; 10 µm leaves room for
			// floating-point differences across platforms.
			assert.InDelta(t, tc.wantX, x, 1e-5, "x")
			assert.InDelta(t, tc.wantY, y, 1e-5, "y")

			// And back again.
			inv, err := crs.New(tc.to, tc.from)
			require.NoError(t, err)
			bx, by := inv.Transform(tc.wantX, tc.wantY)
			tol := 1e-5 // metres
			switch {
			case tc.from == 4326 && tc.to == 3035:
				tol = 1e-10 // degrees, about 10 µm (the authalic latitude is inverted by Newton iteration)
			case tc.from == 4326 || tc.from == 4258:
				tol = 1e-10 // degrees, about 10 µm
			case tc.from == 32631 && tc.to == 32632:
				tol = 1e-6 // metres
			}
			assert.InDelta(t, tc.x, bx, tol, "inverse x")
			assert.InDelta(t, tc.y, by, tol, "inverse y")
		})
	}
}

func TestRoundTrip(t *testing.T) {
	// UTM zones are used within their 6° strip (plus a margin): the
	// Krüger series loses accuracy tens of degrees from the central meridian.
	utm := func(zone int, south bool) []orb.Point {
		cm := float64(zone*6 - 183)
		if south {
			return []orb.Point{{cm - 3.5, -0.001}, {cm, -45}, {cm + 2.9, -79.9}, {cm + 1, -12.3}}
		}
		return []orb.Point{{cm - 3.5, 0.001}, {cm, 45}, {cm + 2.9, 83.9}, {cm + 1, 50.7}}
	}
	europe := []orb.Point{{4.06, 50.745}, {14.55, 45.87}, {-3.7, 40.4}, {25, 60}, {-9, 38.7}}
	for _, tc := range []struct {
		code int
		pts  []orb.Point
		tol  float64 // degrees
	}{
		{32601, utm(1, false), 1e-9}, // 1e-9° is about 0.1 mm
		{32631, utm(31, false), 1e-9},
		{32633, utm(33, false), 1e-9},
		{32660, utm(60, false), 1e-9},
		{32701, utm(1, true), 1e-9},
		{32733, utm(33, true), 1e-9},
		{32760, utm(60, true), 1e-9},
		{25828, utm(28, false), 1e-9},
		{25832, utm(32, false), 1e-9},
		{25838, utm(38, false), 1e-9},
		{3857, append(europe, orb.Point{-179.9, -85}, orb.Point{179.9, 85}), 1e-9},
		{4258, europe, 1e-12},
		{3035, europe, 1e-9},
	} {
		fwd, err := crs.New(4326, tc.code)
		require.NoError(t, err)
		inv, err := crs.New(tc.code, 4326)
		require.NoError(t, err)
		for _, p := range tc.pts {
			x, y := fwd.Transform(p[0], p[1])
			lon, lat := inv.Transform(x, y)
			// Longitudes come back in [-180, 180): -180.5 as 179.5.
			assert.InDelta(t, 0, math.Mod(lon-p[0]+540, 360)-180, tc.tol, "EPSG:%d lon of %v", tc.code, p)
			assert.True(t, lon >= -180 && lon < 180, "EPSG:%d lon %g of %v", tc.code, lon, p)
			assert.InDelta(t, p[1], lat, tc.tol, "EPSG:%d lat of %v", tc.code, p)
		}
	}
}

func TestIdentity(t *testing.T) {
	tr, err := crs.New(32631, 32631)
	require.NoError(t, err)
	x, y := tr.Transform(574680.25, 5622440.5)
	assert.Equal(t, 574680.25, x)
	assert.Equal(t, 5622440.5, y)
}

func TestUnsupported(t *testing.T) {
	for _, tc := range []struct{ from, to, bad int }{
		{4326, 8857, 8857}, // Equal Earth: not implemented
		{8857, 4326, 8857},
		{4326, 32600, 32600}, // no such code
		{4326, 0, 0},
		{-1, 4326, -1},
	} {
		tr, err := crs.New(tc.from, tc.to)
		require.Error(t, err)
		assert.Nil(t, tr)
		assert.True(t, errors.Is(err, crs.ErrUnsupportedCRS))
		var ue *crs.UnsupportedError
		require.True(t, errors.As(err, &ue))
		assert.Equal(t, tc.bad, ue.EPSG)
		assert.Contains(t, err.Error(), fmt.Sprintf("EPSG:%d", tc.bad))
		assert.False(t, crs.Supported(tc.bad))
	}
	for _, code := range []int{4326, 4258, 3857, 900913, 3035, 32601, 32660, 32701, 32760, 25828, 25838, 2154, 27700, 28992, 31370, 2263, 3031, 32661, 8353} {
		assert.True(t, crs.Supported(code), "EPSG:%d", code)
	}
}

func TestOutOfDomainGivesNaN(t *testing.T) {
	tr, err := crs.New(4326, 3857)
	require.NoError(t, err)
	x, y := tr.Transform(0, 90)
	assert.True(t, math.IsNaN(x) && math.IsNaN(y), "got %v %v", x, y)
	x, y = tr.Transform(math.NaN(), 1)
	assert.True(t, math.IsNaN(x) && math.IsNaN(y))
}

func TestParseEPSG(t *testing.T) {
	for _, tc := range []struct {
		in        string
		want      int
		malformed bool
		unsup     bool
	}{
		{in: "4326", want: 4326},
		{in: " EPSG:4326 ", want: 4326},
		{in: "epsg:32633", want: 32633},
		{in: "urn:ogc:def:crs:EPSG::32633", want: 32633},
		{in: "urn:ogc:def:crs:EPSG:6.6:25832", want: 25832},
		{in: "http://www.opengis.net/def/crs/EPSG/0/3857", want: 3857},
		{in: "urn:ogc:def:crs:OGC:1.3:CRS84", want: 4326},
		{in: "CRS84", want: 4326},
		{in: "EPSG:8857", want: 8857, unsup: true},
		{in: "EPSG:2154", want: 2154},
		{in: "EPSG:27700", want: 27700},
		{in: "", malformed: true},
		{in: "EPSG:", malformed: true},
		{in: "EPSG:43x6", malformed: true},
		{in: "-4326", malformed: true},
		{in: "0", malformed: true},
		{in: "urn:ogc:def:crs:EPSG", malformed: true},
		{in: "WGS84", malformed: true},
		{in: "99999999999999999999", malformed: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := crs.ParseEPSG(tc.in)
			switch {
			case tc.malformed:
				require.Error(t, err)
				assert.True(t, errors.Is(err, crs.ErrMalformedCRS), "%v", err)
				assert.Zero(t, got)
			case tc.unsup:
				require.Error(t, err)
				assert.True(t, errors.Is(err, crs.ErrUnsupportedCRS))
				assert.Equal(t, tc.want, got)
			default:
				require.NoError(t, err)
				assert.Equal(t, tc.want, got)
			}
		})
	}
}

func TestProject(t *testing.T) {
	tr, err := crs.New(4326, 32631)
	require.NoError(t, err)
	in := orb.MultiPolygon{{{{4.06, 50.745}, {4.07, 50.745}, {4.07, 50.75}, {4.06, 50.745}}}}
	out, ok := crs.Project(in, tr).(orb.MultiPolygon)
	require.True(t, ok)
	require.Len(t, out, 1)
	require.Len(t, out[0][0], 4)
	assert.InDelta(t, 574785.8886579134, out[0][0][0][0], 1e-3)
	assert.InDelta(t, 5622004.252467692, out[0][0][0][1], 1e-3)
	assert.Equal(t, 4.06, in[0][0][0][0], "input untouched")

	for _, g := range []orb.Geometry{
		orb.Point{4.06, 50.745},
		orb.MultiPoint{{4.06, 50.745}},
		orb.LineString{{4.06, 50.745}, {4.07, 50.75}},
		orb.MultiLineString{{{4.06, 50.745}, {4.07, 50.75}}},
		orb.Ring{{4.06, 50.745}, {4.07, 50.75}, {4.06, 50.75}, {4.06, 50.745}},
		orb.Polygon{{{4.06, 50.745}, {4.07, 50.75}, {4.06, 50.75}, {4.06, 50.745}}},
		orb.Collection{orb.Point{4.06, 50.745}},
		orb.Bound{Min: orb.Point{4.06, 50.745}, Max: orb.Point{4.07, 50.75}},
	} {
		p := crs.Project(g, tr)
		require.NotNil(t, p)
		assert.Equal(t, g.GeoJSONType(), p.GeoJSONType())
		assert.InDelta(t, 574778, p.Bound().Min[0], 8, "%T", g)
	}
	assert.Nil(t, crs.Project(nil, tr))
}

func ExampleNew() {
	t, err := crs.New(4326, 32631) // WGS 84 lon/lat to UTM zone 31N
	if err != nil {
		panic(err)
	}
	x, y := t.Transform(4.06, 50.745)
	fmt.Printf("%.3f %.3f\n", x, y)
	// Output: 574785.889 5622004.252
}

func ExampleParseEPSG() {
	code, err := crs.ParseEPSG("urn:ogc:def:crs:EPSG::32633")
	fmt.Println(code, err)
	_, err = crs.ParseEPSG("EPSG:8857")
	fmt.Println(err)
	// Output:
	// 32633 <nil>
	// unsupported CRS EPSG:8857
}

func BenchmarkTransformUTM(b *testing.B) {
	tr, err := crs.New(4326, 32631)
	require.NoError(b, err)
	for i := 0; b.Loop(); i++ {
		tr.Transform(4.06+float64(i%100)*1e-4, 50.745)
	}
}

func TestInverseEdgeCases(t *testing.T) {
	// Reference values from pyproj (PROJ 9).
	for _, tc := range []struct {
		name           string
		from           int
		x, y, lon, lat float64
		lonTol, latTol float64
	}{
		// East of the antimeridian in zone 60: PROJ gives −177.92, not 182.08.
		{"UTM 60S across the antimeridian", 32760, 900000, 5000000, -177.92126607068414, -45.04040546099443, 1e-9, 1e-9},
		{"UTM 1N across the antimeridian", 32601, 100000, 5000000, 177.92126607068408, 45.04040546099443, 1e-9, 1e-9},
		{"UTM 60S central meridian", 32760, 500000, 5000000, 177, -45.153477183356024, 1e-9, 1e-9},
		// The LAEA inverse divided by ρ = 0 at the false origin.
		{"LAEA false origin", 3035, 4321000, 3210000, 10, 52, 0, 0},
		{"LAEA 10 m north of the origin", 3035, 4321000, 3210010, 10, 52.0000898709875, 1e-9, 1e-8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := crs.New(tc.from, 4326)
			require.NoError(t, err)
			lon, lat := tr.Transform(tc.x, tc.y)
			assert.InDelta(t, tc.lon, lon, tc.lonTol)
			assert.InDelta(t, tc.lat, lat, tc.latTol)
		})
	}
}
