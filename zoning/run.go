package zoning

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/paulmach/orb"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/internal/panicgroup"
)

// Request is everything one zone map needs (see Run).
type Request struct {
	// Grid is the layers' pixel grid (the field window's grid).
	Grid geo.Grid
	// Outline is the field's or parcel's outline in EPSG:4326: the zones
	// tile it exactly.
	Outline orb.MultiPolygon
	// Layers are the value grids on Grid (NaN where missing).
	Layers []Layer
	// Options tune the zones (Zones is required).
	Options Options
	// Prescription sets the doses. Its zero value (no Type) means no
	// prescription: every DOSE is 0 and the collection has no Type/Unit.
	Prescription Prescription
	// DstEPSG is the output CRS (0: EPSG:4326).
	DstEPSG int
}

// Run is the one zone chain of the library: the outline's pixels
// (FieldMask), Compute, the zones clipped to the outline (TileOutline),
// optional boundary simplification, doses, reprojection. The returned
// collection's polygons tile Outline exactly in every CRS: clipped where
// pixels overhang the outline, extended to it (nearest zone) where the
// outline covers part of a pixel whose centre is outside. Its Quality
// reports how well the zones separate the field.
func Run(ctx context.Context, req Request) (*Collection, error) {
	rx := req.Prescription
	if rx.Type != "" {
		if err := rx.WithDefaults().Validate(); err != nil {
			return nil, err
		}
	}
	if len(req.Outline) == 0 {
		return nil, fmt.Errorf("%w: no outline", ErrInvalidOptions)
	}
	mask, outline, err := fieldMask(req.Outline, req.Grid)
	if err != nil {
		return nil, fmt.Errorf("field pixels: %w", err)
	}
	opts := req.Options
	tol := opts.SimplifyTolerance
	opts.SimplifyTolerance = 0 // simplified after tiling, outline kept
	// What the tiling needs of the outline alone is prepared on the other
	// core while the zones are computed.
	var prep panicgroup.Group
	var tl tiling
	prep.Go(func() { tl = prepareTiling(req.Grid, outline) })
	// The polygons come from TileOutline: Compute's would be thrown away.
	res, err := partition(ctx, req.Grid, mask, req.Layers, opts, defaultPipeline())
	prep.Wait()
	if err != nil {
		return nil, err
	}
	if err := res.tileOutline(outline, tl); err != nil {
		return nil, err
	}
	if tol > 0 {
		res.Polygons, res.Simplified = simplifyShared(res.Polygons, tol, true)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if rx.Type != "" {
		if err := rx.Apply(res); err != nil {
			return nil, err
		}
	}
	c, err := res.Collection(req.DstEPSG)
	if err != nil {
		return nil, err
	}
	if rx.Type != "" {
		c = c.WithPrescription(rx)
	}
	return c, nil
}

// TileOutline replaces r's polygons by the zones clipped to outline (in
// r.Grid's CRS; the outline r's mask was rasterized from): every pixel the
// outline touches whose centre is outside takes the zone of the nearest
// zone pixel, then geo.TileOutline cuts the pixels along the outline (and
// again after such pixels under a sliver smaller than a pixel, cut off
// from its zone's polygon, took their neighbours' zone). The
// zones' AreaHa become their clipped areas, so doses weight the real areas,
// and r.Outline is set (Collection's Boundary).
func (r *Result) TileOutline(outline orb.MultiPolygon) error {
	return r.tileOutline(outline, prepareTiling(r.Grid, outline))
}

// tiling is what TileOutline needs of the outline and the grid alone.
type tiling struct {
	pg  geo.Grid   // the padded grid (tileGrid)
	off geo.Window // where the grid's pixel (0, 0) lies in pg
	// ext marks the pixels of pg the outline touches, dilated by one.
	ext []bool
	err error
}

// prepareTiling is the label-independent part of TileOutline.
func prepareTiling(g geo.Grid, outline orb.MultiPolygon) tiling {
	pg, off, err := tileGrid(g, outline)
	if err != nil {
		return tiling{err: err}
	}
	touched := geo.RasterizeAllTouched(outline, pg)
	// Dilated by one pixel: RasterizeAllTouched ignores an outline entering
	// a pixel by less than 1/1000 of it, which the overlay does not.
	ext := slices.Clone(touched)
	for row := range pg.Rows {
		for col := range pg.Cols {
			if !touched[row*pg.Cols+col] {
				continue
			}
			for dr := -1; dr <= 1; dr++ {
				for dc := -1; dc <= 1; dc++ {
					rr, cc := row+dr, col+dc
					if rr >= 0 && rr < pg.Rows && cc >= 0 && cc < pg.Cols {
						ext[rr*pg.Cols+cc] = true
					}
				}
			}
		}
	}
	return tiling{pg: pg, off: off, ext: ext}
}

// tileOutline is TileOutline with the outline's part prepared (tl.ext is
// used up).
func (r *Result) tileOutline(outline orb.MultiPolygon, tl tiling) error {
	if tl.err != nil {
		return fmt.Errorf("tile zones to the outline: %w", tl.err)
	}
	g, pg, off, ext := r.Grid, tl.pg, tl.off, tl.ext
	labels := make([]int32, pg.Cols*pg.Rows)
	for row := range g.Rows {
		copy(labels[(row+off.Row)*pg.Cols+off.Col:], r.Labels[row*g.Cols:(row+1)*g.Cols])
	}
	for i, l := range labels {
		if l > 0 {
			ext[i] = true
		}
	}
	if !slices.ContainsFunc(labels, func(l int32) bool { return l > 0 }) {
		return fmt.Errorf("tile zones: %w", ErrTooFewPixels)
	}
	fillNearest(labels, ext, pg.Cols, pg.Rows)
	lps, err := geo.TileOutline(labels, pg, outline, 0)
	if err != nil {
		return fmt.Errorf("tile zones to the outline: %w", err)
	}
	// A pixel outside the mask takes its nearest zone, which can leave a
	// sliver of a zone cut off from the zone's polygon along the outline:
	// such pixels take their neighbours' zone instead, when that gives
	// fewer polygons.
	if relabelled := absorbSlivers(labels, pg, lps, padMask(r.Labels, g, pg, off)); relabelled != nil {
		if again, err := geo.TileOutline(relabelled, pg, outline, 0); err == nil && len(again) < len(lps) {
			lps = again
		}
	}
	area := map[int]float64{}
	r.Polygons = r.Polygons[:0]
	for _, lp := range lps {
		r.Polygons = append(r.Polygons, ZonePolygon{Zone: int(lp.Label), Polygon: lp.Polygon})
		area[int(lp.Label)] += geo.Area(orb.MultiPolygon{lp.Polygon})
	}
	for i := range r.Zones {
		r.Zones[i].AreaHa = area[r.Zones[i].ID] / 10000
	}
	r.Outline = outline
	r.Quality.Polygons = len(r.Polygons)
	r.Quality.SmallestZoneHa, r.Quality.SmallestPolygonHa = smallestAreas(r.Zones, r.Polygons)
	return nil
}

// Quality tells how well the zones separate the field, so users can
// compare zone counts (a top-level "quality" member of the collection).
type Quality struct {
	// VarianceReduction is 1 − within-zone SS / total SS of the first
	// crop_health layer (the value layer) over the field's pixels with a
	// value: the share of the field's variance the zones explain.
	VarianceReduction float64 `json:"variance_reduction"`
	// Pixels is the number of pixels clustered (with a value in every layer).
	Pixels int `json:"pixels"`
	// Zones and Polygons count the zones and their connected parts.
	Zones    int `json:"zones"`
	Polygons int `json:"polygons"`
	// SmallestZoneHa is the area of the smallest zone and
	// SmallestPolygonHa of the smallest polygon, in hectares.
	SmallestZoneHa    float64 `json:"smallest_zone_ha"`
	SmallestPolygonHa float64 `json:"smallest_polygon_ha"`
}

// varianceReduction is 1 − Σ(v − zone mean)² / Σ(v − mean)² over the
// labelled pixels with a finite value (1 for a constant field, 0 without
// values).
func varianceReduction(labels []int32, values []float64, k int) float64 {
	sum := make([]float64, k+1)
	cnt := make([]float64, k+1)
	var tsum, tcnt float64
	for i, l := range labels {
		if v := values[i]; l > 0 && int(l) <= k && isFinite(v) {
			sum[l] += v
			cnt[l]++
			tsum += v
			tcnt++
		}
	}
	if tcnt == 0 {
		return 0
	}
	mean := tsum / tcnt
	var within, total float64
	for i, l := range labels {
		if v := values[i]; l > 0 && int(l) <= k && isFinite(v) {
			d := v - sum[l]/cnt[l]
			within += d * d
			total += (v - mean) * (v - mean)
		}
	}
	if total == 0 {
		return 1
	}
	return 1 - within/total
}

func smallestAreas(zones []Zone, polys []ZonePolygon) (zone, poly float64) {
	zone, poly = math.Inf(1), math.Inf(1)
	for _, z := range zones {
		zone = min(zone, z.AreaHa)
	}
	for _, p := range polys {
		poly = min(poly, geo.Area(orb.MultiPolygon{p.Polygon})/10000)
	}
	if math.IsInf(zone, 1) {
		zone = 0
	}
	if math.IsInf(poly, 1) {
		poly = 0
	}
	return zone, poly
}

// ZonesAbovePixelsError is returned when more zones are asked for than
// the field has usable pixels (a client error: ask for fewer zones). It
// matches ErrTooFewPixels with errors.Is; errors.As gives both numbers.
type ZonesAbovePixelsError struct {
	Zones, Pixels int
}

func (e *ZonesAbovePixelsError) Error() string {
	return fmt.Sprintf("n_zones %d is above the %d usable pixels of the field", e.Zones, e.Pixels)
}

// Is makes errors.Is(err, ErrTooFewPixels) true.
func (e *ZonesAbovePixelsError) Is(target error) bool { return target == ErrTooFewPixels }

// padMask is the mask of labels (> 0) on the padded grid pg, where g's
// pixel (0, 0) is pg's pixel (off.Col, off.Row).
func padMask(labels []int32, g, pg geo.Grid, off geo.Window) []bool {
	m := make([]bool, pg.Cols*pg.Rows)
	for i, l := range labels {
		if l > 0 {
			m[(i/g.Cols+off.Row)*pg.Cols+i%g.Cols+off.Col] = true
		}
	}
	return m
}

// tileGrid is the grid the zones are tiled on: g (the field window, which
// can be smaller than the outline: trimmed to the pixel centres inside it,
// or clipped by the scene's extent) extended to the outline's bounds, plus
// one pixel of margin so that an outline along the border still has pixels
// on both sides. off.Col and off.Row are where g's pixel (0, 0) lies in it.
// It fails (ErrInvalidOptions) on an outline with no finite bounds.
func tileGrid(g geo.Grid, outline orb.MultiPolygon) (geo.Grid, geo.Window, error) {
	b := outline.Bound()
	for _, v := range []float64{b.Min[0], b.Min[1], b.Max[0], b.Max[1]} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return geo.Grid{}, geo.Window{}, fmt.Errorf("%w: outline without finite bounds", ErrInvalidOptions)
		}
	}
	// The outline's pixels relative to g, unclipped (pixel units; the
	// outline is at most the field's extent, already capped by the caller).
	c0 := min(0, int(math.Floor((b.Min[0]-g.X0)/g.DX))) - 1
	r0 := min(0, int(math.Floor((g.Y0-b.Max[1])/g.DY))) - 1
	c1 := max(g.Cols, int(math.Ceil((b.Max[0]-g.X0)/g.DX))) + 1
	r1 := max(g.Rows, int(math.Ceil((g.Y0-b.Min[1])/g.DY))) + 1
	pg := geo.Grid{EPSG: g.EPSG, X0: g.X0 + float64(c0)*g.DX, Y0: g.Y0 - float64(r0)*g.DY, DX: g.DX, DY: g.DY, Cols: c1 - c0, Rows: r1 - r0}
	return pg, geo.Window{Col: -c0, Row: -r0, Cols: g.Cols, Rows: g.Rows}, nil
}

