package boundary

import (
	"cmp"
	"math"
	"slices"
)

// edge joins 4-adjacent pixels a and b of the area with strength w.
type edge struct {
	a, b int32
	w    float32
}

// segmentation is a partition of the area's pixels into regions.
type segmentation struct {
	region []int32 // per pixel: region id, −1 outside the area
	count  int     // number of regions
	edges  []edge  // every edge of the area, by increasing strength
}

// edges returns the area's edges with their multi-temporal strength (RMS
// over the dates both pixels were clear). Pairs never clear together get
// the median strength: no evidence either way.
func (a *accumulator) edges() []edge {
	es := make([]edge, 0, 2*a.inPixels)
	var unknown []int
	add := func(i, j int, sum float64, n int32) {
		if n == 0 {
			unknown = append(unknown, len(es))
			es = append(es, edge{a: int32(i), b: int32(j)})
			return
		}
		es = append(es, edge{a: int32(i), b: int32(j), w: float32(math.Sqrt(sum / float64(n)))})
	}
	for r := 0; r < a.rows; r++ {
		for c := 0; c < a.cols; c++ {
			i := r*a.cols + c
			if !a.in[i] {
				continue
			}
			if c+1 < a.cols && a.in[i+1] {
				add(i, i+1, a.rightSum[i], a.rightN[i])
			}
			if r+1 < a.rows && a.in[i+a.cols] {
				add(i, i+a.cols, a.downSum[i], a.downN[i])
			}
		}
	}
	if len(unknown) > 0 && len(unknown) < len(es) {
		ws := make([]float32, 0, len(es))
		for _, e := range es {
			ws = append(ws, e.w)
		}
		for _, k := range unknown {
			ws[k] = float32(math.NaN())
		}
		ws = slices.DeleteFunc(ws, func(v float32) bool { return v != v })
		slices.Sort(ws)
		med := ws[len(ws)/2]
		for _, k := range unknown {
			es[k].w = med
		}
	}
	return es
}

// disjoint is a union–find over pixels with each set's size and internal
// variation (its largest merging edge).
type disjoint struct {
	parent, size []int32
	internal     []float32
}

func newDisjoint(n int) *disjoint {
	d := &disjoint{parent: make([]int32, n), size: make([]int32, n), internal: make([]float32, n)}
	for i := range d.parent {
		d.parent[i], d.size[i] = int32(i), 1
	}
	return d
}

func (d *disjoint) find(i int32) int32 {
	for d.parent[i] != i {
		d.parent[i] = d.parent[d.parent[i]]
		i = d.parent[i]
	}
	return i
}

func (d *disjoint) union(a, b int32, w float32) {
	if d.size[a] < d.size[b] {
		a, b = b, a
	}
	d.parent[b] = a
	d.size[a] += d.size[b]
	d.internal[a] = max(d.internal[a], d.internal[b], w)
}

// segment partitions the area by Felzenszwalb–Huttenlocher graph merging
// (Int. J. Comput. Vis. 59, 2004): with edges by increasing strength, two
// regions merge when the edge between them is no stronger than either's
// internal variation plus Scale/size, so the threshold adapts to each
// region's own texture. Regions below MinSegmentPixels then merge across
// their weakest edge.
func segment(a *accumulator, o Options) segmentation {
	es := a.edges()
	slices.SortStableFunc(es, func(x, y edge) int { return cmp.Compare(x.w, y.w) })
	d := newDisjoint(len(a.in))
	k := float32(o.Scale)
	for _, e := range es {
		ra, rb := d.find(e.a), d.find(e.b)
		if ra == rb {
			continue
		}
		if e.w <= min(d.internal[ra]+k/float32(d.size[ra]), d.internal[rb]+k/float32(d.size[rb])) {
			d.union(ra, rb, e.w)
		}
	}
	minSeg := int32(o.MinSegmentPixels)
	for _, e := range es {
		ra, rb := d.find(e.a), d.find(e.b)
		if ra != rb && (d.size[ra] < minSeg || d.size[rb] < minSeg) {
			d.union(ra, rb, e.w)
		}
	}
	s := segmentation{region: make([]int32, len(a.in)), edges: es}
	ids := make(map[int32]int32)
	for i := range s.region {
		if !a.in[i] {
			s.region[i] = -1
			continue
		}
		root := d.find(int32(i))
		id, ok := ids[root]
		if !ok {
			id = int32(len(ids))
			ids[root] = id
		}
		s.region[i] = id
	}
	s.count = len(ids)
	return s
}
