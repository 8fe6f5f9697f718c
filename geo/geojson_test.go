package geo_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/geo/crs"
)

const square = `[[[4.06,50.745],[4.07,50.745],[4.07,50.75],[4.06,50.75],[4.06,50.745]]]`

func TestParseGeometry(t *testing.T) {
	want := orb.MultiPolygon{{{{4.06, 50.745}, {4.07, 50.745}, {4.07, 50.75}, {4.06, 50.75}, {4.06, 50.745}}}}
	for _, tc := range []struct {
		name, in string
		want     orb.MultiPolygon
		err      string
	}{
		{name: "Polygon", in: `{"type":"Polygon","coordinates":` + square + `}`, want: want},
		{name: "MultiPolygon", in: `{"type":"MultiPolygon","coordinates":[` + square + `,` + square + `]}`, want: append(want, want[0])},
		{name: "Feature", in: `{"type":"Feature","properties":{"name":"x"},"geometry":{"type":"Polygon","coordinates":` + square + `}}`, want: want},
		{name: "FeatureCollection of one", in: `{"type":"FeatureCollection","features":[{"type":"Feature","properties":null,"geometry":{"type":"Polygon","coordinates":` + square + `}}]}`, want: want},
		{name: "heights dropped", in: `{"type":"Polygon","coordinates":[[[4.06,50.745,12],[4.07,50.745,12],[4.07,50.75,3],[4.06,50.75,1],[4.06,50.745,12]]]}`, want: want},
		{name: "crs member ignored", in: `{"type":"Polygon","crs":{"type":"name","properties":{"name":"urn:ogc:def:crs:OGC:1.3:CRS84"}},"coordinates":` + square + `}`, want: want},
		{name: "not JSON", in: `{"type":`, err: "unexpected end of JSON input"},
		{name: "no type", in: `{"coordinates":[]}`, err: `no "type" member`},
		{name: "Point", in: `{"type":"Point","coordinates":[1,2]}`, err: `type "Point" is not a Polygon, MultiPolygon, Feature or FeatureCollection`},
		{name: "Feature with a LineString", in: `{"type":"Feature","geometry":{"type":"LineString","coordinates":[[1,2],[3,4]]}}`, err: `geometry type "LineString" is not a Polygon or MultiPolygon`},
		{name: "Feature without geometry", in: `{"type":"Feature","geometry":null}`, err: "feature has no geometry"},
		{name: "two features", in: `{"type":"FeatureCollection","features":[{},{}]}`, err: "FeatureCollection has 2 features, want exactly one polygon feature"},
		{name: "empty collection", in: `{"type":"FeatureCollection","features":[]}`, err: "has 0 features"},
		{name: "short position", in: `{"type":"Polygon","coordinates":[[[1],[2,3],[4,5],[1,2]]]}`, err: "ring 0 position 0 has 1 numbers, want 2 or 3"},
		{name: "no rings", in: `{"type":"Polygon","coordinates":[]}`, err: "Polygon: no rings"},
		{name: "no coordinates", in: `{"type":"Polygon"}`, err: "Polygon has no coordinates"},
		{name: "strings as numbers", in: `{"type":"Polygon","coordinates":[[["1","2"]]]}`, err: "Polygon coordinates"},
		{name: "empty MultiPolygon", in: `{"type":"MultiPolygon","coordinates":[]}`, err: "MultiPolygon has no polygons"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := geo.ParseGeometry([]byte(tc.in))
			if tc.err != "" {
				require.Error(t, err)
				assert.True(t, errors.Is(err, geo.ErrInvalidGeoJSON))
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestReadFeatures(t *testing.T) {
	in := `{"type":"FeatureCollection","features":[
		{"type":"Feature","id":7,"properties":{"name":"A","crop":"wheat"},"geometry":{"type":"Polygon","coordinates":` + square + `}},
		{"type":"Feature","properties":{"field_name":"B"},"geometry":{"type":"MultiPolygon","coordinates":[` + square + `]}},
		{"type":"Feature","properties":{},"geometry":{"type":"Polygon","coordinates":` + square + `}}]}`
	fs, err := geo.ReadFeatures([]byte(in))
	require.NoError(t, err)
	require.Len(t, fs, 3)
	assert.Equal(t, "A", fs[0].Name)
	assert.Equal(t, float64(7), fs[0].ID)
	assert.Equal(t, "wheat", fs[0].Properties["crop"])
	assert.Equal(t, "B", fs[1].Name)
	assert.Equal(t, "", fs[2].Name)
	assert.Len(t, fs[1].Geometry, 1)

	_, err = geo.ReadFeatures([]byte(`{"type":"FeatureCollection","features":[{"type":"Feature","geometry":{"type":"Polygon","coordinates":` + square + `}},{"type":"Feature","geometry":{"type":"Point","coordinates":[1,2]}}]}`))
	require.Error(t, err)
	assert.True(t, errors.Is(err, geo.ErrInvalidGeoJSON))
	assert.Contains(t, err.Error(), "feature 1:")

	_, err = geo.ReadFeatures([]byte(`{"type":"Polygon","coordinates":` + square + `}`))
	assert.ErrorIs(t, err, geo.ErrInvalidGeoJSON)

	one, err := geo.ReadFeatures([]byte(`{"type":"Feature","properties":{"name":"solo"},"geometry":{"type":"Polygon","coordinates":` + square + `}}`))
	require.NoError(t, err)
	require.Len(t, one, 1)
	assert.Equal(t, "solo", one[0].Name)
}

func TestReadRealFields(t *testing.T) {
	for place, n := range map[string]int{"flanders-31UES": 16, "flanders-31UDS": 14, "slovenia-eolearn": 7} {
		fs := realFields(t, place, 32631)
		assert.Len(t, fs, n, place)
		for _, f := range fs {
			assert.NotEmpty(t, f.Name)
		}
	}
}

func TestAreaAndTransform(t *testing.T) {
	assert.Equal(t, 100.0-4, geo.Area(orb.MultiPolygon{{box(0, 0, 10, 10), box(2, 2, 4, 4)}}))
	assert.Equal(t, 100.0+1, geo.Area(orb.MultiPolygon{{reverse(box(0, 0, 10, 10))}, {box(20, 20, 21, 21)}}))
	assert.Zero(t, geo.Area(nil))

	// The real UES fields: UTM area equals the README's area_m2 (pixel-aligned, 100 m² per pixel).
	for _, f := range realFields(t, "flanders-31UES", 32631) {
		assert.InDelta(t, f.Properties["area_m2"].(float64), geo.Area(f.Geometry), 0.5, f.Name)
	}

	tr, err := crs.New(4326, 3857)
	require.NoError(t, err)
	_, err = geo.Transform(orb.MultiPolygon{{{{0, 0}, {1, 0}, {1, 90}, {0, 0}}}}, tr)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "point 2 (1, 90): outside the target CRS")
}

func ExampleParseGeometry() {
	field := []byte(`{"type":"Feature","properties":{"name":"UES-14"},"geometry":{"type":"Polygon",
		"coordinates":[[[4.0608,50.7440],[4.0622,50.7440],[4.0622,50.7446],[4.0608,50.7446],[4.0608,50.7440]]]}}`)
	mp, err := geo.ParseGeometry(field)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := geo.ValidateLonLat(mp); err != nil {
		fmt.Println(err) // a 400 naming the problem
		return
	}
	toUTM, err := crs.New(4326, 32631)
	if err != nil {
		fmt.Println(err)
		return
	}
	utm, err := geo.Transform(mp, toUTM)
	if err != nil {
		fmt.Println(err)
		return
	}
	scene := geo.Grid{EPSG: 32631, X0: 574680, Y0: 5622440, DX: 10, DY: 10, Cols: 64, Rows: 64}
	w := scene.WindowFor(utm.Bound())
	mask := geo.Rasterize(utm, scene.Sub(w))
	n := 0
	for _, in := range mask {
		if in {
			n++
		}
	}
	fmt.Printf("window %v, %d field pixels, %.0f m²\n", w, n, geo.Area(utm))
	// Output: window 11x8+16+47, 68 field pixels, 6591 m²
}

func ExampleValidatePolygon() {
	bowTie := orb.Polygon{{{0, 0}, {10, 10}, {10, 0}, {0, 10}, {0, 0}}}
	fmt.Println(geo.ValidatePolygon(bowTie))
	// Output: invalid geometry: polygon exterior ring intersects itself at (5, 5)
}

func ExampleSieve() {
	labels := []int32{
		1, 1, 1, 2, 2,
		1, 3, 1, 2, 2,
		1, 1, 1, 2, 2,
	}
	_ = geo.Sieve(labels, 5, 3, 2, 0) // the lone 3 joins its only neighbour, 1
	fmt.Println(labels)
	// Output: [1 1 1 2 2 1 1 1 2 2 1 1 1 2 2]
}

func ExampleSieveWithOptions() {
	labels := []int32{
		1, 1, 1, 2, 2,
		1, 3, 1, 2, 2,
		1, 1, 1, 3, 2,
	}
	// Both 3s are below 2 pixels: the first joins its largest neighbour,
	// the second is the last region of label 3 and is kept.
	_ = geo.SieveWithOptions(labels, 5, 3, geo.SieveOptions{MinPixels: 2, KeepLabels: true})
	fmt.Println(labels)
	// Output: [1 1 1 2 2 1 1 1 2 2 1 1 1 3 2]
}

func ExamplePolygonize() {
	labels := []int32{
		1, 1, 2,
		1, 2, 2,
	}
	g := geo.Grid{EPSG: 32631, X0: 0, Y0: 20, DX: 10, DY: 10, Cols: 3, Rows: 2}
	for _, lp := range geo.Polygonize(labels, g, 0) {
		fmt.Println(lp.Label, lp.Polygon)
	}
	// Output:
	// 1 [[[0 20] [0 0] [10 0] [10 10] [20 10] [20 20] [0 20]]]
	// 2 [[[30 20] [20 20] [20 10] [10 10] [10 0] [30 0] [30 20]]]
}
