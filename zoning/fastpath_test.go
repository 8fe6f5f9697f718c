package zoning

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/geo"
)

// fillNearestReference is fillNearest as it was before it started from
// the labelled pixels next to unlabelled ones only: a breadth-first search
// from every labelled pixel.
func fillNearestReference(labels []int32, mask []bool, cols, rows int) {
	queue := make([]int32, 0, len(labels))
	seen := make([]bool, len(labels))
	missing := 0
	for i, l := range labels {
		if l != 0 {
			queue = append(queue, int32(i))
			seen[i] = true
		} else if mask[i] {
			missing++
		}
	}
	for head := 0; head < len(queue) && missing > 0; head++ {
		p := int(queue[head])
		nb, m := neighbours4(p, cols, rows)
		for _, q := range nb[:m] {
			if seen[q] {
				continue
			}
			seen[q] = true
			labels[q] = labels[p]
			if mask[q] {
				missing--
			}
			queue = append(queue, int32(q))
		}
	}
	for i, in := range mask {
		if !in {
			labels[i] = 0
		}
	}
}

// fillNearest gives the labels of the breadth-first search from every
// labelled pixel, on random rasters with sparse or dense labels and masks.
func TestFillNearestMatchesFullSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, tc := range []struct{ cols, rows, labelled, masked int }{
		{1, 20, 3, 80}, {20, 1, 3, 80}, {30, 20, 90, 90}, {64, 48, 5, 70}, {100, 80, 50, 100}, {40, 40, 0, 50},
		{30, 20, 100, 50}, // nothing to fill: the labels outside the mask are still cleared
	} {
		for trial := range 10 {
			n := tc.cols * tc.rows
			labels := make([]int32, n)
			mask := make([]bool, n)
			for i := range n {
				mask[i] = rng.IntN(100) < tc.masked
				if rng.IntN(100) < tc.labelled {
					labels[i] = 1 + int32(rng.IntN(4))
				}
			}
			want := slices.Clone(labels)
			fillNearestReference(want, mask, tc.cols, tc.rows)
			got := slices.Clone(labels)
			fillNearest(got, mask, tc.cols, tc.rows)
			require.Equal(t, want, got, "%+v trial %d", tc, trial)
		}
	}
}

// Run gives what Compute, TileOutline and Collection give one after the
// other (it skips Compute's polygons and prepares the tiling meanwhile).
func TestRunMatchesComputeThenTile(t *testing.T) {
	g, outline, vals := slantedField(t)
	layers := []Layer{{Name: "ndvi", Type: CropHealth, Values: vals, Weight: 1}}
	for _, k := range []int{2, 4, 6} {
		opts := Options{Zones: k, Seed: 3}
		got, err := Run(context.Background(), Request{Grid: g, Outline: outline, Layers: layers, Options: opts})
		require.NoError(t, err)

		mask, err := FieldMask(outline, g)
		require.NoError(t, err)
		res, err := Compute(context.Background(), g, mask, layers, opts)
		require.NoError(t, err)
		_, projected, err := fieldMask(outline, g)
		require.NoError(t, err)
		require.NoError(t, res.TileOutline(projected))
		want, err := res.Collection(0)
		require.NoError(t, err)
		assert.Equal(t, want, got, "k = %d", k)
	}
}

// The polygons projected in chunks on several cores come back in order,
// the same as on one core.
func TestCollectionOrderOnAllCores(t *testing.T) {
	g := geo.Grid{EPSG: 32631, X0: 500000, Y0: 5650000, DX: 10, DY: 10, Cols: 300, Rows: 300}
	r := &Result{Grid: g}
	for i := range 500 { // more than one chunk per core
		x, y := g.X0+float64(i%20)*100, g.Y0-float64(i/20)*100
		r.Polygons = append(r.Polygons, ZonePolygon{Zone: 1 + i%3, Polygon: orb.Polygon{{{x, y}, {x + 10, y}, {x + 10, y - 10}, {x, y - 10}, {x, y}}}})
	}
	for z := 1; z <= 3; z++ {
		r.Zones = append(r.Zones, Zone{ID: z, RasterVal: float64(z) / 10})
	}
	all, err := r.Collection(4326)
	require.NoError(t, err)
	prev := runtime.GOMAXPROCS(1)
	one, err := r.Collection(4326)
	runtime.GOMAXPROCS(prev)
	require.NoError(t, err)
	require.Len(t, all.Features, 500)
	assert.Equal(t, one, all)
	for i, f := range all.Features {
		assert.Equal(t, r.Polygons[i].Zone, f.Zone)
	}
	// Encoded in chunks, the same bytes; a bad coordinate in a later
	// chunk is reported.
	b, err := all.MarshalJSON()
	require.NoError(t, err)
	prev = runtime.GOMAXPROCS(1)
	b1, err := all.MarshalJSON()
	runtime.GOMAXPROCS(prev)
	require.NoError(t, err)
	assert.Equal(t, string(b1), string(b))
	back, err := ParseCollection(b)
	require.NoError(t, err)
	assert.Len(t, back.Features, 500)
	all.Features[400].Polygon[0][1][0] = math.Inf(1)
	_, err = all.MarshalJSON()
	assert.ErrorContains(t, err, "not finite")
}
