package zoning

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bruteForce1D returns the optimal k-means inertia of sorted 1-D data by
// dynamic programming over contiguous intervals (optimal 1-D clusters are intervals).
func bruteForce1D(data []float64, k int) float64 {
	x := slices.Clone(data)
	slices.Sort(x)
	n := len(x)
	ps, ps2 := make([]float64, n+1), make([]float64, n+1)
	for i, v := range x {
		ps[i+1], ps2[i+1] = ps[i]+v, ps2[i]+v*v
	}
	cost := func(i, j int) float64 { // x[i:j]
		s, m := ps[j]-ps[i], float64(j-i)
		return ps2[j] - ps2[i] - s*s/m
	}
	dp := make([]float64, n+1)
	for j := 1; j <= n; j++ {
		dp[j] = cost(0, j)
	}
	for c := 2; c <= k; c++ {
		next := make([]float64, n+1)
		for j := range next {
			next[j] = math.Inf(1)
		}
		for j := c; j <= n; j++ {
			for i := c - 1; i < j; i++ {
				next[j] = min(next[j], dp[i]+cost(i, j))
			}
		}
		dp = next
	}
	return dp[n]
}

// bruteForceND enumerates every labelling of tiny 2-D data.
func bruteForceND(data []float64, dim, k int) float64 {
	n := len(data) / dim
	labels := make([]int, n)
	best := math.Inf(1)
	var rec func(i int)
	rec = func(i int) {
		if i == n {
			sums := make([]float64, k*dim)
			cnt := make([]int, k)
			for p, l := range labels {
				cnt[l]++
				for d := range dim {
					sums[l*dim+d] += data[p*dim+d]
				}
			}
			var in float64
			for p, l := range labels {
				if cnt[l] == 0 {
					return
				}
				for d := range dim {
					c := sums[l*dim+d] / float64(cnt[l])
					in += (data[p*dim+d] - c) * (data[p*dim+d] - c)
				}
			}
			best = min(best, in)
			return
		}
		for l := range k {
			labels[i] = l
			rec(i + 1)
		}
	}
	rec(0)
	return best
}

func blobs(r *rand.Rand, n, dim int, centres []float64, sigma float64) []float64 {
	k := len(centres) / dim
	out := make([]float64, 0, n*dim)
	for i := range n {
		c := i % k
		for d := range dim {
			out = append(out, centres[c*dim+d]+sigma*r.NormFloat64())
		}
	}
	return out
}

func TestKMeansMatchesOptimum(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name string
		data []float64
		dim  int
		k    int
	}{
		{"1d three blobs", blobs(r, 300, 1, []float64{0, 5, 10}, 0.8), 1, 3},
		{"1d uniform k4", blobs(r, 200, 1, []float64{0}, 3), 1, 4},
		{"1d skewed k5", func() []float64 {
			d := make([]float64, 400)
			for i := range d {
				d[i] = math.Exp(r.NormFloat64())
			}
			return d
		}(), 1, 5},
		{"2d tiny k2", blobs(r, 10, 2, []float64{0, 0, 3, 3}, 1.5), 2, 2},
		{"2d tiny k3", blobs(r, 9, 2, []float64{0, 0, 3, 3, 0, 4}, 1), 2, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := KMeans(context.Background(), tc.data, tc.dim, tc.k, KMeansOptions{Seed: 7})
			require.NoError(t, err)
			var want float64
			if tc.dim == 1 {
				want = bruteForce1D(tc.data, tc.k)
			} else {
				want = bruteForceND(tc.data, tc.dim, tc.k)
			}
			assert.InDelta(t, want, res.Inertia, want*0.01+1e-12, "inertia within 1%% of the optimum")
			require.Len(t, res.Labels, len(tc.data)/tc.dim)
			require.Len(t, res.Centers, tc.k*tc.dim)
			// Inertia is consistent with labels and centres.
			var in float64
			counts := make([]int, tc.k)
			for i, l := range res.Labels {
				counts[l]++
				in += sqDist(tc.data[i*tc.dim:(i+1)*tc.dim], res.Centers[int(l)*tc.dim:(int(l)+1)*tc.dim])
			}
			assert.InDelta(t, res.Inertia, in, 1e-9*(1+in))
			for c, n := range counts {
				assert.Positive(t, n, "cluster %d empty", c)
			}
		})
	}
}

func TestKMeansSameAsLloydND(t *testing.T) {
	// The 1-D fast path and the general path agree on 1-D data.
	r := rand.New(rand.NewPCG(3, 4))
	data := blobs(r, 5000, 1, []float64{0.2, 0.5, 0.6, 0.9}, 0.07)
	fast, err := KMeans(context.Background(), data, 1, 4, KMeansOptions{Seed: 1})
	require.NoError(t, err)
	general := make([]float64, 0, 2*len(data))
	for _, v := range data {
		general = append(general, v, 0)
	}
	slow, err := KMeans(context.Background(), general, 2, 4, KMeansOptions{Seed: 1})
	require.NoError(t, err)
	assert.InDelta(t, slow.Inertia, fast.Inertia, slow.Inertia*0.005)
}

func TestKMeansReproducible(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, dim := range []int{1, 3} {
		data := blobs(r, 3000, dim, make([]float64, dim), 1)
		a, err := KMeans(context.Background(), data, dim, 5, KMeansOptions{Seed: 42, Workers: 1})
		require.NoError(t, err)
		b, err := KMeans(context.Background(), data, dim, 5, KMeansOptions{Seed: 42, Workers: 4})
		require.NoError(t, err)
		assert.Equal(t, a.Labels, b.Labels, "dim %d: same seed, different worker count", dim)
		assert.Equal(t, a.Centers, b.Centers)
		c, err := KMeans(context.Background(), data, dim, 5, KMeansOptions{Seed: 43, Restarts: 1})
		require.NoError(t, err)
		d, err := KMeans(context.Background(), data, dim, 5, KMeansOptions{Seed: 44, Restarts: 1})
		require.NoError(t, err)
		assert.NotEqual(t, c.Centers, d.Centers, "dim %d: different seeds, one restart", dim)
	}
}