// absorbSlivers returns labels with the pixels outside mask that lie under
// a polygon smaller than one pixel, which is not its zone's largest, set to
// the most frequent other zone among their 8 neighbours; nil when there is
// no such polygon.
func absorbSlivers(labels []int32, g geo.Grid, lps []geo.LabeledPolygon, mask []bool) []int32 {
	largest := map[int32]float64{}
	areas := make([]float64, len(lps))
	for i, lp := range lps {
		areas[i] = geo.Area(orb.MultiPolygon{lp.Polygon})
		largest[lp.Label] = max(largest[lp.Label], areas[i])
	}
	var out []int32
	for i, lp := range lps {
		if areas[i] >= sliverPixels*g.PixelArea() || areas[i] == largest[lp.Label] {
			continue
		}
		b := lp.Polygon.Bound()
		c0, r0 := int(math.Floor((b.Min[0]-g.X0)/g.DX)), int(math.Floor((g.Y0-b.Max[1])/g.DY))
		c1, r1 := int(math.Ceil((b.Max[0]-g.X0)/g.DX)), int(math.Ceil((g.Y0-b.Min[1])/g.DY))
		for r := max(r0, 0); r < min(r1, g.Rows); r++ {
			for c := max(c0, 0); c < min(c1, g.Cols); c++ {
				p := r*g.Cols + c
				if mask[p] || labels[p] != lp.Label {
					continue
				}
				votes := map[int32]int{}
				for dr := -1; dr <= 1; dr++ {
					for dc := -1; dc <= 1; dc++ {
						rr, cc := r+dr, c+dc
						if rr < 0 || rr >= g.Rows || cc < 0 || cc >= g.Cols {
							continue
						}
						if l := labels[rr*g.Cols+cc]; l > 0 && l != lp.Label {
							votes[l]++
						}
					}
				}
				best, bestN := int32(0), 0
				for l, n := range votes {
					if n > bestN || (n == bestN && l < best) {
						best, bestN = l, n
					}
				}
				if best == 0 {
					continue
				}
				if out == nil {
					out = slices.Clone(labels)
				}
				out[p] = best
			}
		}
	}
	return out
}

// sliverPixels: polygons below this many pixels' area, made of pixels
// outside the mask, are slivers along the outline (see absorbSlivers).
const sliverPixels = 1
