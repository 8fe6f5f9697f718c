package geo

import (
	"fmt"
	"math"
	"slices"

	"github.com/paulmach/orb"
)

// InvalidGeometryError says why a polygon is not valid. Reason is meant for
// the user (the server returns it with a 400): it names the polygon and ring
// and, for crossings, the location.
type InvalidGeometryError struct {
	Reason string
}

func (e *InvalidGeometryError) Error() string { return "invalid geometry: " + e.Reason }

func invalidf(format string, args ...any) error {
	return &InvalidGeometryError{Reason: fmt.Sprintf(format, args...)}
}

// Limits of the validators.
const (
	// MaxVertices bounds the vertices a validator accepts, so a crafted
	// geometry cannot make validation slow.
	MaxVertices = 100_000
	// MaxAreaHa is the largest area ValidateLonLat accepts: no field or
	// parcel is a million hectares; such an area means swapped or garbage
	// coordinates.
	MaxAreaHa = 1_000_000
	// maxPairChecks bounds the segment pairs the self-intersection sweep
	// compares (well under a second); real polygons need a few per segment.
	maxPairChecks = 5_000_000
)

// ValidatePolygon checks p in the OGC simple-features sense: at least one
// ring; every ring closed, with at least 4 points (3 distinct) and finite
// coordinates; no ring crossing or touching itself; rings crossing or
// overlapping one another nowhere (touching at a point is allowed, but not
// in a loop: a hole touching the shell at two points, or rings touching in
// a cycle, disconnect the interior); every hole
// inside the shell and outside the other holes; a positive area. Consecutive
// repeated points are allowed. Errors are *InvalidGeometryError.
func ValidatePolygon(p orb.Polygon) error {
	return ValidateMultiPolygon(orb.MultiPolygon{p})
}

// ValidateMultiPolygon checks every polygon of mp as ValidatePolygon does and
// that the polygons do not overlap (they may touch at points).
func ValidateMultiPolygon(mp orb.MultiPolygon) error {
	if len(mp) == 0 {
		return invalidf("no polygon")
	}
	n := 0
	for _, p := range mp {
		for _, r := range p {
			n += len(r)
		}
	}
	if n > MaxVertices {
		return invalidf("%d vertices, more than the %d accepted", n, MaxVertices)
	}
	name := func(i int) string {
		if len(mp) == 1 {
			return "polygon"
		}
		return fmt.Sprintf("polygon %d", i)
	}
	clean := make([][]orb.Ring, len(mp))
	for i, p := range mp {
		if len(p) == 0 {
			return invalidf("%s has no rings", name(i))
		}
		clean[i] = make([]orb.Ring, len(p))
		for j, r := range p {
			what := fmt.Sprintf("%s ring %d", name(i), j)
			if j == 0 {
				what = fmt.Sprintf("%s exterior ring", name(i))
			}
			if len(r) < 4 {
				return invalidf("%s has %d points, a ring needs at least 4 (3 distinct and the first repeated last)", what, len(r))
			}
			for k, pt := range r {
				if math.IsNaN(pt[0]) || math.IsNaN(pt[1]) || math.IsInf(pt[0], 0) || math.IsInf(pt[1], 0) {
					return invalidf("%s point %d is not a finite number", what, k)
				}
			}
			if r[0] != r[len(r)-1] {
				return invalidf("%s is not closed: it starts at %s and ends at %s", what, fmtPoint(r[0]), fmtPoint(r[len(r)-1]))
			}
			c := dedupe(r)
			if len(c) < 4 {
				return invalidf("%s has fewer than 3 distinct points", what)
			}
			clean[i][j] = c
		}
	}
	if err := checkCrossings(clean, name); err != nil {
		return err
	}
	for i, p := range clean {
		for j, r := range p {
			if ringArea(r) == 0 {
				if j == 0 {
					return invalidf("%s exterior ring has zero area", name(i))
				}
				return invalidf("%s ring %d has zero area", name(i), j)
			}
		}
	}
	// No crossings: each ring lies wholly inside or outside any other, so
	// one vertex not on the other's boundary decides. The point-in-ring
	// tests are paid from the same work budget as the sweep.
	budget := maxPairChecks
	inside := func(a, b orb.Ring) (bool, error) {
		if budget -= len(b); budget < 0 {
			return false, invalidf("too complex to check ring nesting (over %d steps)", maxPairChecks)
		}
		return ringInside(a, b), nil
	}
	for i, p := range clean {
		shell := p[0]
		for j, h := range p[1:] {
			in, err := inside(h, shell)
			if err != nil {
				return err
			}
			if !in {
				return invalidf("%s ring %d (a hole) is not inside the exterior ring", name(i), j+1)
			}
		}
		holes := make([]orb.Bound, len(p)-1)
		for j, h := range p[1:] {
			holes[j] = ringBound(h)
		}
		err := containedPairs(holes, &budget, func(outer, inner int) error {
			in, err := inside(p[1+inner], p[1+outer])
			if err == nil && in {
				err = invalidf("%s ring %d (a hole) lies inside ring %d (another hole)", name(i), inner+1, outer+1)
			}
			return err
		})
		if err != nil {
			return err
		}
		if polygonArea(orb.Polygon(p)) <= 0 {
			return invalidf("%s has zero or negative area (its holes cover its exterior)", name(i))
		}
	}
	// Polygons overlap when one's shell lies in the other's interior.
	shells := make([]orb.Bound, len(clean))
	for i, p := range clean {
		shells[i] = ringBound(p[0])
	}
	return containedPairs(shells, &budget, func(outer, inner int) error {
		in, err := inside(clean[inner][0], clean[outer][0])
		if err != nil || !in {
			return err
		}
		for _, h := range clean[outer][1:] {
			if in, err = inside(clean[inner][0], h); err != nil || in {
				return err // in a hole of the other: fine
			}
		}
		return invalidf("polygons %d and %d overlap", inner, outer)
	})
}

