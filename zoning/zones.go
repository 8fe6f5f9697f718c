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
	"github.com/cropkit/cropkit/internal/panicgroup"
	"github.com/cropkit/cropkit/internal/unionfind"
)

// MaxZones bounds the number of zones a request may ask for.
const MaxZones = 100

// DefaultMinAreaHa is the default minimum mapping unit: regions smaller
// than 0.1 ha (10 Sentinel-2 pixels) are merged into a neighbour, but for
// a zone's last region.
const DefaultMinAreaHa = 0.1

// DefaultSmooth is the default radius of the feature smoothing: none.
// A moving mean blurs the zones of small or elongated fields, and the
// sieve and refinement make the zones coherent without it (see the
// README's comparison).
const DefaultSmooth = -1

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
	// Smooth is the radius in pixels of a moving mean applied to every
	// layer before clustering: each clustered pixel takes the mean of the
	// clustered pixels in the (2·Smooth+1)² window around it (0: the
	// default, DefaultSmooth, no smoothing; negative: none; at most
	// MaxSmooth). RasterVal and doses use the unsmoothed values.
	Smooth int
	// MinAreaHa is the minimum mapping unit in hectares (default
	// DefaultMinAreaHa; a negative value disables the sieve), applied as
	// the pixel count nearest to it. The grid's CRS units must be metres.
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
//     value; every layer is optionally smoothed over them (Options.Smooth,
//     default none), then standardized over them (z-score) and scaled by
//     sqrt(weight), so a layer's weight is its share of the squared
//     distance k-means minimizes; a constant layer contributes nothing;
//  2. k-means clusters those pixels into Options.Zones zones, from several
//     starts (the exact 1-D optimum when there is one layer and at most
//     50,000 pixels, KMeans' restarts, more single runs on small fields);
//  3. each start is post-processed several ways (see the package
//     documentation, Cleaning): mask pixels missing in some layer take the
//     zone of the nearest clustered pixel, regions below MinAreaHa merge
//     into the neighbouring zone of closest mean (a zone's last region
//     never), and boundary pixels move to the closest zone while every
//     region keeps at least MinAreaHa and stays connected;
//  4. the partition explaining most of the features' variance is kept (on
//     fields of at least 2·k minimum mapping units, the best one of at most
//     2k regions when within 0.04 of it and not below a plain sieve into the
//     largest neighbours on the same starts);
//  5. zones are numbered 1..n by ascending RasterVal, the zone mean of the
//     first crop_health layer (or of the first layer when none is marked);
//  6. the label raster is polygonized (geo.Polygonize): 4-connected regions,
//     rings along pixel edges, holes kept, so the polygons do not overlap
//     and their union is exactly the mask pixels (Run then clips them to
//     the outline).
func Compute(ctx context.Context, grid geo.Grid, mask []bool, layers []Layer, opts Options) (*Result, error) {
	return computeWith(ctx, grid, mask, layers, opts, defaultPipeline())
}

// pipeline holds the steps' choices that Options do not expose; the
// candidates of the zone-quality comparison (README, vr_test.go) vary them.
type pipeline struct {
	// smooth is the default moving-mean radius (Options.Smooth 0; negative: none).
	smooth int
	// lloydToo also starts from KMeans when the exact 1-D k-means runs.
	lloydToo bool
	// variants are the post-processings tried on every starting
	// partition, the best kept (empty: variant alone).
	variants []variant
	variant
	// vrSlack: a partition with fewer regions is preferred when its
	// variance reduction is within vrSlack of the best.
	vrSlack float64
	// capSlack > 0 prefers the best partition of at most 2k regions when
	// it is within capSlack of the best.
	capSlack float64
	// capMinUnits: the cap applies on fields of at least capMinUnits·k
	// minimum mapping units; smaller fields cannot hold 2k regions of
	// legal size anyway, and there the highest variance reduction wins.
	capMinUnits int
	// extraStarts single-restart Lloyd runs are added on small fields.
	extraStarts int
	// searchPixels bounds the fields (clustered pixels) that get every
	// start and variant; larger ones get the first start and variant
	// alone (0: no bound).
	searchPixels int
}

