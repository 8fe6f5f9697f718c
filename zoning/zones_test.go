package zoning

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"

	"github.com/cropkit/cropkit/geo"
	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// syntheticField is a cols×rows grid of 10 m pixels with an elliptic field
// mask and two smooth layers (a west–east vigour gradient with bumps, and
// a north–south soil gradient), with some cloud holes in the first layer.
func syntheticField(cols, rows int, seed uint64) (geo.Grid, []bool, []Layer) {
	r := rand.New(rand.NewPCG(seed, seed+1))
	g := geo.Grid{EPSG: 32631, X0: 574000, Y0: 5622000, DX: 10, DY: 10, Cols: cols, Rows: rows}
	mask := make([]bool, cols*rows)
	vigour := make([]float64, cols*rows)
	soil := make([]float64, cols*rows)
	for row := range rows {
		for c := range cols {
			i := row*cols + c
			x, y := (float64(c)+0.5)/float64(cols)*2-1, (float64(row)+0.5)/float64(rows)*2-1
			mask[i] = x*x+y*y < 0.95
			vigour[i] = 0.5 + 0.3*x + 0.1*math.Sin(7*x)*math.Cos(5*y) + 0.02*r.NormFloat64()
			soil[i] = 20 + 10*y + 3*math.Cos(4*x) + r.NormFloat64()
		}
	}
	// Cloud holes: missing vigour.
	for range 3 {
		cc, cr := r.IntN(cols), r.IntN(rows)
		for row := max(0, cr-3); row < min(rows, cr+3); row++ {
			for c := max(0, cc-3); c < min(cols, cc+3); c++ {
				vigour[row*cols+c] = math.NaN()
			}
		}
	}
	return g, mask, []Layer{
		{Name: "ndvi", Type: CropHealth, Values: vigour, Weight: 1},
		{Name: "clay", Type: Custom, Values: soil, Weight: 1},
	}
}

// checkZones asserts everything Compute promises about a result.
func checkZones(t *testing.T, res *Result, mask []bool, first []float64, minPixels int) {
	t.Helper()
	g := res.Grid
	// Labels: exactly the mask, zone IDs valid.
	counts := map[int32]int{}
	for i, l := range res.Labels {
		if !mask[i] {
			require.Zero(t, l, "pixel %d outside the mask is labelled", i)
			continue
		}
		require.Positive(t, l, "mask pixel %d unlabelled", i)
		counts[l]++
	}
	// Zones numbered 1..n by ascending RasterVal, which is the zone mean of the first layer.
	sum := map[int32]float64{}
	cnt := map[int32]int{}
	for i, l := range res.Labels {
		if l > 0 && !math.IsNaN(first[i]) {
			sum[l] += first[i]
			cnt[l]++
		}
	}
	total := 0
	for j, z := range res.Zones {
		assert.Equal(t, j+1, z.ID)
		if j > 0 {
			assert.Greater(t, z.RasterVal, res.Zones[j-1].RasterVal, "zones ascend by RASTER_VAL")
		}
		assert.InDelta(t, sum[int32(z.ID)]/float64(cnt[int32(z.ID)]), z.RasterVal, 1e-12)
		assert.Equal(t, counts[int32(z.ID)], z.Pixels)
		assert.InDelta(t, float64(z.Pixels)*g.PixelArea()/10000, z.AreaHa, 1e-9)
		total += z.Pixels
	}
	nMask := 0
	for _, in := range mask {
		if in {
			nMask++
		}
	}
	assert.Equal(t, nMask, total)

	// Sieve: regions below minPixels remain only where the sieve had no
	// neighbouring region at the minimum to merge them into (gdal_sieve's
	// rule, which the default may pick) or as a zone's last region; a
	// post-hoc check cannot tell, so the quality report is checked instead.
	assert.Equal(t, len(res.Zones), res.Quality.Zones)
	assert.Equal(t, len(res.Polygons), res.Quality.Polygons)

	// Polygons: every mask pixel is covered by exactly one polygon of its
	// zone, no pixel outside is covered (no gaps, no overlaps, union = mask),
	// and the areas add up to the mask's area.
	cover := make([]int, len(mask))
	var area float64
	for _, p := range res.Polygons {
		assertValidPolygon(t, p.Polygon)
		area += geo.Area(orb.MultiPolygon{p.Polygon})
		for i, in := range geo.Rasterize(orb.MultiPolygon{p.Polygon}, g) {
			if in {
				cover[i]++
				require.Equal(t, int32(p.Zone), res.Labels[i], "polygon of zone %d covers pixel %d of zone %d", p.Zone, i, res.Labels[i])
			}
		}
	}
	for i, in := range mask {
		if in {
			require.Equal(t, 1, cover[i], "mask pixel %d covered %d times", i, cover[i])
		} else {
			require.Zero(t, cover[i], "pixel %d outside the mask covered", i)
		}
	}
	assert.InDelta(t, float64(nMask)*g.PixelArea(), area, 1e-6*area, "union area equals the mask's pixel area")
}