// containedPairs calls fn(outer, inner) for every pair of bounds where
// bounds[outer] contains bounds[inner], found with a sweep along x; each
// active bound visited costs one unit of *budget.
func containedPairs(bounds []orb.Bound, budget *int, fn func(outer, inner int) error) error {
	if len(bounds) < 2 {
		return nil
	}
	order := make([]int, len(bounds))
	for i := range order {
		order[i] = i
	}
	// By minX, larger boxes first on ties so containers precede contents.
	slices.SortFunc(order, func(a, b int) int {
		switch {
		case bounds[a].Min[0] < bounds[b].Min[0]:
			return -1
		case bounds[a].Min[0] > bounds[b].Min[0]:
			return 1
		case bounds[a].Max[0] > bounds[b].Max[0]:
			return -1
		case bounds[a].Max[0] < bounds[b].Max[0]:
			return 1
		}
		return a - b
	})
	var active []int
	for _, j := range order {
		bj := bounds[j]
		active = slices.DeleteFunc(active, func(k int) bool { return bounds[k].Max[0] < bj.Min[0] })
		if *budget -= len(active); *budget < 0 {
			return invalidf("too complex to check ring nesting (over %d steps)", maxPairChecks)
		}
		for _, k := range active {
			if bboxContains(bounds[k], bj) {
				if err := fn(k, j); err != nil {
					return err
				}
			}
			// Equal boxes: either may contain the other.
			if bounds[k] == bj {
				if err := fn(j, k); err != nil {
					return err
				}
			}
		}
		active = append(active, j)
	}
	return nil
}

