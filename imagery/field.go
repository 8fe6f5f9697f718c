package imagery

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/paulmach/orb"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/geo/crs"
)

// FieldRaster is the part of a scene under one field, on the scene's grid.
// All slices are row-major over Grid, rows north to south.
type FieldRaster struct {
	// Grid is the field window's grid, in the scene CRS: the smallest block
	// of scene pixels holding every pixel of the field.
	Grid geo.Grid
	// Window is where Grid lies in the scene's grid.
	Window geo.Window
	// InField marks the pixels whose centre lies inside the field (or, for a
	// parcel too thin to hold any centre, every pixel it touches).
	InField []bool
	// FieldPixels counts the field's pixels: the true values of InField
	// plus OutsidePixels.
	FieldPixels int
	// OutsidePixels counts the field's pixels beyond the scene's extent (on
	// the scene's grid extended): no data, so never clear. A field the
	// scene covers only in part thus has statistics of the covered part
	// over the pixels of the whole field.
	OutsidePixels int
	// Clear marks pixels the scene mask does not flag (all true without a mask).
	Clear []bool
	// Bands holds each requested band's reflectance (radar bands: linear
	// backscatter power), NaN where the band has no data (DN 0 or the
	// file's nodata value) or lies outside the band's extent.
	Bands map[string][]float64
	// decibels holds, for the radar bands stored in dB, the values as
	// read (before 10^(v/10)): an index that is a band in dB (vv, vh) takes
	// them instead of converting the linear power back with a log.
	decibels map[string][]float64
}

// ProjectField reprojects a field given in EPSG:4326 to the scene's CRS.
func (s *Scene) ProjectField(field orb.MultiPolygon) (orb.MultiPolygon, error) {
	t, err := crs.New(4326, s.grid.EPSG)
	if err != nil {
		return nil, fmt.Errorf("project field to EPSG:%d: %w", s.grid.EPSG, err)
	}
	mp, err := geo.Transform(field, t)
	if err != nil {
		return nil, fmt.Errorf("project field to EPSG:%d: %w", s.grid.EPSG, err)
	}
	return mp, nil
}

// PlanFields tells the scene the fields (EPSG:4326) about to be read, so
// that each tile is decoded only down to the last row any of them needs: a
// DEFLATE tile decodes from its first row on, and scattered fields seldom
// reach the bottom of every tile they touch (1,000 fields over a 10980²
// tile of 512² tiles need 89 % of the rows of the tiles they touch). Reads
// of fields the plan does not hold are still exact: a tile decoded too
// short for a read is decoded again, deeper. Without a plan, tiles decode
// whole. A later call replaces the plan; it does nothing for a scene
// without a tile cache. Fields that cannot be projected or lie outside the
// scene are left out (their reads fail or find nothing anyway).
func (s *Scene) PlanFields(fields []orb.MultiPolygon) {
	if s.cache == nil {
		return
	}
	windows := make([]geo.Window, 0, len(fields))
	for _, f := range fields {
		p, err := s.ProjectField(f)
		if err != nil || !usableBound(p) {
			continue
		}
		// A superset of the window readProjected reads (it trims to the
		// field's pixels), so a plan never falls short of a read.
		if w := fieldWindow(s.grid, p.Bound()).Intersect(s.grid.Full()); !w.Empty() {
			windows = append(windows, w)
		}
	}
	s.cache.setPlan(s.grid, windows)
}

// usableBound reports whether field is non-empty with finite bounds.
func usableBound(field orb.MultiPolygon) bool {
	b := field.Bound()
	return len(field) > 0 && !math.IsNaN(b.Min[0]) && !math.IsInf(b.Min[0], 0) && !math.IsInf(b.Max[0], 0) &&
		!math.IsNaN(b.Max[0]) && !math.IsNaN(b.Min[1]) && !math.IsNaN(b.Max[1]) && !math.IsInf(b.Min[1], 0) && !math.IsInf(b.Max[1], 0)
}