// assertValidPolygon checks closed rings of ≥ 4 points, outer ring
// counter-clockwise, holes clockwise.
func assertValidPolygon(t *testing.T, p orb.Polygon) {
	t.Helper()
	require.NotEmpty(t, p)
	for i, r := range p {
		require.GreaterOrEqual(t, len(r), 4)
		require.Equal(t, r[0], r[len(r)-1], "ring %d closed", i)
		if i == 0 {
			assert.Positive(t, signedArea(r), "outer ring counter-clockwise")
		} else {
			assert.Negative(t, signedArea(r), "hole clockwise")
		}
	}
}

// region is one 4-connected region of equal non-zero label.
type region struct {
	label     int32
	size      int
	neighbour bool // touches a pixel of another non-zero label
}

// regionsOf returns the 4-connected regions of equal non-zero label.
func regionsOf(labels []int32, cols, rows int) []region {
	seen := make([]bool, len(labels))
	var out []region
	for s := range labels {
		if seen[s] || labels[s] == 0 {
			continue
		}
		stack := []int{s}
		seen[s] = true
		rg := region{label: labels[s]}
		for len(stack) > 0 {
			p := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			rg.size++
			c, r := p%cols, p/cols
			for _, q := range []struct {
				ok bool
				i  int
			}{{r > 0, p - cols}, {c > 0, p - 1}, {c < cols-1, p + 1}, {r < rows-1, p + cols}} {
				switch {
				case !q.ok || labels[q.i] == 0:
				case labels[q.i] != labels[p]:
					rg.neighbour = true
				case !seen[q.i]:
					seen[q.i] = true
					stack = append(stack, q.i)
				}
			}
		}
		out = append(out, rg)
	}
	return out
}

// smallRegions counts, per zone, the regions below minPixels that touch
// another zone (the sieve leaves at most one: the zone's last region).
func smallRegions(labels []int32, cols, rows, minPixels int) map[int32]int {
	out := map[int32]int{}
	for _, rg := range regionsOf(labels, cols, rows) {
		if rg.size < minPixels && rg.neighbour {
			out[rg.label]++
		}
	}
	return out
}

// shapelyInvalid returns the polygons shapely finds invalid (empty when all
// are valid), or skips when python3-shapely is missing.
func shapelyInvalid(t *testing.T, polys []ZonePolygon) []string {
	t.Helper()
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import shapely").Run(); err != nil {
		t.Log("python3-shapely not available: independent validity check skipped")
		return nil
	}
	var coords [][][][2]float64
	for _, p := range polys {
		coords = append(coords, ringsCoords(p.Polygon))
	}
	in, err := json.Marshal(coords)
	require.NoError(t, err)
	script := `
import json, sys
from shapely.geometry import Polygon
from shapely.validation import explain_validity
from shapely.ops import unary_union
polys = [Polygon(p[0], p[1:]) for p in json.load(sys.stdin)]
bad = [explain_validity(p) for p in polys if not p.is_valid]
# pairwise overlap area through the union: sum of areas minus union area
u = unary_union(polys)
print(json.dumps({"bad": bad, "overlap": sum(p.area for p in polys) - u.area, "union": u.area}))
`
	cmd := exec.Command(py, "-c", script)
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	require.NoError(t, err)
	var res struct {
		Bad     []string
		Overlap float64
		Union   float64
	}
	require.NoError(t, json.Unmarshal(out, &res))
	assert.InDelta(t, 0, res.Overlap, 1e-6*res.Union, "shapely: polygons overlap")
	return res.Bad
}

