package geo

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"

	"github.com/paulmach/orb"

	"github.com/cropkit/cropkit/internal/panicgroup"
)

// ErrOutlineOutsideGrid is returned by TileOutline when the outline leaves
// the label grid or covers a pixel without a label: the caller must label
// every pixel the outline touches (see RasterizeAllTouched).
var ErrOutlineOutsideGrid = errors.New("outline not covered by labelled pixels")

// snapEps is how close (in pixels) a coordinate must be to a pixel edge to
// be moved onto it (0.1 mm at 10 m): outlines drawn along pixel edges (cadastral parcels
// digitized on the image, or the Flanders fields traced from a label
// raster) come back from a round trip through EPSG:4326 micrometres off the grid, and
// without snapping would leave nanometre slivers along every edge.
const snapEps = 1e-5

// TileOutline clips the labelled pixels to outline (a MultiPolygon in g's
// CRS): it returns, for every label, the polygons of the part of the
// outline that lies in that label's pixels. Pixels the outline only partly
// covers are cut along the outline, and every pixel the outline touches
// must carry a label (not nodata), so the polygons tile the outline
// exactly: their union is the outline, and they do not overlap.
//
// It overlays the outline's edges on the pixel grid: the outline is split
// at every pixel edge it crosses, each piece belongs to the label of the
// pixel on its inner side, and pixel edges between two labels are kept
// where they run inside the outline. The directed pieces of each label are
// then chained into rings, turning as far left as possible at a vertex
// where a label meets itself, so rings touch at single points but never
// cross. Exterior rings are counter-clockwise and holes clockwise (RFC
// 7946). Collinear vertices are dropped. Time is O(pixels + outline
// vertices + crossings · pieces per pixel row).
func TileOutline(labels []int32, g Grid, outline orb.MultiPolygon, nodata int32) ([]LabeledPolygon, error) {
	cols, rows := g.Cols, g.Rows
	if cols <= 0 || rows <= 0 || len(labels) != cols*rows || !(g.DX > 0) || !(g.DY > 0) {
		return nil, fmt.Errorf("tile outline: %d labels for a %d×%d grid", len(labels), cols, rows)
	}
	t := tiler{g: g, labels: labels, nodata: nodata,
		rowPieces: make([][]int, rows), colPieces: make([][]int, cols),
		vCross: map[[2]int][]float64{}, hCross: map[[2]int][]float64{},
		vOn: map[[2]int][][2]float64{}, hOn: map[[2]int][][2]float64{},
		boundary: make([]bool, cols*rows), edges: map[int32][]dirEdge{}}
	for _, poly := range outline {
		for ri, ring := range poly {
			if err := t.addRing(ring, ri == 0); err != nil {
				return nil, err
			}
		}
	}
	inside := Rasterize(outline, g)
	t.internalEdges(inside)
	zones := make([]int32, 0, len(t.edges))
	for z := range t.edges {
		zones = append(zones, z)
	}
	slices.Sort(zones)
	// Labels are traced independently, on all cores, and joined in order.
	parts := make([][]LabeledPolygon, len(zones))
	var wg panicgroup.Group
	wg.SetLimit(runtime.GOMAXPROCS(0))
	for i, z := range zones {
		wg.Go(func() {
			for _, p := range t.polygons(t.edges[z]) {
				for _, q := range SplitPinches(p) {
					parts[i] = append(parts[i], LabeledPolygon{Label: z, Polygon: q})
				}
			}
		})
	}
	wg.Wait()
	var out []LabeledPolygon
	for _, p := range parts {
		out = append(out, p...)
	}
	return out, nil
}

// uv is a point in pixel units: u = (x−X0)/DX grows east, v = (Y0−y)/DY
// grows south; pixel (c, r) is [c, c+1] × [r, r+1].
type uv = orb.Point

type dirEdge struct{ a, b uv }

