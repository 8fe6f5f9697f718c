package geo

import (
	"github.com/paulmach/orb"
	"github.com/paulmach/orb/planar"
)

// SplitPinches returns p with every ring that touches itself at a vertex
// (a "pinch": valid as an area, invalid as an OGC ring) split there into
// simple rings: a loop turning the exterior's way is a polygon of its own,
// a loop turning the other way a hole; holes go to the polygon containing
// them. Polygons without pinches are returned as they are.
func SplitPinches(p orb.Polygon) []orb.Polygon {
	if len(p) == 0 {
		return nil
	}
	var exteriors []orb.Ring
	var holes []orb.Ring
	outerCCW := planar.Area(p[0]) > 0
	for _, r := range p {
		for _, loop := range splitRing(r) {
			// Whatever ring it came from, a loop turning the exterior's way
			// bounds area (a polygon of its own, or an island in a hole);
			// a loop turning the other way is a hole.
			if (planar.Area(loop) > 0) == outerCCW {
				exteriors = append(exteriors, loop)
			} else {
				holes = append(holes, loop)
			}
		}
	}
	if len(exteriors) == 1 && len(holes) == len(p)-1 && len(p[0]) == len(exteriors[0]) {
		return []orb.Polygon{p}
	}
	out := make([]orb.Polygon, len(exteriors))
	for i, e := range exteriors {
		out[i] = orb.Polygon{e}
	}
	for _, h := range holes {
		best, bestArea := -1, 0.0
		for i, e := range exteriors {
			a := planar.Area(e)
			if a < 0 {
				a = -a
			}
			if ringHoldsRing(e, h) && (best < 0 || a < bestArea) {
				best, bestArea = i, a
			}
		}
		if best >= 0 {
			out[best] = append(out[best], h)
		}
	}
	return out
}

// splitRing splits a closed ring at its repeated vertices into closed loops.
func splitRing(r orb.Ring) []orb.Ring {
	if len(r) < 4 {
		return []orb.Ring{r}
	}
	pts := append([]orb.Point(nil), r[:len(r)-1]...)
	var loops []orb.Ring
	seen := make(map[orb.Point]int, len(pts))
	for {
		clear(seen)
		cut := false
		for i, q := range pts {
			if j, ok := seen[q]; ok {
				loop := append(append(orb.Ring{}, pts[j:i]...), q)
				if len(loop) >= 4 {
					loops = append(loops, loop)
				}
				pts = append(pts[:j], pts[i:]...)
				cut = true
				break
			}
			seen[q] = i
		}
		if !cut {
			break
		}
	}
	if len(pts) >= 3 {
		loops = append(loops, append(orb.Ring(pts), pts[0]))
	}
	return loops
}

// ringHoldsRing reports whether inner lies inside outer (tested at the
// midpoint of inner's first edge nudged inward and at its vertices: rings
// of one tiling may share vertices but never cross).
func ringHoldsRing(outer, inner orb.Ring) bool {
	for i := 0; i+1 < len(inner); i++ {
		m := orb.Point{(inner[i][0] + inner[i+1][0]) / 2, (inner[i][1] + inner[i+1][1]) / 2}
		if planar.RingContains(outer, m) {
			return true
		}
	}
	return false
}