func TestComputeSynthetic(t *testing.T) {
	g, mask, layers := syntheticField(80, 60, 1)
	for _, k := range []int{1, 3, 5} {
		res, err := Compute(context.Background(), g, mask, layers, Options{Zones: k, Seed: 1})
		require.NoError(t, err)
		assert.Len(t, res.Zones, k, "the sieve keeps every zone")
		checkZones(t, res, mask, layers[0].Values, 10)
		assert.Empty(t, shapelyInvalid(t, res.Polygons))
		assert.Less(t, res.Clustered, countTrue(mask), "cloud holes were filled, not clustered")
	}
}

func nanGrid(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = math.NaN()
	}
	return v
}

func countTrue(b []bool) int {
	n := 0
	for _, v := range b {
		if v {
			n++
		}
	}
	return n
}

func TestComputeReproducible(t *testing.T) {
	g, mask, layers := syntheticField(50, 50, 2)
	a, err := Compute(context.Background(), g, mask, layers, Options{Zones: 4, Seed: 9})
	require.NoError(t, err)
	b, err := Compute(context.Background(), g, mask, layers, Options{Zones: 4, Seed: 9})
	require.NoError(t, err)
	assert.Equal(t, a.Labels, b.Labels)
	assert.Equal(t, a.Zones, b.Zones)
	assert.Equal(t, a.Polygons, b.Polygons)
}

func TestComputeWeights(t *testing.T) {
	g, mask, layers := syntheticField(60, 60, 3)
	labelsFor := func(w float64) []int32 {
		ls := []Layer{layers[0], layers[1]}
		ls[1].Weight = w
		res, err := Compute(context.Background(), g, mask, ls, Options{Zones: 4, Seed: 1, MinAreaHa: -1})
		require.NoError(t, err)
		return res.Labels
	}
	none, low, high := labelsFor(0), labelsFor(0.2), labelsFor(5)
	assert.NotEqual(t, none, high, "a heavier soil layer changes the zones")
	assert.Less(t, agreement(none, low), 1.0+1e-9)
	assert.Greater(t, agreement(none, low), agreement(none, high), "the heavier the second layer, the further from vigour-only zones")
}

// agreement is the share of labelled pixels with the same label.
func agreement(a, b []int32) float64 {
	same, n := 0, 0
	for i := range a {
		if a[i] > 0 {
			n++
			if a[i] == b[i] {
				same++
			}
		}
	}
	return float64(same) / float64(n)
}

func TestComputeFillsMissing(t *testing.T) {
	// A 6×1 strip: values 0, 0, NaN, NaN, 1, 1: the NaNs take their nearest neighbours.
	g := geo.Grid{EPSG: 32631, X0: 0, Y0: 10, DX: 10, DY: 10, Cols: 6, Rows: 1}
	nan := math.NaN()
	layers := []Layer{{Name: "ndvi", Type: CropHealth, Weight: 1, Values: []float64{0, 0, nan, nan, 1, 1}}}
	mask := []bool{true, true, true, true, true, true}
	res, err := Compute(context.Background(), g, mask, layers, Options{Zones: 2, MinAreaHa: -1})
	require.NoError(t, err)
	assert.Equal(t, []int32{1, 1, 1, 2, 2, 2}, res.Labels)
	assert.Equal(t, []Zone{{ID: 1, RasterVal: 0, Pixels: 3, AreaHa: 0.03}, {ID: 2, RasterVal: 1, Pixels: 3, AreaHa: 0.03}}, res.Zones)
	assert.Equal(t, 4, res.Clustered)
}

func TestSmooth(t *testing.T) {
	nan := math.NaN()
	// 4×3, pixel 5 missing (not clustered), pixel 11 outside the mask.
	values := []float64{
		1, 2, 3, 4,
		5, nan, 7, 8,
		9, 10, 11, 99,
	}
	idx := []int{0, 1, 2, 3, 4, 6, 7, 8, 9, 10}
	layers := []Layer{{Name: "ndvi", Values: values, Weight: 1}}
	for _, tc := range []struct {
		radius int
		want   []float64
	}{
		{-1, values},
		{0, values},
		{1, []float64{
			(1 + 2 + 5) / 3., (1 + 2 + 3 + 5 + 7) / 5., (2 + 3 + 4 + 7 + 8) / 5., (3 + 4 + 7 + 8) / 4.,
			(1 + 2 + 5 + 9 + 10) / 5., nan, (2 + 3 + 4 + 7 + 8 + 10 + 11) / 7., (3 + 4 + 7 + 8 + 11) / 5.,
			(5 + 9 + 10) / 3., (5 + 7 + 9 + 10 + 11) / 5., (7 + 8 + 10 + 11) / 4., nan,
		}},
		{2, func() []float64 {
			// 5×5 windows: the whole raster but for column 3 (from
			// column 0) or column 0 (from column 3).
			all := []float64{1, 2, 3, 4, 5, 7, 8, 9, 10, 11}
			mean := func(skip func(i int) bool) float64 {
				var s, n float64
				for j, i := range idx {
					if !skip(i) {
						s += all[j]
						n++
					}
				}
				return s / n
			}
			noCol3 := mean(func(i int) bool { return i%4 == 3 })
			noCol0 := mean(func(i int) bool { return i%4 == 0 })
			mid := mean(func(int) bool { return false })
			return []float64{noCol3, mid, mid, noCol0, noCol3, nan, mid, noCol0, noCol3, mid, mid, nan}
		}()},
	} {
		got := smooth(layers, idx, 4, 3, tc.radius)[0].Values
		require.Len(t, got, len(values))
		for _, i := range idx {
			assert.InDelta(t, tc.want[i], got[i], 1e-12, "radius %d pixel %d", tc.radius, i)
		}
		assert.Equal(t, values[11], 99.0, "the input is not modified")
	}
}

func TestBoxSumMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct{ cols, rows, radius int }{
		{1, 1, 1}, {7, 1, 2}, {1, 9, 3}, {13, 11, 1}, {13, 11, 4}, {5, 6, 10},
	} {
		v := make([]float64, tc.cols*tc.rows)
		for i := range v {
			v[i] = rng.Float64()
		}
		want := make([]float64, len(v))
		for r := range tc.rows {
			for c := range tc.cols {
				for rr := max(0, r-tc.radius); rr <= min(tc.rows-1, r+tc.radius); rr++ {
					for cc := max(0, c-tc.radius); cc <= min(tc.cols-1, c+tc.radius); cc++ {
						want[r*tc.cols+c] += v[rr*tc.cols+cc]
					}
				}
			}
		}
		got := boxSum(append([]float64(nil), v...), tc.cols, tc.rows, tc.radius, make([]float64, len(v)))
		assert.InDeltaSlice(t, want, got, 1e-9, "%+v", tc)
	}
}

// noisyField is a 40×40 field of three NDVI bands (west, middle, east)
// with strong per-pixel noise, as on a real Sentinel-2 image of a
// uniform crop: per-pixel k-means scatters the zones into specks.
func noisyField(seed uint64) (geo.Grid, []bool, []Layer) {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	g := geo.Grid{EPSG: 32631, X0: 574000, Y0: 5622000, DX: 10, DY: 10, Cols: 40, Rows: 40}
	mask := make([]bool, 40*40)
	v := make([]float64, 40*40)
	for i := range v {
		mask[i] = true
		v[i] = 0.5 + 0.05*float64(i%40/14) + 0.05*rng.NormFloat64()
	}
	return g, mask, []Layer{{Name: "ndvi", Type: CropHealth, Values: v, Weight: 1}}
}

func TestComputeSmoothing(t *testing.T) {
	g, mask, layers := noisyField(5)
	small := func(res *Result) int {
		n := 0
		for _, rg := range regionsOf(res.Labels, g.Cols, g.Rows) {
			if rg.size < 10 {
				n++
			}
		}
		return n
	}
	regions := func(opts Options) (int, int) {
		opts.Zones, opts.Seed, opts.MinAreaHa = 3, 1, -1 // no sieve: k-means as is
		res, err := Compute(context.Background(), g, mask, layers, opts)
		require.NoError(t, err)
		return len(regionsOf(res.Labels, g.Cols, g.Rows)), small(res)
	}
	rawAll, rawSmall := regions(Options{Smooth: -1})
	defAll, defSmall := regions(Options{})
	wideAll, wideSmall := regions(Options{Smooth: 3})
	t.Logf("regions (below 10 px): raw %d (%d), 3×3 %d (%d), 7×7 %d (%d)", rawAll, rawSmall, defAll, defSmall, wideAll, wideSmall)
	s3All, _ := regions(Options{Smooth: 1})
	assert.Equal(t, rawAll, defAll, "no smoothing by default")
	assert.Less(t, s3All*5, rawAll, "3×3 smoothing removes most specks")
	assert.Less(t, wideAll, s3All, "a wider window, fewer regions")

	// The default maximizes the variance explained, on the raw values.
	def, err := Compute(context.Background(), g, mask, layers, Options{Zones: 3, Seed: 1})
	require.NoError(t, err)
	sm, err := Compute(context.Background(), g, mask, layers, Options{Zones: 3, Seed: 1, Smooth: 1})
	require.NoError(t, err)
	assert.Greater(t, def.Quality.VarianceReduction, sm.Quality.VarianceReduction)

	// The zones follow the three bands: with smoothing, most pixels of each
	// band share a zone.
	res, err := Compute(context.Background(), g, mask, layers, Options{Zones: 3, Seed: 1, Smooth: 1})
	require.NoError(t, err)
	require.Len(t, res.Zones, 3)
	checkZones(t, res, mask, layers[0].Values, 10)
	right := 0
	for i, l := range res.Labels {
		if int(l) == 1+i%40/14 {
			right++
		}
	}
	assert.Greater(t, right, 1600*85/100, "pixels in their band's zone")
}