type tiler struct {
	g      Grid
	labels []int32
	nodata int32
	// pieces are the outline's pieces, each inside one closed pixel,
	// directed with the outline's interior on their left.
	pieces []dirEdge
	// rowPieces and colPieces index pieces by the pixel row (column) they
	// cross, for point-in-outline tests along a row (column).
	rowPieces, colPieces [][]int
	// vCross[(c, r)] holds the v of outline points on the vertical pixel
	// edge u = c, r < v < r+1; hCross[(c, r)] the u of points on the
	// horizontal pixel edge v = r, c < u < c+1.
	vCross, hCross map[[2]int][]float64
	// vOn and hOn hold the intervals of pieces lying along those edges.
	vOn, hOn map[[2]int][][2]float64
	// boundary marks the pixels holding an outline piece.
	boundary []bool
	// edges are each label's directed boundary edges, label on the left.
	edges map[int32][]dirEdge
}

func snap(x float64) float64 {
	if r := math.Round(x); math.Abs(x-r) <= snapEps {
		return r
	}
	return x
}

func isInt(x float64) bool { return x == math.Floor(x) }

// addRing splits one ring of the outline at the pixel edges and files the pieces.
func (t *tiler) addRing(ring orb.Ring, exterior bool) error {
	pts := make([]uv, 0, len(ring))
	for _, p := range ring {
		q := uv{snap((p[0] - t.g.X0) / t.g.DX), snap((t.g.Y0 - p[1]) / t.g.DY)}
		if !(q[0] >= 0 && q[0] <= float64(t.g.Cols) && q[1] >= 0 && q[1] <= float64(t.g.Rows)) {
			return fmt.Errorf("%w: vertex %v outside the %d×%d grid", ErrOutlineOutsideGrid, p, t.g.Cols, t.g.Rows)
		}
		if len(pts) == 0 || pts[len(pts)-1] != q {
			pts = append(pts, q)
		}
	}
	if len(pts) > 1 && pts[0] == pts[len(pts)-1] {
		pts = pts[:len(pts)-1]
	}
	if len(pts) < 3 {
		return nil
	}
	// Interior on the left in (u, v): positive shoelace area for an
	// exterior ring, negative for a hole.
	var area float64
	for i, p := range pts {
		q := pts[(i+1)%len(pts)]
		area += p[0]*q[1] - q[0]*p[1]
	}
	if (area > 0) != exterior {
		slices.Reverse(pts)
	}
	for i, p := range pts {
		if err := t.addEdge(p, pts[(i+1)%len(pts)]); err != nil {
			return err
		}
	}
	return nil
}

type split struct {
	t float64
	p uv
}

// addEdge splits the outline edge p→q at every pixel edge it crosses.
func (t *tiler) addEdge(p, q uv) error {
	sp := []split{{0, p}, {1, q}}
	du, dv := q[0]-p[0], q[1]-p[1]
	for c := math.Floor(min(p[0], q[0])) + 1; c < max(p[0], q[0]); c++ {
		s := (c - p[0]) / du
		sp = append(sp, split{s, uv{c, snap(p[1] + s*dv)}})
	}
	for r := math.Floor(min(p[1], q[1])) + 1; r < max(p[1], q[1]); r++ {
		s := (r - p[1]) / dv
		sp = append(sp, split{s, uv{snap(p[0] + s*du), r}})
	}
	slices.SortFunc(sp, func(a, b split) int {
		switch {
		case a.t < b.t:
			return -1
		case a.t > b.t:
			return 1
		}
		return 0
	})
	for i := 0; i+1 < len(sp); i++ {
		a, b := sp[i].p, sp[i+1].p
		if a == b {
			continue
		}
		if err := t.addPiece(a, b); err != nil {
			return err
		}
	}
	return nil
}

