package geo_test

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/geo"
)

func TestValidatePolygon(t *testing.T) {
	sq := box(0, 0, 10, 10)
	for _, tc := range []struct {
		name string
		p    orb.Polygon
		want string // substring of the reason; "" = valid
	}{
		{"square", orb.Polygon{sq}, ""},
		{"clockwise square", orb.Polygon{reverse(sq)}, ""},
		{"repeated point", orb.Polygon{{{0, 0}, {10, 0}, {10, 0}, {10, 10}, {0, 10}, {0, 0}}}, ""},
		{"hole", orb.Polygon{sq, box(2, 2, 4, 4)}, ""},
		{"hole touching the shell at a point", orb.Polygon{sq, {{0, 5}, {3, 4}, {3, 6}, {0, 5}}}, ""},
		{"two holes touching at a point", orb.Polygon{sq, box(2, 2, 4, 4), box(4, 4, 6, 6)}, ""},
		{"three holes meeting at one point", orb.Polygon{sq, {{5, 5}, {7, 4}, {7, 6}, {5, 5}}, {{5, 5}, {3, 4}, {3, 6}, {5, 5}}, {{5, 5}, {4, 8}, {6, 8}, {5, 5}}}, ""},
		{"hole touching the shell at two points", orb.Polygon{sq, {{0, 5}, {5, 0}, {10, 5}, {5, 10}, {0, 5}}}, "interior is disconnected"},
		{"hole touching the shell at two edges' middles", orb.Polygon{sq, {{0, 5}, {5, 2}, {10, 5}, {5, 8}, {0, 5}}}, "interior is disconnected"},
		{"two holes touching twice", orb.Polygon{sq, {{2, 5}, {5, 3}, {8, 5}, {5, 4}, {2, 5}}, {{2, 5}, {8, 5}, {5, 7}, {2, 5}}}, "interior is disconnected"},
		{"shell and two holes touching in a loop", orb.Polygon{sq, {{0, 5}, {4, 4}, {4, 6}, {0, 5}}, {{4, 6}, {10, 5}, {6, 8}, {4, 6}}}, "interior is disconnected"},
		{"no rings", orb.Polygon{}, "no rings"},
		{"too few points", orb.Polygon{{{0, 0}, {1, 0}, {0, 0}}}, "has 3 points, a ring needs at least 4"},
		{"not closed", orb.Polygon{{{0, 0}, {10, 0}, {10, 10}, {0, 10}}}, "exterior ring is not closed: it starts at (0, 0) and ends at (0, 10)"},
		{"only two distinct points", orb.Polygon{{{0, 0}, {1, 0}, {1, 0}, {0, 0}}}, "fewer than 3 distinct points"},
		{"zero area", orb.Polygon{{{0, 0}, {1, 1}, {2, 2}, {0, 0}}}, "doubles back"},
		{"bow tie", orb.Polygon{{{0, 0}, {10, 10}, {10, 0}, {0, 10}, {0, 0}}}, "exterior ring intersects itself at (5, 5)"},
		{"self-touching ring", orb.Polygon{{{0, 0}, {10, 0}, {10, 10}, {5, 0}, {0, 10}, {0, 0}}}, "touches itself at (5, 0)"},
		{"spike", orb.Polygon{{{0, 0}, {10, 0}, {15, 0}, {10, 0}, {10, 10}, {0, 10}, {0, 0}}}, "itself at (10, 0)"},
		{"hole outside", orb.Polygon{sq, box(20, 20, 30, 30)}, "ring 1 (a hole) is not inside the exterior ring"},
		{"hole crossing the shell", orb.Polygon{sq, box(5, 5, 15, 8)}, "cross at"},
		{"hole sharing an edge with the shell", orb.Polygon{sq, box(0, 2, 4, 4)}, "share an edge"},
		{"nested holes", orb.Polygon{sq, box(1, 1, 9, 9), box(2, 2, 3, 3)}, "ring 2 (a hole) lies inside ring 1"},
		{"hole equal to shell", orb.Polygon{sq, reverse(sq)}, "share an edge"},
		{"NaN", orb.Polygon{{{0, 0}, {math.NaN(), 0}, {1, 1}, {0, 0}}}, "point 1 is not a finite number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := geo.ValidatePolygon(tc.p)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			var ie *geo.InvalidGeometryError
			require.True(t, errors.As(err, &ie))
			assert.Contains(t, ie.Reason, tc.want)
		})
	}
}

