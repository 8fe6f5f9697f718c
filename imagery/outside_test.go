package imagery

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/internal/testenv"
)

// TestFieldBeyondScene: a field's pixels outside the scene's extent are no
// data: counted in FieldPixels (and CloudCover), never clear, and counted
// without allocating for them.
func TestFieldBeyondScene(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "S2B_20220315")
	writeSyntheticScene(t, dir, map[string]string{"PROCESSING_BASELINE": "03.00"})
	s, err := OpenScene(context.Background(), dir, SceneOptions{})
	require.NoError(t, err)
	defer s.Close()
	x0, y0 := grid10.X0, grid10.Y0
	// rect is a field from (x0+a, y0−b) to (x0+c, y0−d), in metres.
	rect := func(a, b, c, d float64) orb.MultiPolygon {
		return lonLat(t, orb.Ring{{x0 + a, y0 - b}, {x0 + c, y0 - b}, {x0 + c, y0 - d}, {x0 + a, y0 - d}, {x0 + a, y0 - b}})
	}
	tests := []struct {
		name                 string
		field                orb.MultiPolygon
		fieldPixels, outside int
		num                  int
		maxAllocKiB          uint64
	}{
		// The 8×8 chip holds 4 cloudy pixels and 1 without data: 59 clear.
		{"inside", rect(1, 1, 79, 79), 64, 0, 59, 1 << 10},
		{"8 pixels east beyond", rect(1, 1, 159, 79), 128, 64, 59, 1 << 10},
		{"beyond on every side", rect(-79, -79, 159, 159), 576, 512, 59, 1 << 10},
		// A sliver 0.5 m thick in row 0 holds no centre: its 20 touched
		// pixels, 12 outside; (7, 0) has no data.
		{"sliver", rect(1, 4.4, 199, 4.9), 20, 12, 7, 1 << 10},
		// 30 km square: 9 M pixels, counted in strips; a mask of them
		// would be 9 MB.
		{"30 km square", rect(-15000, -15000, 15000, 15000), 9_000_000, 9_000_000 - 64, 59, 2 << 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			ps, err := s.FieldProducts(context.Background(), tc.field, []string{"ndvi"}, nil)
			runtime.ReadMemStats(&after)
			require.NoError(t, err)
			require.Len(t, ps, 1)
			st := ps[0].Stats
			assert.Equal(t, tc.fieldPixels, st.FieldPixels)
			assert.Equal(t, tc.num, st.Num)
			assert.InDelta(t, 100*float64(tc.fieldPixels-tc.num)/float64(tc.fieldPixels), st.CloudCover, 1e-9)
			assert.Less(t, (after.TotalAlloc-before.TotalAlloc)>>10, tc.maxAllocKiB, "KiB allocated")

			fr, err := s.ReadField(context.Background(), tc.field, []string{"B04"})
			require.NoError(t, err)
			assert.Equal(t, tc.outside, fr.OutsidePixels)
			assert.Equal(t, tc.fieldPixels, fr.FieldPixels)
			assert.LessOrEqual(t, fr.Grid.Cols*fr.Grid.Rows, 64, "the window stays within the scene")
		})
	}
}

// TestRealFieldBeyondChip: fields reaching beyond the 640 m chip of
// flanders-31UES have the statistics of the covered part over all their
// pixels: a 3.5 km strip (39 ha) of which 77 pixels lie in the chip, and
// a 68,487 ha square around it (pixel counts as gdal_rasterize gives on
// the chip's grid extended over the field).
func TestRealFieldBeyondChip(t *testing.T) {
	dir := testenv.DataDir(t, "s2", "flanders-31UES", "2019-07-05")
	s, err := OpenScene(context.Background(), dir, SceneOptions{})
	require.NoError(t, err)
	defer s.Close()
	tests := []struct {
		name              string
		ring              orb.Ring
		fieldPixels, num  int
		cloudCoverAtLeast float64
	}{
		{"strip", orb.Ring{{4.0094016, 50.746340065}, {4.0595016, 50.746340065}, {4.0595016, 50.747340065},
			{4.0094016, 50.747340065}, {4.0094016, 50.746340065}}, 3936, 77, 98},
		{"huge square", orb.Ring{{3.9, 50.6}, {4.25, 50.6}, {4.25, 50.85}, {3.9, 50.85}, {3.9, 50.6}}, 6868634, 4096, 99.9},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps, err := s.FieldProducts(context.Background(), orb.MultiPolygon{{tc.ring}}, []string{"ndvi"}, nil)
			require.NoError(t, err)
			st := ps[0].Stats
			assert.Equal(t, tc.fieldPixels, st.FieldPixels)
			assert.Equal(t, tc.num, st.Num)
			assert.InDelta(t, 100*float64(tc.fieldPixels-tc.num)/float64(tc.fieldPixels), st.CloudCover, 1e-9)
			assert.GreaterOrEqual(t, st.CloudCover, tc.cloudCoverAtLeast)
			assert.Less(t, float64(st.Num), 0.6*float64(st.FieldPixels), "unusable at the default minimum clear share")
		})
	}
}

// BenchmarkFieldBeyondChip times the products of fields reaching beyond
// the 640 m chip: the 39 ha strip and the 68,487 ha square, whose 6.9 M
// pixels beyond the chip are counted strip by strip.
func BenchmarkFieldBeyondChip(b *testing.B) {
	dir := testenv.DataDir(b, "s2", "flanders-31UES", "2019-07-05")
	s, err := OpenScene(context.Background(), dir, SceneOptions{})
	require.NoError(b, err)
	defer s.Close()
	for _, bc := range []struct {
		name string
		ring orb.Ring
	}{
		{"strip", orb.Ring{{4.0094016, 50.746340065}, {4.0595016, 50.746340065}, {4.0595016, 50.747340065},
			{4.0094016, 50.747340065}, {4.0094016, 50.746340065}}},
		{"huge", orb.Ring{{3.9, 50.6}, {4.25, 50.6}, {4.25, 50.85}, {3.9, 50.85}, {3.9, 50.6}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			field := orb.MultiPolygon{{bc.ring}}
			for b.Loop() {
				if _, err := s.FieldProducts(context.Background(), field, []string{"ndvi"}, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
