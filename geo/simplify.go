package geo

import (
	"math"
	"slices"

	"github.com/paulmach/orb"
)

// PolygonizeSimplified is Polygonize with the pixel staircases smoothed:
// every arc of boundary shared by two regions (or by a region and nodata),
// between the points where three or more regions meet, is simplified once
// with Douglas–Peucker at tolerance tol (CRS units) and used by both sides,
// so neighbouring polygons still share their edges exactly: no gaps, no
// overlaps. Arc end points never move. An arc whose simplified form would
// cross or touch another arc, or leave a polygon invalid (a ring too small,
// a hole outside its shell), keeps its pixel-edge form, so every polygon
// stays valid. Areas change by at most about tol times the perimeter.
// tol <= 0 gives Polygonize's result.
func PolygonizeSimplified(labels []int32, g Grid, nodata int32, tol float64) []LabeledPolygon {
	if !(tol > 0) || math.IsInf(tol, 0) {
		return Polygonize(labels, g, nodata)
	}
	cols, rows := g.Cols, g.Rows
	if cols < 0 || rows < 0 || len(labels) != cols*rows {
		return nil
	}
	rg := findRegions(labels, cols, rows, nodata)
	if len(rg.size) == 0 {
		return []LabeledPolygon{}
	}
	t := traceRings(rg, cols, rows, true)
	a := splitArcs(&t, g)
	for i := range a.arcs {
		a.arcs[i].cur = SimplifyArc(a.arcs[i].orig, tol)
	}
	assemble := func(region int) orb.Polygon {
		p := make(orb.Polygon, 0, len(t.byRegion[region]))
		for _, k := range t.byRegion[region] {
			p = append(p, a.ring(k))
		}
		return p
	}
	// The regions each arc borders (one or two), to recheck after a revert.
	arcRegions := make([][]int32, len(a.arcs))
	for k, uses := range a.uses {
		for _, u := range uses {
			arcRegions[u.arc] = append(arcRegions[u.arc], t.rings[k].region)
		}
	}
	polys := make([]orb.Polygon, len(rg.size))
	dirty := make([]bool, len(rg.size))
	for i := range dirty {
		dirty[i] = true
	}
	revert := func(i int32) bool {
		if a.arcs[i].reverted {
			return false
		}
		a.arcs[i].cur, a.arcs[i].reverted = a.arcs[i].orig, true
		for _, region := range arcRegions[i] {
			dirty[region] = true
		}
		return true
	}
	// Revert offending arcs until nothing offends; the pixel-edge arcs
	// themselves never do, so this ends.
	for {
		changed := false
		for _, i := range a.conflicts(g) {
			changed = revert(i) || changed
		}
		for region := range polys {
			if !dirty[region] {
				continue
			}
			dirty[region] = false
			polys[region] = assemble(region)
			if ValidatePolygon(polys[region]) == nil {
				continue
			}
			for _, k := range t.byRegion[region] {
				for _, u := range a.uses[k] {
					changed = revert(u.arc) || changed
				}
			}
		}
		if !changed {
			break
		}
	}
	out := make([]LabeledPolygon, len(rg.size))
	for region := range out {
		if dirty[region] {
			polys[region] = assemble(region)
		}
		out[region] = LabeledPolygon{Label: rg.label[region], Polygon: polys[region]}
	}
	return out
}

type arc struct {
	orig, cur []orb.Point // end points included; a loop ends where it starts
	loop      bool        // a whole ring with no node: its ends are not fixed points others meet
	reverted  bool
}

type arcUse struct {
	arc int32
	rev bool
}

type arcSet struct {
	arcs []arc
	uses [][]arcUse // per traced ring, in ring order
}