func TestValidateMultiPolygon(t *testing.T) {
	for _, tc := range []struct {
		name string
		mp   orb.MultiPolygon
		want string
	}{
		{"two apart", orb.MultiPolygon{{box(0, 0, 1, 1)}, {box(2, 0, 3, 1)}}, ""},
		{"touching at a corner", orb.MultiPolygon{{box(0, 0, 1, 1)}, {box(1, 1, 2, 2)}}, ""},
		{"island in a hole", orb.MultiPolygon{{box(0, 0, 10, 10), box(2, 2, 8, 8)}, {box(3, 3, 4, 4)}}, ""},
		{"empty", orb.MultiPolygon{}, "no polygon"},
		{"sharing an edge", orb.MultiPolygon{{box(0, 0, 1, 1)}, {box(1, 0, 2, 1)}}, "polygon 0 and polygon 1 share an edge"},
		{"crossing", orb.MultiPolygon{{box(0, 0, 2, 2)}, {box(1, 1, 3, 3)}}, "cross at"},
		{"one inside the other", orb.MultiPolygon{{box(0, 0, 10, 10)}, {box(3, 3, 4, 4)}}, "polygons 1 and 0 overlap"},
		{"error names the polygon", orb.MultiPolygon{{box(0, 0, 1, 1)}, {{{5, 5}, {6, 5}, {5, 5}}}}, "polygon 1 exterior ring has 3 points"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := geo.ValidateMultiPolygon(tc.mp)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			var ie *geo.InvalidGeometryError
			require.True(t, errors.As(err, &ie), "%v", err)
			assert.Contains(t, ie.Reason, tc.want)
		})
	}
}

func TestValidateLonLat(t *testing.T) {
	field := orb.MultiPolygon{{{{4.06, 50.745}, {4.07, 50.745}, {4.07, 50.75}, {4.06, 50.75}, {4.06, 50.745}}}}
	require.NoError(t, geo.ValidateLonLat(field))
	// 0.01° × 0.005° at 50.7°N is about 705 m × 556 m.
	assert.InDelta(t, 705.3*556.0, geo.GeodesicArea(field), 0.01*705.3*556.0)

	swapped := orb.MultiPolygon{{{{50.745, 4.06}, {50.745, 4.07}, {50.75, 4.07}, {50.745, 4.06}}}}
	require.NoError(t, geo.ValidateLonLat(swapped), "swapped but in range: only the caller's CRS knows")
	utm := orb.MultiPolygon{{box(574680, 5622440, 574700, 5622460)}}
	err := geo.ValidateLonLat(utm)
	var ie *geo.InvalidGeometryError
	require.True(t, errors.As(err, &ie))
	assert.Contains(t, ie.Reason, "is not a longitude, latitude")

	huge := orb.MultiPolygon{{box(0, 0, 20, 20)}}
	require.True(t, errors.As(geo.ValidateLonLat(huge), &ie))
	assert.Contains(t, ie.Reason, "ha is larger than the 1000000 ha accepted")
}

