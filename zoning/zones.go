package zoning

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/paulmach/orb"
	"gonum.org/v1/gonum/stat"

	"github.com/cropkit/cropkit/geo"
)

// MaxZones bounds the number of zones a request may ask for.
const MaxZones = 100

// DefaultMinAreaHa is the default minimum mapping unit: regions smaller
// than 0.1 ha (10 Sentinel-2 pixels) are merged into a neighbour, but for
// a zone's last region.
const DefaultMinAreaHa = 0.1

// DefaultSmooth is the default radius of the feature smoothing: each layer
// is replaced by its mean over a 3×3 window before clustering.
const DefaultSmooth = 1

// MaxSmooth bounds Options.Smooth (a 101×101-pixel window).
const MaxSmooth = 50

// Errors callers branch on (match with errors.Is).
var (
	// ErrInvalidOptions: a parameter is out of range (a server answers 400).
	ErrInvalidOptions = errors.New("invalid zoning parameters")
	// ErrTooFewPixels: fewer usable pixels than zones (a server answers 404:
	// there is no usable data for the field).
	ErrTooFewPixels = errors.New("too few usable pixels for the number of zones")
	// ErrEmptyLayer: a weighted layer has no value inside the mask, e.g. a
	// shapefile that does not overlap the field (a server answers 400).
	ErrEmptyLayer = errors.New("layer has no value inside the field")
)

// Options tunes Compute.
type Options struct {
	// Zones is the number of k-means clusters (1..MaxZones).
	Zones int
	// Seed makes the zones reproducible (see KMeansOptions.Seed).
	Seed uint64
	// Restarts is the number of k-means restarts (default 10).
	Restarts int
	// Smooth is the radius in pixels of the moving mean applied to every
	// layer before clustering: each clustered pixel takes the mean of the
	// clustered pixels in the (2·Smooth+1)² window around it (default
	// DefaultSmooth, a 3×3 window; negative: no smoothing; at most
	// MaxSmooth). Per-pixel noise otherwise scatters the zones into specks
	// below the minimum mapping unit. RasterVal and doses use the
	// unsmoothed values.
	Smooth int
	// MinAreaHa is the minimum mapping unit in hectares (default
	// DefaultMinAreaHa; a negative value disables the sieve). The grid's
	// CRS units must be metres.
	MinAreaHa float64
	// SimplifyTolerance, in CRS units (0: no simplification), simplifies
	// the zone boundaries with Douglas–Peucker, each boundary shared by two
	// zones once, so no gap or overlap can open between zones. The result is
	// checked (no crossing boundaries, rings keep their orientation) and
	// dropped when the check fails: see Result.Simplified. The union of the
	// zones then no longer follows the pixel edges exactly.
	SimplifyTolerance float64
}

// Zone is one management zone.
type Zone struct {
	// ID numbers zones 1..n by ascending RasterVal.
	ID int
	// RasterVal is the zone's mean of the first crop_health layer, in the
	// layer's own units (over the zone's pixels where that layer has a value).
	RasterVal float64
	// Dose is the application rate; Compute leaves it 0 (see Prescription.Apply).
	Dose float64
	// Pixels is the zone's pixel count and AreaHa its area.
	Pixels int
	AreaHa float64
}

// ZonePolygon is one connected part of a zone, in the grid's CRS.
type ZonePolygon struct {
	Zone    int
	Polygon orb.Polygon
}

// Result is the outcome of Compute.
type Result struct {
	// Grid is the pixel grid the zones were computed on.
	Grid geo.Grid
	// Labels holds each pixel's zone ID, 0 outside the mask.
	Labels []int32
	// Zones are sorted by ID. There is one zone per k-means cluster: the
	// sieve never removes a zone's last region (see Compute), so fewer
	// zones than Options.Zones only come back when k-means finds fewer
	// distinct clusters (fewer distinct feature values than zones).
	Zones []Zone
	// Polygons are the zones' connected parts, exterior rings counter-clockwise.
	Polygons []ZonePolygon
	// Inertia is the k-means objective on the clustered features: the
	// smoothed, standardized, weighted layers.
	Inertia float64
	// Clustered is the number of pixels with a value in every layer;
	// the other mask pixels took the zone of their nearest clustered pixel.
	Clustered int
	// Simplified reports whether Polygons were simplified (see
	// Options.SimplifyTolerance); false means they follow the pixel edges.
	Simplified bool
	// Quality measures the zones on the value layer (VR, polygon count,
	// smallest areas).
	Quality Quality
	// Outline, set by TileOutline, is the outline the polygons tile, in
	// the grid's CRS; nil when the polygons follow the mask's pixels.
	Outline orb.MultiPolygon
}

