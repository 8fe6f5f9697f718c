package boundary

import (
	"fmt"
	"math"

	"github.com/paulmach/orb"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/geo/crs"
)

// regionStats are what the non-field filters and the confidence need.
type regionStats struct {
	pixels, core         int
	green                float64 // sum over pixels of the season's highest NDVI
	inSum, borderSum     float64
	inCount, borderCount int
}

// fields filters the regions of region (labels 0…n−1, −1 outside the
// area) and turns the fields into EPSG:4326 polygons, largest first.
func fields(a *profiles, region []int32, n int, edges []edge, o Options) ([]Field, error) {
	st := make([]regionStats, n)
	for i, r := range region {
		if r < 0 {
			continue
		}
		s := &st[r]
		s.pixels++
		if g := a.greenest(i); !math.IsInf(g, -1) {
			s.green += g
		}
		if a.isCore(region, i) {
			s.core++
		}
	}
	for _, e := range edges {
		ra, rb := region[e.a], region[e.b]
		if ra == rb {
			st[ra].inSum += float64(e.w)
			st[ra].inCount++
			continue
		}
		st[ra].borderSum += float64(e.w)
		st[ra].borderCount++
		st[rb].borderSum += float64(e.w)
		st[rb].borderCount++
	}
	pixelHa := a.grid.PixelArea() / 10_000
	keep := make([]bool, len(st))
	for r, s := range st {
		keep[r] = s.pixels > 0 && float64(s.pixels)*pixelHa >= o.MinAreaHa &&
			s.green/float64(s.pixels) >= o.MinGreenNDVI &&
			float64(s.core) >= o.MinCoreFraction*float64(s.pixels)
	}
	labels := make([]int32, len(region))
	for i, r := range region {
		if r < 0 || !keep[r] {
			labels[i] = -1
			continue
		}
		labels[i] = r
	}
	t, err := crs.New(a.grid.EPSG, 4326)
	if err != nil {
		return nil, fmt.Errorf("project fields from EPSG:%d: %w", a.grid.EPSG, err)
	}
	var fields []Field
	for _, lp := range geo.PolygonizeSimplified(labels, a.grid, -1, o.SimplifyTolerance) {
		mp, err := geo.Transform(orb.MultiPolygon{lp.Polygon}, t)
		if err != nil {
			return nil, fmt.Errorf("project fields from EPSG:%d: %w", a.grid.EPSG, err)
		}
		s := st[lp.Label]
		fields = append(fields, Field{
			Polygon:    mp[0],
			AreaHa:     geo.GeodesicArea(mp) / 10_000,
			Confidence: s.confidence(),
			Pixels:     s.pixels,
		})
	}
	sortFields(fields)
	return fields, nil
}

// confidence contrasts the mean strength of the border edges with that of
// the inner edges.
func (s regionStats) confidence() float64 {
	if s.borderCount == 0 {
		return 0
	}
	b := s.borderSum / float64(s.borderCount)
	in := 0.0
	if s.inCount > 0 {
		in = s.inSum / float64(s.inCount)
	}
	if b+in == 0 {
		return 0
	}
	return min(max((b-in)/(b+in), 0), 1)
}

// isCore reports whether pixel i and its four neighbours share a region.
func (a *profiles) isCore(region []int32, i int) bool {
	r, c := i/a.cols, i%a.cols
	if r == 0 || c == 0 || r == a.rows-1 || c == a.cols-1 {
		return false
	}
	v := region[i]
	return region[i-1] == v && region[i+1] == v && region[i-a.cols] == v && region[i+a.cols] == v
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}
