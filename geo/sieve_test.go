package geo_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/geo"
)

func picture(labels []int32, cols int) []string {
	var out []string
	for i := 0; i < len(labels); i += cols {
		line := ""
		for _, v := range labels[i : i+cols] {
			if v == 0 {
				line += "."
			} else {
				line += string(rune(v))
			}
		}
		out = append(out, line)
	}
	return out
}

func TestSieve(t *testing.T) {
	for _, tc := range []struct {
		name string
		pic  []string
		min  int
		want []string
	}{
		{
			name: "island merged into its only neighbour",
			pic:  []string{"aaaa", "abba", "aaaa"},
			min:  3, want: []string{"aaaa", "aaaa", "aaaa"},
		},
		{
			name: "large enough regions stay",
			pic:  []string{"aaaa", "abba", "aaaa"},
			min:  2, want: []string{"aaaa", "abba", "aaaa"},
		},
		{
			name: "largest neighbour wins",
			pic:  []string{"aaabbbb", "aacbbbb", "aaabbbb"},
			min:  2, want: []string{"aaabbbb", "aabbbbb", "aaabbbb"},
		},
		{
			name: "nodata is never merged nor a neighbour",
			pic:  []string{"aaa..", "a.a.c", "aaa.."},
			min:  3, want: []string{"aaa..", "a.a.c", "aaa.."},
		},
		{
			name: "small regions merge smallest first and keep merging",
			// c (1 px) joins its largest neighbour b (2 px); b+c (3 px) is
			// still small and joins a.
			pic: []string{"aaaaaa", "abbcaa", "aaaaaa"},
			min: 4, want: []string{"aaaaaa", "aaaaaa", "aaaaaa"},
		},
		{
			name: "small regions with no neighbour but each other",
			pic:  []string{"ab.", "...", "..c"},
			min:  3, want: []string{"bb.", "...", "..c"}, // a goes first and its only neighbour is b
		},
		{
			name: "diagonal pixels are not neighbours",
			// All four are 1-pixel regions: the first, a, joins b (the
			// lower-numbered of two equal neighbours), then the rest join
			// that larger b.
			pic: []string{"ab", "ba"},
			min: 2, want: []string{"bb", "bb"},
		},
		{
			name: "minPixels 0 or 1 changes nothing",
			pic:  []string{"ab", "ba"},
			min:  1, want: []string{"ab", "ba"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			labels, cols, rows := parseLabels(tc.pic...)
			require.NoError(t, geo.Sieve(labels, cols, rows, tc.min, 0))
			assert.Equal(t, tc.want, picture(labels, cols))
		})
	}
}

func TestSieveKeepLabels(t *testing.T) {
	for _, tc := range []struct {
		name       string
		pic        []string
		min        int
		want, keep []string // plain Sieve, KeepLabels
	}{
		{
			name: "a label made of small regions keeps its largest",
			pic:  []string{"aaaaaaa", "abaabba", "aaaaaaa"},
			min:  3,
			want: []string{"aaaaaaa", "aaaaaaa", "aaaaaaa"},
			keep: []string{"aaaaaaa", "aaaabba", "aaaaaaa"},
		},
		{
			name: "the last region of a label stays below the minimum",
			pic:  []string{"aaaa", "abba", "aaaa"},
			min:  3,
			want: []string{"aaaa", "aaaa", "aaaa"},
			keep: []string{"aaaa", "abba", "aaaa"},
		},
		{
			name: "a small region merges into a kept small region",
			// a (1 px) is not the last a: it joins b (3 px), the last b,
			// which is kept although still below the minimum of 5.
			pic:  []string{"ab.a", "bb.a"},
			min:  5,
			want: []string{"bb.a", "bb.a"},
			keep: []string{"bb.a", "bb.a"},
		},
		{
			name: "labels with large regions sieve as usual",
			pic:  []string{"aaabbbb", "aacbbbb", "aaabbbb", "ccccccc"},
			min:  2,
			want: []string{"aaabbbb", "aabbbbb", "aaabbbb", "ccccccc"},
			keep: []string{"aaabbbb", "aabbbbb", "aaabbbb", "ccccccc"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			labels, cols, rows := parseLabels(tc.pic...)
			plain := append([]int32(nil), labels...)
			require.NoError(t, geo.SieveWithOptions(plain, cols, rows, geo.SieveOptions{MinPixels: tc.min}))
			assert.Equal(t, tc.want, picture(plain, cols), "without KeepLabels")
			require.NoError(t, geo.SieveWithOptions(labels, cols, rows, geo.SieveOptions{MinPixels: tc.min, KeepLabels: true}))
			assert.Equal(t, tc.keep, picture(labels, cols), "with KeepLabels")
		})
	}
}

func TestSieveKeepLabelsRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for i := range 30 {
		cols, rows := 10+rng.IntN(60), 10+rng.IntN(60)
		// Unsmoothed noise: most regions are tiny, as with per-pixel k-means.
		labels := make([]int32, cols*rows)
		k := 2 + rng.IntN(6)
		for p := range labels {
			if rng.Float64() > 0.05 {
				labels[p] = int32(1 + rng.IntN(k))
			}
		}
		before := append([]int32(nil), labels...)
		minPixels := 2 + rng.IntN(30)

		plain := append([]int32(nil), labels...)
		require.NoError(t, geo.Sieve(plain, cols, rows, minPixels, 0))
		zero := append([]int32(nil), labels...)
		require.NoError(t, geo.SieveWithOptions(zero, cols, rows, geo.SieveOptions{MinPixels: minPixels}))
		assert.Equal(t, plain, zero, "raster %d: SieveWithOptions without KeepLabels is Sieve", i)

		require.NoError(t, geo.SieveWithOptions(labels, cols, rows, geo.SieveOptions{MinPixels: minPixels, KeepLabels: true}))
		size, hasNb := regionSizes(labels, cols, rows, 0)
		present := func(ls []int32) map[int32]bool {
			m := map[int32]bool{}
			for _, l := range ls {
				if l != 0 {
					m[l] = true
				}
			}
			return m
		}
		assert.Equal(t, present(before), present(labels), "raster %d: every label survives", i)
		// At most one small region with neighbours per label: the kept one.
		small := map[int32]map[int]bool{} // label → first pixel of each small region
		seen := make([]bool, len(labels))
		for p := range labels {
			if before[p] == 0 {
				require.Equal(t, int32(0), labels[p], "nodata pixel %d changed", p)
				continue
			}
			if size[p] < minPixels && hasNb[p] && !seen[p] {
				markRegion(labels, cols, rows, p, seen)
				if small[labels[p]] == nil {
					small[labels[p]] = map[int]bool{}
				}
				small[labels[p]][p] = true
			}
		}
		for l, rs := range small {
			assert.Len(t, rs, 1, "raster %d: label %d has %d small regions with neighbours (min %d)", i, l, len(rs), minPixels)
		}
		again := append([]int32(nil), labels...)
		require.NoError(t, geo.SieveWithOptions(again, cols, rows, geo.SieveOptions{MinPixels: minPixels, KeepLabels: true}))
		assert.Equal(t, labels, again, "raster %d idempotent", i)
	}
}

// markRegion marks the 4-connected region of pixel p in seen.
func markRegion(labels []int32, cols, rows, p int, seen []bool) {
	stack := []int{p}
	seen[p] = true
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		r, c := i/cols, i%cols
		for _, d := range [][2]int{{0, 1}, {0, -1}, {1, 0}, {-1, 0}} {
			rr, cc := r+d[0], c+d[1]
			if rr < 0 || cc < 0 || rr >= rows || cc >= cols {
				continue
			}
			if j := rr*cols + cc; !seen[j] && labels[j] == labels[i] {
				seen[j] = true
				stack = append(stack, j)
			}
		}
	}
}

func TestSieveBadInput(t *testing.T) {
	labels := []int32{1, 2, 3}
	err := geo.Sieve(labels, 2, 2, 2, 0)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "3 labels for a 2×2 raster")
	assert.Equal(t, []int32{1, 2, 3}, labels)
	require.NoError(t, geo.Sieve(nil, 0, 0, 5, 0))
}

// regionSizes returns, per pixel, the size of its 4-connected region (0 for nodata)
// and whether the region has a non-nodata neighbour of another label.
func regionSizes(labels []int32, cols, rows int, nodata int32) ([]int, []bool) {
	size := make([]int, len(labels))
	hasNb := make([]bool, len(labels))
	seen := make([]bool, len(labels))
	for start := range labels {
		if seen[start] || labels[start] == nodata {
			continue
		}
		stack, members, nb := []int{start}, []int{}, false
		seen[start] = true
		for len(stack) > 0 {
			i := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			members = append(members, i)
			r, c := i/cols, i%cols
			for _, d := range [][2]int{{0, 1}, {0, -1}, {1, 0}, {-1, 0}} {
				rr, cc := r+d[0], c+d[1]
				if rr < 0 || cc < 0 || rr >= rows || cc >= cols {
					continue
				}
				j := rr*cols + cc
				switch {
				case labels[j] == nodata:
				case labels[j] != labels[i]:
					nb = true
				case !seen[j]:
					seen[j] = true
					stack = append(stack, j)
				}
			}
		}
		for _, m := range members {
			size[m], hasNb[m] = len(members), nb
		}
	}
	return size, hasNb
}

func TestSieveRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 30 {
		cols, rows := 10+rng.IntN(60), 10+rng.IntN(60)
		labels := randomLabels(rng, cols, rows, 2+rng.IntN(5), 0.1)
		before := append([]int32(nil), labels...)
		minPixels := 2 + rng.IntN(30)
		require.NoError(t, geo.Sieve(labels, cols, rows, minPixels, 0))
		size, hasNb := regionSizes(labels, cols, rows, 0)
		for p := range labels {
			if before[p] == 0 {
				require.Equal(t, int32(0), labels[p], "nodata pixel %d changed", p)
				continue
			}
			require.NotEqual(t, int32(0), labels[p], "pixel %d became nodata", p)
			if size[p] < minPixels {
				assert.False(t, hasNb[p], "raster %d: pixel %d in a %d-pixel region with neighbours (min %d)", i, p, size[p], minPixels)
			}
		}
		// Sieving again changes nothing.
		again := append([]int32(nil), labels...)
		require.NoError(t, geo.Sieve(again, cols, rows, minPixels, 0))
		assert.Equal(t, labels, again, fmt.Sprintf("raster %d idempotent", i))
	}
}

func BenchmarkSieve(b *testing.B) {
	// 1000×1000 pixels, ~5 labels of noisy regions, 0.1 ha at 10 m = 10 pixels.
	rng := rand.New(rand.NewPCG(11, 12))
	src := randomLabels(rng, 1000, 1000, 5, 0)
	labels := make([]int32, len(src))
	for _, keep := range []bool{false, true} {
		b.Run(fmt.Sprintf("keepLabels=%v", keep), func(b *testing.B) {
			for b.Loop() {
				copy(labels, src)
				if err := geo.SieveWithOptions(labels, 1000, 1000, geo.SieveOptions{MinPixels: 10, KeepLabels: keep}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