// ValidateLonLat is ValidateMultiPolygon for EPSG:4326 input, plus: every
// longitude within [-180, 180] and latitude within [-90, 90], not crossing
// the antimeridian (see checkAntimeridian), and an area
// (on the WGS 84 ellipsoid, GeodesicArea) of at most MaxAreaHa.
func ValidateLonLat(mp orb.MultiPolygon) error {
	for i, p := range mp {
		for j, r := range p {
			for k, pt := range r {
				if !(pt[0] >= -180 && pt[0] <= 180) || !(pt[1] >= -90 && pt[1] <= 90) {
					return invalidf("polygon %d ring %d point %d %s is not a longitude, latitude in degrees (EPSG:4326, longitude first)", i, j, k, fmtPoint(pt))
				}
			}
		}
	}
	if err := checkAntimeridian(mp); err != nil {
		return err
	}
	if err := ValidateMultiPolygon(mp); err != nil {
		return err
	}
	if ha := GeodesicArea(mp) / 10_000; ha > MaxAreaHa {
		return invalidf("area %.0f ha is larger than the %d ha accepted", ha, MaxAreaHa)
	}
	return nil
}

// antimeridianAdvice ends the reason for a geometry crossing 180°.
const antimeridianAdvice = "crosses the antimeridian (180°): not supported; register the parts east and west of 180° as separate fields"

// checkAntimeridian refuses, by name, geometries that cross longitude 180°,
// in either of the forms RFC 7946 §3.1.9 describes: an edge jumping more
// than 180° of longitude (179.999 → -179.999, read in lon/lat as a band
// around the world), or parts cut at the antimeridian, one touching 180°
// and another -180°. Everything downstream (bounding boxes, scene
// footprints, UTM windows, rasterization) reads longitudes as a plane, so
// either form would otherwise be refused with a misleading area or extent
// or, worse, ingested as a field around the world.
func checkAntimeridian(mp orb.MultiPolygon) error {
	east, west := -1, -1 // a polygon touching 180°, and one touching -180°
	for i, p := range mp {
		for j, r := range p {
			for k := 0; k+1 < len(r); k++ {
				if math.Abs(r[k+1][0]-r[k][0]) > 180 {
					return invalidf("polygon %d ring %d %s (its edge from %s to %s)", i, j, antimeridianAdvice, fmtPoint(r[k]), fmtPoint(r[k+1]))
				}
			}
			for _, pt := range r {
				switch {
				case pt[0] == 180 && east < 0:
					east = i
				case pt[0] == -180 && west < 0:
					west = i
				}
			}
		}
	}
	if east >= 0 && west >= 0 {
		return invalidf("multipolygon %s (polygon %d touches 180° and polygon %d -180°)", antimeridianAdvice, east, west)
	}
	return nil
}

func fmtPoint(p orb.Point) string { return fmt.Sprintf("(%.10g, %.10g)", p[0], p[1]) }

// dedupe drops consecutive repeated points.
func dedupe(r orb.Ring) orb.Ring {
	out := make(orb.Ring, 0, len(r))
	for i, p := range r {
		if i == 0 || p != r[i-1] {
			out = append(out, p)
		}
	}
	return out
}

func ringBound(r orb.Ring) orb.Bound { return orb.MultiPoint(r).Bound() }

func bboxContains(outer, inner orb.Bound) bool {
	return inner.Min[0] >= outer.Min[0] && inner.Max[0] <= outer.Max[0] &&
		inner.Min[1] >= outer.Min[1] && inner.Max[1] <= outer.Max[1]
}

// ringInside reports whether ring a lies inside ring b, given that they do
// not cross: by the first vertex of a (or edge midpoint) not on b.
func ringInside(a, b orb.Ring) bool {
	for i, p := range a {
		if in, on := pointInRing(p, b); !on {
			return in
		}
		if i+1 < len(a) {
			m := orb.Point{(p[0] + a[i+1][0]) / 2, (p[1] + a[i+1][1]) / 2}
			if in, on := pointInRing(m, b); !on {
				return in
			}
		}
	}
	return true // a runs along b everywhere: the same ring
}

