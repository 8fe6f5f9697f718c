package zoning

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/geo/crs"
)

// syntheticField is a 30×20-pixel grid at 10 m in EPSG:32631 with a west–
// east NDVI gradient plus noise, and a slanted quadrilateral outline
// (EPSG:4326) inside it, off the pixel grid.
func slantedField(t require.TestingT) (geo.Grid, orb.MultiPolygon, []float64) {
	g := geo.Grid{EPSG: 32631, X0: 500000, Y0: 5630000, DX: 10, DY: 10, Cols: 30, Rows: 20}
	rng := rand.New(rand.NewPCG(1, 2))
	vals := make([]float64, g.Cols*g.Rows)
	for i := range vals {
		c := i % g.Cols
		vals[i] = 0.3 + 0.5*float64(c)/float64(g.Cols) + 0.05*rng.NormFloat64()
	}
	tr, err := crs.New(32631, 4326)
	require.NoError(t, err)
	ring := orb.Ring{{500013.3, 5629987.1}, {500291.7, 5629993.9}, {500284.2, 5629811.4}, {500021.9, 5629804.6}, {500013.3, 5629987.1}}
	out, err := geo.Transform(orb.MultiPolygon{{ring}}, tr)
	require.NoError(t, err)
	return g, out, vals
}

func TestRun(t *testing.T) {
	g, outline, vals := slantedField(t)
	layers := []Layer{{Name: "ndvi", Type: CropHealth, Values: vals, Weight: 1}}
	tests := []struct {
		name string
		req  Request
		err  error
	}{
		{"no prescription", Request{Options: Options{Zones: 3, Seed: 1}}, nil},
		{"n_fertilizer, UTM", Request{Options: Options{Zones: 4, Seed: 1}, Prescription: Prescription{Type: NFertilizer}, DstEPSG: 32631}, nil},
		{"simplified", Request{Options: Options{Zones: 3, Seed: 1, SimplifyTolerance: 15}, DstEPSG: 32631}, nil},
		{"bad prescription", Request{Options: Options{Zones: 3}, Prescription: Prescription{Type: "lime"}}, ErrInvalidPrescription},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req
			req.Grid, req.Outline, req.Layers = g, outline, layers
			c, err := Run(context.Background(), req)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.NotNil(t, c.Quality)
			assert.Equal(t, req.Options.Zones, c.Quality.Zones)
			assert.Equal(t, len(c.Features), c.Quality.Polygons)
			assert.Greater(t, c.Quality.VarianceReduction, 0.7, "a gradient splits well")
			// The union of the zones is the outline, in the output CRS.
			dst := req.DstEPSG
			if dst == 0 {
				dst = 4326
			}
			tr, err := crs.New(4326, dst)
			require.NoError(t, err)
			o, err := geo.Transform(outline, tr)
			require.NoError(t, err)
			var area float64
			for _, f := range c.Features {
				require.NoError(t, geo.ValidatePolygon(f.Polygon))
				area += geo.Area(orb.MultiPolygon{f.Polygon})
			}
			// 1e-9 in UTM; in EPSG:4326 the outline's straight edges and
			// the zones' vertices on them differ by the projection's curvature.
			assert.InDelta(t, geo.Area(o), area, 1e-5*geo.Area(o))
			var ha float64
			for _, z := range c.ZoneStats {
				ha += z.AreaHa
			}
			utm, err := crs.New(4326, 32631)
			require.NoError(t, err)
			ou, err := geo.Transform(outline, utm)
			require.NoError(t, err)
			assert.InDelta(t, geo.Area(ou)/1e4, ha, 1e-9, "zone areas are the clipped areas")
			if req.Prescription.Type != "" {
				assert.Equal(t, "kg/ha", c.Unit)
				assert.NotZero(t, c.ZoneStats[0].Dose)
			} else {
				assert.Empty(t, c.Unit)
				assert.Zero(t, c.ZoneStats[0].Dose)
			}
			data, err := c.MarshalJSON()
			require.NoError(t, err)
			var doc struct {
				Quality Quality `json:"quality"`
			}
			require.NoError(t, json.Unmarshal(data, &doc))
			assert.Equal(t, *c.Quality, doc.Quality)
		})
	}
}

func TestZonesAbovePixelsError(t *testing.T) {
	g := geo.Grid{EPSG: 32631, X0: 0, Y0: 30, DX: 10, DY: 10, Cols: 3, Rows: 3}
	mask := []bool{true, true, true, false, false, false, false, false, false}
	vals := []float64{0.1, 0.2, 0.3, 0, 0, 0, 0, 0, 0}
	_, err := Compute(context.Background(), g, mask, []Layer{{Name: "ndvi", Values: vals, Weight: 1}}, Options{Zones: 5})
	var ze *ZonesAbovePixelsError
	require.True(t, errors.As(err, &ze), "%v", err)
	assert.Equal(t, ZonesAbovePixelsError{Zones: 5, Pixels: 3}, *ze)
	assert.ErrorIs(t, err, ErrTooFewPixels)
	assert.Equal(t, "n_zones 5 is above the 3 usable pixels of the field", err.Error())
	nan := math.NaN()
	_, err = Compute(context.Background(), g, mask, []Layer{{Name: "ndvi", Values: []float64{nan, nan, nan, 0, 0, 0, 0, 0, 0}, Weight: 1}}, Options{Zones: 2})
	assert.ErrorIs(t, err, ErrEmptyLayer)
}

