package imagery

import (
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestComputeStats(t *testing.T) {
	nan := math.NaN()
	// Expected values from numpy: mean, median, std (ddof 0), min, max, percentile(25/75).
	tests := []struct {
		name   string
		values []float64
		want   Stats
	}{
		{"four", []float64{4, 2, 1, 3}, Stats{Mean: 2.5, Median: 2.5, Std: 1.118033988749895, Min: 1, Max: 4, P25: 1.75, P75: 3.25, Num: 4}},
		{"one", []float64{0.5}, Stats{Mean: 0.5, Median: 0.5, Std: 0, Min: 0.5, Max: 0.5, P25: 0.5, P75: 0.5, Num: 1}},
		{"seven with NaN and Inf skipped", []float64{3, nan, -1, 7, 2.5, math.Inf(1), 10, 0.1, 0.2},
			Stats{Mean: 3.1142857142857143, Median: 2.5, Std: 3.730349876899167, Min: -1, Max: 10, P25: 0.15000000000000002, P75: 5, Num: 7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ComputeStats(tt.values)
			assert.Equal(t, tt.want.Num, got.Num)
			for _, f := range []struct {
				name      string
				want, got float64
			}{{"mean", tt.want.Mean, got.Mean}, {"median", tt.want.Median, got.Median}, {"std", tt.want.Std, got.Std},
				{"min", tt.want.Min, got.Min}, {"max", tt.want.Max, got.Max}, {"p25", tt.want.P25, got.P25}, {"p75", tt.want.P75, got.P75}} {
				assert.InDelta(t, f.want, f.got, 1e-15, f.name)
			}
		})
	}
}

func TestComputeStatsEmpty(t *testing.T) {
	got := ComputeStats([]float64{math.NaN()})
	assert.Equal(t, 0, got.Num)
	assert.True(t, math.IsNaN(got.Mean))
	assert.True(t, math.IsNaN(got.P75))
}

func TestComputeStatsDoesNotModifyInput(t *testing.T) {
	v := []float64{3, 1, 2}
	ComputeStats(v)
	require.Equal(t, []float64{3, 1, 2}, v)
}

func TestMeanVariation(t *testing.T) {
	tests := []struct {
		mean, prev, want float64
	}{
		{0.55, 0.5, 10},
		{0.45, 0.5, -10},
		{0.5, 0.5, 0},
		{-0.2, -0.4, 50}, // rises from −0.4 to −0.2: +50 %
	}
	for _, tt := range tests {
		assert.InDelta(t, tt.want, MeanVariation(tt.mean, tt.prev), 1e-9, "%v vs %v", tt.mean, tt.prev)
	}
	assert.True(t, math.IsNaN(MeanVariation(1, 0)))
}

func BenchmarkComputeStats(b *testing.B) {
	v := make([]float64, 100_000) // a 1000 ha field at 10 m
	for i := range v {
		v[i] = math.Sin(float64(i))
	}
	b.ReportAllocs()
	for b.Loop() {
		ComputeStats(v)
	}
}

// TestPercentileSelectionMatchesSort checks the selection-based percentiles
// against numpy's definition on a sorted copy, with many ties and sizes.
func TestPercentileSelectionMatchesSort(t *testing.T) {
	seed := uint64(1)
	next := func() float64 { // xorshift: deterministic, no package state
		seed ^= seed << 13
		seed ^= seed >> 7
		seed ^= seed << 17
		return float64(seed%1000) / 997
	}
	for _, n := range []int{1, 2, 3, 5, 17, 100, 1001, 4096} {
		for _, levels := range []int{3, 1000} {
			v := make([]float64, n)
			for i := range v {
				v[i] = math.Floor(next()*float64(levels)) / float64(levels)
			}
			sorted := slices.Clone(v)
			slices.Sort(sorted)
			ref := func(p float64) float64 {
				pos := p / 100 * float64(n-1)
				lo := int(math.Floor(pos))
				if lo >= n-1 {
					return sorted[n-1]
				}
				return sorted[lo] + (sorted[lo+1]-sorted[lo])*(pos-float64(lo))
			}
			got := ComputeStats(v)
			assert.InDelta(t, ref(25), got.P25, 1e-15, "n=%d", n)
			assert.InDelta(t, ref(50), got.Median, 1e-15, "n=%d", n)
			assert.InDelta(t, ref(75), got.P75, 1e-15, "n=%d", n)
			assert.Equal(t, sorted[0], got.Min)
			assert.Equal(t, sorted[n-1], got.Max)
		}
	}
}

// TestOrderStatsMatchSort checks the bucketed selection against a sort on
// the shapes that stress it: continuous values, heavy ties, outliers far
// from the bulk, negative values, ranges too narrow or too wide for
// buckets, and both sides of the size where bucketing starts.
func TestOrderStatsMatchSort(t *testing.T) {
	seed := uint64(7)
	rnd := func() float64 { // xorshift in [0, 1)
		seed ^= seed << 13
		seed ^= seed >> 7
		seed ^= seed << 17
		return float64(seed>>11) / (1 << 53)
	}
	shapes := map[string]func(i, n int) float64{
		"uniform":   func(int, int) float64 { return rnd() },
		"ndvi-like": func(int, int) float64 { return 0.6 + 0.2*(rnd()+rnd()+rnd()-1.5) },
		"ties":      func(int, int) float64 { return math.Floor(rnd()*4) / 4 },
		"outlier": func(i, _ int) float64 {
			if i == 3 {
				return 1e12
			}
			return 0.5 + 1e-6*rnd()
		},
		"negative":  func(int, int) float64 { return -100 * rnd() },
		"narrow":    func(int, int) float64 { return 1 + math.Floor(rnd()*3)*math.SmallestNonzeroFloat64 },
		"wide":      func(i, _ int) float64 { return math.MaxFloat64 * (2*rnd() - 1) },
		"two-bulks": func(i, _ int) float64 { return float64(i%2)*1000 + rnd() },
	}
	for name, gen := range shapes {
		for _, n := range []int{255, 256, 257, 1000, 11000} {
			v := make([]float64, n)
			for i := range v {
				v[i] = gen(i, n)
			}
			sorted := slices.Clone(v)
			slices.Sort(sorted)
			ranks := []int{0, n / 4, n/4 + 1, n / 2, n / 2, n - 2, n - 1}
			out := make([]float64, len(ranks))
			orderStats(v, sorted[0], sorted[n-1], ranks, out)
			for i, r := range ranks {
				require.Equal(t, sorted[r], out[i], "%s n=%d rank %d", name, n, r)
			}
		}
	}
}

// statsBefore is statsOf as it was before its passes were fused (a sum,
// then the sum of squares with min and max, then orderStats with its own
// histogram pass): the new one must give the same float64s.
func statsBefore(v []float64) Stats {
	n := len(v)
	if n == 0 {
		nan := math.NaN()
		return Stats{Mean: nan, Median: nan, Std: nan, Min: nan, Max: nan, P25: nan, P75: nan}
	}
	mean := pairwiseSum(v) / float64(n)
	var ss float64
	lo, hi := v[0], v[0]
	for _, x := range v {
		d := x - mean
		ss += d * d
		lo, hi = min(lo, x), max(hi, x)
	}
	ranks, frac := quartileRanks(n)
	var at [6]float64
	orderStats(v, lo, hi, ranks[:], at[:])
	q := quartiles(at, frac)
	return Stats{Mean: mean, Median: q[1], Std: math.Sqrt(ss / float64(n)), Min: lo, Max: hi, P25: q[0], P75: q[2], Num: n}
}

// TestStatsOfSameAsBefore: the fused passes and the side-by-side pairwise
// leaves give bit for bit the statistics of the plain passes, on every
// size up to past a few summation leaves and on shapes with ties, one
// value, all equal, signed zeros, outliers and huge ranges.
func TestStatsOfSameAsBefore(t *testing.T) {
	seed := uint64(3)
	rnd := func() float64 { // xorshift in [0, 1)
		seed ^= seed << 13
		seed ^= seed >> 7
		seed ^= seed << 17
		return float64(seed>>11) / (1 << 53)
	}
	shapes := map[string]func(i int) float64{
		"ndvi-like": func(int) float64 { return 0.6 + 0.2*(rnd()+rnd()+rnd()-1.5) },
		"ties":      func(int) float64 { return math.Floor(rnd()*4) / 4 },
		"all-equal": func(int) float64 { return 0.1 },
		"zeros": func(i int) float64 {
			if i%3 == 0 {
				return math.Copysign(0, -1)
			}
			return 0
		},
		"zeros-positive-first": func(i int) float64 {
			if i%3 == 1 {
				return math.Copysign(0, -1)
			}
			return 0
		},
		"negative-zeros": func(int) float64 { return math.Copysign(0, -1) },
		"outlier": func(i int) float64 {
			if i == 3 {
				return -1e300
			}
			return 0.5 + 1e-6*rnd()
		},
		"wide":  func(int) float64 { return math.MaxFloat64 * (2*rnd() - 1) },
		"large": func(int) float64 { return 1e8 + rnd() },
	}
	sizes := []int{1, 2, 3, 127, 128, 129, 255, 256, 257, 511, 512, 513, 1000, 1025, 2049, 17_600, 100_003}
	for n := 4; n < 1100; n += 37 {
		sizes = append(sizes, n)
	}
	same := func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }
	for name, gen := range shapes {
		for _, n := range sizes {
			v := make([]float64, n)
			for i := range v {
				v[i] = gen(i)
			}
			sum, lo, hi := pairwiseSumMinMax(v)
			require.True(t, same(pairwiseSum(v), sum), "%s n=%d sum", name, n)
			want := statsBefore(slices.Clone(v))
			require.True(t, same(want.Min, lo) && same(want.Max, hi), "%s n=%d min/max", name, n)
			got := statsOf(v)
			require.Equal(t, want.Num, got.Num)
			for _, f := range [][3]any{{"mean", want.Mean, got.Mean}, {"median", want.Median, got.Median}, {"std", want.Std, got.Std},
				{"min", want.Min, got.Min}, {"max", want.Max, got.Max}, {"p25", want.P25, got.P25}, {"p75", want.P75, got.P75}} {
				require.True(t, same(f[1].(float64), f[2].(float64)), "%s n=%d %s: %v, want %v", name, n, f[0], f[2], f[1])
			}
		}
	}
}
