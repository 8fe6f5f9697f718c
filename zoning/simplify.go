package zoning

import (
	"encoding/binary"
	"github.com/cropkit/cropkit/geo"
	"math"
	"slices"

	"github.com/paulmach/orb"
)

// simplifyShared simplifies zone polygons without opening gaps or overlaps
// between them: the boundaries are cut into arcs at junctions (vertices
// with other than two distinct neighbours, where three zones or a zone and
// the outside meet), every arc is simplified once with Douglas–Peucker at
// tolerance tol, and both polygons along an arc take the same simplified
// arc. The result is checked as a whole: no two simplified arcs may cross,
// touch or overlap except at shared vertices (so rings stay simple and
// zones cannot overlap), and every ring keeps at least 3 distinct vertices
// and its orientation. When the check fails, or the polygons are too large
// to check (geo.MaxVertices), the polygons are returned unchanged.
// It reports whether it simplified. With keepOutline, arcs that only one
// polygon has (the outline of all zones) keep every vertex, so zones that
// tile a field's outline still tile it after simplification.
func simplifyShared(polys []ZonePolygon, tol float64, keepOutline bool) ([]ZonePolygon, bool) {
	if tol <= 0 || len(polys) == 0 {
		return polys, false
	}
	input := polys
	polys = withTJunctions(polys)
	ids := map[orb.Point]int32{}
	var pts []orb.Point
	id := func(p orb.Point) int32 {
		if v, ok := ids[p]; ok {
			return v
		}
		ids[p] = int32(len(pts))
		pts = append(pts, p)
		return int32(len(pts) - 1)
	}
	// Rings as open vertex-id cycles.
	rings := make([][][]int32, len(polys))
	total := 0
	for i, zp := range polys {
		for _, r := range zp.Polygon {
			if len(r) < 4 || r[0] != r[len(r)-1] {
				return input, false
			}
			cyc := make([]int32, len(r)-1)
			for j, p := range r[:len(r)-1] {
				cyc[j] = id(p)
			}
			rings[i] = append(rings[i], cyc)
			total += len(cyc)
		}
	}
	if total > maxSimplifyVertices {
		return input, false
	}
	// Distinct neighbours of every vertex (at most 4 on a pixel grid).
	nbrs := make([][]int32, len(pts))
	addNbr := func(v, w int32) {
		if !slices.Contains(nbrs[v], w) {
			nbrs[v] = append(nbrs[v], w)
		}
	}
	for _, poly := range rings {
		for _, cyc := range poly {
			for j, v := range cyc {
				addNbr(v, cyc[(j+len(cyc)-1)%len(cyc)])
				addNbr(v, cyc[(j+1)%len(cyc)])
			}
		}
	}
	// Undirected edge use counts: 1 on the outline, 2 between zones.
	edgeUse := map[[2]int32]int{}
	if keepOutline {
		for _, poly := range rings {
			for _, cyc := range poly {
				for j, v := range cyc {
					w := cyc[(j+1)%len(cyc)]
					edgeUse[[2]int32{min(v, w), max(v, w)}]++
				}
			}
		}
	}
	node := make([]bool, len(pts))
	for v, n := range nbrs {
		node[v] = len(n) != 2
	}
	// A ring without a junction (an island or a hole shared whole with one
	// other zone) gets one at its smallest vertex, the same for both sides.
	less := func(a, b int32) bool {
		pa, pb := pts[a], pts[b]
		return pa[0] < pb[0] || (pa[0] == pb[0] && pa[1] < pb[1])
	}
	for _, poly := range rings {
		for _, cyc := range poly {
			if slices.ContainsFunc(cyc, func(v int32) bool { return node[v] }) {
				continue
			}
			m := cyc[0]
			for _, v := range cyc {
				if less(v, m) {
					m = v
				}
			}
			node[m] = true
		}
	}

	// memo holds each arc's simplified form by its canonical vertex ids;
	// orig the arc itself, for arcs whose simplification a ring cannot take.
	memo := map[string][]int32{}
	orig := map[string][]int32{}
	keyBuf := make([]byte, 0, 64)
	simplifyArc := func(arc []int32) ([]int32, string) {
		// Canonical direction, so both sides simplify the same sequence.
		rev := less(arc[len(arc)-1], arc[0]) || (arc[0] == arc[len(arc)-1] && len(arc) > 2 && less(arc[len(arc)-2], arc[1]))
		canon := arc
		if rev {
			canon = slices.Clone(arc)
			slices.Reverse(canon)
		}
		keyBuf = keyBuf[:0]
		for _, v := range canon {
			keyBuf = binary.LittleEndian.AppendUint32(keyBuf, uint32(v))
		}
		key := string(keyBuf)
		out, ok := memo[key]
		if !ok {
			out = canon
			if !keepOutline || edgeUse[[2]int32{min(canon[0], canon[1]), max(canon[0], canon[1])}] > 1 {
				out = simplifyIDs(canon, pts, ids, tol)
			}
			memo[key] = out
			orig[key] = slices.Clone(canon)
		}
		if rev {
			out = slices.Clone(out)
			slices.Reverse(out)
		}
		return out, key
	}

	// A ring that would collapse (fewer than 3 distinct vertices) or flip
	// keeps its arcs unsimplified, on both sides; then the rings are rebuilt.
	result := make([]ZonePolygon, len(polys))
	for pass := 0; ; pass++ {
		if pass == 20 {
			return input, false
		}
		retry := false
		for i, poly := range rings {
			np := make(orb.Polygon, 0, len(poly))
			for _, cyc := range poly {
				start := slices.IndexFunc(cyc, func(v int32) bool { return node[v] })
				rot := append(slices.Clone(cyc[start:]), cyc[:start]...)
				rot = append(rot, rot[0])
				var ring orb.Ring
				var keys []string
				a := 0
				for b := 1; b < len(rot); b++ {
					if !node[rot[b]] && b < len(rot)-1 {
						continue
					}
					arc, key := simplifyArc(rot[a : b+1])
					keys = append(keys, key)
					from := 0
					if len(ring) > 0 {
						from = 1 // the arc's first vertex ends the previous arc
					}
					for _, v := range arc[from:] {
						ring = append(ring, pts[v])
					}
					a = b
				}
				if len(ring) < 4 || (signedArea(ring) > 0) != (signedArea(polys[i].Polygon[len(np)]) > 0) {
					for _, k := range keys {
						if len(memo[k]) != len(orig[k]) {
							memo[k] = orig[k]
							retry = true
						}
					}
				}
				np = append(np, ring)
			}
			result[i] = ZonePolygon{Zone: polys[i].Zone, Polygon: np}
		}
		if !retry {
			break
		}
	}
	kept := 0
	for _, zp := range result {
		for _, r := range zp.Polygon {
			if len(r) < 4 {
				return input, false
			}
			kept += len(r) - 1
		}
	}
	if kept >= total || arcsCross(memo, pts) {
		return input, false
	}
	return result, true
}