func TestKMeans1DIsOptimal(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 200 {
		n := 2 + rng.IntN(9)
		k := 1 + rng.IntN(min(n, 4))
		data := make([]float64, n)
		for i := range data {
			data[i] = math.Round(rng.NormFloat64()*10) / 10
		}
		labels, inertia := kmeans1D(data, k)
		// Brute force over every assignment of n points to k labels.
		best := math.Inf(1)
		assign := make([]int, n)
		var rec func(i int)
		rec = func(i int) {
			if i == n {
				best = min(best, sse(data, assign, k))
				return
			}
			for l := range k {
				assign[i] = l
				rec(i + 1)
			}
		}
		rec(0)
		got := make([]int, n)
		for i, l := range labels {
			got[i] = int(l)
		}
		assert.InDelta(t, best, inertia, 1e-9, "trial %d: %v k=%d", trial, data, k)
		assert.InDelta(t, best, sse(data, got, k), 1e-9, "trial %d: labels give the inertia", trial)
	}
}

func sse(data []float64, assign []int, k int) float64 {
	sum := make([]float64, k)
	cnt := make([]float64, k)
	for i, v := range data {
		sum[assign[i]] += v
		cnt[assign[i]]++
	}
	var s float64
	for i, v := range data {
		d := v - sum[assign[i]]/cnt[assign[i]]
		s += d * d
	}
	return s
}

// TestRefineKeepsTheMap: refinement never splits a region, never takes
// a region below the minimum, never removes a zone, and lowers the
// within-zone sum of squares.
func TestRefineKeepsTheMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	cols, rows, minPixels := 24, 18, 10
	for trial := range 20 {
		n := cols * rows
		vals := make([]float64, n)
		for i := range vals {
			vals[i] = float64(i%cols)/float64(cols) + 0.3*rng.NormFloat64()
		}
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		layers := []Layer{{Values: vals, Weight: 1}}
		feat := pixelFeatures(layers, idx, n)
		labels := make([]int32, n)
		for i := range labels {
			labels[i] = 1 + int32(i%cols*3/cols)
		}
		_, before := countRegions(labels, cols, rows)
		vr0 := featureVR(labels, feat, 1, 3)
		require.NoError(t, refine(context.Background(), labels, feat, 1, 3, cols, rows, minPixels))
		ids, after := countRegions(labels, cols, rows)
		assert.LessOrEqual(t, after, before, "trial %d", trial)
		size := map[int32]int{}
		for _, id := range ids {
			size[id]++
		}
		for id, s := range size {
			assert.GreaterOrEqual(t, s, minPixels, "trial %d region %d", trial, id)
		}
		assert.GreaterOrEqual(t, featureVR(labels, feat, 1, 3), vr0, "trial %d", trial)
	}
}

// Run is the whole chain: zones of a field tile its outline and come with
// their quality.
func ExampleRun() {
	g, outline, vals := slantedField(nil)
	c, err := Run(context.Background(), Request{
		Grid:         g,
		Outline:      outline,
		Layers:       []Layer{{Name: "ndvi", Type: CropHealth, Values: vals, Weight: 1}},
		Options:      Options{Zones: 3, Seed: 1},
		Prescription: Prescription{Type: NFertilizer},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d zones, %d polygons, VR %.2f\n", c.Quality.Zones, c.Quality.Polygons, c.Quality.VarianceReduction)
	// Output:
	// 3 zones, 3 polygons, VR 0.83
}

func BenchmarkKMeans1D(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 8))
	data := make([]float64, maxExact1D)
	for i := range data {
		data[i] = rng.NormFloat64() + float64(i%5)
	}
	for b.Loop() {
		kmeans1D(data, 5)
	}
}

func BenchmarkRun(b *testing.B) {
	g, outline, vals := slantedField(b)
	layers := []Layer{{Name: "ndvi", Type: CropHealth, Values: vals, Weight: 1}}
	for b.Loop() {
		if _, err := Run(context.Background(), Request{Grid: g, Outline: outline, Layers: layers, Options: Options{Zones: 5, Seed: 1}}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRunShapefileTiles: the shapefile export of a Run keeps the tiling —
// read back, its polygons cover the outline's area in EPSG:4326.
func TestRunShapefileTiles(t *testing.T) {
	g, outline, vals := slantedField(t)
	c, err := Run(context.Background(), Request{Grid: g, Outline: outline,
		Layers:  []Layer{{Name: "ndvi", Type: CropHealth, Values: vals, Weight: 1}},
		Options: Options{Zones: 4, Seed: 1}, Prescription: Prescription{Type: Seeding}})
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, WriteShapefileZip(&buf, c, ShapefileOptions{Name: "z"}))
	zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	require.NoError(t, err)
	files := map[string][]byte{}
	for _, f := range zr.File {
		rc, err := f.Open()
		require.NoError(t, err)
		data, err := io.ReadAll(rc)
		require.NoError(t, err)
		rc.Close()
		files[f.Name] = data
	}
	parts, err := ShapefileParts(files, "z.shp")
	require.NoError(t, err)
	shapes, err := ReadShapefile(parts, ShapefileLimits{})
	require.NoError(t, err)
	assert.Equal(t, 4326, shapes.EPSG)
	var area float64
	for _, s := range shapes.Features {
		mp, ok := s.Geometry.(orb.MultiPolygon)
		require.True(t, ok, "%T", s.Geometry)
		area += geo.Area(mp)
	}
	assert.InDelta(t, geo.Area(outline), area, 1e-5*geo.Area(outline))
}