// addPiece files one piece a→b lying in one closed pixel.
func (t *tiler) addPiece(a, b uv) error {
	du, dv := b[0]-a[0], b[1]-a[1]
	var c, r int
	onV := a[0] == b[0] && isInt(a[0])
	onH := a[1] == b[1] && isInt(a[1])
	// The pixel on the piece's inner (left) side; the left normal is (dv, −du)
	// turned into (u, v): left of a→b is (−dv, du).
	if onV {
		c = int(a[0])
		if -dv < 0 {
			c--
		}
	} else {
		c = int(math.Floor((a[0] + b[0]) / 2))
	}
	if onH {
		r = int(a[1])
		if du < 0 {
			r--
		}
	} else {
		r = int(math.Floor((a[1] + b[1]) / 2))
	}
	if c < 0 || c >= t.g.Cols || r < 0 || r >= t.g.Rows {
		return fmt.Errorf("%w: the outline runs along the grid's border at pixel (%d, %d)", ErrOutlineOutsideGrid, c, r)
	}
	i := r*t.g.Cols + c
	lab := t.labels[i]
	if lab == t.nodata {
		return fmt.Errorf("%w: pixel (%d, %d) has no label", ErrOutlineOutsideGrid, c, r)
	}
	t.boundary[i] = true
	k := len(t.pieces)
	t.pieces = append(t.pieces, dirEdge{a, b})
	t.edges[lab] = append(t.edges[lab], dirEdge{a, b})
	if !onH {
		t.rowPieces[r] = append(t.rowPieces[r], k)
	}
	if !onV {
		t.colPieces[c] = append(t.colPieces[c], k)
	}
	switch {
	case onV:
		t.vOn[[2]int{int(a[0]), r}] = append(t.vOn[[2]int{int(a[0]), r}], [2]float64{min(a[1], b[1]), max(a[1], b[1])})
	case onH:
		t.hOn[[2]int{c, int(a[1])}] = append(t.hOn[[2]int{c, int(a[1])}], [2]float64{min(a[0], b[0]), max(a[0], b[0])})
	}
	for _, p := range [2]uv{a, b} {
		if isInt(p[0]) && !isInt(p[1]) {
			key := [2]int{int(p[0]), int(math.Floor(p[1]))}
			t.vCross[key] = append(t.vCross[key], p[1])
		}
		if isInt(p[1]) && !isInt(p[0]) {
			key := [2]int{int(math.Floor(p[0])), int(p[1])}
			t.hCross[key] = append(t.hCross[key], p[0])
		}
	}
	return nil
}

// insideRow reports whether p (p[1] not an integer) is inside the outline:
// even-odd count of the pieces crossing the ray from p eastwards.
func (t *tiler) insideRow(p uv) bool {
	in := false
	for _, k := range t.rowPieces[int(math.Floor(p[1]))] {
		a, b := t.pieces[k].a, t.pieces[k].b
		if (a[1] > p[1]) != (b[1] > p[1]) {
			if u := a[0] + (p[1]-a[1])/(b[1]-a[1])*(b[0]-a[0]); u > p[0] {
				in = !in
			}
		}
	}
	return in
}

// insideCol is insideRow with a ray southwards (p[0] not an integer).
func (t *tiler) insideCol(p uv) bool {
	in := false
	for _, k := range t.colPieces[int(math.Floor(p[0]))] {
		a, b := t.pieces[k].a, t.pieces[k].b
		if (a[0] > p[0]) != (b[0] > p[0]) {
			if v := a[1] + (p[0]-a[0])/(b[0]-a[0])*(b[1]-a[1]); v > p[1] {
				in = !in
			}
		}
	}
	return in
}

func covered(on [][2]float64, x float64) bool {
	for _, iv := range on {
		if x > iv[0] && x < iv[1] {
			return true
		}
	}
	return false
}

