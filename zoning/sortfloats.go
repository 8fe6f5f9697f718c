package zoning

import (
	"math"
	"runtime"
	"slices"

	"github.com/cropkit/cropkit/internal/panicgroup"
)

// sortFloats sorts x in increasing order: a least-significant-digit radix
// sort on the values' bits (16-bit digits, passes whose digit is the same
// for every value skipped), several times faster than a comparison sort on
// a field's million pixels, with the same result (the sorted values; a
// -0 before a +0 where a comparison sort keeps either order, which no sum
// can tell). Slices holding a NaN, and short ones, go to slices.Sort.
// Long slices sort as two halves on two cores, then merge: the keys are
// totally ordered, so the result is the same.
func sortFloats(x []float64) {
	sortedCopy(x, x)
}

// sortedCopy sets dst to the values of src sorted (sortFloats; src and
// dst may be the same slice, else of the same length) and returns their
// sum in sorted order.
func sortedCopy(dst, src []float64) float64 {
	const minRadix = 4096
	const minParallel = 1 << 16
	x := dst
	inOrder := func() float64 {
		var s float64
		for _, v := range x {
			s += v
		}
		return s
	}
	if len(x) < minRadix {
		copy(x, src)
		slices.Sort(x)
		return inOrder()
	}
	keys := make([]uint64, len(x))
	for i, v := range src {
		if v != v {
			copy(x, src)
			slices.Sort(x)
			return inOrder()
		}
		b := math.Float64bits(v)
		// Order-preserving: negative values reversed, positive ones above them.
		if b>>63 != 0 {
			b = ^b
		} else {
			b |= 1 << 63
		}
		keys[i] = b
	}
	tmp := make([]uint64, len(x))
	if len(x) < minParallel || runtime.GOMAXPROCS(0) < 2 {
		var sum float64
		for i, b := range radixSort(keys, tmp) {
			x[i] = fromKey(b)
			sum += x[i]
		}
		return sum
	}
	h := len(x) / 2
	var lo, hi []uint64
	var g panicgroup.Group
	g.Go(func() { lo = radixSort(keys[:h], tmp[:h]) })
	hi = radixSort(keys[h:], tmp[h:])
	g.Wait()
	i, j := 0, 0
	var sum float64
	for k := range x {
		if j == len(hi) || (i < len(lo) && lo[i] <= hi[j]) {
			x[k] = fromKey(lo[i])
			i++
		} else {
			x[k] = fromKey(hi[j])
			j++
		}
		sum += x[k]
	}
	return sum
}

// radixSort sorts keys, with tmp as scratch of the same length, and
// returns the one of the two holding the result.
func radixSort(keys, tmp []uint64) []uint64 {
	var count [1 << 16]int
	for shift := uint(0); shift < 64; shift += 16 {
		clear(count[:])
		for _, k := range keys {
			count[k>>shift&0xffff]++
		}
		if count[keys[0]>>shift&0xffff] == len(keys) {
			continue // every key has this digit
		}
		sum := 0
		for d, c := range count {
			count[d] = sum
			sum += c
		}
		for _, k := range keys {
			d := k >> shift & 0xffff
			tmp[count[d]] = k
			count[d]++
		}
		keys, tmp = tmp, keys
	}
	return keys
}

// fromKey is the value of a sort key.
func fromKey(b uint64) float64 {
	if b>>63 != 0 {
		b &^= 1 << 63
	} else {
		b = ^b
	}
	return math.Float64frombits(b)
}
