package zoning

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"

	"golang.org/x/sync/errgroup"
)

// ErrTooFewPoints is returned when there are fewer points than clusters.
var ErrTooFewPoints = errors.New("fewer points than clusters")

// KMeansOptions tunes KMeans. The zero value is scikit-learn's classic setup:
// greedy k-means++ seeding, 10 restarts, 300 Lloyd iterations, tolerance 1e-4.
type KMeansOptions struct {
	// Seed makes the result reproducible: the same data and seed give the same labels.
	Seed uint64
	// Restarts is the number of independent seedings (default 10); the run with
	// the lowest inertia wins.
	Restarts int
	// MaxIter bounds Lloyd iterations per restart (default 300).
	MaxIter int
	// Tol stops a restart when the summed squared centre shift falls below
	// Tol times the data's mean per-dimension variance (default 1e-4, as scikit-learn).
	Tol float64
	// Workers is the number of restarts run at once (default GOMAXPROCS).
	// The result does not depend on it.
	Workers int
}

// KMeansResult is the best clustering found.
type KMeansResult struct {
	// Centers holds k centres of dim values each, flat.
	Centers []float64
	// Labels holds each point's cluster in 0..k-1.
	Labels []int32
	// Inertia is the sum of squared distances of points to their centre.
	Inertia float64
	// Iterations is the number of Lloyd iterations of the winning restart.
	Iterations int
	// Restart is the index of the winning restart.
	Restart int
}

func (o KMeansOptions) withDefaults() KMeansOptions {
	if o.Restarts <= 0 {
		o.Restarts = 10
	}
	if o.MaxIter <= 0 {
		o.MaxIter = 300
	}
	if o.Tol <= 0 {
		o.Tol = 1e-4
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	o.Workers = min(o.Workers, o.Restarts)
	return o
}

// KMeans clusters n = len(data)/dim points of dim values each (row-major,
// flat) into k clusters with Lloyd's algorithm after greedy k-means++
// seeding, keeping the restart with the lowest inertia. Each restart draws
// from its own PCG stream derived from Seed and the restart index, so the
// result is the same whatever the number of workers. A cluster that becomes
// empty is moved to the point farthest from its centre.
//
// One-dimensional data, the common case of a single index layer, takes an
// exact fast path: points are sorted once and every Lloyd step costs
// O(k log n) with prefix sums, since 1-D clusters are intervals.
func KMeans(ctx context.Context, data []float64, dim, k int, opts KMeansOptions) (KMeansResult, error) {
	if dim < 1 {
		return KMeansResult{}, fmt.Errorf("kmeans: dimension %d < 1", dim)
	}
	if len(data)%dim != 0 {
		return KMeansResult{}, fmt.Errorf("kmeans: %d values is not a multiple of dimension %d", len(data), dim)
	}
	if k < 1 {
		return KMeansResult{}, fmt.Errorf("kmeans: k = %d < 1", k)
	}
	n := len(data) / dim
	if n < k {
		return KMeansResult{}, fmt.Errorf("kmeans: %d points, %d clusters: %w", n, k, ErrTooFewPoints)
	}
	for i, v := range data {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return KMeansResult{}, fmt.Errorf("kmeans: value %d is not finite", i)
		}
	}
	// Squared distances summed over all points must stay finite, or
	// every comparison of potentials and inertias is meaningless.
	var spread2 float64
	for d := range dim {
		lo, hi := math.Inf(1), math.Inf(-1)
		for i := d; i < len(data); i += dim {
			lo, hi = min(lo, data[i]), max(hi, data[i])
		}
		spread2 += (hi - lo) * (hi - lo)
	}
	if math.IsInf(spread2*float64(n), 0) {
		return KMeansResult{}, fmt.Errorf("kmeans: values too far apart (squared distances overflow)")
	}
	opts = opts.withDefaults()

	var run func(r int) (restart, error)
	var sorted *sorted1D
	if dim == 1 {
		sorted = newSorted1D(data)
		run = func(r int) (restart, error) { return sorted.run(ctx, k, opts, r) }
	} else {
		tol := opts.Tol * meanVariance(data, dim)
		run = func(r int) (restart, error) { return lloydND(ctx, data, dim, k, opts, tol, r) }
	}

	results := make([]restart, opts.Restarts)
	errs := make([]error, opts.Restarts)
	var g errgroup.Group
	g.SetLimit(opts.Workers)
	for r := range opts.Restarts {
		g.Go(func() error {
			results[r], errs[r] = runSafe(run, r)
			return nil // every restart runs; their errors are joined below
		})
	}
	g.Wait()
	if err := errors.Join(errs...); err != nil {
		return KMeansResult{}, err
	}
	best := 0
	for r := 1; r < len(results); r++ {
		if results[r].inertia < results[best].inertia {
			best = r
		}
	}
	w := results[best]
	res := KMeansResult{Centers: w.centers, Inertia: w.inertia, Iterations: w.iter, Restart: best}
	if dim == 1 {
		res.Labels = sorted.labels(data, w.centers)
	} else {
		res.Labels = make([]int32, n)
		res.Inertia = assignND(data, dim, w.centers, res.Labels, nil)
	}
	return res, nil
}