// TestValidateLonLatAntimeridian: a field crossing 180° is refused by
// name, in both of RFC 7946's forms, instead of with a misleading area or
// extent; fields touching 180° from one side only are accepted.
func TestValidateLonLatAntimeridian(t *testing.T) {
	const crosses = "crosses the antimeridian (180°): not supported; register the parts east and west of 180° as separate fields"
	for _, tc := range []struct {
		name string
		mp   orb.MultiPolygon
		want string // substring of the reason; "" = valid
	}{
		{"RFC 7946 split form, about 2 ha", orb.MultiPolygon{{box(179.999, -16.5, 180, -16.49)}, {box(-180, -16.5, -179.999, -16.49)}},
			"multipolygon " + crosses + " (polygon 0 touches 180° and polygon 1 -180°)"},
		{"split form, west part first", orb.MultiPolygon{{box(-180, 65, -179.99, 65.01)}, {box(179.99, 65, 180, 65.01)}},
			"multipolygon " + crosses + " (polygon 1 touches 180° and polygon 0 -180°)"},
		{"one polygon from 179.999 to -179.999", orb.MultiPolygon{{{{179.999, -16.5}, {-179.999, -16.5}, {-179.999, -16.49}, {179.999, -16.49}, {179.999, -16.5}}}},
			"polygon 0 ring 0 " + crosses + " (its edge from (179.999, -16.5) to (-179.999, -16.5))"},
		{"second polygon jumping across 180°", orb.MultiPolygon{{box(170, 10, 171, 11)}, {{{179.5, 10.2}, {-179.5, 10.2}, {-179.5, 10.8}, {179.5, 10.2}}}},
			"polygon 1 ring 0 " + crosses + " (its edge from (179.5, 10.2) to (-179.5, 10.2))"},
		{"east of 180° touching it", orb.MultiPolygon{{box(179.99, -16.5, 180, -16.49)}}, ""},
		{"west of -180° touching it", orb.MultiPolygon{{box(-180, -16.5, -179.99, -16.49)}}, ""},
		{"two parts on the same side of 180°", orb.MultiPolygon{{box(179.99, -16.5, 180, -16.49)}, {box(179.9, -16.5, 179.95, -16.49)}}, ""},
		{"near Greenwich, edge of 0.02°", orb.MultiPolygon{{box(-0.01, 51.47, 0.01, 51.48)}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := geo.ValidateLonLat(tc.mp)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			var ie *geo.InvalidGeometryError
			require.True(t, errors.As(err, &ie), "%v", err)
			assert.Contains(t, ie.Reason, tc.want)
		})
	}
}

func TestValidateRealFields(t *testing.T) {
	for _, place := range []string{"flanders-31UES", "flanders-31UDS", "slovenia-eolearn"} {
		for _, f := range realFields(t, place, 32631) {
			require.NoError(t, geo.ValidateMultiPolygon(f.Geometry), "%s %s", place, f.Name)
		}
	}
}

func TestValidateIsNotQuadratic(t *testing.T) {
	// A comb of horizontal teeth across the whole width: in an x sweep every
	// segment would be active at once. Validation picks the y sweep and
	// answers quickly; the crafted diagonal star below defeats both axes and
	// is refused by the work bound instead, also quickly.
	n := geo.MaxVertices/2 - 2
	comb := orb.Ring{}
	for i := range n {
		y := float64(i)
		comb = append(comb, orb.Point{0, y}, orb.Point{1000, y + 0.5})
	}
	comb = append(comb, orb.Point{-1, float64(n)}, orb.Point{-1, 0}, orb.Point{0, 0})
	start := time.Now()
	require.NoError(t, geo.ValidatePolygon(orb.Polygon{comb}))
	assert.Less(t, time.Since(start), 20*time.Second) // generous: CI runs with -race on 2 busy cores

	star := orb.Ring{}
	for i := range n {
		a := math.Pi * float64(i) / float64(n)
		r := 1000.0
		if i%2 == 1 {
			r = 1
		}
		star = append(star, orb.Point{r * math.Cos(a), r * math.Sin(a)})
	}
	star = append(star, orb.Point{-1000, -1}, orb.Point{1000, -1}, star[0])
	start = time.Now()
	err := geo.ValidatePolygon(orb.Polygon{star})
	assert.Less(t, time.Since(start), 20*time.Second) // generous: CI runs with -race on 2 busy cores
	var ie *geo.InvalidGeometryError
	require.True(t, errors.As(err, &ie), "%v", err)
	t.Log(ie.Reason)

	// 15,000 small holes (75,000 vertices) and as many islands: nesting
	// checks stay near-linear.
	holey := orb.Polygon{box(0, 0, 1000, 1000)}
	islands := orb.MultiPolygon{}
	for i := range 15_000 {
		x, y := float64(i%150)*6+10, float64(i/150)*6+10
		holey = append(holey, box(x, y, x+2, y+2))
		if i < 5_000 {
			islands = append(islands, orb.Polygon{box(x+1001, y, x+1003, y+2)})
		}
	}
	start = time.Now()
	require.NoError(t, geo.ValidatePolygon(holey))
	require.NoError(t, geo.ValidateMultiPolygon(islands))
	assert.Less(t, time.Since(start), 20*time.Second)

	// Too many vertices is refused up front.
	big := make(orb.Ring, geo.MaxVertices+1)
	for i := range big {
		a := 2 * math.Pi * float64(i) / float64(len(big)-1)
		big[i] = orb.Point{math.Cos(a), math.Sin(a)}
	}
	big[len(big)-1] = big[0]
	require.True(t, errors.As(geo.ValidatePolygon(orb.Polygon{big}), &ie))
	assert.Contains(t, ie.Reason, fmt.Sprintf("more than the %d accepted", geo.MaxVertices))
}

