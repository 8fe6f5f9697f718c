package zoning

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// floodRegions is the flood-fill numbering regionLabeller replaces: the
// reference (for two columns or more).
func floodRegions(labels []int32, cols int) ([]int32, int) {
	id := make([]int32, len(labels))
	for i := range id {
		id[i] = -1
	}
	n := 0
	var queue []int
	for s, l := range labels {
		if l == 0 || id[s] >= 0 {
			continue
		}
		id[s] = int32(n)
		queue = append(queue[:0], s)
		for h := 0; h < len(queue); h++ {
			p := queue[h]
			c := p % cols
			for _, q := range [4]int{p - 1, p + 1, p - cols, p + cols} {
				if (q == p-1 && c == 0) || (q == p+1 && c == cols-1) || q < 0 || q >= len(labels) {
					continue
				}
				if id[q] < 0 && labels[q] == l {
					id[q] = int32(n)
					queue = append(queue, q)
				}
			}
		}
		n++
	}
	return id, n
}

// The two-scan labelling numbers regions exactly as the flood fill does
// (same ids, same order), on random label rasters of several densities and
// shapes, reusing its buffers between calls.
func TestRegionLabellerMatchesFloodFill(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var rl regionLabeller
	for _, tc := range []struct{ cols, rows, k int }{{2, 1, 1}, {2, 50, 2}, {50, 1, 3}, {37, 23, 2}, {64, 64, 5}, {200, 150, 3}} {
		for range 20 {
			labels := make([]int32, tc.cols*tc.rows)
			for i := range labels {
				labels[i] = int32(rng.IntN(tc.k + 1))
			}
			// Some smooth structure too: copy the left or upper neighbour.
			for i := range labels {
				if i%tc.cols > 0 && rng.IntN(3) == 0 {
					labels[i] = labels[i-1]
				} else if i >= tc.cols && rng.IntN(3) == 0 {
					labels[i] = labels[i-tc.cols]
				}
			}
			want, wn := floodRegions(labels, tc.cols)
			got, gn := rl.label(labels, tc.cols, tc.rows)
			require.Equal(t, wn, gn)
			require.Equal(t, want, got)
		}
	}
	// One column: vertical neighbours are neighbours (the flood fill took
	// them for left and right ones and split such regions).
	got, n := rl.label([]int32{1, 2, 1, 0, 1, 1, 2, 2}, 1, 8)
	require.Equal(t, 5, n)
	require.Equal(t, []int32{0, 1, 2, -1, 3, 3, 4, 4}, got)
}

// sortFloats sorts as slices.Sort does, on values with ties, both signs,
// zeros, infinities, subnormals; with a NaN it falls back to slices.Sort.
func TestSortFloatsMatchesSlicesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 100, 5000, 100000, 1<<16 + 1} { // the last one in two halves
		x := make([]float64, n)
		for i := range x {
			switch rng.IntN(10) {
			case 0:
				x[i] = float64(rng.IntN(5)) - 2 // ties
			case 1:
				x[i] = []float64{math.Inf(1), math.Inf(-1), math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64, math.MaxFloat64}[rng.IntN(5)]
			default:
				x[i] = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(20)-10))
			}
		}
		want := slices.Clone(x)
		slices.Sort(want)
		sortFloats(x)
		require.Equal(t, want, x)
	}
	x := []float64{3, math.NaN(), 1}
	x = append(x, make([]float64, 5000)...)
	sortFloats(x)
	require.True(t, math.IsNaN(x[0]))
}

// sortedCopy leaves its source alone and sums the sorted values in order
// (bit for bit the loop over the sorted slice), short, long and split in
// halves.
func TestSortedCopySum(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{10, 5000, 1<<16 + 3} {
		src := make([]float64, n)
		for i := range src {
			src[i] = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(12)-6))
		}
		orig := slices.Clone(src)
		dst := make([]float64, n)
		sum := sortedCopy(dst, src)
		require.Equal(t, orig, src)
		want := slices.Clone(src)
		slices.Sort(want)
		require.Equal(t, want, dst)
		var s float64
		for _, v := range want {
			s += v
		}
		require.Equal(t, math.Float64bits(s), math.Float64bits(sum), "n = %d", n)
	}
}