func TestKMeansDegenerate(t *testing.T) {
	tests := []struct {
		name     string
		data     []float64
		dim, k   int
		nonEmpty int
		inertia  float64
	}{
		{"all equal", []float64{2, 2, 2, 2}, 1, 3, 1, 0},
		{"two values k3", []float64{1, 1, 1, 5, 5}, 1, 3, 2, 0},
		{"k equals n", []float64{1, 2, 3}, 1, 3, 3, 0},
		{"2d duplicates", []float64{0, 0, 0, 0, 1, 1, 1, 1}, 2, 2, 2, 0},
		{"k1", []float64{0, 2, 4}, 1, 1, 1, 8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := KMeans(context.Background(), tc.data, tc.dim, tc.k, KMeansOptions{})
			require.NoError(t, err)
			used := map[int32]bool{}
			for _, l := range res.Labels {
				used[l] = true
			}
			assert.Len(t, used, tc.nonEmpty)
			assert.InDelta(t, tc.inertia, res.Inertia, 1e-12)
			for _, c := range res.Centers {
				assert.False(t, math.IsNaN(c))
			}
		})
	}
}

func TestKMeansEmptyClusterRepair(t *testing.T) {
	// Lloyd from these centres empties a cluster; repair must refill it.
	data := []float64{0, 0.1, 0.2, 10, 10.1, 10.2, 20, 20.1}
	labels := make([]int32, 8)
	dist2 := make([]float64, 8)
	centers := []float64{10.1, 100, 200} // clusters 1 and 2 end up empty
	assignND(data, 1, centers, labels, dist2)
	counts := []int{8, 0, 0}
	sums := []float64{0, 0, 0}
	for _, v := range data {
		sums[0] += v
	}
	repairEmpty(data, 1, counts, sums, dist2, labels)
	assert.Equal(t, 8, counts[0]+counts[1]+counts[2])
	assert.Equal(t, 1, counts[1])
	assert.Equal(t, 1, counts[2])
	assert.Equal(t, []float64{0, 20.1}, []float64{sums[1], sums[2]}, "farthest points 0 (10.1 away) then 20.1 (10 away) moved")
}

func TestKMeansErrors(t *testing.T) {
	ctx := context.Background()
	_, err := KMeans(ctx, []float64{1, 2}, 1, 3, KMeansOptions{})
	assert.ErrorIs(t, err, ErrTooFewPoints)
	_, err = KMeans(ctx, []float64{1, 2, 3}, 2, 1, KMeansOptions{})
	assert.ErrorContains(t, err, "not a multiple")
	_, err = KMeans(ctx, []float64{1, math.NaN()}, 1, 1, KMeansOptions{})
	assert.ErrorContains(t, err, "not finite")
	_, err = KMeans(ctx, []float64{1, 2}, 0, 1, KMeansOptions{})
	assert.Error(t, err)
	_, err = KMeans(ctx, []float64{1, 2}, 1, 0, KMeansOptions{})
	assert.Error(t, err)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = KMeans(cctx, []float64{1, 2, 3, 4}, 1, 2, KMeansOptions{})
	assert.ErrorIs(t, err, context.Canceled)
}

func TestKMeansOverflow(t *testing.T) {
	// Squared distances of ±1e308 overflow to +Inf: this used to panic in
	// a worker goroutine (data[-2:]), killing the process.
	huge := []float64{-1e308, 0, 1e308, 0, 0, 0, 1, 0}
	_, err := KMeans(context.Background(), huge, 2, 2, KMeansOptions{Seed: 1})
	require.ErrorContains(t, err, "squared distances overflow")
	_, err = KMeans(context.Background(), []float64{-1e200, 1e200, 0}, 1, 2, KMeansOptions{Seed: 1})
	require.ErrorContains(t, err, "squared distances overflow")

	// Seeding itself copes with infinite potentials: the first trial wins.
	centers := seedPlusPlus(huge, 2, 2, rng(1, 0), make([]float64, 4))
	require.Len(t, centers, 4)
	for _, v := range centers {
		assert.False(t, math.IsNaN(v))
	}

	// A panic in a restart is an error, not a crash.
	_, err = runSafe(func(int) (restart, error) { panic("boom") }, 3)
	require.ErrorContains(t, err, "restart 3 failed: boom")
	// Large but safe values still cluster.
	res, err := KMeans(context.Background(), []float64{-1e150, -1e150 + 1e140, 1e150, 1e150 - 1e140}, 1, 2, KMeansOptions{Seed: 1})
	require.NoError(t, err)
	assert.Equal(t, res.Labels[0], res.Labels[1])
	assert.NotEqual(t, res.Labels[0], res.Labels[2])
}

func BenchmarkKMeans(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, bc := range []struct {
		name string
		n    int
		dim  int
	}{{"1d_1M", 1_000_000, 1}, {"2d_100k", 100_000, 2}} {
		data := blobs(r, bc.n, bc.dim, make([]float64, bc.dim*5), 1)
		for i := range data {
			data[i] += float64(i%5) * 0.7
		}
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := KMeans(context.Background(), data, bc.dim, 5, KMeansOptions{Seed: 1}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
