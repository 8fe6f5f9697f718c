package zoning

// Real-data tests: Sentinel-2 scenes of ../shared/data through the imagery
// package (test-only dependency: the library itself takes value grids).

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/geo/crs"
	"github.com/cropkit/cropkit/imagery"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// realField returns the named field of fields/<place>.geojson (EPSG:4326).
func realField(t *testing.T, place, name string) orb.MultiPolygon {
	t.Helper()
	data, err := os.ReadFile(testenv.DataDir(t, "fields", place+".geojson"))
	require.NoError(t, err)
	feats, err := geo.ReadFeatures(data)
	require.NoError(t, err)
	for _, f := range feats {
		if f.Name == name {
			return f.Geometry
		}
	}
	t.Fatalf("no field %s in %s", name, place)
	return nil
}

// realIndex computes an index of one scene over field with imagery.
func realIndex(t *testing.T, scene string, field orb.MultiPolygon, index string) imagery.Product {
	t.Helper()
	sc, err := imagery.OpenScene(context.Background(), scene, imagery.SceneOptions{})
	require.NoError(t, err)
	defer sc.Close()
	ps, err := sc.FieldProducts(context.Background(), field, []string{index}, nil)
	require.NoError(t, err)
	return ps[0]
}

func TestRealFlandersZones(t *testing.T) {
	scene := testenv.DataDir(t, "s2", "flanders-31UES", "2019-06-20")
	for _, name := range []string{"UES-01", "UES-03", "UES-12"} {
		field := realField(t, "flanders-31UES", name)
		p := realIndex(t, scene, field, "ndvi")
		mask, err := FieldMask(field, p.Grid)
		require.NoError(t, err)
		layers := []Layer{{Name: "ndvi", Type: CropHealth, Values: p.Values, Weight: 1}}
		pixels := countTrue(mask)
		for k := 3; k <= 6; k++ {
			res, err := Compute(context.Background(), p.Grid, mask, layers, Options{Zones: k, Seed: 1})
			require.NoError(t, err, "%s k=%d", name, k)

			// Inertia within 1 % of the best of 200 restarts on the
			// features clustered: the smoothed, standardized layer.
			idx := clusteredPixels(mask, layers)
			require.Equal(t, res.Clustered, len(idx))
			std := standardize(smooth(layers, idx, p.Grid.Cols, p.Grid.Rows, DefaultSmooth), idx)
			best, err := KMeans(context.Background(), std, 1, k, KMeansOptions{Seed: 99, Restarts: 200})
			require.NoError(t, err)
			assert.LessOrEqual(t, res.Inertia, best.Inertia*1.01, "%s k=%d: inertia %g, best of 200 restarts %g", name, k, res.Inertia, best.Inertia)

			// Reproducible with the seed.
			again, err := Compute(context.Background(), p.Grid, mask, layers, Options{Zones: k, Seed: 1})
			require.NoError(t, err)
			assert.Equal(t, res.Labels, again.Labels)
			assert.Equal(t, res.Polygons, again.Polygons)

			checkZones(t, res, mask, p.Values, 10)
			assert.Empty(t, shapelyInvalid(t, res.Polygons), "%s k=%d", name, k)

			// Union area equals the field's pixel area to 0.1 %, and, since
			// the Flanders polygons are pixel-aligned, the field's own area.
			var area float64
			for _, zp := range res.Polygons {
				area += geo.Area(orb.MultiPolygon{zp.Polygon})
			}
			assert.InDelta(t, float64(pixels)*p.Grid.PixelArea(), area, 0.001*area)
			t4326, err := crs.New(4326, p.Grid.EPSG)
			require.NoError(t, err)
			fieldUTM, err := geo.Transform(field, t4326)
			require.NoError(t, err)
			assert.InDelta(t, geo.Area(fieldUTM), area, 0.001*area, "%s: zones cover the field", name)

			// Simplified boundaries stay valid, without overlaps or new gaps.
			simple, err := Compute(context.Background(), p.Grid, mask, layers, Options{Zones: k, Seed: 1, SimplifyTolerance: 8})
			require.NoError(t, err)
			assert.True(t, simple.Simplified, "%s k=%d", name, k)
			if bad, overlap, uarea, holes, ok := unionStats(t, simple.Polygons); ok {
				_, _, _, holes0, _ := unionStats(t, res.Polygons)
				assert.Zero(t, bad)
				assert.InDelta(t, 0, overlap, 1e-6*uarea)
				assert.Equal(t, holes0, holes)
			}
		}
	}
}