// pointInRing is the crossing-number test; on reports p exactly on an edge.
func pointInRing(p orb.Point, r orb.Ring) (in, on bool) {
	n := len(r)
	for i, j := 0, n-1; i < n; j, i = i, i+1 {
		a, b := r[j], r[i]
		if onSegment(p, a, b) {
			return false, true
		}
		if (a[1] > p[1]) != (b[1] > p[1]) {
			x := a[0] + (p[1]-a[1])*(b[0]-a[0])/(b[1]-a[1])
			if p[0] < x {
				in = !in
			}
		}
	}
	return in, false
}

func orient(a, b, c orb.Point) float64 {
	return (b[0]-a[0])*(c[1]-a[1]) - (b[1]-a[1])*(c[0]-a[0])
}

func onSegment(p, a, b orb.Point) bool {
	return orient(a, b, p) == 0 &&
		p[0] >= min(a[0], b[0]) && p[0] <= max(a[0], b[0]) &&
		p[1] >= min(a[1], b[1]) && p[1] <= max(a[1], b[1])
}

type contact int

const (
	noContact   contact = iota
	touching            // an end point of one lies on the other
	crossing            // the interiors cross at one point
	overlapping         // collinear, sharing a piece of positive length
)

// classify says how segments ab and cd meet and returns a point where they do.
func classify(a, b, c, d orb.Point) (contact, orb.Point) {
	o1, o2 := orient(a, b, c), orient(a, b, d)
	o3, o4 := orient(c, d, a), orient(c, d, b)
	if o1 == 0 && o2 == 0 {
		// Collinear: compare along the dominant axis.
		k := 0
		if math.Abs(b[0]-a[0]) < math.Abs(b[1]-a[1]) {
			k = 1
		}
		lo1, hi1 := min(a[k], b[k]), max(a[k], b[k])
		lo2, hi2 := min(c[k], d[k]), max(c[k], d[k])
		lo, hi := max(lo1, lo2), min(hi1, hi2)
		switch {
		case lo > hi:
			return noContact, orb.Point{}
		case lo == hi:
			for _, p := range [...]orb.Point{a, b} {
				if p[k] == lo {
					return touching, p
				}
			}
			return touching, c
		default:
			for _, p := range [...]orb.Point{a, b, c, d} {
				if p[k] == lo {
					return overlapping, p
				}
			}
		}
	}
	if ((o1 > 0 && o2 < 0) || (o1 < 0 && o2 > 0)) && ((o3 > 0 && o4 < 0) || (o3 < 0 && o4 > 0)) {
		t := o3 / (o3 - o4)
		return crossing, orb.Point{a[0] + t*(b[0]-a[0]), a[1] + t*(b[1]-a[1])}
	}
	switch {
	case o1 == 0 && onSegment(c, a, b):
		return touching, c
	case o2 == 0 && onSegment(d, a, b):
		return touching, d
	case o3 == 0 && onSegment(a, c, d):
		return touching, a
	case o4 == 0 && onSegment(b, c, d):
		return touching, b
	}
	return noContact, orb.Point{}
}

type segment struct {
	a, b       orb.Point
	poly, ring int
	idx, n     int // index in its ring and the ring's segment count
}

// cellEntry puts a segment in a grid cell.
type cellEntry struct {
	cell int64
	seg  int32
}