// Compute derives management zones for the pixels of grid where mask is
// true (the field's or the parcel's pixels):
//
//  1. the pixels to cluster are the mask pixels where every layer has a
//     value; every layer is smoothed over them (a moving mean of radius
//     Options.Smooth, default 3×3), then standardized over them (z-score)
//     and scaled by sqrt(weight), so a layer's weight is its share of the
//     squared distance k-means minimizes; a constant layer contributes
//     nothing;
//  2. k-means (KMeans) clusters those pixels into Options.Zones zones;
//  3. mask pixels missing in some layer take the zone of the nearest
//     clustered pixel (breadth-first over 4-neighbours, through any pixel);
//  4. connected regions smaller than MinAreaHa are merged into their
//     largest neighbour, smallest first, except that a zone's last region
//     is never merged (geo.SieveWithOptions with KeepLabels): every zone
//     k-means found survives, its largest region possibly below MinAreaHa;
//  5. zones are numbered 1..n by ascending RasterVal, the zone mean of the
//     first crop_health layer (or of the first layer when none is marked);
//  6. the label raster is polygonized (geo.Polygonize): 4-connected regions,
//     rings along pixel edges, holes kept, so the polygons do not overlap
//     and their union is exactly the mask pixels.
func Compute(ctx context.Context, grid geo.Grid, mask []bool, layers []Layer, opts Options) (*Result, error) {
	n := grid.Cols * grid.Rows
	if grid.Cols <= 0 || grid.Rows <= 0 || grid.DX <= 0 || grid.DY <= 0 {
		return nil, fmt.Errorf("%w: empty or malformed grid %+v", ErrInvalidOptions, grid)
	}
	if len(mask) != n {
		return nil, fmt.Errorf("%w: mask has %d pixels, grid %d", ErrInvalidOptions, len(mask), n)
	}
	if opts.Zones < 1 || opts.Zones > MaxZones {
		return nil, fmt.Errorf("%w: n_zones %d not in 1..%d", ErrInvalidOptions, opts.Zones, MaxZones)
	}
	if math.IsNaN(opts.MinAreaHa) || math.IsInf(opts.MinAreaHa, 0) {
		return nil, fmt.Errorf("%w: min_area_ha is not finite", ErrInvalidOptions)
	}
	if !(opts.SimplifyTolerance >= 0) || math.IsInf(opts.SimplifyTolerance, 0) {
		return nil, fmt.Errorf("%w: simplify tolerance %v", ErrInvalidOptions, opts.SimplifyTolerance)
	}
	if opts.Smooth > MaxSmooth {
		return nil, fmt.Errorf("%w: smoothing radius %d above %d", ErrInvalidOptions, opts.Smooth, MaxSmooth)
	}
	if opts.MinAreaHa == 0 {
		opts.MinAreaHa = DefaultMinAreaHa
	}
	if opts.Smooth == 0 {
		opts.Smooth = DefaultSmooth
	}
	var used []Layer
	valueLayer := -1
	for i, l := range layers {
		if len(l.Values) != n {
			return nil, fmt.Errorf("%w: layer %d (%s) has %d values, grid %d", ErrInvalidOptions, i, l.Name, len(l.Values), n)
		}
		if math.IsNaN(l.Weight) || l.Weight < 0 || math.IsInf(l.Weight, 0) {
			return nil, fmt.Errorf("%w: layer %d (%s) weight %v", ErrInvalidOptions, i, l.Name, l.Weight)
		}
		if valueLayer < 0 && l.Type == CropHealth {
			valueLayer = i
		}
		if l.Weight > 0 {
			used = append(used, l)
		}
	}
	if len(used) == 0 {
		return nil, fmt.Errorf("%w: no layer with a positive weight", ErrInvalidOptions)
	}
	if valueLayer < 0 {
		valueLayer = 0
	}

	for _, l := range used {
		empty := true
		for i, in := range mask {
			if in && isFinite(l.Values[i]) {
				empty = false
				break
			}
		}
		if empty && slices.Contains(mask, true) {
			return nil, fmt.Errorf("layer %s: %w", l.Name, ErrEmptyLayer)
		}
	}

	idx := clusteredPixels(mask, used)
	if len(idx) < opts.Zones {
		if len(idx) == 0 {
			return nil, fmt.Errorf("no usable pixel for %d zones: %w", opts.Zones, ErrTooFewPixels)
		}
		return nil, &ZonesAbovePixelsError{Zones: opts.Zones, Pixels: len(idx)}
	}
	features := standardize(smooth(used, idx, grid.Cols, grid.Rows, opts.Smooth), idx)
	km, err := KMeans(ctx, features, len(used), opts.Zones, KMeansOptions{Seed: opts.Seed, Restarts: opts.Restarts})
	if err != nil {
		return nil, fmt.Errorf("cluster %d pixels: %w", len(idx), err)
	}

	labels := make([]int32, n)
	for j, i := range idx {
		labels[i] = km.Labels[j] + 1
	}
	fillNearest(labels, mask, grid.Cols, grid.Rows)

	if opts.MinAreaHa > 0 {
		minPixels := int(math.Ceil(opts.MinAreaHa*10000/grid.PixelArea() - 1e-9))
		if minPixels > 1 {
			sieve := geo.SieveOptions{MinPixels: minPixels, KeepLabels: true}
			if err := geo.SieveWithOptions(labels, grid.Cols, grid.Rows, sieve); err != nil {
				return nil, fmt.Errorf("sieve zones: %w", err)
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	zones := numberZones(labels, layers[valueLayer].Values, opts.Zones, grid.PixelArea())
	res := &Result{Grid: grid, Labels: labels, Zones: zones, Inertia: km.Inertia, Clustered: len(idx)}
	res.Polygons = polygonize(labels, grid)
	if opts.SimplifyTolerance > 0 {
		res.Polygons, res.Simplified = simplifyShared(res.Polygons, opts.SimplifyTolerance, false)
	}
	res.Quality = Quality{
		VarianceReduction: varianceReduction(labels, layers[valueLayer].Values, len(zones)),
		Zones:             len(zones),
		Polygons:          len(res.Polygons),
	}
	res.Quality.SmallestZoneHa, res.Quality.SmallestPolygonHa = smallestAreas(zones, res.Polygons)
	return res, nil
}

// polygonize traces the zones' polygons (geo.Polygonize; label 0 is outside).
func polygonize(labels []int32, grid geo.Grid) []ZonePolygon {
	lps := geo.Polygonize(labels, grid, 0)
	out := make([]ZonePolygon, len(lps))
	for i, lp := range lps {
		out[i] = ZonePolygon{Zone: int(lp.Label), Polygon: lp.Polygon}
	}
	return out
}

// clusteredPixels returns the mask pixels with a value in every layer.
func clusteredPixels(mask []bool, layers []Layer) []int {
	idx := make([]int, 0, len(mask))
	for i, in := range mask {
		if !in {
			continue
		}
		ok := true
		for _, l := range layers {
			if !isFinite(l.Values[i]) {
				ok = false
				break
			}
		}
		if ok {
			idx = append(idx, i)
		}
	}
	return idx
}

// smooth returns the layers with each value at the pixels idx replaced by
// the mean of the values at the pixels of idx within the (2·radius+1)²
// window around it (other pixels are NaN); radius < 1 returns layers.
// Smoothing before standardizing keeps the weights' meaning: a noisy layer
// loses variance to smoothing, and standardizing afterwards gives it back
// its share. The window sum is separable, a running sum along rows and
// then along columns, so the time is O(pixels) whatever the radius.
func smooth(layers []Layer, idx []int, cols, rows, radius int) []Layer {
	if radius < 1 {
		return layers
	}
	n := cols * rows
	valid := make([]float64, n) // 1 at the pixels idx
	for _, i := range idx {
		valid[i] = 1
	}
	count := boxSum(valid, cols, rows, radius, make([]float64, n))
	tmp := make([]float64, n)
	out := make([]Layer, len(layers))
	for d, l := range layers {
		vals := make([]float64, n)
		for _, i := range idx {
			vals[i] = l.Values[i]
		}
		sum := boxSum(vals, cols, rows, radius, tmp)
		// tmp is free again: the means go there, sum becomes the next tmp.
		mean := tmp
		for i := range mean {
			mean[i] = math.NaN()
		}
		for _, i := range idx {
			mean[i] = sum[i] / count[i]
		}
		tmp = sum
		out[d] = l
		out[d].Values = mean
	}
	return out
}

// boxSum sums v over the (2·radius+1)² window around each pixel, clipped
// to the raster: a running sum along each row into tmp, then along each
// column back into v, which it returns.
func boxSum(v []float64, cols, rows, radius int, tmp []float64) []float64 {
	for r := range rows {
		row, out := v[r*cols:(r+1)*cols], tmp[r*cols:(r+1)*cols]
		var s float64
		for c := 0; c < min(radius, cols); c++ {
			s += row[c]
		}
		for c := range cols {
			if c+radius < cols {
				s += row[c+radius]
			}
			out[c] = s
			if c-radius >= 0 {
				s -= row[c-radius]
			}
		}
	}
	// Columns, a whole row at a time so memory is read sequentially.
	acc := make([]float64, cols)
	for r := 0; r < min(radius, rows); r++ {
		for c, x := range tmp[r*cols : (r+1)*cols] {
			acc[c] += x
		}
	}
	for r := range rows {
		if r+radius < rows {
			for c, x := range tmp[(r+radius)*cols : (r+radius+1)*cols] {
				acc[c] += x
			}
		}
		copy(v[r*cols:(r+1)*cols], acc)
		if r-radius >= 0 {
			for c, x := range tmp[(r-radius)*cols : (r-radius+1)*cols] {
				acc[c] -= x
			}
		}
	}
	return v
}

// standardize returns the feature matrix (len(idx) rows, len(layers)
// columns): each layer's z-score over the pixels idx times sqrt(weight).
func standardize(layers []Layer, idx []int) []float64 {
	dim := len(layers)
	out := make([]float64, len(idx)*dim)
	vals := make([]float64, len(idx))
	for d, l := range layers {
		for j, i := range idx {
			vals[j] = l.Values[i]
		}
		// gonum's two-pass (compensated) mean and population deviation.
		mean, std := stat.PopMeanStdDev(vals, nil)
		scale := 0.0
		if std > 0 {
			scale = math.Sqrt(l.Weight) / std
		}
		for j, v := range vals {
			out[j*dim+d] = (v - mean) * scale
		}
	}
	return out
}

// fillNearest gives every mask pixel labelled 0 the label of the nearest
// labelled pixel in breadth-first (4-neighbour) order, walking through any
// pixel so that parts of the mask without data are reached too.
func fillNearest(labels []int32, mask []bool, cols, rows int) {
	queue := make([]int32, 0, len(labels))
	seen := make([]bool, len(labels))
	missing := 0
	for i, l := range labels {
		if l != 0 {
			queue = append(queue, int32(i))
			seen[i] = true
		} else if mask[i] {
			missing++
		}
	}
	for head := 0; head < len(queue) && missing > 0; head++ {
		p := int(queue[head])
		c, r := p%cols, p/cols
		var nb [4]int
		m := 0
		if r > 0 {
			nb[m], m = p-cols, m+1
		}
		if c > 0 {
			nb[m], m = p-1, m+1
		}
		if c < cols-1 {
			nb[m], m = p+1, m+1
		}
		if r < rows-1 {
			nb[m], m = p+cols, m+1
		}
		for _, q := range nb[:m] {
			if seen[q] {
				continue
			}
			seen[q] = true
			labels[q] = labels[p]
			if mask[q] {
				missing--
			}
			queue = append(queue, int32(q))
		}
	}
	for i, in := range mask {
		if !in {
			labels[i] = 0
		}
	}
}

// numberZones renumbers the labels 1..m by ascending mean of values (NaN
// skipped) and returns the zones. Labels without a pixel are dropped.
func numberZones(labels []int32, values []float64, k int, pixelArea float64) []Zone {
	sum := make([]float64, k+1)
	cnt := make([]int, k+1)
	px := make([]int, k+1)
	for i, l := range labels {
		if l <= 0 || int(l) > k {
			continue
		}
		px[l]++
		if v := values[i]; !math.IsNaN(v) && !math.IsInf(v, 0) {
			sum[l] += v
			cnt[l]++
		}
	}
	type zl struct {
		label int
		mean  float64
	}
	var order []zl
	for l := 1; l <= k; l++ {
		if px[l] == 0 {
			continue
		}
		m := math.NaN()
		if cnt[l] > 0 {
			m = sum[l] / float64(cnt[l])
		}
		order = append(order, zl{l, m})
	}
	slices.SortStableFunc(order, func(a, b zl) int {
		switch {
		case a.mean < b.mean || (!math.IsNaN(a.mean) && math.IsNaN(b.mean)):
			return -1
		case a.mean > b.mean || (math.IsNaN(a.mean) && !math.IsNaN(b.mean)):
			return 1
		}
		return 0
	})
	newID := make([]int32, k+1)
	zones := make([]Zone, len(order))
	for j, o := range order {
		newID[o.label] = int32(j + 1)
		zones[j] = Zone{ID: j + 1, RasterVal: o.mean, Pixels: px[o.label], AreaHa: float64(px[o.label]) * pixelArea / 10000}
	}
	for i, l := range labels {
		if l > 0 && int(l) <= k {
			labels[i] = newID[l]
		}
	}
	return zones
}
