package watch

import (
	"math/rand/v2"
	"testing"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/stac"
)

func box(x0, y0, x1, y1 float64) orb.Bound {
	return orb.Bound{Min: orb.Point{x0, y0}, Max: orb.Point{x1, y1}}
}

func fieldsOf(boxes ...orb.Bound) []archive.Field {
	out := make([]archive.Field, len(boxes))
	for i, b := range boxes {
		out[i] = archive.Field{ID: int64(i + 1), Bound: b}
	}
	return out
}

// searchParts is the footprint's parts as boxes (one for Bbox).
func searchParts(t *testing.T, p stac.SearchParams) []orb.Bound {
	t.Helper()
	switch g := p.Intersects.(type) {
	case nil:
		require.NotNil(t, p.Bbox)
		return []orb.Bound{*p.Bbox}
	case orb.Polygon:
		require.NoError(t, geo.ValidatePolygon(g))
		return []orb.Bound{g.Bound()}
	case orb.MultiPolygon:
		require.NoError(t, geo.ValidateMultiPolygon(g), "footprint must be a valid MultiPolygon")
		out := make([]orb.Bound, len(g))
		for i, pg := range g {
			out[i] = pg.Bound()
		}
		return out
	}
	t.Fatalf("footprint %T", p.Intersects)
	return nil
}

func TestFootprint(t *testing.T) {
	tests := []struct {
		name  string
		boxes []orb.Bound
		want  []orb.Bound
	}{
		{"one field", []orb.Bound{box(3, 50, 3.1, 50.1)}, []orb.Bound{box(3, 50, 3.1, 50.1)}},
		{"overlapping boxes merge", []orb.Bound{box(0, 0, 1, 1), box(0.5, 0.5, 2, 2)}, []orb.Bound{box(0, 0, 2, 2)}},
		{"boxes sharing an edge merge", []orb.Bound{box(0, 0, 1, 1), box(1, 0.5, 2, 2)}, []orb.Bound{box(0, 0, 2, 2)}},
		{"boxes touching at a corner merge", []orb.Bound{box(0, 0, 1, 1), box(1, 1, 2, 2)}, []orb.Bound{box(0, 0, 2, 2)}},
		{"far apart stay separate", []orb.Bound{box(10, 10, 11, 11), box(0, 0, 1, 1)}, []orb.Bound{box(0, 0, 1, 1), box(10, 10, 11, 11)}},
		// The union of the first two meets the third only as a whole.
		{"merged box meets another", []orb.Bound{box(0, 0, 1, 1), box(0.9, 2, 3, 3), box(2, 0.5, 2.5, 1.5), box(0.5, 0.9, 1.5, 2.1)},
			[]orb.Bound{box(0, 0, 3, 3)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p stac.SearchParams
			footprint(fieldsOf(tt.boxes...), &p)
			assert.Equal(t, tt.want, searchParts(t, p))
		})
	}
}

// Many scattered fields: one box.
func TestFootprintManyFieldsOneBox(t *testing.T) {
	var boxes []orb.Bound
	for i := range 200 {
		x := float64(i)
		boxes = append(boxes, box(x, 0, x+0.5, 0.5))
	}
	var p stac.SearchParams
	footprint(fieldsOf(boxes...), &p)
	assert.Nil(t, p.Intersects)
	require.NotNil(t, p.Bbox)
	assert.Equal(t, box(0, 0, 199.5, 0.5), *p.Bbox)
}

// Random layouts: the footprint is always valid, its parts never overlap or
// touch, and they cover every field's box.
func TestFootprintRandomLayouts(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		n := 1 + rng.IntN(60)
		boxes := make([]orb.Bound, n)
		for i := range boxes {
			x, y := rng.Float64()*10, rng.Float64()*10
			boxes[i] = box(x, y, x+rng.Float64()*0.8+0.01, y+rng.Float64()*0.8+0.01)
		}
		var p stac.SearchParams
		footprint(fieldsOf(boxes...), &p)
		parts := searchParts(t, p)
		for i := range parts {
			for j := i + 1; j < len(parts); j++ {
				require.False(t, parts[i].Intersects(parts[j]), "parts %v and %v meet", parts[i], parts[j])
			}
		}
		for _, b := range boxes {
			covered := false
			for _, q := range parts {
				covered = covered || (q.Contains(b.Min) && q.Contains(b.Max))
			}
			require.True(t, covered, "box %v not covered", b)
		}
	}
}