// checkCrossings finds any two segments that meet where they must not. The
// segments go into a uniform grid (each into the cells it passes through)
// and are compared within a cell, so work is near-linear for real polygons;
// cell entries and pairs compared are bounded by maxPairChecks, beyond which
// the geometry is refused (crafted spikes all crossing one spot).
func checkCrossings(polys [][]orb.Ring, name func(int) string) error {
	var segs []segment
	var b orb.Bound
	for i, p := range polys {
		for j, r := range p {
			if i == 0 && j == 0 {
				b = ringBound(r)
			} else {
				b = b.Union(ringBound(r))
			}
			n := len(r) - 1
			for k := range n {
				segs = append(segs, segment{a: r[k], b: r[k+1], poly: i, ring: j, idx: k, n: n})
			}
		}
	}
	// Cells as wide and tall as the mean segment extent in x and in y: each
	// segment then covers a few cells and a cell holds a few segments, even
	// for long thin teeth. Cells are only named, never allocated.
	var sumW, sumH float64
	for _, sg := range segs {
		sumW += math.Abs(sg.b[0] - sg.a[0])
		sumH += math.Abs(sg.b[1] - sg.a[1])
	}
	w, h := b.Max[0]-b.Min[0], b.Max[1]-b.Min[1]
	cw := max(sumW/float64(len(segs)), w/(1<<20), 1e-300)
	ch := max(sumH/float64(len(segs)), h/(1<<20), 1e-300)
	nx := int(min(w/cw+1, 1<<20))
	ny := int(min(h/ch+1, 1<<20))
	col := func(x float64) int { return min(max(int((x-b.Min[0])/cw), 0), nx-1) }
	row := func(y float64) int { return min(max(int((y-b.Min[1])/ch), 0), ny-1) }

	budget := maxPairChecks
	tooComplex := func() error {
		return invalidf("too complex to check for self-intersections (over %d segment comparisons)", maxPairChecks)
	}
	var entries []cellEntry
	for si, sg := range segs {
		// Walk the columns the segment spans; in each, the rows its piece
		// there spans (a conservative cover of the cells it crosses).
		p, q := sg.a, sg.b
		if p[0] > q[0] {
			p, q = q, p
		}
		c0, c1 := col(p[0]), col(q[0])
		for c := c0; c <= c1; c++ {
			ya, yb := p[1], q[1]
			if q[0] > p[0] {
				x0 := max(p[0], b.Min[0]+float64(c)*cw)
				x1 := min(q[0], b.Min[0]+float64(c+1)*cw)
				ya = p[1] + (x0-p[0])*(q[1]-p[1])/(q[0]-p[0])
				yb = p[1] + (x1-p[0])*(q[1]-p[1])/(q[0]-p[0])
			}
			r0, r1 := row(min(ya, yb)), row(max(ya, yb))
			if budget -= r1 - r0 + 1; budget < 0 {
				return tooComplex()
			}
			for r := r0; r <= r1; r++ {
				entries = append(entries, cellEntry{cell: int64(r)*int64(nx) + int64(c), seg: int32(si)})
			}
		}
	}
	slices.SortFunc(entries, func(x, y cellEntry) int {
		switch {
		case x.cell < y.cell:
			return -1
		case x.cell > y.cell:
			return 1
		}
		return int(x.seg - y.seg)
	})
	ringName := func(s segment) string {
		if s.ring == 0 {
			return name(s.poly) + " exterior ring"
		}
		return fmt.Sprintf("%s ring %d", name(s.poly), s.ring)
	}
	touches := newTouchGraph(name)
	for lo := 0; lo < len(entries); {
		hi := lo
		for hi < len(entries) && entries[hi].cell == entries[lo].cell {
			hi++
		}
		if budget -= (hi - lo) * (hi - lo - 1) / 2; budget < 0 {
			return tooComplex()
		}
		for x := lo; x < hi; x++ {
			s := &segs[entries[x].seg]
			for y := x + 1; y < hi; y++ {
				t := &segs[entries[y].seg]
				kind, at := classify(s.a, s.b, t.a, t.b)
				if kind == noContact {
					continue
				}
				if s.poly == t.poly && s.ring == t.ring {
					d := s.idx - t.idx
					adjacent := d == 1 || d == -1 || d == s.n-1 || d == 1-s.n
					switch {
					case adjacent && kind == overlapping:
						return invalidf("%s doubles back on itself at %s", ringName(*s), fmtPoint(at))
					case adjacent:
						continue
					case kind == crossing:
						return invalidf("%s intersects itself at %s", ringName(*s), fmtPoint(at))
					default:
						return invalidf("%s touches itself at %s", ringName(*s), fmtPoint(at))
					}
				}
				if kind == touching && s.poly == t.poly {
					if err := touches.add(s.poly, s.ring, t.ring, at, ringName(*s), ringName(*t)); err != nil {
						return err
					}
				}
				switch kind {
				case crossing:
					if s.poly != t.poly {
						return invalidf("%s and %s cross at %s", name(s.poly), name(t.poly), fmtPoint(at))
					}
					return invalidf("%s and ring %d cross at %s", ringName(*s), t.ring, fmtPoint(at))
				case overlapping:
					if s.poly != t.poly {
						return invalidf("%s and %s share an edge at %s", name(s.poly), name(t.poly), fmtPoint(at))
					}
					return invalidf("%s and ring %d share an edge at %s", ringName(*s), t.ring, fmtPoint(at))
				}
			}
		}
		lo = hi
	}
	return nil
}

