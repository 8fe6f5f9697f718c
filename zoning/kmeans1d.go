package zoning

import (
	"math"
	"slices"
)

// maxExact1D bounds the points kmeans1D solves exactly: its time is
// O(k·n·log n), negligible up to this size, where Lloyd's restarts can
// still miss the optimum on a few dozen pixels.
const maxExact1D = 50_000

// kmeans1D is the optimal k-means of one-dimensional data (dynamic
// programming over the sorted values, with the divide-and-conquer
// speed-up that the optimal split points are monotone, as in
// Ckmeans.1d.dp): no seeding can do better. It returns labels 0..k−1 in
// ascending order of centre and the inertia. n ≥ k ≥ 1.
func kmeans1D(data []float64, k int) ([]int32, float64) {
	n := len(data)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case data[a] < data[b]:
			return -1
		case data[a] > data[b]:
			return 1
		}
		return 0
	})
	// Prefix sums of the values shifted by their median, for precision.
	shift := data[order[n/2]]
	s1 := make([]float64, n+1)
	s2 := make([]float64, n+1)
	for i, o := range order {
		v := data[o] - shift
		s1[i+1] = s1[i] + v
		s2[i+1] = s2[i] + v*v
	}
	// cost of sorted points i..j inclusive.
	cost := func(i, j int) float64 {
		c := float64(j - i + 1)
		s := s1[j+1] - s1[i]
		return max(0, s2[j+1]-s2[i]-s*s/c)
	}
	prev := make([]float64, n) // prev[j]: best cost of points 0..j in m−1 clusters
	for j := range n {
		prev[j] = cost(0, j)
	}
	// start[m][j]: first point of the last cluster in the best split of 0..j into m+1 clusters.
	start := make([][]int32, k)
	start[0] = make([]int32, n)
	cur := make([]float64, n)
	for m := 1; m < k; m++ {
		st := make([]int32, n)
		for j := range cur {
			cur[j] = math.Inf(1)
		}
		// solve fills cur[j] for j in [jlo, jhi], the split point in [ilo, ihi].
		var solve func(jlo, jhi, ilo, ihi int)
		solve = func(jlo, jhi, ilo, ihi int) {
			if jlo > jhi {
				return
			}
			j := (jlo + jhi) / 2
			best, bi := math.Inf(1), -1
			for i := max(ilo, m); i <= min(ihi, j); i++ {
				if c := prev[i-1] + cost(i, j); c < best {
					best, bi = c, i
				}
			}
			if bi < 0 {
				bi = max(ilo, m)
			}
			cur[j], st[j] = best, int32(bi)
			solve(jlo, j-1, ilo, bi)
			solve(j+1, jhi, bi, ihi)
		}
		solve(m, n-1, m, n-1)
		start[m] = st
		prev, cur = cur, prev
	}
	labels := make([]int32, n)
	j := n - 1
	for m := k - 1; m >= 0; m-- {
		i := 0
		if m > 0 {
			i = int(start[m][j])
		}
		for p := i; p <= j; p++ {
			labels[order[p]] = int32(m)
		}
		j = i - 1
	}
	return labels, prev[n-1]
}
