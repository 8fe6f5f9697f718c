package imagery

import (
	"math"
	"slices"
)

// Stats summarises an index over a field's clear pixels (§2.5).
type Stats struct {
	Mean, Median, Std, Min, Max, P25, P75 float64
	// Num is the number of clear pixels the statistics use.
	Num int
	// FieldPixels is the number of pixels inside the field, clear or not.
	FieldPixels int
	// CloudCover is the percentage of FieldPixels that are masked (scene mask
	// or no data in a band the index uses).
	CloudCover float64
}

// ComputeStats summarises the finite values of values (NaN and ±Inf are
// skipped); Num is their count and every other field is NaN when there is none.
// Std is the population standard deviation; percentiles interpolate linearly
// between closest ranks, as numpy.percentile does by default.
// FieldPixels and CloudCover are left for the caller.
func ComputeStats(values []float64) Stats {
	v := make([]float64, 0, len(values))
	for _, x := range values {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			v = append(v, x)
		}
	}
	return statsOf(v)
}

// statsOf summarises v, which holds only finite values; it overwrites v.
func statsOf(v []float64) Stats {
	n := len(v)
	if n == 0 {
		nan := math.NaN()
		return Stats{Mean: nan, Median: nan, Std: nan, Min: nan, Max: nan, P25: nan, P75: nan}
	}
	// Pairwise summation keeps the mean within an ulp or two of numpy's.
	sum, lo, hi := pairwiseSumMinMax(v)
	mean := sum / float64(n)
	ranks, frac := quartileRanks(n)
	// One pass for the sum of squares and orderStats' histogram: the sum
	// is a chain of dependent additions (kept in order, as numpy's), which
	// leaves the histogram's counting free.
	var ss float64
	var count [orderBuckets + 1]int32
	scale, bucketed := bucketScale(n, lo, hi)
	if bucketed {
		for _, x := range v {
			d := x - mean
			ss += d * d
			count[min(int((x-lo)*scale), orderBuckets)]++
		}
	} else {
		for _, x := range v {
			d := x - mean
			ss += d * d
		}
	}
	var at [6]float64
	if bucketed {
		selectCounted(v, lo, scale, &count, ranks[:], at[:])
	} else {
		selectRanks(v, ranks[:], at[:])
	}
	q := quartiles(at, frac)
	return Stats{Mean: mean, Median: q[1], Std: math.Sqrt(ss / float64(n)), Min: lo, Max: hi, P25: q[0], P75: q[2], Num: n}
}

// quartileRanks gives the order statistics numpy's "linear" 25th, 50th and
// 75th percentiles of n values need — floor(pos) and the next rank, pos =
// p/100·(n−1), in pairs — and each percentile's fraction between them.
func quartileRanks(n int) (ranks [6]int, frac [3]float64) {
	for i, p := range [3]float64{25, 50, 75} {
		pos := p / 100 * float64(n-1)
		k := int(math.Floor(pos))
		ranks[2*i], ranks[2*i+1], frac[i] = k, min(k+1, n-1), pos-float64(k)
	}
	return ranks, frac
}

// quartiles interpolates the three percentiles from the order statistics
// at the ranks quartileRanks gave, as numpy's _lerp does (exact at both
// ends).
func quartiles(at [6]float64, frac [3]float64) [3]float64 {
	var q [3]float64
	for i := range q {
		a, b, f := at[2*i], at[2*i+1], frac[i]
		switch {
		case f == 0:
			q[i] = a
		case f >= 0.5:
			q[i] = b - (b-a)*(1-f)
		default:
			q[i] = a + (b-a)*f
		}
	}
	return q
}

// orderBuckets is the number of value buckets orderStats counts into: a
// field's values spread over a few dozen of them each.
const orderBuckets = 1024