// maxContainsSteps bounds the segment visits of Contains (about half a
// second); real fields and parcels need a few per vertex.
const maxContainsSteps = 50_000_000

// touchGraph finds rings of one polygon that touch in a loop, which cuts
// the interior in pieces (GEOS: "Interior is disconnected"): a hole
// touching the shell at two points, or three rings each touching the next.
// Nodes are rings and touch points (so rings all meeting at one point make
// a star, not a loop); a touch joins its two rings through its point, and
// joining two nodes already connected closes a loop.
type touchGraph struct {
	name   func(int) string
	seen   map[touchKey]bool
	parent map[touchNode]touchNode
}

type touchNode struct {
	poly, ring int // ring ≥ 0: a ring; ring = -1: the point pt
	pt         orb.Point
}

type touchKey struct {
	poly, ring int
	pt         orb.Point
}

func newTouchGraph(name func(int) string) *touchGraph {
	return &touchGraph{name: name, seen: map[touchKey]bool{}, parent: map[touchNode]touchNode{}}
}

func (g *touchGraph) find(n touchNode) touchNode {
	for {
		p, ok := g.parent[n]
		if !ok || p == n {
			return n
		}
		if gp, ok := g.parent[p]; ok {
			g.parent[n] = gp // path halving
		}
		n = p
	}
}

// add records that rings a and b of polygon poly touch at pt.
func (g *touchGraph) add(poly, a, b int, pt orb.Point, aName, bName string) error {
	for _, r := range [2]int{a, b} {
		k := touchKey{poly, r, pt}
		if g.seen[k] {
			continue
		}
		g.seen[k] = true
		rn, pn := g.find(touchNode{poly, r, orb.Point{}}), g.find(touchNode{poly, -1, pt})
		if rn == pn {
			return invalidf("%s interior is disconnected: %s and %s touch at %s, closing a loop of touching rings", g.name(poly), aName, bName, fmtPoint(pt))
		}
		g.parent[rn] = pn
	}
	return nil
}