// TestRealZoneCount: a farmer who asks for k zones gets k zones. Per-pixel
// k-means on noisy NDVI used to give salt-and-pepper labels that the
// 0.1 ha sieve merged away, down to 1 zone of 4 on UES-03 on 2019-05-16.
func TestRealZoneCount(t *testing.T) {
	const minPixels = 10 // DefaultMinAreaHa at 10 m
	for _, date := range []string{"2019-05-16", "2019-06-20", "2019-07-05"} {
		scene := testenv.DataDir(t, "s2", "flanders-31UES", date)
		for _, name := range []string{"UES-03", "UES-12", "UES-01"} {
			field := realField(t, "flanders-31UES", name)
			p := realIndex(t, scene, field, "ndvi")
			mask, err := FieldMask(field, p.Grid)
			require.NoError(t, err)
			layers := []Layer{{Name: "ndvi", Type: CropHealth, Values: p.Values, Weight: 1}}
			line := ""
			for k := 3; k <= 6; k++ {
				res, err := Compute(context.Background(), p.Grid, mask, layers, Options{Zones: k, Seed: 1})
				require.NoError(t, err, "%s %s k=%d", name, date, k)
				if res.Clustered >= k*minPixels {
					assert.Len(t, res.Zones, k, "%s %s: %d clear pixels", name, date, res.Clustered)
				}
				checkZones(t, res, mask, p.Values, minPixels)
				assert.Empty(t, shapelyInvalid(t, res.Polygons), "%s %s k=%d", name, date, k)
				small := smallRegions(res.Labels, p.Grid.Cols, p.Grid.Rows, minPixels)
				line += fmt.Sprintf(" k=%d→%d (%d below MMU)", k, len(res.Zones), len(small))
			}
			t.Logf("%s %s %d px, %d clear:%s", name, date, countTrue(mask), clusteredCount(mask, p.Values), line)
		}
	}
}

func clusteredCount(mask []bool, values []float64) int {
	return len(clusteredPixels(mask, []Layer{{Values: values}}))
}

// sloveniaBlock is a 600 m × 500 m block in the middle of the Slovenian
// scene (EPSG:4326), spanning forest, meadows and fields, so the RABA land
// use varies inside it.
func sloveniaBlock(t *testing.T) orb.MultiPolygon {
	t.Helper()
	tr, err := crs.New(32633, 4326)
	require.NoError(t, err)
	x0, y0 := 465181.05+200, 5080254.63-250
	ring := orb.Ring{{x0, y0 - 500}, {x0 + 600, y0 - 500}, {x0 + 600, y0}, {x0, y0}, {x0, y0 - 500}}
	mp, err := geo.Transform(orb.MultiPolygon{{ring}}, tr)
	require.NoError(t, err)
	return mp
}