// runSafe runs one restart, turning a panic (a bug) into an error: a
// panic in a worker goroutine could not be recovered by the caller.
func runSafe(run func(int) (restart, error), r int) (res restart, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = restart{}, fmt.Errorf("kmeans: restart %d failed: %v", r, p)
		}
	}()
	return run(r)
}

type restart struct {
	centers []float64
	inertia float64
	iter    int
}

// rng returns the PCG stream of restart r.
func rng(seed uint64, r int) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15*uint64(r+1)))
}

func meanVariance(data []float64, dim int) float64 {
	n := float64(len(data) / dim)
	var total float64
	for d := range dim {
		var s, s2 float64
		for i := d; i < len(data); i += dim {
			s += data[i]
		}
		m := s / n
		for i := d; i < len(data); i += dim {
			s2 += (data[i] - m) * (data[i] - m)
		}
		total += s2 / n
	}
	return total / float64(dim)
}

// seedPlusPlus picks k initial centres by greedy k-means++ (Arthur and
// Vassilvitskii 2007, with 2+ln k local trials as in scikit-learn).
// dist2 is a scratch slice of n values.
func seedPlusPlus(data []float64, dim, k int, r *rand.Rand, dist2 []float64) []float64 {
	n := len(data) / dim
	centers := make([]float64, 0, k*dim)
	first := r.IntN(n)
	centers = append(centers, data[first*dim:(first+1)*dim]...)
	var pot float64
	for i := range n {
		dist2[i] = sqDist(data[i*dim:(i+1)*dim], centers[:dim])
		pot += dist2[i]
	}
	trials := 2 + int(math.Log(float64(k)))
	cand := make([]float64, n)
	bestCand := make([]float64, n)
	for len(centers) < k*dim {
		bestPot, bestIdx := math.Inf(1), -1
		for range trials {
			idx := sampleD2(dist2, pot, r)
			c := data[idx*dim : (idx+1)*dim]
			var p float64
			for i := range n {
				d := min(dist2[i], sqDist(data[i*dim:(i+1)*dim], c))
				cand[i] = d
				p += d
			}
			if bestIdx < 0 || p < bestPot {
				bestPot, bestIdx = p, idx
				cand, bestCand = bestCand, cand
			}
		}
		centers = append(centers, data[bestIdx*dim:(bestIdx+1)*dim]...)
		copy(dist2, bestCand)
		pot = bestPot
	}
	return centers
}

// sampleD2 draws index i with probability dist2[i]/pot (uniformly when pot is 0).
func sampleD2(dist2 []float64, pot float64, r *rand.Rand) int {
	if pot <= 0 {
		return r.IntN(len(dist2))
	}
	target := r.Float64() * pot
	var acc float64
	last := 0
	for i, d := range dist2 {
		if d == 0 {
			continue
		}
		acc += d
		last = i
		if acc > target {
			return i
		}
	}
	return last
}

func sqDist(a, b []float64) float64 {
	var s float64
	for i := range a {
		d := a[i] - b[i]
		s += d * d
	}
	return s
}