// ReadField reads the given bands (reflectance) and the mask under field, a
// (multi)polygon in EPSG:4326. It reads only the tiles under the field's
// window. It returns an error matching ErrNoOverlap when no pixel of the
// scene lies in the field, and ErrMissingBand when the scene lacks a band.
func (s *Scene) ReadField(ctx context.Context, field orb.MultiPolygon, bands []string) (*FieldRaster, error) {
	projected, err := s.ProjectField(field)
	if err != nil {
		return nil, err
	}
	fr, release, err := s.readProjected(ctx, projected, bands, nil, 0)
	if err != nil {
		return nil, err
	}
	release()
	return fr, nil
}

// readProjected is ReadField for a field already in the scene CRS. It
// reserves the read's memory (for indices products to follow) from the
// scene's budget; the caller calls release once done with the arrays. Of
// the bands named in keepDecibels it also keeps the dB values as read.
func (s *Scene) readProjected(ctx context.Context, field orb.MultiPolygon, bands, keepDecibels []string, indices int) (fr *FieldRaster, release func(), err error) {
	if err := s.CheckBands(bands...); err != nil {
		return nil, nil, err
	}
	if !usableBound(field) {
		return nil, nil, fmt.Errorf("%w: empty or invalid field geometry", ErrNoOverlap)
	}
	full := fieldWindow(s.grid, field.Bound())
	win := full.Intersect(s.grid.Full())
	if win.Empty() {
		return nil, nil, ErrNoOverlap
	}
	// The window is counted in the scene's own pixels, before anything is
	// allocated for it: a normal field over a scene of tiny pixels is a
	// huge window. The whole field's window counts, also beyond the
	// scene's extent, where its pixels are counted (not allocated).
	if err := checkWindow("", full, s.grid, s.maxPix); err != nil {
		return nil, nil, err
	}
	release, err = s.budget.Acquire(ctx, fieldBytes(int64(win.Len()), len(bands), indices))
	if err != nil {
		return nil, nil, err
	}
	fr, err = s.readWindow(ctx, field, bands, keepDecibels, win, full)
	if err != nil {
		release()
		return nil, nil, err
	}
	return fr, release, nil
}

// fieldWindow is the window of g's pixels under the bounds b, not clipped
// to g's extent.
func fieldWindow(g geo.Grid, b orb.Bound) geo.Window {
	c0 := math.Floor((b.Min[0] - g.X0) / g.DX)
	c1 := math.Ceil((b.Max[0] - g.X0) / g.DX)
	r0 := math.Floor((g.Y0 - b.Max[1]) / g.DY)
	r1 := math.Ceil((g.Y0 - b.Min[1]) / g.DY)
	// Bounds far outside the grid would overflow an int: such a window is
	// refused by the pixel cap anyway, so it is clamped to a size beyond it.
	const far = 1 << 30
	clamp := func(v float64) int { return int(max(-far, min(far, v))) }
	return geo.Window{Col: clamp(c0), Row: clamp(r0), Cols: clamp(c1) - clamp(c0), Rows: clamp(r1) - clamp(r0)}
}