// orderStats sets out[i] to the ranks[i]-th smallest (0-based) of v, whose
// values are finite, lie in [lo, hi] and may be overwritten; ranks ascend.
// Exact, in about two cheap passes: a histogram of equal-width value
// buckets (bucket order is value order, as rounding is monotonic) tells
// which buckets hold the ranks; only their values are kept and selected
// among. Quickselect on all of v, which this replaced, took five to six
// passes of unpredictable comparisons for the three quartiles of a field.
func orderStats(v []float64, lo, hi float64, ranks []int, out []float64) {
	scale, bucketed := bucketScale(len(v), lo, hi)
	if !bucketed {
		selectRanks(v, ranks, out)
		return
	}
	var count [orderBuckets + 1]int32
	for _, x := range v {
		count[min(int((x-lo)*scale), orderBuckets)]++
	}
	selectCounted(v, lo, scale, &count, ranks, out)
}

// bucketScale is the factor taking a value x of [lo, hi] to its bucket
// int((x−lo)·scale) (capped at orderBuckets), and false when n values are
// too few to bucket or the range too narrow or too wide for buckets.
func bucketScale(n int, lo, hi float64) (float64, bool) {
	scale := orderBuckets / (hi - lo)
	return scale, n >= 256 && scale > 0 && !math.IsInf(scale, 0)
}

// selectCounted is orderStats given count, the histogram of v's buckets
// (see bucketScale).
func selectCounted(v []float64, lo, scale float64, count *[orderBuckets + 1]int32, ranks []int, out []float64) {
	n := len(v)
	// The bucket of each rank, and the rank among the kept values.
	var keep [orderBuckets + 1]bool
	var buf [8]int
	local := buf[:0]
	if len(ranks) > len(buf) {
		local = make([]int, 0, len(ranks))
	}
	local = local[:len(ranks)]
	below, skipped, kept, r := 0, 0, 0, 0
	for b, c := range count {
		for r < len(ranks) && ranks[r] < below+int(c) {
			if !keep[b] {
				keep[b] = true
				kept += int(c)
			}
			local[r] = ranks[r] - skipped
			r++
		}
		below += int(c)
		if !keep[b] {
			skipped += int(c)
		}
	}
	if kept <= n/2 {
		w := 0
		for _, x := range v {
			if keep[min(int((x-lo)*scale), orderBuckets)] {
				v[w] = x
				w++
			}
		}
		v, ranks = v[:w], local
	}
	selectRanks(v, ranks, out)
}

// selectRanks sets out[i] to the ranks[i]-th smallest of v; ranks ascend.
func selectRanks(v []float64, ranks []int, out []float64) {
	// Ascending ranks: each selection leaves the larger values to its
	// right, so the next one searches only those.
	from := 0
	for i, k := range ranks {
		SelectKth(v[from:], k-from)
		from = k
		out[i] = v[k]
	}
}

// SelectKth reorders v so that v[k] is the k-th smallest (0-based),
// everything before it ≤ v[k] and everything after ≥ v[k] (quickselect,
// median of three, falling back to a sort when partitions keep coming out
// lopsided): linear on average where a sort is not.
func SelectKth(v []float64, k int) {
	lo, hi := 0, len(v)-1
	budget := 2 * bitsLen(len(v))
	for hi > lo {
		if hi-lo < 16 || budget == 0 {
			slices.Sort(v[lo : hi+1])
			return
		}
		budget--
		mid := lo + (hi-lo)/2
		if v[mid] < v[lo] {
			v[mid], v[lo] = v[lo], v[mid]
		}
		if v[hi] < v[lo] {
			v[hi], v[lo] = v[lo], v[hi]
		}
		if v[hi] < v[mid] {
			v[hi], v[mid] = v[mid], v[hi]
		}
		pivot := v[mid]
		i, j := lo, hi
		for i <= j {
			for v[i] < pivot {
				i++
			}
			for v[j] > pivot {
				j--
			}
			if i <= j {
				v[i], v[j] = v[j], v[i]
				i++
				j--
			}
		}
		// Now v[lo..j] ≤ pivot ≤ v[i..hi] and everything between equals pivot.
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return
		}
	}
}

func bitsLen(n int) int {
	b := 0
	for ; n > 0; n >>= 1 {
		b++
	}
	return b
}

func pairwiseSum(v []float64) float64 {
	if len(v) <= pairwiseLeaf {
		var s float64
		for _, x := range v {
			s += x
		}
		return s
	}
	h := len(v) / 2
	return pairwiseSum(v[:h]) + pairwiseSum(v[h:])
}

