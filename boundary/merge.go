package boundary

import (
	"cmp"
	"math"
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
	parent []int32 // union–find; −1 outside the area
	size   []int32 // per root; 0 once merged away
	adj    [][]link
	edges  []edge
	// Per root: sum and count of the pixel-edge strengths inside the region.
	inSum []float64
	inCnt []int32
	// texture weighs the regions' inner edge strength in the merge cost.
	texture float64
	// Mean NDVI profiles: next links the pixels of a region (−1 ends the
	// list, tail per root its last pixel); prof holds, per root of a
	// region of at least profMinPixels, the sum and count of its clear
	// NDVI per date (nil until needed). maxDist vetoes merges of regions
	// whose mean profiles lie further apart (0: no veto).
	a       *profiles
	next    []int32
	tail    []int32
	prof    [][]float32
	maxDist float64
	// radar, when it has dates, adds the mean VV and VH backscatter per
	// date to the profiles; a merge is then vetoed only when the radar
	// profiles also lie further apart than maxRadar (dB).
	radar    *radar
	maxRadar float64
}

// profMinPixels: regions smaller than this merge by their border alone
// (their mean profile is mostly noise and mixed pixels).
const profMinPixels = 6

func newRegions(a *profiles, texture, maxDist float64, r *radar, maxRadar float64) *regions {
	n := len(a.in)
	g := &regions{parent: make([]int32, n), size: make([]int32, n), adj: make([][]link, n),
		edges: a.edges(), inSum: make([]float64, n), inCnt: make([]int32, n), texture: texture,
		a: a, maxDist: maxDist, radar: r, maxRadar: maxRadar}
	if maxDist > 0 {
		g.next, g.tail, g.prof = make([]int32, n), make([]int32, n), make([][]float32, n)
	}
	for i, in := range a.in {
		g.parent[i] = -1
		if in {
			g.parent[i], g.size[i] = int32(i), 1
		}
		if g.next != nil {
			g.next[i], g.tail[i] = -1, int32(i)
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
// common neighbours add up. changed, when not nil, receives those common
// neighbours (their border with the merged region has a new mean).
func (g *regions) merge(a, b int32, changed *[]int32) int32 {
	if g.size[a] < g.size[b] {
		a, b = b, a
	}
	if g.next != nil {
		// Once either side has a profile the merged region keeps one
		// (the other side's is computed from its members, before the
		// lists are joined): recomputing a large region after each small
		// one it absorbs would be quadratic.
		if g.prof[a] != nil || g.prof[b] != nil {
			pa, pb := g.profile(a), g.profile(b)
			for k := range pa {
				pa[k] += pb[k]
			}
		}
		g.next[g.tail[a]] = b
		g.tail[a] = g.tail[b]
		g.prof[b] = nil
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
			if changed != nil {
				*changed = append(*changed, lb.n)
			}
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
	return a
}

// candidate is a possible merge in the queue: the regions holding pixels
// a and b, at the cost it had when queued.
type candidate struct {
	cost float64
	a, b int32
}

// queue is a binary min-heap of candidates by cost (typed, not through
// container/heap: this is the hot loop).
type queue []candidate

func (q *queue) push(c candidate) {
	*q = append(*q, c)
	h := *q
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if h[p].cost <= h[i].cost {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func (q *queue) pop() candidate {
	h := *q
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && h[l].cost < h[m].cost {
			m = l
		}
		if r < n && h[r].cost < h[m].cost {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*q = h
	return top
}

func (q queue) init() {
	for i := len(q)/2 - 1; i >= 0; i-- {
		for j := i; ; {
			l, r, m := 2*j+1, 2*j+2, j
			if l < len(q) && q[l].cost < q[m].cost {
				m = l
			}
			if r < len(q) && q[r].cost < q[m].cost {
				m = r
			}
			if m == j {
				break
			}
			q[j], q[m] = q[m], q[j]
			j = m
		}
	}
}

// border returns the link from root a to root b (false when not adjacent),
// searching the shorter adjacency list.
func (g *regions) border(a, b int32) (link, bool) {
	from, to := a, b
	if len(g.adj[b]) < len(g.adj[a]) {
		from, to = b, a
	}
	k := indexOf(g.adj[from], to)
	if k < 0 {
		return link{}, false
	}
	l := g.adj[from][k]
	l.n = b
	return l, true
}

// mergeBelow merges adjacent regions, cheapest first, while the cost is at
// most threshold. Judging a border by its own strength, not by the
// regions' mean values, keeps smooth in-field trends (soil, slope) from
// splitting a field while a sharp change between crops stops the merging.
//
// The queue starts with one entry per pixel edge, named by its pixels. An
// entry popped with an outdated, lower cost is requeued at its current
// cost. A merge queues the borders it changed, and all the region's
// borders only when its inner strength grew by over 2 % since they were
// last queued (a growing texture lowers their cost): a large field borders
// hundreds of regions, and requeueing all of them after each merge would
// be quadratic.
func (g *regions) mergeBelow(threshold float64) {
	q := make(queue, 0, len(g.edges))
	for _, e := range g.edges {
		q = append(q, candidate{cost: float64(e.w), a: e.a, b: e.b})
	}
	q.init()
	queued := make([]float64, len(g.parent)) // inner strength when last queued, per root
	var changed []int32
	for len(q) > 0 {
		c := q.pop()
		if c.cost > threshold {
			break
		}
		ra, rb := g.find(c.a), g.find(c.b)
		if ra == rb {
			continue
		}
		l, ok := g.border(ra, rb)
		if !ok {
			continue
		}
		if cur := g.cost(ra, l); cur > c.cost+1e-12 {
			q.push(candidate{cost: cur, a: ra, b: rb})
			continue
		}
		if g.vetoed(ra, rb) {
			continue
		}
		changed = changed[:0]
		r := g.merge(ra, rb, &changed)
		if in := g.inner(r); in > 1.02*queued[r] {
			queued[r] = in
			changed = changed[:0]
			for _, l := range g.adj[r] {
				changed = append(changed, l.n)
			}
		}
		for _, n := range changed {
			if l, ok := g.border(r, n); ok {
				q.push(candidate{cost: g.cost(r, l), a: r, b: n})
			}
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
			g.merge(r, best.n, nil)
		}
	}
}

// cost of merging root a with the neighbour of link l: the mean strength
// of their border, less TextureWeight times the smaller of the two
// regions' mean inner edge strength, so a border must stand out from the
// texture of both sides to stop the merge.
func (g *regions) cost(a int32, l link) float64 {
	c := l.mean()
	if g.texture == 0 {
		return c
	}
	return c - g.texture*min(g.inner(a), g.inner(l.n))
}

// inner is root r's mean inner edge strength (0 for a single pixel).
func (g *regions) inner(r int32) float64 {
	if g.inCnt[r] == 0 {
		return 0
	}
	return g.inSum[r] / float64(g.inCnt[r])
}

// distance is the root mean square, over the dates both were seen, of
// the difference of roots a's and b's mean NDVI, and the same of their
// mean backscatter in dB over the radar dates and both polarisations
// (+Inf when no date).
func (g *regions) distance(a, b int32) (ndvi, radar float64) {
	pa, pb := g.profile(a), g.profile(b)
	rms := func(pa, pb []float32) float64 {
		sum, n := 0.0, 0
		for k := 0; k < len(pa); k += 2 {
			if pa[k+1] > 0 && pb[k+1] > 0 {
				x := float64(pa[k]/pa[k+1] - pb[k]/pb[k+1])
				sum += x * x
				n++
			}
		}
		if n == 0 {
			return math.Inf(1)
		}
		return math.Sqrt(sum / float64(n))
	}
	nd := 2 * len(g.a.ndvi)
	return rms(pa[:nd], pb[:nd]), rms(pa[nd:], pb[nd:])
}

// profile returns root r's per-date sums and counts of clear NDVI
// (interleaved), from its members the first time.
func (g *regions) profile(r int32) []float32 {
	if p := g.prof[r]; p != nil {
		return p
	}
	nd, nr := len(g.a.ndvi), g.radar.dates()
	p := make([]float32, 2*nd+4*nr)
	for i := r; i >= 0; i = g.next[i] {
		for d, l := range g.a.ndvi {
			if v := l[i]; v == v {
				p[2*d] += v
				p[2*d+1]++
			}
		}
		for d := range nr {
			k := 2*nd + 4*d
			if v := g.radar.vv[d][i]; v != noRadar {
				p[k] += float32(v) / centiDB
				p[k+1]++
			}
			if v := g.radar.vh[d][i]; v != noRadar {
				p[k+2] += float32(v) / centiDB
				p[k+3]++
			}
		}
	}
	g.prof[r] = p
	return p
}

// vetoed reports whether roots a and b, both of at least profMinPixels,
// have mean NDVI profiles further apart than maxDist (root mean square
// over the dates both were seen) and, with radar dates, radar profiles
// further apart than maxRadar: two crops, whatever their border says.
// A border weakened by mixed pixels or a gap in the dates otherwise lets
// a large field leak into its neighbour.
func (g *regions) vetoed(a, b int32) bool {
	if g.maxDist <= 0 || g.size[a] < profMinPixels || g.size[b] < profMinPixels {
		return false
	}
	dn, dr := g.distance(a, b)
	if math.IsInf(dn, 1) || dn <= g.maxDist {
		return false
	}
	return g.radar.dates() == 0 || g.maxRadar <= 0 || math.IsInf(dr, 1) || dr > g.maxRadar
}
