package geo

import (
	"github.com/paulmach/orb"
)

// LabeledPolygon is one 4-connected region of a label raster.
type LabeledPolygon struct {
	Label   int32
	Polygon orb.Polygon // in the grid's CRS
}

// Polygonize turns each 4-connected region of equal labels (pixels equal to
// nodata excluded) into a polygon in g's CRS, in order of each region's first
// pixel (row-major). labels is row-major, g.Cols×g.Rows; when its length
// differs Polygonize returns nil.
//
// Rings run along pixel edges with collinear vertices dropped, so a region's
// polygon covers exactly its pixels and neighbouring regions share their
// edges exactly: no gaps, no overlaps. Exterior rings are counter-clockwise
// and holes clockwise (RFC 7946). Polygons are valid in the OGC sense: where
// a region meets itself diagonally at a pixel corner, its boundary passes
// through the corner once on each side, so rings never cross or touch
// themselves, and a hole touches the exterior ring or another hole at most
// at such single points. Time and memory are O(pixels).
func Polygonize(labels []int32, g Grid, nodata int32) []LabeledPolygon {
	cols, rows := g.Cols, g.Rows
	if cols < 0 || rows < 0 || len(labels) != cols*rows {
		return nil
	}
	rg := findRegions(labels, cols, rows, nodata)
	t := traceRings(rg, cols, rows, false)
	if len(rg.size) == 0 {
		return []LabeledPolygon{}
	}
	// All points in one allocation; each ring's capacity is clipped so an
	// append by the caller cannot overwrite the next ring.
	points := make([]orb.Point, 0, len(t.verts)/2+len(t.rings))
	rings := make([]orb.Ring, 0, len(t.rings))
	toRing := func(tr tracedRing) orb.Ring {
		start := len(points)
		for k := tr.from; k < tr.to; k += 2 {
			points = append(points, t.point(g, k))
		}
		points = append(points, points[start])
		return orb.Ring(points[start:len(points):len(points)])
	}
	out := make([]LabeledPolygon, len(rg.size))
	for region := range out {
		first := len(rings)
		for _, k := range t.byRegion[region] {
			rings = append(rings, toRing(t.rings[k]))
		}
		out[region] = LabeledPolygon{Label: rg.label[region], Polygon: orb.Polygon(rings[first:len(rings):len(rings)])}
	}
	return out
}

// tracedRing is a span of traced.verts.
type tracedRing struct {
	region   int32
	from, to int // vertex (col, row) pairs verts[from:to]
}

type traced struct {
	verts []int32 // vertex (col, row) pairs of all rings
	// node marks, per vertex pair, a vertex where three or more boundary
	// edges meet (only when traced with nodes).
	node  []bool
	rings []tracedRing
	// byRegion lists each region's rings, exterior first.
	byRegion [][]int32
}

func (t *traced) point(g Grid, k int) orb.Point {
	return orb.Point{g.X0 + float64(t.verts[k])*g.DX, g.Y0 - float64(t.verts[k+1])*g.DY}
}

// traceRings walks the boundary of every region along pixel edges, region
// on the left, keeping the vertices where the boundary turns and, with
// nodes, also those where three or more boundary edges meet (the ends of
// the arcs neighbouring regions share).
func traceRings(rg regions, cols, rows int, nodes bool) traced {
	id := rg.id
	t := traced{verts: make([]int32, 0, 8*len(rg.size)+16), byRegion: make([][]int32, len(rg.size))}
	// done holds one bit per pixel side already traced: 1 bottom, 2 right, 4 top, 8 left.
	done := make([]uint8, len(id))
	// Directions, counter-clockwise: east, north, west, south as (dcol, drow).
	// Direction d also names the pixel side an edge walked in direction d
	// lies on when its pixel is on the left: 0 bottom, 1 right, 2 top, 3 left.
	dc := [4]int{1, 0, -1, 0}
	dr := [4]int{0, -1, 0, 1}
	// End vertex of side s of pixel (c, r), as (vertex col, vertex row).
	endC := [4]int{1, 1, 0, 0}
	endR := [4]int{1, 0, 0, 1}

	face := func(c, r int) int32 {
		if c < 0 || r < 0 || c >= cols || r >= rows {
			return -1
		}
		return id[r*cols+c]
	}
	isNode := func(vc, vr int) bool {
		nw, ne, sw, se := face(vc-1, vr-1), face(vc, vr-1), face(vc-1, vr), face(vc, vr)
		n := 0
		for _, diff := range [...]bool{nw != ne, ne != se, se != sw, sw != nw} {
			if diff {
				n++
			}
		}
		return n >= 3
	}

	for r := range rows {
		for c := range cols {
			i := r*cols + c
			region := id[i]
			if region < 0 {
				continue
			}
			for s := range 4 {
				if done[i]&(1<<s) != 0 || face(c+dc[(s+3)%4], r+dr[(s+3)%4]) == region {
					continue
				}
				// Trace the ring through side s of pixel (c, r).
				from := len(t.verts)
				pc, pr, d := c, r, s
				for {
					done[pr*cols+pc] |= 1 << d
					ec, er := pc+endC[d], pr+endR[d]
					alc, alr := pc+dc[d], pr+dr[d]
					right := (d + 3) % 4
					arc, arr := alc+dc[right], alr+dr[right]
					turn := true
					switch {
					case face(arc, arr) == region:
						// Turn right, also at a diagonal pinch: the region
						// stays connected through the corner.
						pc, pr, d = arc, arr, right
					case face(alc, alr) == region:
						pc, pr, turn = alc, alr, false
					default:
						d = (d + 1) % 4
					}
					if turn || (nodes && isNode(ec, er)) {
						t.verts = append(t.verts, int32(ec), int32(er))
						if nodes {
							t.node = append(t.node, isNode(ec, er))
						}
					}
					if pc == c && pr == r && d == s {
						break
					}
				}
				// Twice the signed area in pixel units (y up) tells the
				// exterior ring (counter-clockwise) from holes.
				pts := t.verts[from:]
				n := len(pts) / 2
				var area int64
				for k := range n {
					x1, y1 := pts[2*k], -pts[2*k+1]
					x2, y2 := pts[2*((k+1)%n)], -pts[2*((k+1)%n)+1]
					area += int64(x1)*int64(y2) - int64(x2)*int64(y1)
				}
				k := int32(len(t.rings))
				t.rings = append(t.rings, tracedRing{region: region, from: from, to: len(t.verts)})
				list := append(t.byRegion[region], k)
				if area > 0 { // the exterior ring goes first
					list[0], list[len(list)-1] = list[len(list)-1], list[0]
				}
				t.byRegion[region] = list
			}
		}
	}
	return t
}