// Contains reports whether inner lies inside outer, allowing inner to stray
// up to tol (CRS units) outside, so a parcel drawn along the field's border
// (shared edges, rounding) counts as inside. Both must be valid and in the
// same CRS. It checks that every vertex and edge midpoint of inner is inside
// outer or within tol of its boundary, and so is every piece of an edge of
// inner between the points where it meets outer's boundary, and that no
// vertex of outer (a notch or a hole) lies inside inner farther than tol
// from its boundary.
//
// The segments of each side are bucketed into horizontal bands, so a query
// visits only the few segments near its height: cost about O((n+m) log)
// for n and m vertices of real shapes. Crafted shapes where many segments
// share every band (combs) are refused with an *InvalidGeometryError once
// the work exceeds a budget, instead of taking minutes.
func Contains(outer, inner orb.MultiPolygon, tol float64) (bool, error) {
	if len(inner) == 0 || len(outer) == 0 {
		return false, nil
	}
	tol = max(tol, 0)
	budget := maxContainsSteps
	oi, err := newBandIndex(outer, tol, &budget)
	if err != nil {
		return false, err
	}
	ii, err := newBandIndex(inner, tol, &budget)
	if err != nil {
		return false, err
	}
	inOrNear := func(p orb.Point) (bool, error) {
		in, err := oi.contains(p, &budget)
		if err != nil || in {
			return in, err
		}
		return oi.near(p, tol, &budget)
	}
	for _, p := range inner {
		for _, r := range p {
			for i, pt := range r {
				ok, err := inOrNear(pt)
				if err != nil || !ok {
					return false, err
				}
				if i+1 < len(r) {
					ok, err := inOrNear(orb.Point{(pt[0] + r[i+1][0]) / 2, (pt[1] + r[i+1][1]) / 2})
					if err != nil || !ok {
						return false, err
					}
				}
			}
		}
	}
	for _, p := range outer {
		for _, r := range p {
			for _, pt := range r {
				in, err := ii.contains(pt, &budget)
				if err != nil {
					return false, err
				}
				if !in {
					continue
				}
				near, err := ii.near(pt, tol, &budget)
				if err != nil || !near {
					return false, err
				}
			}
		}
	}
	// Between the points where an edge of inner meets outer's boundary, each
	// piece of the edge is wholly inside or outside: test its midpoint.
	var ts []float64
	for _, p := range inner {
		for _, r := range p {
			for i := 0; i+1 < len(r); i++ {
				a, b := r[i], r[i+1]
				eb := orb.Bound{Min: a, Max: a}.Extend(b)
				ts = append(ts[:0], 0, 1)
				err := oi.visit(eb.Min[1], eb.Max[1], &budget, func(c, d orb.Point) bool {
					if max(c[0], d[0]) < eb.Min[0] || min(c[0], d[0]) > eb.Max[0] ||
						max(c[1], d[1]) < eb.Min[1] || min(c[1], d[1]) > eb.Max[1] {
						return true
					}
					if kind, at := classify(a, b, c, d); kind != noContact {
						ts = append(ts, paramOn(a, b, at))
						if kind == overlapping {
							ts = append(ts, paramOn(a, b, c), paramOn(a, b, d))
						}
					}
					return true
				})
				if err != nil {
					return false, err
				}
				slices.Sort(ts)
				for k := 0; k+1 < len(ts); k++ {
					if ts[k+1]-ts[k] < 1e-12 {
						continue
					}
					m := (ts[k] + ts[k+1]) / 2
					ok, err := inOrNear(orb.Point{a[0] + m*(b[0]-a[0]), a[1] + m*(b[1]-a[1])})
					if err != nil || !ok {
						return false, err
					}
				}
			}
		}
	}
	return true, nil
}

// bandIndex buckets the segments of a multipolygon into horizontal bands
// of equal height (compressed rows: band k holds items[start[k]:start[k+1]]).
// A segment is in every band its y-range meets, so any segment meeting a
// height y is in the band of y.
type bandIndex struct {
	segs  [][2]orb.Point
	y0, h float64
	start []int32
	items []int32
}

func tooComplexContains() error {
	return &InvalidGeometryError{Reason: fmt.Sprintf("too complex to check containment (over %d steps)", maxContainsSteps)}
}