func TestComputeKeepsZones(t *testing.T) {
	// A 20×20 field in two halves (0 and 1) sprinkled with 12 isolated
	// pixels of 5: k-means with 3 zones puts the 5s in a zone of their own,
	// all of whose regions are below the 10-pixel minimum. The sieve used to
	// merge that zone away; now its last region stays.
	g := geo.Grid{EPSG: 32631, X0: 0, Y0: 200, DX: 10, DY: 10, Cols: 20, Rows: 20}
	mask := make([]bool, 400)
	v := make([]float64, 400)
	for i := range v {
		mask[i] = true
		v[i] = float64(i % 20 / 10)
	}
	for j := range 12 {
		v[(3+j/4*5)*20+2+j%4*5] = 5
	}
	layers := []Layer{{Name: "ndvi", Type: CropHealth, Values: v, Weight: 1}}
	res, err := Compute(context.Background(), g, mask, layers, Options{Zones: 3, Seed: 1, Smooth: -1})
	require.NoError(t, err)
	require.Len(t, res.Zones, 3)
	assert.Equal(t, Zone{ID: 3, RasterVal: 5, Pixels: 1, AreaHa: 0.01}, res.Zones[2], "one 5 is left, below the minimum")
	assert.Equal(t, map[int32]int{3: 1}, smallRegions(res.Labels, g.Cols, g.Rows, 10))
	checkZones(t, res, mask, v, 10)
}

func TestComputeErrors(t *testing.T) {
	g, mask, layers := syntheticField(10, 10, 4)
	ctx := context.Background()
	tests := []struct {
		name   string
		g      geo.Grid
		mask   []bool
		layers []Layer
		opts   Options
		want   error
	}{
		{"zero zones", g, mask, layers, Options{Zones: 0}, ErrInvalidOptions},
		{"too many zones", g, mask, layers, Options{Zones: MaxZones + 1}, ErrInvalidOptions},
		{"mask size", g, mask[:5], layers, Options{Zones: 2}, ErrInvalidOptions},
		{"layer size", g, mask, []Layer{{Values: []float64{1}, Weight: 1}}, Options{Zones: 2}, ErrInvalidOptions},
		{"no weight", g, mask, []Layer{{Values: layers[0].Values}}, Options{Zones: 2}, ErrInvalidOptions},
		{"negative weight", g, mask, []Layer{{Values: layers[0].Values, Weight: -1}}, Options{Zones: 2}, ErrInvalidOptions},
		{"empty grid", geo.Grid{}, nil, nil, Options{Zones: 2}, ErrInvalidOptions},
		{"empty mask", g, make([]bool, 100), layers, Options{Zones: 2}, ErrTooFewPixels},
		{"nan min area", g, mask, layers, Options{Zones: 2, MinAreaHa: math.NaN()}, ErrInvalidOptions},
		{"smoothing radius", g, mask, layers, Options{Zones: 2, Smooth: MaxSmooth + 1}, ErrInvalidOptions},
		{"empty custom layer", g, mask, []Layer{layers[0], {Name: "clay", Values: nanGrid(100), Weight: 1}}, Options{Zones: 2}, ErrEmptyLayer},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compute(ctx, tc.g, tc.mask, tc.layers, tc.opts)
			assert.True(t, errors.Is(err, tc.want), "got %v", err)
		})
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err := Compute(cctx, g, mask, layers, Options{Zones: 2})
	assert.ErrorIs(t, err, context.Canceled)
}