// variant is one way from a k-means partition to a map that respects the
// minimum mapping unit.
type variant struct {
	// beta is the weight of the spatial term of regularize (0: none).
	beta float64
	// mergeByValue makes the sieve merge a small region into the
	// neighbouring zone of the closest mean (geo.SieveOptions.Values)
	// rather than into the largest neighbour.
	mergeByValue bool
	// intoLarge sieves with geo.SieveOptions.IntoLargeOnly, sievePasses
	// times at most (until nothing merges).
	intoLarge   bool
	sievePasses int
	// refine moves boundary pixels to the closest zone after the sieve.
	refine bool
}

// defaultPipeline is the winner of the README's comparison: no smoothing;
// starting partitions from the exact 1-D k-means, Lloyd's restarts and,
// on fields of at most maxExact1D pixels, 16 single Lloyd runs; each
// post-processed five ways; the partition with the highest variance
// reduction kept, except that on fields of at least 2·k minimum mapping
// units the best one of at most 2k regions is kept when it is within 0.04
// and not below common practice on the same starts (a sieve into the
// largest neighbours at the minimum mapping unit).
// Fields of more than 5,000 pixels (50 ha at 10 m; none of the measured
// real fields) get one start (exact 1-D up to 50,000 pixels, else Lloyd)
// and the best single post-processing, for speed.
func defaultPipeline() pipeline {
	return pipeline{smooth: -1, lloydToo: true, extraStarts: 16, capSlack: 0.04, capMinUnits: 2, searchPixels: 5000,
		// Alone on fields above searchPixels: the best single variant.
		variant: variant{mergeByValue: true, intoLarge: true, sievePasses: 1, refine: true},
		variants: []variant{
			{mergeByValue: true, intoLarge: true, sievePasses: 10, refine: true},
			{mergeByValue: true, intoLarge: true, sievePasses: 1, refine: true},
			{beta: 0.5, mergeByValue: true, intoLarge: true, sievePasses: 1, refine: true},
			{mergeByValue: true, refine: true},
			{intoLarge: true, sievePasses: 1, refine: true},
		}}
}

func computeWith(ctx context.Context, grid geo.Grid, mask []bool, layers []Layer, opts Options, pipe pipeline) (*Result, error) {
	res, err := partition(ctx, grid, mask, layers, opts, pipe)
	if err != nil {
		return nil, err
	}
	res.Polygons = polygonize(res.Labels, grid)
	if opts.SimplifyTolerance > 0 {
		res.Polygons, res.Simplified = simplifyShared(res.Polygons, opts.SimplifyTolerance, false)
	}
	res.Quality.Polygons = len(res.Polygons)
	res.Quality.SmallestZoneHa, res.Quality.SmallestPolygonHa = smallestAreas(res.Zones, res.Polygons)
	return res, nil
}