// pairwiseLeaf is the length up to which pairwiseSum adds in one loop.
const pairwiseLeaf = 128

// pairwiseSumMinMax is pairwiseSum(v) (the same additions in the same
// order, so the same float64) with v's smallest and largest value as the
// builtin min and max give them (−0 below +0); v is not empty and finite.
func pairwiseSumMinMax(v []float64) (sum, lo, hi float64) {
	lo, hi = v[0], v[0]
	sum = pairwiseSumRange(v, &lo, &hi)
	// The comparisons take the first of equal values: the zeros'
	// signs are what min and max would make them.
	if lo == 0 && !math.Signbit(lo) && slices.ContainsFunc(v, isNegativeZero) {
		lo = math.Copysign(0, -1)
	}
	if hi == 0 && math.Signbit(hi) && slices.ContainsFunc(v, isPositiveZero) {
		hi = 0
	}
	return sum, lo, hi
}

func isNegativeZero(x float64) bool { return x == 0 && math.Signbit(x) }
func isPositiveZero(x float64) bool { return x == 0 && !math.Signbit(x) }

// pairwiseSumRange is pairwiseSum(v), lowering *lo and raising *hi to
// v's extremes (by comparison: the first of equal values stays). The
// leaves of the summation tree are independent chains of additions: it
// runs those under one node of up to 4·pairwiseLeaf values side by side,
// where pairwiseSum waits for each addition in turn.
func pairwiseSumRange(v []float64, lo, hi *float64) float64 {
	if len(v) > 4*pairwiseLeaf {
		h := len(v) / 2
		return pairwiseSumRange(v[:h], lo, hi) + pairwiseSumRange(v[h:], lo, hi)
	}
	// The leaves under this node, left to right, and the shape of the
	// tree above them: split[k] says child k (left, right) is two leaves.
	var leaves [4][]float64
	var split [2]bool
	nl := 0
	if len(v) <= pairwiseLeaf {
		leaves[0] = v
		nl = 1
	} else {
		h := len(v) / 2
		for k, c := range [2][]float64{v[:h], v[h:]} {
			if len(c) > pairwiseLeaf {
				split[k] = true
				ch := len(c) / 2
				leaves[nl], leaves[nl+1] = c[:ch], c[ch:]
				nl += 2
			} else {
				leaves[nl] = c
				nl++
			}
		}
	}
	var sums [4]float64
	l, h := *lo, *hi
	m := 0
	if nl == 4 {
		a, b, c, d := leaves[0], leaves[1], leaves[2], leaves[3]
		m = min(len(a), len(b), len(c), len(d))
		a, b, c, d = a[:m], b[:m], c[:m], d[:m]
		var sa, sb, sc, sd float64
		for i := range m {
			xa, xb, xc, xd := a[i], b[i], c[i], d[i]
			sa += xa
			sb += xb
			sc += xc
			sd += xd
			if xa < l {
				l = xa
			}
			if xa > h {
				h = xa
			}
			if xb < l {
				l = xb
			}
			if xb > h {
				h = xb
			}
			if xc < l {
				l = xc
			}
			if xc > h {
				h = xc
			}
			if xd < l {
				l = xd
			}
			if xd > h {
				h = xd
			}
		}
		sums = [4]float64{sa, sb, sc, sd}
	}
	for k, leaf := range leaves[:nl] {
		s := sums[k]
		for _, x := range leaf[m:] {
			s += x
			if x < l {
				l = x
			}
			if x > h {
				h = x
			}
		}
		sums[k] = s
	}
	*lo, *hi = l, h
	if nl == 1 {
		return sums[0]
	}
	var child [2]float64
	k := 0
	for c := range child {
		if split[c] {
			child[c] = sums[k] + sums[k+1]
			k += 2
		} else {
			child[c] = sums[k]
			k++
		}
	}
	return child[0] + child[1]
}

// MeanVariation is the percent change of mean versus the previous image's
// mean prev: 100·(mean − prev)/|prev|. It is NaN when prev is 0.
func MeanVariation(mean, prev float64) float64 {
	if prev == 0 {
		return math.NaN()
	}
	return 100 * (mean - prev) / math.Abs(prev)
}