// assignND labels every point with its nearest centre and returns the
// inertia; when far is not nil it receives each point's squared distance.
func assignND(data []float64, dim int, centers []float64, labels []int32, far []float64) float64 {
	k := len(centers) / dim
	var inertia float64
	for i := range len(data) / dim {
		p := data[i*dim : (i+1)*dim]
		best, bd := 0, math.Inf(1)
		for c := range k {
			if d := sqDist(p, centers[c*dim:(c+1)*dim]); d < bd {
				best, bd = c, d
			}
		}
		labels[i] = int32(best)
		if far != nil {
			far[i] = bd
		}
		inertia += bd
	}
	return inertia
}

// lloydND is one restart of Lloyd's algorithm with Hamerly's bounds
// (Hamerly 2010, "Making k-means even faster"): each point keeps an upper
// bound on the distance to its centre and a lower bound on the distance to
// every other centre, so most points skip the k distance computations once
// centres settle. The assignments are exactly Lloyd's.
func lloydND(ctx context.Context, data []float64, dim, k int, opts KMeansOptions, tol float64, r int) (restart, error) {
	n := len(data) / dim
	dist2 := make([]float64, n)
	centers := seedPlusPlus(data, dim, k, rng(opts.Seed, r), dist2)
	labels := make([]int32, n)
	upper := make([]float64, n)
	lower := make([]float64, n)
	half := make([]float64, k)
	moved := make([]float64, k)
	sums := make([]float64, k*dim)
	counts := make([]int, k)
	full := func(i int) {
		p := data[i*dim : (i+1)*dim]
		b1, b2, best := math.Inf(1), math.Inf(1), 0
		for c := range k {
			d := sqDist(p, centers[c*dim:(c+1)*dim])
			if d < b1 {
				b1, b2, best = d, b1, c
			} else if d < b2 {
				b2 = d
			}
		}
		labels[i], upper[i], lower[i] = int32(best), math.Sqrt(b1), math.Sqrt(b2)
	}
	for i := range n {
		full(i)
	}
	iter := 0
	for iter < opts.MaxIter {
		if err := ctx.Err(); err != nil {
			return restart{}, err
		}
		iter++
		if iter > 1 {
			for j := range k {
				half[j] = math.Inf(1)
				for j2 := range k {
					if j2 != j {
						half[j] = min(half[j], math.Sqrt(sqDist(centers[j*dim:(j+1)*dim], centers[j2*dim:(j2+1)*dim]))/2)
					}
				}
			}
			for i := range n {
				a := int(labels[i])
				m := max(half[a], lower[i])
				if upper[i] <= m {
					continue
				}
				upper[i] = math.Sqrt(sqDist(data[i*dim:(i+1)*dim], centers[a*dim:(a+1)*dim]))
				if upper[i] <= m {
					continue
				}
				full(i)
			}
		}
		clear(sums)
		clear(counts)
		for i, l := range labels {
			counts[l]++
			s := sums[int(l)*dim : (int(l)+1)*dim]
			for d := range dim {
				s[d] += data[i*dim+d]
			}
		}
		repaired := slices.Contains(counts, 0)
		if repaired {
			for i, u := range upper {
				dist2[i] = u * u
			}
			repairEmpty(data, dim, counts, sums, dist2, labels)
		}
		var shift float64
		for c := range k {
			moved[c] = 0
			if counts[c] == 0 {
				continue // only when there are fewer distinct points than clusters
			}
			var m2 float64
			for d := range dim {
				v := sums[c*dim+d] / float64(counts[c])
				m2 += (v - centers[c*dim+d]) * (v - centers[c*dim+d])
				centers[c*dim+d] = v
			}
			moved[c] = math.Sqrt(m2)
			shift += m2
		}
		if shift <= tol {
			break
		}
		// Move the bounds with the centres (or reset them after a repair).
		top, second, topIdx := 0.0, 0.0, -1
		for c, m := range moved {
			if m > top {
				top, second, topIdx = m, top, c
			} else if m > second {
				second = m
			}
		}
		for i := range n {
			if repaired {
				upper[i], lower[i] = math.Inf(1), 0
				continue
			}
			a := int(labels[i])
			upper[i] += moved[a]
			if a == topIdx {
				lower[i] -= second
			} else {
				lower[i] -= top
			}
		}
	}
	inertia := assignND(data, dim, centers, labels, nil)
	return restart{centers: centers, inertia: inertia, iter: iter}, nil
}

