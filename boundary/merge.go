package boundary

import (
	"cmp"
	"container/heap"
	"slices"
)

// link is one side of the border between two regions: the neighbour and
// the sum and count of the pixel-edge strengths along their common border.
type link struct {
	n   int32
	sum float64
	cnt int32
}

func (l link) mean() float64 { return l.sum / float64(l.cnt) }

// regions is a region adjacency graph over the area's pixels; a region is
// named by its root pixel.
type regions struct {
	parent  []int32 // union–find; −1 outside the area
	size    []int32 // per root; 0 once merged away
	adj     [][]link
	version []uint32
	edges   []edge
	// Per root: sum and count of the pixel-edge strengths inside the region.
	inSum []float64
	inCnt []int32
	// texture weighs the regions' inner edge strength in the merge cost.
	texture float64
}

func newRegions(a *profiles, texture float64) *regions {
	n := len(a.in)
	g := &regions{parent: make([]int32, n), size: make([]int32, n), adj: make([][]link, n),
		version: make([]uint32, n), edges: a.edges(), inSum: make([]float64, n), inCnt: make([]int32, n), texture: texture}
	for i, in := range a.in {
		g.parent[i] = -1
		if in {
			g.parent[i], g.size[i] = int32(i), 1
		}
	}
	for _, e := range g.edges {
		g.adj[e.a] = append(g.adj[e.a], link{n: e.b, sum: float64(e.w), cnt: 1})
		g.adj[e.b] = append(g.adj[e.b], link{n: e.a, sum: float64(e.w), cnt: 1})
	}
	return g
}

func (g *regions) find(i int32) int32 {
	for g.parent[i] != i {
		g.parent[i] = g.parent[g.parent[i]]
		i = g.parent[i]
	}
	return i
}

func indexOf(ls []link, n int32) int {
	return slices.IndexFunc(ls, func(l link) bool { return l.n == n })
}

// merge joins roots a and b and returns the surviving root; borders with
// common neighbours add up.
func (g *regions) merge(a, b int32) int32 {
	if g.size[a] < g.size[b] {
		a, b = b, a
	}
	g.parent[b] = a
	g.size[a] += g.size[b]
	g.size[b] = 0
	g.inSum[a] += g.inSum[b]
	g.inCnt[a] += g.inCnt[b]
	if k := indexOf(g.adj[a], b); k >= 0 {
		g.inSum[a] += g.adj[a][k].sum
		g.inCnt[a] += g.adj[a][k].cnt
	}
	for _, lb := range g.adj[b] {
		if lb.n == a {
			continue
		}
		if k := indexOf(g.adj[a], lb.n); k >= 0 {
			g.adj[a][k].sum += lb.sum
			g.adj[a][k].cnt += lb.cnt
		} else {
			g.adj[a] = append(g.adj[a], link{n: lb.n, sum: lb.sum, cnt: lb.cnt})
		}
		nl := g.adj[lb.n]
		ib := indexOf(nl, b)
		if ia := indexOf(nl, a); ia >= 0 {
			nl[ia].sum += nl[ib].sum
			nl[ia].cnt += nl[ib].cnt
			nl = slices.Delete(nl, ib, ib+1)
		} else {
			nl[ib].n = a
		}
		g.adj[lb.n] = nl
	}
	if k := indexOf(g.adj[a], b); k >= 0 {
		g.adj[a] = slices.Delete(g.adj[a], k, k+1)
	}
	g.adj[b] = nil
	g.version[a]++
	g.version[b]++
	return a
}

// candidate is a possible merge in the queue; stale once either version moved.
type candidate struct {
	cost   float64
	a, b   int32
	va, vb uint32
}

type queue []candidate

func (q queue) Len() int           { return len(q) }
func (q queue) Less(i, j int) bool { return q[i].cost < q[j].cost }
func (q queue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)        { *q = append(*q, x.(candidate)) }
func (q *queue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// cost of merging root a with the neighbour of link l: the mean strength
// of their border, less texture times the smaller of the two regions'
// mean inner edge strength, so a border must stand out from the texture
// of both sides to stop the merge.
func (g *regions) cost(a int32, l link) float64 {
	c := l.mean()
	if g.texture == 0 {
		return c
	}
	inner := func(r int32) float64 {
		if g.inCnt[r] == 0 {
			return 0
		}
		return g.inSum[r] / float64(g.inCnt[r])
	}
	return c - g.texture*min(inner(a), inner(l.n))
}

// mergeBelow merges adjacent regions, weakest border first, while the
// mean edge strength along their border is at most threshold. Judging a
// border by its own strength, not by the regions' mean values, keeps
// smooth in-field trends (soil, slope) from splitting a field while a
// sharp change between crops stops the merging.
func (g *regions) mergeBelow(threshold float64) {
	q := make(queue, 0, len(g.edges))
	for _, e := range g.edges {
		q = append(q, candidate{cost: float64(e.w), a: e.a, b: e.b})
	}
	heap.Init(&q)
	for q.Len() > 0 {
		c := heap.Pop(&q).(candidate)
		if c.cost > threshold {
			break
		}
		if g.size[c.a] == 0 || g.size[c.b] == 0 || g.version[c.a] != c.va || g.version[c.b] != c.vb {
			continue
		}
		r := g.merge(c.a, c.b)
		for _, l := range g.adj[r] {
			heap.Push(&q, candidate{cost: g.cost(r, l), a: r, b: l.n, va: g.version[r], vb: g.version[l.n]})
		}
	}
}

// absorbSmall merges every region smaller than minPixels, smallest first,
// into the neighbour across its weakest border.
func (g *regions) absorbSmall(minPixels int32) {
	for {
		var small []int32
		for i, s := range g.size {
			if s > 0 && s < minPixels && len(g.adj[i]) > 0 {
				small = append(small, int32(i))
			}
		}
		if len(small) == 0 {
			return
		}
		slices.SortStableFunc(small, func(a, b int32) int { return cmp.Compare(g.size[a], g.size[b]) })
		for _, r := range small {
			if g.size[r] == 0 || g.size[r] >= minPixels || len(g.adj[r]) == 0 {
				continue
			}
			best := slices.MinFunc(g.adj[r], func(x, y link) int { return cmp.Compare(x.mean(), y.mean()) })
			g.merge(r, best.n)
		}
	}
}