func newBandIndex(mp orb.MultiPolygon, tol float64, budget *int) (*bandIndex, error) {
	x := &bandIndex{}
	var b orb.Bound
	for _, p := range mp {
		for _, r := range p {
			for i := 0; i+1 < len(r); i++ {
				if len(x.segs) == 0 {
					b = orb.Bound{Min: r[i], Max: r[i]}
				}
				b = b.Extend(r[i]).Extend(r[i+1])
				x.segs = append(x.segs, [2]orb.Point{r[i], r[i+1]})
			}
		}
	}
	if *budget -= len(x.segs); *budget < 0 || len(x.segs) > math.MaxInt32 {
		return nil, tooComplexContains()
	}
	// About one band per segment (a band of a convex ring then holds about
	// two), but no thinner than tol so a near query spans few bands.
	height := b.Max[1] - b.Min[1]
	nb := max(min(len(x.segs), 1<<20), 1)
	x.y0, x.h = b.Min[1], max(height/float64(nb), tol, 1e-300)
	nb = int(min(height/x.h+1, float64(nb)))
	counts := make([]int32, nb+1)
	total := 0
	for _, sg := range x.segs {
		lo, hi := x.band(min(sg[0][1], sg[1][1]), nb), x.band(max(sg[0][1], sg[1][1]), nb)
		if total += hi - lo + 1; total > *budget {
			return nil, tooComplexContains()
		}
		for k := lo; k <= hi; k++ {
			counts[k+1]++
		}
	}
	*budget -= total
	for k := range nb {
		counts[k+1] += counts[k]
	}
	x.start = counts
	x.items = make([]int32, total)
	fill := slices.Clone(counts[:nb])
	for i, sg := range x.segs {
		lo, hi := x.band(min(sg[0][1], sg[1][1]), nb), x.band(max(sg[0][1], sg[1][1]), nb)
		for k := lo; k <= hi; k++ {
			x.items[fill[k]] = int32(i)
			fill[k]++
		}
	}
	return x, nil
}

// band is the band of height y, clamped to [0, nb) (monotone in y).
func (x *bandIndex) band(y float64, nb int) int {
	f := (y - x.y0) / x.h
	if !(f > 0) {
		return 0
	}
	return int(min(f, float64(nb-1)))
}

// visit calls fn for each segment in the bands meeting [ylo, yhi] (a
// segment spanning several bands more than once) until fn returns false.
func (x *bandIndex) visit(ylo, yhi float64, budget *int, fn func(a, b orb.Point) bool) error {
	nb := len(x.start) - 1
	from, to := x.start[x.band(ylo, nb)], x.start[x.band(yhi, nb)+1]
	if *budget -= int(to - from); *budget < 0 {
		return tooComplexContains()
	}
	for _, i := range x.items[from:to] {
		if !fn(x.segs[i][0], x.segs[i][1]) {
			break
		}
	}
	return nil
}

// contains is the even-odd crossing test over all rings, boundary excluded.
func (x *bandIndex) contains(p orb.Point, budget *int) (bool, error) {
	in, on := false, false
	err := x.visit(p[1], p[1], budget, func(a, b orb.Point) bool {
		if onSegment(p, a, b) {
			on = true
			return false
		}
		if (a[1] > p[1]) != (b[1] > p[1]) {
			if p[0] < a[0]+(p[1]-a[1])*(b[0]-a[0])/(b[1]-a[1]) {
				in = !in
			}
		}
		return true
	})
	return in && !on, err
}

// near reports whether p is within tol of a segment.
func (x *bandIndex) near(p orb.Point, tol float64, budget *int) (bool, error) {
	found := false
	err := x.visit(p[1]-tol, p[1]+tol, budget, func(a, b orb.Point) bool {
		found = distToSegment(p, a, b) <= tol
		return !found
	})
	return found, err
}

// paramOn is the position of p along segment ab, clamped to [0, 1].
func paramOn(a, b, p orb.Point) float64 {
	dx, dy := b[0]-a[0], b[1]-a[1]
	l2 := dx*dx + dy*dy
	if l2 == 0 {
		return 0
	}
	return max(0, min(1, ((p[0]-a[0])*dx+(p[1]-a[1])*dy)/l2))
}

func distToSegment(p, a, b orb.Point) float64 {
	dx, dy := b[0]-a[0], b[1]-a[1]
	l2 := dx*dx + dy*dy
	t := 0.0
	if l2 > 0 {
		t = max(0, min(1, ((p[0]-a[0])*dx+(p[1]-a[1])*dy)/l2))
	}
	return math.Hypot(p[0]-(a[0]+t*dx), p[1]-(a[1]+t*dy))
}