// readWindow reads bands and the mask under field, whose bounding window is
// win, the part in the scene of full, the field's whole window.
func (s *Scene) readWindow(ctx context.Context, field orb.MultiPolygon, bands, keepDecibels []string, win, full geo.Window) (*FieldRaster, error) {
	sub := s.grid.Sub(win)
	inField := geo.Rasterize(field, sub)
	if len(inField) != win.Len() {
		return nil, fmt.Errorf("rasterize field: got %d pixels for a %s window", len(inField), win)
	}
	n := 0
	for _, in := range inField {
		if in {
			n++
		}
	}
	if n == 0 {
		return nil, ErrNoOverlap
	}
	outside := 0
	if full != win {
		outside = s.outsidePixels(field, sub, win, full)
	}
	// Trim to the field's pixels: bounds a hair past a pixel edge (reprojection
	// round-off on pixel-aligned parcels) would otherwise add empty rows.
	if tw := trimmed(inField, win); tw != win {
		inField = crop(inField, win, tw)
		win, sub = tw, s.grid.Sub(tw)
	}
	fr := &FieldRaster{Grid: sub, Window: win, InField: inField, FieldPixels: n + outside, OutsidePixels: outside,
		Bands: make(map[string][]float64, len(bands))}
	for _, name := range bands {
		if _, done := fr.Bands[name]; done {
			continue
		}
		b := s.bands[name]
		v, err := s.readScaled(ctx, b, sub)
		if err != nil {
			return nil, err
		}
		if b.decibel && slices.Contains(keepDecibels, name) {
			if fr.decibels == nil {
				fr.decibels = make(map[string][]float64, len(keepDecibels))
			}
			fr.decibels[name] = v
			lin := s.floats.get(len(v))
			toLinear(lin, v)
			v = lin
		} else {
			b.finish(v)
		}
		fr.Bands[name] = v
	}
	clear, err := s.readMask(ctx, sub)
	if err != nil {
		return nil, err
	}
	fr.Clear = clear
	return fr, nil
}

// outsidePixels counts the pixels of field in full (its whole window on
// the scene's grid) outside win (full clipped to the scene; sub is win's
// grid), by Rasterize's rule over the whole field: pixel centres inside,
// or every pixel touched when the field holds no centre at all. It counts
// strip by strip (geo.CountCentres), so its memory does not grow with the
// part outside the scene.
func (s *Scene) outsidePixels(field orb.MultiPolygon, sub geo.Grid, win, full geo.Window) int {
	// full minus win: the rows above and below win, then the columns left
	// and right of it in win's rows.
	parts := []geo.Window{
		{Col: full.Col, Row: full.Row, Cols: full.Cols, Rows: win.Row - full.Row},
		{Col: full.Col, Row: win.Row + win.Rows, Cols: full.Cols, Rows: full.Row + full.Rows - win.Row - win.Rows},
		{Col: full.Col, Row: win.Row, Cols: win.Col - full.Col, Rows: win.Rows},
		{Col: win.Col + win.Cols, Row: win.Row, Cols: full.Col + full.Cols - win.Col - win.Cols, Rows: win.Rows},
	}
	n := 0
	for _, w := range parts {
		if !w.Empty() {
			n += geo.CountCentres(field, s.grid.Sub(w))
		}
	}
	if n > 0 || geo.CountCentres(field, sub) > 0 {
		return n
	}
	// A field thinner than a pixel: Rasterize takes every pixel it touches.
	for _, w := range parts {
		if !w.Empty() {
			n += geo.CountTouched(field, s.grid.Sub(w))
		}
	}
	return n
}

// trimmed is the smallest window inside win holding every true pixel of mask.
func trimmed(mask []bool, win geo.Window) geo.Window {
	c0, r0, c1, r1 := win.Cols, win.Rows, -1, -1
	for r := 0; r < win.Rows; r++ {
		for c, in := range mask[r*win.Cols : (r+1)*win.Cols] {
			if in {
				c0, c1 = min(c0, c), max(c1, c)
				r0, r1 = min(r0, r), max(r1, r)
			}
		}
	}
	if c1 < 0 {
		return win
	}
	return geo.Window{Col: win.Col + c0, Row: win.Row + r0, Cols: c1 - c0 + 1, Rows: r1 - r0 + 1}
}

// crop copies the part of mask (over win) that lies in sub, a window inside win.
func crop(mask []bool, win, sub geo.Window) []bool {
	out := make([]bool, 0, sub.Len())
	for r := sub.Row; r < sub.Row+sub.Rows; r++ {
		start := (r-win.Row)*win.Cols + (sub.Col - win.Col)
		out = append(out, mask[start:start+sub.Cols]...)
	}
	return out
}