// splitArcs cuts every traced ring at its nodes into arcs, sharing each arc
// between the two rings that run along it in opposite directions.
func splitArcs(t *traced, g Grid) arcSet {
	type key [4]int32
	byStart := map[key]int32{}
	s := arcSet{uses: make([][]arcUse, len(t.rings))}
	vert := func(k int) [2]int32 { return [2]int32{t.verts[2*k], t.verts[2*k+1]} }
	add := func(ring int, idx []int, loop bool) {
		// idx are vertex indices (pairs) along the ring, first to last.
		first, second := vert(idx[0]), vert(idx[1])
		last, beforeLast := vert(idx[len(idx)-1]), vert(idx[len(idx)-2])
		if a, ok := byStart[key{last[0], last[1], beforeLast[0], beforeLast[1]}]; ok {
			s.uses[ring] = append(s.uses[ring], arcUse{arc: a, rev: true})
			return
		}
		pts := make([]orb.Point, len(idx))
		for i, k := range idx {
			pts[i] = t.point(g, 2*k)
		}
		a := int32(len(s.arcs))
		s.arcs = append(s.arcs, arc{orig: pts, cur: pts, loop: loop})
		byStart[key{first[0], first[1], second[0], second[1]}] = a
		s.uses[ring] = append(s.uses[ring], arcUse{arc: a})
	}
	for k, r := range t.rings {
		from, n := r.from/2, (r.to-r.from)/2
		start := -1
		for i := range n {
			if t.node[from+i] {
				start = i
				break
			}
		}
		if start < 0 {
			// No node: one loop arc, starting at its smallest vertex so
			// both sides agree on it.
			m := 0
			for i := 1; i < n; i++ {
				v, w := vert(from+i), vert(from+m)
				if v[1] < w[1] || (v[1] == w[1] && v[0] < w[0]) {
					m = i
				}
			}
			idx := make([]int, 0, n+1)
			for i := range n + 1 {
				idx = append(idx, from+(m+i)%n)
			}
			add(k, idx, true)
			continue
		}
		idx := []int{from + start}
		for i := 1; i <= n; i++ {
			j := from + (start+i)%n
			idx = append(idx, j)
			if t.node[j] {
				add(k, idx, false)
				idx = []int{j}
			}
		}
	}
	return s
}

// ring assembles traced ring k from the current arcs.
func (s *arcSet) ring(k int32) orb.Ring {
	var r orb.Ring
	for _, u := range s.uses[k] {
		pts := s.arcs[u.arc].cur
		for i := range pts {
			p := pts[i]
			if u.rev {
				p = pts[len(pts)-1-i]
			}
			if len(r) > 0 && i == 0 {
				continue // the previous arc ended here
			}
			r = append(r, p)
		}
	}
	if len(r) > 0 && r[0] != r[len(r)-1] {
		r = append(r, r[0])
	}
	return dropCollinear(r)
}

// dropCollinear removes vertices lying on the line through their neighbours
// (including across the closing point) from closed ring r.
func dropCollinear(r orb.Ring) orb.Ring {
	n := len(r) - 1
	if n < 3 {
		return r
	}
	keep := make([]bool, n)
	kept := 0
	for i := range n {
		a, b, c := r[(i+n-1)%n], r[i], r[(i+1)%n]
		if orient(a, b, c) != 0 {
			keep[i] = true
			kept++
		}
	}
	if kept < 3 {
		return r // degenerate: leave it for validation to reject
	}
	out := make(orb.Ring, 0, kept+1)
	for i := range n {
		if keep[i] {
			out = append(out, r[i])
		}
	}
	return append(out, out[0])
}

// SimplifyArc is Douglas–Peucker with fixed end points: it keeps the
// vertices of pts farther than tol from the simplified line. A closed arc
// (both ends the same point) is split at its vertex farthest from the start
// so it keeps some area. Simplifying each arc of a boundary shared by two
// polygons once, and giving both the result, keeps them free of gaps and
// overlaps (PolygonizeSimplified; zoning's zone simplification).
func SimplifyArc(pts []orb.Point, tol float64) []orb.Point {
	if len(pts) <= 2 {
		return pts
	}
	if pts[0] == pts[len(pts)-1] {
		far, fd := 0, -1.0
		for i, p := range pts {
			if d := math.Hypot(p[0]-pts[0][0], p[1]-pts[0][1]); d > fd {
				far, fd = i, d
			}
		}
		first := douglasPeucker(pts[:far+1], tol)
		second := douglasPeucker(pts[far:], tol)
		return append(first[:len(first):len(first)], second[1:]...)
	}
	return douglasPeucker(pts, tol)
}