// repairEmpty moves every empty cluster onto the point farthest from its
// current centre (taking it out of its old cluster), as scikit-learn does.
func repairEmpty(data []float64, dim int, counts []int, sums, dist2 []float64, labels []int32) {
	for c := range counts {
		if counts[c] > 0 {
			continue
		}
		far, fd := -1, -1.0
		for i, d := range dist2 {
			if d > fd && counts[labels[i]] > 1 {
				far, fd = i, d
			}
		}
		if far < 0 {
			return // fewer distinct points than clusters: nothing to move
		}
		old := int(labels[far])
		p := data[far*dim : (far+1)*dim]
		for d := range dim {
			sums[old*dim+d] -= p[d]
			sums[c*dim+d] = p[d]
		}
		counts[old]--
		counts[c] = 1
		labels[far] = int32(c)
		dist2[far] = 0
	}
}

// sorted1D holds 1-D points sorted with prefix sums, shared read-only by restarts.
type sorted1D struct {
	x   []float64 // sorted values, centred on their mean
	ps  []float64 // ps[i] = x[0] + … + x[i-1]
	ps2 []float64 // prefix sums of squares
	mu  float64   // the mean subtracted from x
	tol float64
}

func newSorted1D(data []float64) *sorted1D {
	n := len(data)
	x := make([]float64, n)
	mu := sortedCopy(x, data) / float64(n)
	s := &sorted1D{x: x, ps: make([]float64, n+1), ps2: make([]float64, n+1), mu: mu}
	for i, v := range x {
		v -= mu
		x[i] = v
		s.ps[i+1] = s.ps[i] + v
		s.ps2[i+1] = s.ps2[i] + v*v
	}
	s.tol = s.ps2[n] / float64(n)
	return s
}

// run is one restart on the sorted points. Centres are kept sorted; cluster
// j is the interval of points between the midpoints to its neighbours.
func (s *sorted1D) run(ctx context.Context, k int, opts KMeansOptions, r int) (restart, error) {
	bounds := make([]int, k+1) // cluster j = x[bounds[j]:bounds[j+1]]
	centers := s.seed(k, rng(opts.Seed, r), bounds)
	tol := opts.Tol * s.tol
	iter := 0
	for iter < opts.MaxIter {
		if err := ctx.Err(); err != nil {
			return restart{}, err
		}
		iter++
		s.bounds(centers, bounds)
		s.repairEmpty(centers, bounds)
		var shift float64
		for j := range k {
			lo, hi := bounds[j], bounds[j+1]
			if hi == lo {
				continue // only when there are fewer distinct points than clusters
			}
			v := (s.ps[hi] - s.ps[lo]) / float64(hi-lo)
			shift += (v - centers[j]) * (v - centers[j])
			centers[j] = v
		}
		slices.Sort(centers)
		if shift <= tol {
			break
		}
	}
	inertia := s.potential(centers, bounds)
	out := make([]float64, k)
	for j, c := range centers {
		out[j] = c + s.mu
	}
	return restart{centers: out, inertia: inertia, iter: iter}, nil
}

// cost is the sum of squared distances of x[lo:hi] to c, from prefix sums.
func (s *sorted1D) cost(lo, hi int, c float64) float64 {
	v := s.ps2[hi] - s.ps2[lo] - 2*c*(s.ps[hi]-s.ps[lo]) + c*c*float64(hi-lo)
	return max(v, 0)
}

// potential is the inertia of sorted centres; it leaves their intervals in bounds.
func (s *sorted1D) potential(centers []float64, bounds []int) float64 {
	s.bounds(centers, bounds[:len(centers)+1])
	var p float64
	for j, c := range centers {
		p += s.cost(bounds[j], bounds[j+1], c)
	}
	return p
}