// resampling maps each pixel of a target grid to the pixel of a band's grid
// holding its centre (nearest neighbour; exact for nested S2 grids).
type resampling struct {
	src          geo.Window // the band pixels needed, clipped to the band
	cols, rows   []int      // per target col/row: index within src, −1 outside the band
	tcols, trows int
}

func newResampling(target, band geo.Grid) resampling {
	r := resampling{tcols: target.Cols, trows: target.Rows, cols: make([]int, target.Cols), rows: make([]int, target.Rows)}
	minC, maxC, minR, maxR := math.MaxInt, -1, math.MaxInt, -1
	for c := range r.cols {
		x := target.X0 + (float64(c)+0.5)*target.DX
		bc := int(math.Floor((x - band.X0) / band.DX))
		if bc < 0 || bc >= band.Cols {
			bc = -1
		} else {
			minC, maxC = min(minC, bc), max(maxC, bc)
		}
		r.cols[c] = bc
	}
	for row := range r.rows {
		y := target.Y0 - (float64(row)+0.5)*target.DY
		br := int(math.Floor((band.Y0 - y) / band.DY))
		if br < 0 || br >= band.Rows {
			br = -1
		} else {
			minR, maxR = min(minR, br), max(maxR, br)
		}
		r.rows[row] = br
	}
	if maxC < 0 || maxR < 0 {
		return r // src stays empty
	}
	r.src = geo.Window{Col: minC, Row: minR, Cols: maxC - minC + 1, Rows: maxR - minR + 1}
	for i, c := range r.cols {
		if c >= 0 {
			r.cols[i] = c - minC
		}
	}
	for i, row := range r.rows {
		if row >= 0 {
			r.rows[i] = row - minR
		}
	}
	return r
}

// identity reports whether the band pixels map one to one onto the target.
func (r resampling) identity() bool {
	if r.src.Cols != r.tcols || r.src.Rows != r.trows {
		return false
	}
	for i, c := range r.cols {
		if c != i {
			return false
		}
	}
	for i, row := range r.rows {
		if row != i {
			return false
		}
	}
	return true
}

// readScaled returns b's values on target after its scale and offset
// (reflectance, or radar backscatter in the file's unit), NaN where b has
// no data; finish turns them into what indices use.
func (s *Scene) readScaled(ctx context.Context, b *band, target geo.Grid) ([]float64, error) {
	if err := s.open(ctx, b); err != nil {
		return nil, err
	}
	if b.grid.EPSG != target.EPSG {
		return nil, fmt.Errorf("band %s: EPSG:%d differs from the scene's EPSG:%d", b.name, b.grid.EPSG, target.EPSG)
	}
	rs := newResampling(target, b.grid)
	if rs.src.Empty() {
		out := s.floats.get(target.Cols * target.Rows)
		for i := range out {
			out[i] = math.NaN()
		}
		return out, nil
	}
	// Reflectance = (DN + add) / divisor: dividing by 10000 rather than
	// multiplying by 0.0001 (inexact in binary) matches numpy's DN/10000.
	// The two forms are separate loops, not a function value: this runs
	// once per pixel of every band. The band's own pixels are converted,
	// as they are read: once each, also where resampling repeats them.
	cv := dnConverter{add: b.add, scale: b.scale, nodata: b.nodata, hasND: b.hasND}
	if d := 1 / b.scale; d == math.Round(d) {
		cv.divisor, cv.divide = d, true
	}
	dn, err := s.readDN(ctx, b, rs.src, &cv)
	if err != nil {
		return nil, err
	}
	if rs.identity() { // same grid as the scene
		return dn, nil
	}
	nan := math.NaN()
	out := s.floats.get(target.Cols * target.Rows) // every value is written below
	defer s.floats.put(dn)
	for row, sr := range rs.rows {
		line := out[row*rs.tcols : (row+1)*rs.tcols]
		if sr < 0 {
			for i := range line {
				line[i] = nan
			}
			continue
		}
		srcLine := dn[sr*rs.src.Cols : (sr+1)*rs.src.Cols]
		for c, sc := range rs.cols {
			if sc < 0 {
				line[c] = nan
				continue
			}
			line[c] = srcLine[sc]
		}
	}
	return out, nil
}