// internalEdges adds the pixel edges between two labels, where they run
// inside the outline, to both labels (each with its pixel on the left).
// inside is the pixel-centre mask, exact for pixels no piece touches.
func (t *tiler) internalEdges(inside []bool) {
	cols, rows := t.g.Cols, t.g.Rows
	// sub returns the parts of the pixel edge from lo to hi (along the
	// line) that lie inside the outline.
	sub := func(lo, hi float64, cross []float64, on [][2]float64, near bool, at func(float64) uv, in func(uv) bool) [][2]float64 {
		if !near {
			return [][2]float64{{lo, hi}}
		}
		s := append([]float64{lo, hi}, cross...)
		slices.Sort(s)
		s = slices.Compact(s)
		var out [][2]float64
		for i := 0; i+1 < len(s); i++ {
			m := (s[i] + s[i+1]) / 2
			if covered(on, m) || !in(at(m)) {
				continue
			}
			if n := len(out); n > 0 && out[n-1][1] == s[i] {
				out[n-1][1] = s[i+1]
			} else {
				out = append(out, [2]float64{s[i], s[i+1]})
			}
		}
		return out
	}
	add := func(z int32, a, b uv) { t.edges[z] = append(t.edges[z], dirEdge{a, b}) }
	for r := range rows {
		for c := range cols {
			i := r*cols + c
			here := t.labels[i]
			if here == t.nodata {
				continue
			}
			// Vertical edge u = c+1 between (c, r) and (c+1, r).
			if c+1 < cols {
				j := i + 1
				if there := t.labels[j]; there != t.nodata && there != here {
					near := t.boundary[i] || t.boundary[j]
					if near || inside[i] {
						u := float64(c + 1)
						key := [2]int{c + 1, r}
						for _, iv := range sub(float64(r), float64(r+1), t.vCross[key], t.vOn[key], near,
							func(v float64) uv { return uv{u, v} }, t.insideRow) {
							a, b := uv{u, iv[0]}, uv{u, iv[1]}
							add(here, a, b) // (c, r) is west: on the left going south
							add(there, b, a)
						}
					}
				}
			}
			// Horizontal edge v = r+1 between (c, r) and (c, r+1).
			if r+1 < rows {
				j := i + cols
				if there := t.labels[j]; there != t.nodata && there != here {
					near := t.boundary[i] || t.boundary[j]
					if near || inside[i] {
						v := float64(r + 1)
						key := [2]int{c, r + 1}
						for _, iv := range sub(float64(c), float64(c+1), t.hCross[key], t.hOn[key], near,
							func(u float64) uv { return uv{u, v} }, t.insideCol) {
							a, b := uv{iv[0], v}, uv{iv[1], v}
							add(there, a, b) // (c, r+1) is south: on the left going east
							add(here, b, a)
						}
					}
				}
			}
		}
	}
}

