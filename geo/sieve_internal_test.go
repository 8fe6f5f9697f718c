package geo

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// findRegions numbers 4-connected regions as a flood fill in row-major
// order of first pixels does (ids, sizes, labels), nodata left out, on
// random rasters with smooth structure.
func TestFindRegionsMatchesFloodFill(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for _, tc := range []struct{ cols, rows, k int }{{1, 30, 2}, {30, 1, 3}, {37, 23, 2}, {64, 64, 5}, {150, 90, 3}} {
		for range 10 {
			labels := make([]int32, tc.cols*tc.rows)
			for i := range labels {
				switch {
				case i%tc.cols > 0 && rng.IntN(3) == 0:
					labels[i] = labels[i-1]
				case i >= tc.cols && rng.IntN(3) == 0:
					labels[i] = labels[i-tc.cols]
				default:
					labels[i] = int32(rng.IntN(tc.k+1)) - 1 // -1 is nodata
				}
			}
			got := findRegions(labels, tc.cols, tc.rows, -1)
			// The flood fill.
			id := make([]int32, len(labels))
			for i := range id {
				id[i] = -1
			}
			var size []int
			var label []int32
			for s, l := range labels {
				if l == -1 || id[s] >= 0 {
					continue
				}
				n := int32(len(size))
				id[s] = n
				queue := []int{s}
				for h := 0; h < len(queue); h++ {
					p := queue[h]
					c, r := p%tc.cols, p/tc.cols
					for _, q := range []int{p - 1, p + 1, p - tc.cols, p + tc.cols} {
						qc, qr := q%tc.cols, q/tc.cols
						if q < 0 || q >= len(labels) || (qc != c && qr != r) || labels[q] != l || id[q] >= 0 {
							continue
						}
						id[q] = n
						queue = append(queue, q)
					}
				}
				size = append(size, len(queue))
				label = append(label, l)
			}
			require.Equal(t, id, got.id)
			require.Equal(t, size, got.size)
			require.Equal(t, label, got.label)
		}
	}
}

// labelSums gives the same sums through slices (small label ranges) as
// through maps (labels far apart).
func TestLabelSumsSmallAndWideRanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	n, dim := 5000, 2
	small := make([]int32, n)
	wide := make([]int32, n)
	values := make([]float64, n*dim)
	for i := range small {
		small[i] = int32(rng.IntN(6))
		wide[i] = small[i] * 1_000_000 // the same partition, labels far apart
		for d := range dim {
			values[i*dim+d] = rng.NormFloat64()
		}
		if rng.IntN(20) == 0 {
			values[i*dim] = math.NaN()
		}
	}
	s1, c1 := labelSums(small, values, dim, 0)
	s2, c2 := labelSums(wide, values, dim, 0)
	require.Len(t, s1, 5)
	for l := int32(1); l <= 5; l++ {
		assert.Equal(t, s1[l], s2[l*1_000_000], "label %d", l)
		assert.Equal(t, c1[l], c2[l*1_000_000], "label %d", l)
	}
}

// sieveDigest sieves 200 random rasters (noisy labels, nodata, values with
// NaN, every option) and digests the results.
func sieveDigest(t *testing.T) string {
	rng := rand.New(rand.NewPCG(41, 42))
	h := fnv.New64a()
	for range 200 {
		cols, rows := 5+rng.IntN(60), 5+rng.IntN(60)
		k := 2 + rng.IntN(6)
		labels := make([]int32, cols*rows)
		dim := 1 + rng.IntN(2)
		values := make([]float64, len(labels)*dim)
		for p := range labels {
			if rng.IntN(20) > 0 {
				labels[p] = int32(1 + rng.IntN(k))
			}
			if p > 0 && rng.IntN(2) == 0 {
				labels[p] = labels[p-1]
			}
			for d := range dim {
				values[p*dim+d] = float64(labels[p]) + rng.NormFloat64()
			}
			if rng.IntN(30) == 0 {
				values[p*dim] = math.NaN()
			}
		}
		opts := SieveOptions{MinPixels: 2 + rng.IntN(20), KeepLabels: rng.IntN(2) == 0, IntoLargeOnly: rng.IntN(2) == 0}
		if rng.IntN(2) == 0 {
			opts.Values, opts.Dim = values, dim
		}
		require.NoError(t, SieveWithOptions(labels, cols, rows, opts))
		for _, l := range labels {
			h.Write([]byte{byte(l), byte(l >> 8)})
		}
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

// The sieve's results are those of its version before the speed-ups of
// 2026-11-27 (label sums in slices, only small regions' pixels listed,
// regions numbered without a find per pixel): the digest was computed
// with that version.
func TestSieveSameAsBefore(t *testing.T) {
	assert.Equal(t, "9537c378f544516a", sieveDigest(t))
}