func TestRealSloveniaCustomLayer(t *testing.T) {
	scene := testenv.DataDir(t, "s2", "slovenia-eolearn", "2015-07-11")
	files := readShapefileDir(t, testenv.DataDir(t, "shapefiles", "slovenia-raba-lulc"))
	field := sloveniaBlock(t)
	p := realIndex(t, scene, field, "ndvi")
	mask, err := FieldMask(field, p.Grid)
	require.NoError(t, err)

	parts, err := ShapefileParts(files, "slovenia_raba_lulc.shp")
	require.NoError(t, err)
	shapes, err := ReadShapefile(parts, ShapefileLimits{})
	require.NoError(t, err)
	raba, err := RasterizeAttribute(shapes, "RABA_ID", p.Grid)
	require.NoError(t, err)
	distinct := map[float64]bool{}
	for i, in := range mask {
		if in {
			distinct[raba[i]] = true
		}
	}
	require.GreaterOrEqual(t, len(distinct), 2, "the block spans several land uses: %v", distinct)

	labelsFor := func(w float64) *Result {
		layers := []Layer{
			{Name: "ndvi", Type: CropHealth, Values: p.Values, Weight: 1},
			{Name: "RABA_ID", Type: Custom, Values: raba, Weight: w},
		}
		res, err := Compute(context.Background(), p.Grid, mask, layers, Options{Zones: 4, Seed: 3})
		require.NoError(t, err)
		checkZones(t, res, mask, p.Values, 10)
		return res
	}
	w0, w1, w10 := labelsFor(0), labelsFor(1), labelsFor(10)
	assert.NotEqual(t, w0.Labels, w1.Labels, "adding the custom layer changes the zones")
	assert.NotEqual(t, w1.Labels, w10.Labels, "raising its weight changes the zones")
	assert.Greater(t, agreement(w0.Labels, w1.Labels), agreement(w0.Labels, w10.Labels),
		"the heavier the custom layer, the further the zones from NDVI-only zones")
	// With a dominant land-use layer, zones follow land-use boundaries:
	// almost every zone holds (nearly) one RABA code.
	purity := func(res *Result) float64 {
		byZone := map[int32]map[float64]int{}
		for i, l := range res.Labels {
			if l > 0 {
				if byZone[l] == nil {
					byZone[l] = map[float64]int{}
				}
				byZone[l][raba[i]]++
			}
		}
		top, all := 0, 0
		for _, m := range byZone {
			best := 0
			for _, c := range m {
				best = max(best, c)
				all += c
			}
			top += best
		}
		return float64(top) / float64(all)
	}
	assert.Greater(t, purity(w10), purity(w0))
	t.Logf("land-use purity of zones: weight 0 %.3f, 1 %.3f, 10 %.3f; agreement with NDVI-only: %.3f, %.3f",
		purity(w0), purity(w1), purity(w10), agreement(w0.Labels, w1.Labels), agreement(w0.Labels, w10.Labels))
}

func TestRealParcel(t *testing.T) {
	scene := testenv.DataDir(t, "s2", "flanders-31UES", "2019-06-20")
	field := realField(t, "flanders-31UES", "UES-01")
	p := realIndex(t, scene, field, "ndvi")
	// A parcel: the first 6×6 block of field pixels, shrunk by 1 m so its
	// outline is strictly inside the field.
	fieldMask, err := FieldMask(field, p.Grid)
	require.NoError(t, err)
	g := p.Grid
	c0, r0 := -1, -1
	for r := 0; r+6 <= g.Rows && c0 < 0; r++ {
		for c := 0; c+6 <= g.Cols && c0 < 0; c++ {
			all := true
			for i := range 36 {
				all = all && fieldMask[(r+i/6)*g.Cols+c+i%6]
			}
			if all {
				c0, r0 = c, r
			}
		}
	}
	require.GreaterOrEqual(t, c0, 0, "UES-01 holds a 6×6 block")
	x0, y1 := g.X0+float64(c0)*g.DX+1, g.Y0-float64(r0)*g.DY-1
	x1, y0 := x0+6*g.DX-2, y1-6*g.DY+2
	tr, err := crs.New(g.EPSG, 4326)
	require.NoError(t, err)
	corner := func(x, y float64) string { lon, lat := tr.Transform(x, y); return pt(lon, lat) }
	parcelJSON := []byte(`{"type":"Feature","properties":{},"geometry":{"type":"Polygon","coordinates":[[` +
		corner(x0, y0) + `,` + corner(x1, y0) + `,` + corner(x1, y1) + `,` + corner(x0, y1) + `,` + corner(x0, y0) + `]]}}`)
	parcel, err := ParseParcel(parcelJSON, field)
	require.NoError(t, err)
	mask, err := FieldMask(parcel, p.Grid)
	require.NoError(t, err)
	assert.Equal(t, 36, countTrue(mask), "the parcel holds the 6×6 pixel centres")
	require.Less(t, countTrue(mask), countTrue(fieldMask))
	res, err := Compute(context.Background(), p.Grid, mask, []Layer{{Name: "ndvi", Type: CropHealth, Values: p.Values, Weight: 1}}, Options{Zones: 3, Seed: 1})
	require.NoError(t, err)
	checkZones(t, res, mask, p.Values, 10)
}

func pt(x, y float64) string {
	return "[" + strconv.FormatFloat(x, 'f', -1, 64) + "," + strconv.FormatFloat(y, 'f', -1, 64) + "]"
}
