package zoning

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/cropkit/cropkit/geo"
	"github.com/paulmach/orb"
)

// MaxZones bounds the number of zones a request may ask for.
const MaxZones = 100

// DefaultMinAreaHa is the default minimum mapping unit: regions smaller
// than 0.1 ha (10 Sentinel-2 pixels) are merged into a neighbour.
const DefaultMinAreaHa = 0.1

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
	// Zones are sorted by ID; a zone absorbed entirely by the sieve is absent.
	Zones []Zone
	// Polygons are the zones' connected parts, exterior rings counter-clockwise.
	Polygons []ZonePolygon
	// Inertia is the k-means objective on the standardized, weighted features.
	Inertia float64
	// Clustered is the number of pixels with a value in every layer;
	// the other mask pixels took the zone of their nearest clustered pixel.
	Clustered int
	// Simplified reports whether Polygons were simplified (see
	// Options.SimplifyTolerance); false means they follow the pixel edges.
	Simplified bool
}

// Compute derives management zones for the pixels of grid where mask is
// true (the field's or the parcel's pixels):
//
//  1. every layer is standardized over the mask pixels where all layers
//     have a value (z-score) and scaled by sqrt(weight), so a layer's
//     weight is its share of the squared distance k-means minimizes;
//     a constant layer contributes nothing;
//  2. k-means (KMeans) clusters those pixels into Options.Zones zones;
//  3. mask pixels missing in some layer take the zone of the nearest
//     clustered pixel (breadth-first over 4-neighbours, through any pixel);
//  4. connected regions smaller than MinAreaHa are merged into their
//     largest neighbour (geo.Sieve);
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
	if opts.MinAreaHa == 0 {
		opts.MinAreaHa = DefaultMinAreaHa
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

	// Pixels to cluster: in the mask, with a value in every used layer.
	idx := make([]int, 0, n)
	for i, in := range mask {
		if !in {
			continue
		}
		ok := true
		for _, l := range used {
			if v := l.Values[i]; math.IsNaN(v) || math.IsInf(v, 0) {
				ok = false
				break
			}
		}
		if ok {
			idx = append(idx, i)
		}
	}
	if len(idx) < opts.Zones {
		return nil, fmt.Errorf("%d usable pixels for %d zones: %w", len(idx), opts.Zones, ErrTooFewPixels)
	}
	features := standardize(used, idx)
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
			if err := geo.Sieve(labels, grid.Cols, grid.Rows, minPixels, 0); err != nil {
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
		res.Polygons, res.Simplified = simplifyShared(res.Polygons, opts.SimplifyTolerance)
	}
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

// standardize returns the feature matrix (len(idx) rows, len(layers)
// columns): each layer's z-score over the pixels idx times sqrt(weight).
func standardize(layers []Layer, idx []int) []float64 {
	dim := len(layers)
	out := make([]float64, len(idx)*dim)
	for d, l := range layers {
		var mean float64
		for _, i := range idx {
			mean += l.Values[i]
		}
		mean /= float64(len(idx))
		var ss float64
		for _, i := range idx {
			ss += (l.Values[i] - mean) * (l.Values[i] - mean)
		}
		std := math.Sqrt(ss / float64(len(idx)))
		scale := 0.0
		if std > 0 {
			scale = math.Sqrt(l.Weight) / std
		}
		for j, i := range idx {
			out[j*dim+d] = (l.Values[i] - mean) * scale
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