// partition is computeWith up to the zones: their labels, statistics and
// variance reduction, without polygons (Run traces them clipped to the
// outline instead).
func partition(ctx context.Context, grid geo.Grid, mask []bool, layers []Layer, opts Options, pipe pipeline) (*Result, error) {
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
		opts.Smooth = pipe.smooth
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
	// Starting partitions: the exact 1-D optimum when it is cheap, and
	// Lloyd's restarts (KMeans). Two near-optimal partitions can differ
	// much in how they survive the minimum mapping unit, so both go on.
	// Beyond searchPixels the search is cut to one start and one
	// post-processing, to keep large fields fast (O(pixels) passes).
	small := pipe.searchPixels <= 0 || len(idx) <= pipe.searchPixels
	// The sieve and refinement compare the unsmoothed features per pixel
	// (without smoothing, the ones clustered), spread on the other core
	// while k-means runs.
	var spread panicgroup.Group
	var feat []float64
	spread.Go(func() {
		if opts.Smooth < 1 {
			feat = scatterFeatures(features, len(used), idx, n)
		} else {
			feat = pixelFeatures(used, idx, n)
		}
	})
	var starts []KMeansResult
	if len(used) == 1 && len(idx) <= maxExact1D {
		var km KMeansResult
		km.Labels, km.Inertia = kmeans1D(features, opts.Zones)
		starts = append(starts, km)
	}
	if len(starts) == 0 || (pipe.lloydToo && small) {
		km, err := KMeans(ctx, features, len(used), opts.Zones, KMeansOptions{Seed: opts.Seed, Restarts: opts.Restarts})
		if err != nil {
			spread.Wait()
			return nil, fmt.Errorf("cluster %d pixels: %w", len(idx), err)
		}
		starts = append(starts, km)
	}
	// On small fields, single Lloyd runs from other seeds add local optima
	// of other shapes (cheap there, and where the sieve hurts most).
	if small {
		for s := range uint64(pipe.extraStarts) {
			km, err := KMeans(ctx, features, len(used), opts.Zones, KMeansOptions{Seed: opts.Seed + 1 + s, Restarts: 1})
			if err != nil {
				spread.Wait()
				return nil, fmt.Errorf("cluster %d pixels: %w", len(idx), err)
			}
			starts = append(starts, km)
		}
	}
	minPixels := 1
	if opts.MinAreaHa > 0 {
		// The pixel count nearest the area: a grid of 9.995 m pixels
		// cannot hold exactly 0.1 ha, and rounding up would ask 11 pixels.
		minPixels = max(1, int(math.Round(opts.MinAreaHa*10000/grid.PixelArea())))
	}
	spread.Wait()
	variants := pipe.variants
	if len(variants) == 0 || !small {
		variants = []variant{pipe.variant}
	}
	type candidate struct {
		labels  []int32
		vr      float64
		regions int
	}
	var cands []candidate
	bestVR := math.Inf(-1)
	for _, km := range starts {
		for _, v := range variants {
			l, err := postProcess(ctx, km.Labels, idx, features, feat, mask, grid, len(used), opts.Zones, minPixels, v)
			if err != nil {
				return nil, err
			}
			c := candidate{labels: l}
			// A single candidate wins whatever its scores (large fields).
			if len(variants)*len(starts) > 1 {
				c.vr = featureVR(l, feat, len(used), opts.Zones)
				_, c.regions = countRegions(l, grid.Cols, grid.Rows)
			}
			cands = append(cands, c)
			bestVR = max(bestVR, c.vr)
		}
	}
	// The partition explaining most of the clustered features' variance
	// wins; among those within vrSlack of it, the one with fewest regions.
	best := -1
	for i, c := range cands {
		if c.vr >= bestVR-pipe.vrSlack-1e-12 && (best < 0 || c.regions < cands[best].regions ||
			(c.regions == cands[best].regions && c.vr > cands[best].vr)) {
			best = i
		}
	}
	if pipe.capSlack > 0 && len(idx) >= pipe.capMinUnits*opts.Zones*minPixels {
		// The best partition of at most 2k regions, unless it loses more
		// than capSlack of variance reduction.
		capped := -1
		for i, c := range cands {
			if c.regions <= 2*opts.Zones && (capped < 0 || c.vr > cands[capped].vr) {
				capped = i
			}
		}
		// Never below what common practice gives on the same starts (each
		// start sieved into its largest neighbours at the minimum mapping
		// unit, gdal_sieve's rule): fewer polygons must not cost that.
		practice := math.Inf(-1)
		if capped >= 0 && capped != best && cands[capped].vr >= bestVR-pipe.capSlack {
			for _, km := range starts {
				l, err := postProcess(ctx, km.Labels, idx, features, feat, mask, grid, len(used), opts.Zones, minPixels,
					variant{intoLarge: true, sievePasses: 1})
				if err != nil {
					return nil, err
				}
				practice = max(practice, featureVR(l, feat, len(used), opts.Zones))
			}
		}
		if capped >= 0 && cands[capped].vr >= bestVR-pipe.capSlack && cands[capped].vr >= practice-1e-12 {
			best = capped
		}
	}
	labels := cands[best].labels
	inertia := math.Inf(1) // the best k-means objective among the starts
	for _, km := range starts {
		inertia = min(inertia, km.Inertia)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	zones := numberZones(labels, layers[valueLayer].Values, opts.Zones, grid.PixelArea())
	res := &Result{Grid: grid, Labels: labels, Zones: zones, Inertia: inertia, Clustered: len(idx)}
	res.Quality = Quality{
		VarianceReduction: varianceReduction(labels, layers[valueLayer].Values, len(zones)),
		Pixels:            len(idx),
		Zones:             len(zones),
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
	// The queue starts with the labelled pixels in raster order, as a
	// breadth-first search from all of them would, but only those next to
	// an unlabelled pixel: the others have nothing to give. A pixel is
	// reached once, when it takes a label, so "labelled" is "seen". One
	// pass finds them, counts the mask pixels to fill and notes labels
	// outside the mask (cleared at the end).
	missing := 0
	labelledOutside := false
	var queue []int32
	for r := range rows {
		row := labels[r*cols : (r+1)*cols]
		for c, l := range row {
			p := r*cols + c
			if l == 0 {
				if mask[p] {
					missing++
				}
				continue
			}
			if !mask[p] {
				labelledOutside = true
			}
			if (c > 0 && row[c-1] == 0) || (c < cols-1 && row[c+1] == 0) ||
				(r > 0 && labels[p-cols] == 0) || (r < rows-1 && labels[p+cols] == 0) {
				queue = append(queue, int32(p))
			}
		}
	}
	frontier := len(queue)
	for head := 0; head < len(queue) && missing > 0; head++ {
		p := int(queue[head])
		nb, m := neighbours4(p, cols, rows)
		for _, q := range nb[:m] {
			if labels[q] != 0 {
				continue
			}
			labels[q] = labels[p]
			if mask[q] {
				missing--
			}
			queue = append(queue, int32(q))
		}
	}
	// Outside the mask only the pixels labelled here, or labelled before
	// when some were, carry a label to clear.
	if labelledOutside {
		for i, in := range mask {
			if !in {
				labels[i] = 0
			}
		}
		return
	}
	for _, q := range queue[frontier:] {
		if !mask[q] {
			labels[q] = 0
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

// pixelFeatures returns the unsmoothed standardized, weighted features
// per pixel (len(layers) values each, NaN at pixels not clustered): what
// the sieve compares zones by.
func pixelFeatures(layers []Layer, idx []int, n int) []float64 {
	return scatterFeatures(standardize(layers, idx), len(layers), idx, n)
}

// scatterFeatures spreads the features f of the pixels idx (dim values
// each) over the n pixels, NaN at the others.
func scatterFeatures(f []float64, dim int, idx []int, n int) []float64 {
	out := make([]float64, n*dim)
	for i := range out {
		out[i] = math.NaN()
	}
	for j, i := range idx {
		copy(out[i*dim:(i+1)*dim], f[j*dim:(j+1)*dim])
	}
	return out
}

// postProcess turns k-means labels (0..k−1 per clustered pixel) into a
// label raster (1..k, 0 outside mask) that respects the minimum mapping
// unit, one variant's way.
func postProcess(ctx context.Context, kmLabels []int32, idx []int, features, feat []float64, mask []bool, grid geo.Grid,
	dim, k, minPixels int, v variant) ([]int32, error) {
	labels := make([]int32, grid.Cols*grid.Rows)
	for j, i := range idx {
		labels[i] = kmLabels[j] + 1
	}
	if err := regularize(ctx, labels, idx, features, dim, k, grid.Cols, grid.Rows, v.beta); err != nil {
		return nil, err
	}
	fillNearest(labels, mask, grid.Cols, grid.Rows)
	if minPixels > 1 {
		sieve := geo.SieveOptions{MinPixels: minPixels, KeepLabels: true, IntoLargeOnly: v.intoLarge}
		if v.mergeByValue {
			sieve.Values, sieve.Dim = feat, dim
		}
		passes := max(v.sievePasses, 1)
		if !v.intoLarge {
			passes = 1
		}
		var before []int32
		for pass := range passes {
			again := pass+1 < passes // another pass follows unless this one changes nothing
			if again {
				before = append(before[:0], labels...)
			}
			if err := geo.SieveWithOptions(labels, grid.Cols, grid.Rows, sieve); err != nil {
				return nil, fmt.Errorf("sieve zones: %w", err)
			}
			if !again || slices.Equal(before, labels) {
				break
			}
		}
	}
	if v.refine {
		if err := refine(ctx, labels, feat, dim, k, grid.Cols, grid.Rows, minPixels); err != nil {
			return nil, err
		}
	}
	return labels, nil
}

// featureVR is 1 − within-zone SS / total SS of the per-pixel features
// (NaN where not clustered): what the zones explain of what k-means saw.
func featureVR(labels []int32, feat []float64, dim, k int) float64 {
	sum := make([]float64, (k+1)*dim)
	cnt := make([]float64, k+1)
	all := make([]float64, dim)
	var n float64
	for i, l := range labels {
		if l <= 0 || math.IsNaN(feat[i*dim]) {
			continue
		}
		cnt[l]++
		n++
		for d := range dim {
			sum[int(l)*dim+d] += feat[i*dim+d]
			all[d] += feat[i*dim+d]
		}
	}
	var within, total float64
	for i, l := range labels {
		if l <= 0 || math.IsNaN(feat[i*dim]) {
			continue
		}
		for d := range dim {
			x := feat[i*dim+d]
			w := x - sum[int(l)*dim+d]/cnt[l]
			a := x - all[d]/n
			within += w * w
			total += a * a
		}
	}
	if total == 0 {
		return 1
	}
	return 1 - within/total
}

// countRegions returns the 4-connected regions of equal non-zero labels:
// their id per pixel (-1 at 0) and their number, regions numbered in the
// order of their first pixel (row-major).
func countRegions(labels []int32, cols, rows int) ([]int32, int) {
	var rl regionLabeller
	return rl.label(labels, cols, rows)
}

// regionLabeller numbers 4-connected regions in two scans with union-find
// (provisional ids from the left and upper neighbours, then their roots):
// sequential passes instead of a flood fill's random walk, and its buffers
// are kept for the next call (refine relabels every sweep).
type regionLabeller struct {
	id     []int32
	parent unionfind.Forest
	final  []int32
}

func (rl *regionLabeller) find(x int32) int32 { return rl.parent.Find(x) }

// label is countRegions into rl's buffers (the returned slice is rl's).
func (rl *regionLabeller) label(labels []int32, cols, rows int) ([]int32, int) {
	n := len(labels)
	if cap(rl.id) < n {
		rl.id = make([]int32, n)
	}
	id := rl.id[:n]
	parent := rl.parent[:0]
	for r := range rows {
		row := labels[r*cols : (r+1)*cols]
		ids := id[r*cols : (r+1)*cols]
		for c, l := range row {
			if l == 0 {
				ids[c] = -1
				continue
			}
			left, up := int32(-1), int32(-1)
			if c > 0 && row[c-1] == l {
				left = ids[c-1]
			}
			if r > 0 && labels[(r-1)*cols+c] == l {
				up = id[(r-1)*cols+c]
			}
			switch {
			case left < 0 && up < 0:
				ids[c] = int32(len(parent))
				parent = append(parent, int32(len(parent)))
			case up < 0:
				ids[c] = left
			case left < 0 || left == up:
				ids[c] = up
			default:
				ids[c] = left
				rl.parent = parent
				a, b := rl.find(left), rl.find(up)
				if a != b { // the older root stays: roots are then first pixels
					parent[max(a, b)] = min(a, b)
				}
			}
		}
	}
	rl.parent = parent
	// Final ids: roots numbered in order of their first pixel. A root is a
	// region's smallest provisional id, and provisional ids are given in
	// scan order, so numbering roots by increasing id is that order.
	if cap(rl.final) < len(parent) {
		rl.final = make([]int32, len(parent))
	}
	final := rl.final[:len(parent)]
	count := int32(0)
	for i := range parent {
		if r := rl.find(int32(i)); r == int32(i) {
			final[i] = count
			count++
		} else {
			final[i] = final[r]
		}
	}
	for i, v := range id {
		if v >= 0 {
			id[i] = final[v]
		}
	}
	return id, int(count)
}

// neighbours4 lists pixel p's 4-neighbours inside a cols×rows grid, in the
// order up, left, right, down (the order a breadth-first fill visits them,
// which decides ties): nb[:m].
func neighbours4(p, cols, rows int) (nb [4]int, m int) {
	c, r := p%cols, p/cols
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
	return nb, m
}