func TestValidateLargeValidPolygon(t *testing.T) {
	// 90,000 vertices on a circle: valid, checked in well under a second.
	n := 90_000
	ring := make(orb.Ring, n+1)
	for i := range n {
		a := 2 * math.Pi * float64(i) / float64(n)
		ring[i] = orb.Point{574000 + 500*math.Cos(a), 5622000 + 500*math.Sin(a)}
	}
	ring[n] = ring[0]
	start := time.Now()
	require.NoError(t, geo.ValidatePolygon(orb.Polygon{ring}))
	assert.Less(t, time.Since(start), 20*time.Second) // generous: CI runs with -race on 2 busy cores
}

func TestContains(t *testing.T) {
	field := orb.MultiPolygon{{box(0, 0, 100, 100)}}
	notched := orb.MultiPolygon{{{{0, 0}, {100, 0}, {100, 100}, {50, 100}, {50, 40}, {45, 100}, {0, 100}, {0, 0}}}}
	withHole := orb.MultiPolygon{{box(0, 0, 100, 100), box(40, 40, 60, 60)}}
	for _, tc := range []struct {
		name         string
		outer, inner orb.MultiPolygon
		tol          float64
		want         bool
	}{
		{"inside", field, orb.MultiPolygon{{box(10, 10, 20, 20)}}, 0, true},
		{"sharing the border", field, orb.MultiPolygon{{box(0, 0, 20, 20)}}, 0, true},
		{"equal", field, field, 0, true},
		{"a hair outside, within tolerance", field, orb.MultiPolygon{{box(-0.005, 10, 20, 20)}}, 0.01, true},
		{"a hair outside, beyond tolerance", field, orb.MultiPolygon{{box(-0.05, 10, 20, 20)}}, 0.01, false},
		{"partly outside", field, orb.MultiPolygon{{box(90, 90, 110, 110)}}, 0.01, false},
		{"outside", field, orb.MultiPolygon{{box(200, 200, 210, 210)}}, 0.01, false},
		{"around the field", orb.MultiPolygon{{box(10, 10, 20, 20)}}, field, 0.01, false},
		{"over a notch", notched, orb.MultiPolygon{{box(30, 60, 70, 90)}}, 0.01, false},
		{"beside a notch", notched, orb.MultiPolygon{{box(60, 60, 90, 90)}}, 0.01, true},
		{"over a hole", withHole, orb.MultiPolygon{{box(30, 30, 70, 70)}}, 0.01, false},
		{"beside a hole", withHole, orb.MultiPolygon{{box(5, 5, 35, 35)}}, 0.01, true},
		{"empty inner", field, nil, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := geo.Contains(tc.outer, tc.inner, tc.tol)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestContainsRealParcel(t *testing.T) {
	// A parcel drawn from a field's own pixels lies inside the field.
	fields := realFields(t, "flanders-31UES", 32631)
	for _, f := range fields[:4] {
		mask := geo.Rasterize(f.Geometry, gridUES)
		labels := make([]int32, len(mask))
		for i, in := range mask {
			if in && (i%gridUES.Cols)%2 == 0 {
				labels[i] = 1
			}
		}
		for _, lp := range geo.Polygonize(labels, gridUES, 0) {
			in, err := geo.Contains(f.Geometry, orb.MultiPolygon{lp.Polygon}, 0.01)
			require.NoError(t, err)
			assert.True(t, in, "%s", f.Name)
		}
		other := fields[len(fields)-1].Geometry
		in, err := geo.Contains(f.Geometry, other, 0.01)
		require.NoError(t, err)
		assert.False(t, in, "%s does not contain %s", f.Name, fields[len(fields)-1].Name)
	}
}

// circleRing is an n-gon of radius r around (cx, cy), closed.
func circleRing(n int, cx, cy, r float64) orb.Ring {
	ring := make(orb.Ring, 0, n+1)
	for i := range n {
		a := 2 * math.Pi * float64(i) / float64(n)
		ring = append(ring, orb.Point{cx + r*math.Cos(a), cy + r*math.Sin(a)})
	}
	return append(ring, ring[0])
}

func TestContainsLargeIsFast(t *testing.T) {
	// Was O(n·m): 79 s for these sizes.
	field := orb.MultiPolygon{{circleRing(20_000, 4.06, 50.745, 0.01), circleRing(1000, 4.0675, 50.745, 0.001)}}
	require.NoError(t, geo.ValidateMultiPolygon(field))
	for _, tc := range []struct {
		name  string
		inner orb.MultiPolygon
		want  bool
	}{
		{"inside", orb.MultiPolygon{{circleRing(99_990, 4.06, 50.745, 0.006)}}, true},
		{"crossing the border", orb.MultiPolygon{{circleRing(99_990, 4.065, 50.745, 0.006)}}, false},
		{"over a hole of the field", orb.MultiPolygon{{circleRing(50_000, 4.065, 50.745, 0.004)}}, false},
		{"beside a hole of the field", orb.MultiPolygon{{circleRing(50_000, 4.055, 50.745, 0.003)}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			got, err := geo.Contains(field, tc.inner, 1e-6)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Less(t, time.Since(start), 5*time.Second) // generous for -race
		})
	}
}

func TestContainsTooComplex(t *testing.T) {
	// A comb: 40,000 teeth each spanning the full height put every segment
	// in every band, the work that must be refused rather than done.
	var ring orb.Ring
	for i := range 20_000 {
		x := float64(i)
		ring = append(ring, orb.Point{x, 0}, orb.Point{x + 0.5, 1000})
	}
	ring = append(ring, orb.Point{20_000, -10}, orb.Point{0, -10}, orb.Point{0, 0})
	comb := orb.MultiPolygon{{ring}}
	start := time.Now()
	_, err := geo.Contains(comb, orb.MultiPolygon{{box(1, -5, 19_000, -1)}}, 0)
	var ie *geo.InvalidGeometryError
	require.ErrorAs(t, err, &ie)
	assert.Contains(t, ie.Reason, "too complex to check containment")
	assert.Less(t, time.Since(start), 5*time.Second)
}

func BenchmarkContains(b *testing.B) {
	field := orb.MultiPolygon{{circleRing(20_000, 0, 0, 1000)}}
	parcel := orb.MultiPolygon{{circleRing(10_000, 0, 0, 500)}}
	for b.Loop() {
		if in, err := geo.Contains(field, parcel, 1e-3); err != nil || !in {
			b.Fatal(in, err)
		}
	}
}

func BenchmarkValidatePolygon(b *testing.B) {
	n := 10_000
	ring := make(orb.Ring, n+1)
	for i := range n {
		a := 2 * math.Pi * float64(i) / float64(n)
		ring[i] = orb.Point{500 * math.Cos(a), 500 * math.Sin(a)}
	}
	ring[n] = ring[0]
	for b.Loop() {
		if err := geo.ValidatePolygon(orb.Polygon{ring}); err != nil {
			b.Fatal(err)
		}
	}
}