// seed is greedy k-means++ (the same rule as seedPlusPlus) on sorted data:
// the D² distribution is sampled by choosing a centre's interval by its
// cost, then the point inside it by binary search on the cumulative cost,
// so a restart's seeding costs O(k² log n) instead of O(k n).
func (s *sorted1D) seed(k int, r *rand.Rand, bounds []int) []float64 {
	n := len(s.x)
	centers := make([]float64, 1, k)
	centers[0] = s.x[r.IntN(n)]
	pot := s.potential(centers, bounds)
	trials := 2 + int(math.Log(float64(k)))
	cand := make([]float64, 0, k)
	for len(centers) < k {
		bestPot, best := math.Inf(1), 0.0
		// Intervals and costs of the current centres, for sampling.
		m := len(centers)
		costs := make([]float64, m)
		s.bounds(centers, bounds[:m+1])
		ivl := slices.Clone(bounds[:m+1])
		for j, c := range centers {
			costs[j] = s.cost(ivl[j], ivl[j+1], c)
		}
		for range trials {
			x := s.sampleD2(centers, ivl, costs, pot, r)
			cand = append(cand[:0], centers...)
			cand = append(cand, x)
			slices.Sort(cand)
			if p := s.potential(cand, bounds); p < bestPot {
				bestPot, best = p, x
			}
		}
		centers = append(centers, best)
		slices.Sort(centers)
		pot = bestPot
	}
	return centers
}

// sampleD2 draws a point with probability proportional to its squared
// distance to the nearest centre (uniformly when every distance is 0).
func (s *sorted1D) sampleD2(centers []float64, ivl []int, costs []float64, pot float64, r *rand.Rand) float64 {
	if pot <= 0 {
		return s.x[r.IntN(len(s.x))]
	}
	target := r.Float64() * pot
	j := 0
	for ; j < len(costs)-1 && target >= costs[j]; j++ {
		target -= costs[j]
	}
	lo, hi, c := ivl[j], ivl[j+1], centers[j]
	if hi == lo {
		return s.x[r.IntN(len(s.x))]
	}
	i := lo + sort.Search(hi-lo, func(i int) bool { return s.cost(lo, lo+i+1, c) > target })
	return s.x[min(i, hi-1)]
}

// bounds splits the sorted points between sorted centres: a point goes to
// the nearer centre, the lower one on a tie.
func (s *sorted1D) bounds(centers []float64, bounds []int) {
	k := len(centers)
	bounds[0], bounds[k] = 0, len(s.x)
	for j := 1; j < k; j++ {
		mid := (centers[j-1] + centers[j]) / 2
		bounds[j] = sort.Search(len(s.x), func(i int) bool { return s.x[i] > mid })
		bounds[j] = max(bounds[j], bounds[j-1])
	}
}

// repairEmpty gives every empty interval a point: the point farthest from
// its centre among intervals with more than one point (always an interval
// end in 1-D). Centres are re-sorted and bounds recomputed afterwards.
func (s *sorted1D) repairEmpty(centers []float64, bounds []int) {
	k := len(centers)
	for range k {
		empty := -1
		for j := range k {
			if bounds[j+1] == bounds[j] {
				empty = j
				break
			}
		}
		if empty < 0 {
			return
		}
		far, fd := math.NaN(), -1.0
		for j := range k {
			lo, hi := bounds[j], bounds[j+1]
			if hi-lo < 2 {
				continue
			}
			for _, v := range [2]float64{s.x[lo], s.x[hi-1]} {
				if d := (v - centers[j]) * (v - centers[j]); d > fd {
					far, fd = v, d
				}
			}
		}
		if fd <= 0 {
			return // fewer distinct points than clusters
		}
		centers[empty] = far
		slices.Sort(centers)
		s.bounds(centers, bounds)
	}
}

// labels assigns each original (unsorted) value to its nearest sorted centre.
func (s *sorted1D) labels(data, centers []float64) []int32 {
	k := len(centers)
	mids := make([]float64, k-1)
	for j := range mids {
		mids[j] = (centers[j] + centers[j+1]) / 2
	}
	labels := make([]int32, len(data))
	for i, v := range data {
		// The first midpoint at or above v (sort.Search, written out).
		lo, hi := 0, len(mids)
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if v <= mids[m] {
				hi = m
			} else {
				lo = m + 1
			}
		}
		labels[i] = int32(lo)
	}
	return labels
}