// finish turns scaled values into what indices use: linear power for a
// radar band in dB, MSI-equivalent reflectance for a Landsat band.
func (b *band) finish(v []float64) {
	switch {
	case b.decibel:
		toLinear(v, v)
	case b.landsat:
		b.hls.harmonize(v)
	}
}

// toLinear writes the linear power 10^(v/10) of the dB values db into lin
// (NaN stays NaN; the two may be the same slice), as e^(v·ln10/10):
// math.Exp is several times faster than math.Pow and agrees to an ulp or two.
func toLinear(lin, db []float64) {
	lin = lin[:len(db)]
	for i, x := range db {
		lin[i] = math.Exp(x * dBToLn)
	}
}

// dBToLn is ln(10)/10: 10^(x/10) = e^(x·dBToLn).
const dBToLn = math.Ln10 / 10

// dnConverter turns digital numbers into reflectance: (DN + add) / divisor
// when the scale is the inverse of an integer, else (DN + add) · scale; NaN
// where the DN is 0, the nodata value or NaN.
type dnConverter struct {
	add, scale, divisor, nodata float64
	divide, hasND               bool
}

// convert writes the reflectance of src into dst (which may be src).
func (cv dnConverter) convert(dst, src []float64) {
	dst = dst[:len(src)]
	nan := math.NaN()
	nodata := cv.nodata
	if !cv.hasND {
		nodata = 0 // already no data
	}
	if cv.divide {
		d := cv.divisor
		for i, v := range src {
			if v == 0 || v == nodata || v != v {
				dst[i] = nan
			} else {
				dst[i] = (v + cv.add) / d
			}
		}
		return
	}
	for i, v := range src {
		if v == 0 || v == nodata || v != v {
			dst[i] = nan
		} else {
			dst[i] = (v + cv.add) * cv.scale
		}
	}
}

// readMask returns, on target, whether each pixel is clear of the scene mask.
func (s *Scene) readMask(ctx context.Context, target geo.Grid) ([]bool, error) {
	clear := make([]bool, target.Cols*target.Rows)
	if s.mask == nil {
		for i := range clear {
			clear[i] = true
		}
		return clear, nil
	}
	m := s.mask
	if err := s.open(ctx, m); err != nil {
		return nil, err
	}
	if m.grid.EPSG != target.EPSG {
		return nil, fmt.Errorf("mask %s: EPSG:%d differs from the scene's EPSG:%d", m.name, m.grid.EPSG, target.EPSG)
	}
	rs := newResampling(target, m.grid)
	if rs.src.Empty() {
		return clear, nil // outside the mask's extent: treat as no data
	}
	dn, err := s.readDN(ctx, m, rs.src, nil)
	if err != nil {
		return nil, err
	}
	defer s.floats.put(dn)
	for row, sr := range rs.rows {
		if sr < 0 {
			continue
		}
		line := clear[row*rs.tcols : (row+1)*rs.tcols]
		srcLine := dn[sr*rs.src.Cols : (sr+1)*rs.src.Cols]
		for c, sc := range rs.cols {
			if sc < 0 {
				continue
			}
			v := srcLine[sc]
			switch s.maskKind {
			case qaSCL:
				line[c] = v >= 0 && v < 256 && !s.maskedAs[int(v)]
			case qaLandsatC1, qaLandsatC2:
				line[c] = landsatUsable(s.maskKind, v)
			default:
				line[c] = v != 1
			}
		}
	}
	return clear, nil
}