func TestResultCollectionAndPrescription(t *testing.T) {
	g, mask, layers := syntheticField(40, 40, 5)
	res, err := Compute(context.Background(), g, mask, layers, Options{Zones: 3, Seed: 1})
	require.NoError(t, err)
	rx := Prescription{Type: Seeding}
	require.NoError(t, rx.Apply(res))
	var mean, area float64
	for _, z := range res.Zones {
		mean += z.Dose * z.AreaHa
		area += z.AreaHa
	}
	assert.InDelta(t, 80000, mean/area, 1e-6)
	assert.Greater(t, res.Zones[2].Dose, res.Zones[0].Dose, "seeding is proportional by default")

	c, err := res.Collection(0)
	require.NoError(t, err)
	assert.Equal(t, 4326, c.EPSG)
	assert.Len(t, c.Features, len(res.Polygons))
	assert.NotEmpty(t, c.Boundary)
	for _, f := range c.Features {
		assert.Equal(t, res.Zones[f.Zone-1].Dose, f.Dose)
		assert.InDelta(t, 4.06, f.Polygon[0][0][0], 0.05, "longitude near the synthetic grid")
	}
	_, err = res.Collection(8857)
	assert.ErrorContains(t, err, "8857")

	// Every format writes.
	for _, f := range []Format{GeoJSON, Shapefile, ISOXML} {
		var sb strings.Builder
		require.NoError(t, f.Write(&sb, c.WithPrescription(rx), "UES 03/x"), f)
		assert.NotZero(t, sb.Len())
	}
}

func TestParseFormat(t *testing.T) {
	for in, want := range map[string]Format{"": GeoJSON, "GeoJSON": GeoJSON, "shapefile": Shapefile, " isoxml ": ISOXML} {
		f, err := ParseFormat(in)
		require.NoError(t, err)
		assert.Equal(t, want, f)
	}
	_, err := ParseFormat("kml")
	assert.ErrorIs(t, err, ErrUnknownFormat)
	assert.Equal(t, "application/geo+json", GeoJSON.ContentType())
	assert.Equal(t, "application/zip", ISOXML.ContentType())
}

func TestMeanValues(t *testing.T) {
	nan := math.NaN()
	m, err := MeanValues([]float64{1, nan, nan}, []float64{3, 2, nan})
	require.NoError(t, err)
	assert.Equal(t, []float64{2, 2}, m[:2])
	assert.True(t, math.IsNaN(m[2]))
	_, err = MeanValues([]float64{1}, []float64{1, 2})
	assert.Error(t, err)
	// One image: its values, as the sums would give them (infinities
	// missing, −0 as 0), in a new slice.
	one := []float64{1, nan, math.Inf(1), math.Copysign(0, -1), -2.5}
	m, err = MeanValues(one)
	require.NoError(t, err)
	assert.Equal(t, []float64{1, -2.5}, []float64{m[0], m[4]})
	assert.True(t, math.IsNaN(m[1]) && math.IsNaN(m[2]))
	assert.False(t, math.Signbit(m[3]), "−0 + nothing is +0")
	m[0] = 7
	assert.Equal(t, 1.0, one[0], "the image is not modified through the mean")
	_, err = MeanValues()
	assert.Error(t, err)
}

func BenchmarkCompute(b *testing.B) {
	g, mask, layers := syntheticField(1000, 1000, 7)
	for _, bc := range []struct {
		name   string
		layers []Layer
		smooth int
	}{
		{"1layer_1000x1000", layers[:1], 0},
		{"1layer_1000x1000_nosmooth", layers[:1], -1},
		{"2layers_1000x1000", layers, 0},
		{"2layers_1000x1000_nosmooth", layers, -1},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := Compute(context.Background(), g, mask, bc.layers, Options{Zones: 5, Seed: 1, Smooth: bc.smooth}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkSmooth(b *testing.B) {
	g, mask, layers := syntheticField(1000, 1000, 7)
	idx := clusteredPixels(mask, layers)
	for _, radius := range []int{1, 5} {
		b.Run(fmt.Sprintf("2layers_1000x1000_r%d", radius), func(b *testing.B) {
			for b.Loop() {
				smooth(layers, idx, g.Cols, g.Rows, radius)
			}
		})
	}
}

func ringsCoords(p orb.Polygon) [][][2]float64 {
	out := make([][][2]float64, len(p))
	for i, r := range p {
		out[i] = make([][2]float64, len(r))
		for j, q := range r {
			out[i][j] = [2]float64{q[0], q[1]}
		}
	}
	return out
}
