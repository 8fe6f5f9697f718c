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

// statsOf summarises v, which holds only finite values; it reorders v.
func statsOf(v []float64) Stats {
	n := len(v)
	if n == 0 {
		nan := math.NaN()
		return Stats{Mean: nan, Median: nan, Std: nan, Min: nan, Max: nan, P25: nan, P75: nan}
	}
	// Pairwise summation keeps the mean within an ulp or two of numpy's.
	mean := pairwiseSum(v) / float64(n)
	var ss float64
	lo, hi := v[0], v[0]
	for _, x := range v {
		d := x - mean
		ss += d * d
		lo, hi = min(lo, x), max(hi, x)
	}
	// Percentiles by selection, in increasing order: each selection leaves
	// the larger values to its right, so the next one searches only those.
	p25, k := percentile(v, 0, 25)
	med, k := percentile(v, k, 50)
	p75, _ := percentile(v, k, 75)
	return Stats{Mean: mean, Median: med, Std: math.Sqrt(ss / float64(n)), Min: lo, Max: hi, P25: p25, P75: p75, Num: n}
}

// percentile is numpy's "linear" method (p in 0..100) on non-empty v, whose
// elements before from are all ≤ those after it. It returns the value and the
// rank it selected; v is partially reordered.
func percentile(v []float64, from int, p float64) (float64, int) {
	pos := p / 100 * float64(len(v)-1)
	k := int(math.Floor(pos))
	k = max(k, from)
	SelectKth(v[from:], k-from)
	a := v[k]
	frac := pos - float64(k)
	if frac == 0 || k+1 >= len(v) {
		return a, k
	}
	b := slices.Min(v[k+1:])
	// numpy's _lerp: exact at both ends.
	if frac >= 0.5 {
		return b - (b-a)*(1-frac), k
	}
	return a + (b-a)*frac, k
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
	if len(v) <= 128 {
		var s float64
		for _, x := range v {
			s += x
		}
		return s
	}
	h := len(v) / 2
	return pairwiseSum(v[:h]) + pairwiseSum(v[h:])
}

// MeanVariation is the percent change of mean versus the previous image's
// mean prev: 100·(mean − prev)/|prev|. It is NaN when prev is 0.
func MeanVariation(mean, prev float64) float64 {
	if prev == 0 {
		return math.NaN()
	}
	return 100 * (mean - prev) / math.Abs(prev)
}