// maxSimplifyVertices bounds the boundary vertices simplifyShared handles.
const maxSimplifyVertices = 2_000_000

// withTJunctions returns the polygons with every vertex of one ring that
// lies inside an axis-parallel edge of another ring inserted into that
// edge: geo.Polygonize drops collinear vertices, so where a third zone's
// boundary meets a straight shared edge, only one side has the vertex.
// Then both sides of every shared boundary have the same vertices.
func withTJunctions(polys []ZonePolygon) []ZonePolygon {
	byX := map[float64][]float64{} // x → ys of vertices
	byY := map[float64][]float64{}
	for _, zp := range polys {
		for _, r := range zp.Polygon {
			for _, p := range r {
				byX[p[0]] = append(byX[p[0]], p[1])
				byY[p[1]] = append(byY[p[1]], p[0])
			}
		}
	}
	for _, m := range []map[float64][]float64{byX, byY} {
		for k, v := range m {
			slices.Sort(v)
			m[k] = slices.Compact(v)
		}
	}
	// between returns the sorted values strictly between a and b, in the
	// direction from a to b.
	between := func(vals []float64, a, b float64) []float64 {
		lo, hi := min(a, b), max(a, b)
		i, _ := slices.BinarySearch(vals, lo)
		var out []float64
		for ; i < len(vals) && vals[i] < hi; i++ {
			if vals[i] > lo {
				out = append(out, vals[i])
			}
		}
		if a > b {
			slices.Reverse(out)
		}
		return out
	}
	out := make([]ZonePolygon, len(polys))
	for i, zp := range polys {
		np := make(orb.Polygon, len(zp.Polygon))
		for j, r := range zp.Polygon {
			nr := make(orb.Ring, 0, len(r))
			for k, p := range r {
				if k > 0 {
					q := r[k-1]
					switch {
					case q[0] == p[0]:
						for _, y := range between(byX[p[0]], q[1], p[1]) {
							nr = append(nr, orb.Point{p[0], y})
						}
					case q[1] == p[1]:
						for _, x := range between(byY[p[1]], q[0], p[0]) {
							nr = append(nr, orb.Point{x, p[1]})
						}
					}
				}
				nr = append(nr, p)
			}
			np[j] = nr
		}
		out[i] = ZonePolygon{Zone: zp.Zone, Polygon: np}
	}
	return out
}

