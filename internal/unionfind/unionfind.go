// Package unionfind is a disjoint-set forest over dense int32 ids: the one
// copy behind the region labelling, the sieve and the zone refinement.
package unionfind

// Forest holds each id's parent; a root is its own parent. Callers may
// link roots directly (f[b] = a) to choose which root survives a union,
// and append ids (f = append(f, int32(len(f)))).
type Forest []int32

// New returns n singleton sets.
func New(n int) Forest {
	f := make(Forest, n)
	for i := range f {
		f[i] = int32(i)
	}
	return f
}

// Find returns the root of x's set, halving the path to it on the way.
func (f Forest) Find(x int32) int32 {
	for f[x] != x {
		f[x] = f[f[x]]
		x = f[x]
	}
	return x
}
