package zoning

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/geo/crs"
	"github.com/paulmach/orb"
	"github.com/paulmach/orb/planar"
)

// RasterizeAttribute puts the numeric attribute attr (matched
// case-insensitively) of the shapes on grid, row-major, NaN where no shape
// gives a value:
//
//   - polygons by pixel centre (geo.Rasterize); where polygons overlap, the
//     later record wins. A polygon too thin to hold any pixel centre gets the
//     pixels it touches, but only those no other polygon holds by its centre.
//   - points: a pixel takes the mean of the points inside it (yield and
//     soil-sensor points are dense, several per pixel, and the mean is the
//     least noisy summary); pixels without a point stay NaN and are then
//     filled like any missing pixel (Compute: nearest clustered pixel).
//   - lines are not supported.
//
// Shapes are reprojected from their CRS to the grid's. Records with an
// empty value are skipped; a value that is not a number is an error
// matching ErrAttribute.
func RasterizeAttribute(s *Shapes, attr string, grid geo.Grid) ([]float64, error) {
	field := ""
	for _, f := range s.Fields {
		if strings.EqualFold(f, attr) {
			field = f
			break
		}
	}
	if field == "" {
		return nil, fmt.Errorf("%w: no attribute %q (the shapefile has %s)", ErrAttribute, attr, strings.Join(s.Fields, ", "))
	}
	t, err := crs.New(s.EPSG, grid.EPSG)
	if err != nil {
		return nil, fmt.Errorf("reproject shapefile to the field's grid: %w", err)
	}
	n := grid.Cols * grid.Rows
	out := make([]float64, n)
	for i := range out {
		out[i] = math.NaN()
	}
	byCentre := make([]bool, n)
	var thin []int // records whose polygons hold no pixel centre
	sums := map[int]float64{}
	counts := map[int]int{}
	full := grid.Bound()
	for i, shape := range s.Features {
		if shape.Geometry == nil {
			continue
		}
		v, ok, err := numeric(shape.Attributes[field])
		if err != nil {
			return nil, fmt.Errorf("%w: record %d: %s: %v", ErrAttribute, i+1, field, err)
		}
		if !ok {
			continue
		}
		switch g := shape.Geometry.(type) {
		case orb.MultiPolygon:
			mp, err := geo.Transform(g, t)
			if err != nil {
				return nil, fmt.Errorf("record %d: %w", i+1, err)
			}
			if !mp.Bound().Intersects(full) {
				continue
			}
			w := grid.WindowFor(mp.Bound())
			if w.Empty() {
				continue
			}
			sub := grid.Sub(w)
			mask := geo.Rasterize(mp, sub)
			if !holdsCentre(mp, sub, mask) {
				thin = append(thin, i)
				continue
			}
			for j, in := range mask {
				if in {
					p := (w.Row+j/w.Cols)*grid.Cols + w.Col + j%w.Cols
					out[p], byCentre[p] = v, true
				}
			}
		case orb.Point, orb.MultiPoint:
			var pts []orb.Point
			if p, ok := g.(orb.Point); ok {
				pts = []orb.Point{p}
			} else {
				pts = g.(orb.MultiPoint)
			}
			for _, p := range pts {
				x, y := t.Transform(p[0], p[1])
				c, r := grid.Pixel(orb.Point{x, y})
				if math.IsNaN(x) || math.IsNaN(y) || c < 0 || r < 0 || c >= grid.Cols || r >= grid.Rows {
					continue
				}
				sums[r*grid.Cols+c] += v
				counts[r*grid.Cols+c]++
			}
		default:
			return nil, fmt.Errorf("%w: record %d is a %s; custom layers take polygons or points", ErrAttribute, i+1, shape.Geometry.GeoJSONType())
		}
	}
	for p, c := range counts {
		if !byCentre[p] {
			out[p] = sums[p] / float64(c)
		}
	}
	for _, i := range thin {
		v, _, _ := numeric(s.Features[i].Attributes[field])
		mp, _ := geo.Transform(s.Features[i].Geometry.(orb.MultiPolygon), t)
		w := grid.WindowFor(mp.Bound())
		for j, in := range geo.Rasterize(mp, grid.Sub(w)) {
			p := (w.Row+j/w.Cols)*grid.Cols + w.Col + j%w.Cols
			if in && !byCentre[p] {
				out[p] = v
			}
		}
	}
	return out, nil
}

// holdsCentre reports whether mask came from the centre rule rather than
// geo.Rasterize's all-touched fallback: then some marked pixel's centre is
// inside mp (a few are checked; in the fallback none is).
func holdsCentre(mp orb.MultiPolygon, g geo.Grid, mask []bool) bool {
	checked := 0
	for j, in := range mask {
		if !in {
			continue
		}
		if planar.MultiPolygonContains(mp, g.PixelCenter(j%g.Cols, j/g.Cols)) {
			return true
		}
		if checked++; checked == 16 {
			return false
		}
	}
	return false
}

// numeric reads a DBF value as a number: ok is false for an empty value.
func numeric(v any) (float64, bool, error) {
	switch v := v.(type) {
	case nil:
		return 0, false, nil
	case float64:
		return v, !math.IsNaN(v), nil
	case int:
		return float64(v), true, nil
	case int64:
		return float64(v), true, nil
	case bool:
		if v {
			return 1, true, nil
		}
		return 0, true, nil
	case string:
		s := strings.TrimSpace(v)
		if s == "" {
			return 0, false, nil
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) {
			return 0, false, fmt.Errorf("%q is not a number", s)
		}
		return f, !math.IsNaN(f), nil
	}
	return 0, false, fmt.Errorf("%T value is not a number", v)
}