// maxPairChecks bounds the segment pairs arcsCross compares.
const maxPairChecks = 20_000_000

// arcsCross reports whether two segments of the arcs meet anywhere but at a
// shared vertex, or overlap along a shared vertex; also true when the check
// would exceed maxPairChecks. It sweeps segments sorted by their smallest x.
func arcsCross(arcs map[string][]int32, pts []orb.Point) bool {
	type seg struct {
		a, b       int32
		minX, maxX float64
	}
	var segs []seg
	for _, arc := range arcs {
		for i := 1; i < len(arc); i++ {
			a, b := arc[i-1], arc[i]
			segs = append(segs, seg{a, b, math.Min(pts[a][0], pts[b][0]), math.Max(pts[a][0], pts[b][0])})
		}
	}
	slices.SortFunc(segs, func(x, y seg) int {
		switch {
		case x.minX < y.minX:
			return -1
		case x.minX > y.minX:
			return 1
		}
		return 0
	})
	var active []seg
	checks := 0
	for _, s := range segs {
		kept := active[:0]
		for _, o := range active {
			if o.maxX >= s.minX {
				kept = append(kept, o)
			}
		}
		active = kept
		for _, o := range active {
			if checks++; checks > maxPairChecks {
				return true
			}
			if segmentsConflict(pts, s.a, s.b, o.a, o.b) {
				return true
			}
		}
		active = append(active, s)
	}
	return false
}

// segmentsConflict reports whether segments ab and cd meet other than at a
// shared endpoint, or lie along each other from a shared endpoint.
func segmentsConflict(pts []orb.Point, a, b, c, d int32) bool {
	pa, pb, pc, pd := pts[a], pts[b], pts[c], pts[d]
	if math.Max(pa[1], pb[1]) < math.Min(pc[1], pd[1]) || math.Max(pc[1], pd[1]) < math.Min(pa[1], pb[1]) {
		return false
	}
	shared := func(w, x, y int32) bool { // segments w–x and w–y
		pw, px, py := pts[w], pts[x], pts[y]
		ux, uy, vx, vy := px[0]-pw[0], px[1]-pw[1], py[0]-pw[0], py[1]-pw[1]
		return ux*vy-uy*vx == 0 && ux*vx+uy*vy > 0
	}
	switch {
	case (a == c && b == d) || (a == d && b == c):
		return true
	case a == c:
		return shared(a, b, d)
	case a == d:
		return shared(a, b, c)
	case b == c:
		return shared(b, a, d)
	case b == d:
		return shared(b, a, c)
	}
	o1, o2 := orient(pa, pb, pc), orient(pa, pb, pd)
	o3, o4 := orient(pc, pd, pa), orient(pc, pd, pb)
	if o1*o2 < 0 && o3*o4 < 0 {
		return true
	}
	on := func(p, q, r orb.Point) bool { // r on segment pq, given collinear
		return math.Min(p[0], q[0]) <= r[0] && r[0] <= math.Max(p[0], q[0]) &&
			math.Min(p[1], q[1]) <= r[1] && r[1] <= math.Max(p[1], q[1])
	}
	return (o1 == 0 && on(pa, pb, pc)) || (o2 == 0 && on(pa, pb, pd)) ||
		(o3 == 0 && on(pc, pd, pa)) || (o4 == 0 && on(pc, pd, pb))
}

// orient is the sign of the turn p→q→r: 1 left, −1 right, 0 collinear.
func orient(p, q, r orb.Point) float64 {
	v := (q[0]-p[0])*(r[1]-p[1]) - (q[1]-p[1])*(r[0]-p[0])
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}

// simplifyIDs is geo.SimplifyArc of arc, a line of vertex ids into pts
// (ids maps each point back to its id).
func simplifyIDs(arc []int32, pts []orb.Point, ids map[orb.Point]int32, tol float64) []int32 {
	if len(arc) <= 2 {
		return arc
	}
	line := make([]orb.Point, len(arc))
	for i, v := range arc {
		line[i] = pts[v]
	}
	kept := geo.SimplifyArc(line, tol)
	out := make([]int32, len(kept))
	for i, p := range kept {
		out[i] = ids[p]
	}
	return out
}