func douglasPeucker(pts []orb.Point, tol float64) []orb.Point {
	n := len(pts)
	if n <= 2 {
		return append([]orb.Point(nil), pts...)
	}
	keep := make([]bool, n)
	keep[0], keep[n-1] = true, true
	type span struct{ i, j int }
	stack := []span{{0, n - 1}}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		far, fd := -1, tol
		for k := s.i + 1; k < s.j; k++ {
			if d := distToSegment(pts[k], pts[s.i], pts[s.j]); d > fd {
				far, fd = k, d
			}
		}
		if far >= 0 {
			keep[far] = true
			stack = append(stack, span{s.i, far}, span{far, s.j})
		}
	}
	out := make([]orb.Point, 0, n)
	for i, p := range pts {
		if keep[i] {
			out = append(out, p)
		}
	}
	return out
}

// conflicts returns the simplified arcs that cross, overlap or touch another
// arc (or themselves) anywhere but at shared end points. Segments are
// bucketed in a grid of cells a few pixels wide and compared within a cell.
func (s *arcSet) conflicts(g Grid) []int32 {
	type seg struct {
		a, b orb.Point
		arc  int32
		idx  int32
	}
	var segs []seg
	for i, a := range s.arcs {
		for k := 0; k+1 < len(a.cur); k++ {
			segs = append(segs, seg{a: a.cur[k], b: a.cur[k+1], arc: int32(i), idx: int32(k)})
		}
	}
	cell := 8 * max(g.DX, g.DY)
	type entry struct {
		cx, cy int64
		seg    int32
	}
	var entries []entry
	for i, sg := range segs {
		x0 := int64(math.Floor((min(sg.a[0], sg.b[0]) - g.X0) / cell))
		x1 := int64(math.Floor((max(sg.a[0], sg.b[0]) - g.X0) / cell))
		y0 := int64(math.Floor((g.Y0 - max(sg.a[1], sg.b[1])) / cell))
		y1 := int64(math.Floor((g.Y0 - min(sg.a[1], sg.b[1])) / cell))
		for cy := y0; cy <= y1; cy++ {
			for cx := x0; cx <= x1; cx++ {
				entries = append(entries, entry{cx, cy, int32(i)})
			}
		}
	}
	slices.SortFunc(entries, func(p, q entry) int {
		switch {
		case p.cy != q.cy:
			return cmpInt64(p.cy, q.cy)
		case p.cx != q.cx:
			return cmpInt64(p.cx, q.cx)
		}
		return int(p.seg - q.seg)
	})
	bad := map[int32]bool{}
	isEnd := func(a int32, p orb.Point) bool {
		arc := s.arcs[a]
		return !arc.loop && (p == arc.cur[0] || p == arc.cur[len(arc.cur)-1])
	}
	for lo := 0; lo < len(entries); {
		hi := lo
		for hi < len(entries) && entries[hi].cx == entries[lo].cx && entries[hi].cy == entries[lo].cy {
			hi++
		}
		for i := lo; i < hi; i++ {
			p := segs[entries[i].seg]
			for j := i + 1; j < hi; j++ {
				q := segs[entries[j].seg]
				if s.arcs[p.arc].reverted && s.arcs[q.arc].reverted {
					continue
				}
				kind, at := classify(p.a, p.b, q.a, q.b)
				if kind == noContact {
					continue
				}
				ok := false
				if p.arc == q.arc {
					n := int32(len(s.arcs[p.arc].cur) - 1)
					d := p.idx - q.idx
					closed := s.arcs[p.arc].cur[0] == s.arcs[p.arc].cur[n]
					adjacent := d == 1 || d == -1 || (closed && (d == n-1 || d == 1-n))
					ok = adjacent && kind == touching
				} else {
					ok = kind == touching && isEnd(p.arc, at) && isEnd(q.arc, at) &&
						(at == p.a || at == p.b) && (at == q.a || at == q.b)
				}
				if !ok {
					bad[p.arc], bad[q.arc] = true, true
				}
			}
		}
		lo = hi
	}
	out := make([]int32, 0, len(bad))
	for a := range bad {
		out = append(out, a)
	}
	slices.Sort(out)
	return out
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