// polygons chains one label's directed edges into rings and groups them
// into polygons in the grid's CRS.
func (t *tiler) polygons(edges []dirEdge) []orb.Polygon {
	// The edges leaving each vertex, in edge order: a list threaded
	// through after (one map entry per vertex, no slice per vertex).
	type chain struct{ first, last int32 }
	from := make(map[uv]chain, len(edges))
	after := make([]int32, len(edges))
	for k, e := range edges {
		after[k] = -1
		if c, ok := from[e.a]; ok {
			after[c.last] = int32(k)
			from[e.a] = chain{c.first, int32(k)}
		} else {
			from[e.a] = chain{int32(k), int32(k)}
		}
	}
	used := make([]bool, len(edges))
	var rings []orb.Ring
	for k0 := range edges {
		if used[k0] {
			continue
		}
		start := edges[k0].a
		ring := orb.Ring{start}
		k := k0
		for {
			used[k] = true
			e := edges[k]
			ring = append(ring, e.b)
			if e.b == start {
				break
			}
			next, best := int32(-1), math.Inf(-1)
			din := orb.Point{e.b[0] - e.a[0], e.b[1] - e.a[1]}
			c0, ok := from[e.b]
			for cand := c0.first; ok && cand >= 0; cand = after[cand] {
				if used[cand] {
					continue
				}
				c := edges[cand]
				dout := orb.Point{c.b[0] - c.a[0], c.b[1] - c.a[1]}
				// Turn angle; in (u, v) with v southwards a left turn has a
				// positive cross product, as the pieces' left sides.
				ang := math.Atan2(din[0]*dout[1]-din[1]*dout[0], din[0]*dout[0]+din[1]*dout[1])
				if ang > best {
					next, best = cand, ang
				}
			}
			if next < 0 {
				break // open chain: cannot happen for a closed outline; dropped below
			}
			k = int(next)
		}
		if ring[0] != ring[len(ring)-1] {
			continue
		}
		ring = dropStraight(ring)
		if len(ring) < 4 || math.Abs(tileRingArea(ring)) < 1e-10 {
			continue
		}
		rings = append(rings, ring)
	}
	// To the grid's CRS; flipping v reverses the orientation, so exterior
	// rings (positive area in (u, v)) are reversed to counter-clockwise.
	var exteriors []orb.Polygon
	var extArea []float64
	var holes []orb.Ring
	for _, ring := range rings {
		a := tileRingArea(ring)
		out := make(orb.Ring, len(ring))
		for i, p := range ring {
			out[len(ring)-1-i] = orb.Point{t.g.X0 + p[0]*t.g.DX, t.g.Y0 - p[1]*t.g.DY}
		}
		if a > 0 {
			exteriors = append(exteriors, orb.Polygon{out})
			extArea = append(extArea, a)
		} else {
			holes = append(holes, out)
		}
	}
	for _, h := range holes {
		// A point just inside the hole, next to the middle of its first edge
		// (holes are clockwise: their inside is on the right).
		a, b := h[0], h[1]
		d := math.Hypot(b[0]-a[0], b[1]-a[1])
		eps := 1e-6 * min(t.g.DX, t.g.DY)
		p := orb.Point{(a[0]+b[0])/2 + eps*(b[1]-a[1])/d, (a[1]+b[1])/2 - eps*(b[0]-a[0])/d}
		best := -1
		for i, e := range exteriors {
			if ringContains(e[0], p) && (best < 0 || extArea[i] < extArea[best]) {
				best = i
			}
		}
		if best >= 0 {
			exteriors[best] = append(exteriors[best], h)
		}
	}
	return exteriors
}

// dropCollinear removes the vertices of a closed ring where it runs
// straight on (pixel edges come in unit steps, outline edges are split at
// every pixel edge).
func dropStraight(r orb.Ring) orb.Ring {
	pts := r[:len(r)-1]
	n := len(pts)
	if n < 3 {
		return r
	}
	keep := make([]bool, n)
	for i := range pts {
		p, q, s := pts[(i+n-1)%n], pts[i], pts[(i+1)%n]
		d1 := orb.Point{q[0] - p[0], q[1] - p[1]}
		d2 := orb.Point{s[0] - q[0], s[1] - q[1]}
		cross := d1[0]*d2[1] - d1[1]*d2[0]
		dot := d1[0]*d2[0] + d1[1]*d2[1]
		keep[i] = math.Abs(cross) > 1e-9*math.Hypot(d1[0], d1[1])*math.Hypot(d2[0], d2[1]) || dot < 0
	}
	out := make(orb.Ring, 0, n+1)
	for i, p := range pts {
		if keep[i] {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return append(out, out[0])
}

func tileRingArea(r orb.Ring) float64 {
	var a float64
	for i := 0; i+1 < len(r); i++ {
		a += r[i][0]*r[i+1][1] - r[i+1][0]*r[i][1]
	}
	return a / 2
}

func ringContains(r orb.Ring, p orb.Point) bool {
	in := false
	for i := 0; i+1 < len(r); i++ {
		a, b := r[i], r[i+1]
		if (a[1] > p[1]) != (b[1] > p[1]) {
			if x := a[0] + (p[1]-a[1])/(b[1]-a[1])*(b[0]-a[0]); x > p[0] {
				in = !in
			}
		}
	}
	return in
}
