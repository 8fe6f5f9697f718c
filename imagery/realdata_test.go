package imagery

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/internal/testenv"
)

func readFields(t *testing.T, place string) map[string]geo.Feature {
	t.Helper()
	data, err := os.ReadFile(testenv.DataDir(t, "fields", place+".geojson"))
	require.NoError(t, err)
	feats, err := geo.ReadFeatures(data)
	require.NoError(t, err)
	out := map[string]geo.Feature{}
	for _, f := range feats {
		out[f.Name] = f
	}
	return out
}

func openScene(t *testing.T, place, date string) *Scene {
	t.Helper()
	s, err := OpenScene(context.Background(), testenv.DataDir(t, "s2", place, date), SceneOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// TestReadmeReferenceNDVI checks the README's reference tables (GDAL + numpy) to 1e-6.
func TestReadmeReferenceNDVI(t *testing.T) {
	type row struct {
		count                                 int
		mean, median, std, min, max, p25, p75 float64
	}
	tests := []struct {
		place, date string
		want        map[string]row
	}{
		{"flanders-31UES", "2019-06-20", map[string]row{
			"UES-03": {352, 0.849754, 0.888130, 0.082123, 0.567413, 0.919092, 0.835721, 0.898779},
			"UES-12": {154, 0.666497, 0.668178, 0.062968, 0.513944, 0.870045, 0.624879, 0.712630},
			"UES-14": {72, 0.833227, 0.847814, 0.048997, 0.643895, 0.886970, 0.818496, 0.866432},
		}},
		{"slovenia-eolearn", "2015-07-11", map[string]row{
			"SI-01": {296, 0.665177, 0.712169, 0.114754, 0.363189, 0.791097, 0.572615, 0.760248},
			"SI-02": {285, 0.675646, 0.687009, 0.060504, 0.391369, 0.794202, 0.666409, 0.703973},
			"SI-03": {211, 0.668776, 0.665606, 0.052069, 0.563782, 0.822211, 0.633607, 0.706161},
		}},
	}
	for _, tt := range tests {
		s := openScene(t, tt.place, tt.date)
		fields := readFields(t, tt.place)
		assert.Equal(t, tt.date, s.Date().Format("2006-01-02"))
		for name, w := range tt.want {
			t.Run(name, func(t *testing.T) {
				ps, err := s.FieldProducts(context.Background(), fields[name].Geometry, []string{"ndvi"}, nil)
				require.NoError(t, err)
				require.Len(t, ps, 1)
				st := ps[0].Stats
				assert.Equal(t, w.count, st.Num)
				assert.Equal(t, w.count, st.FieldPixels)
				assert.Zero(t, st.CloudCover)
				// The table is rounded to 6 decimals: 5e-7 is its resolution.
				for _, f := range []struct {
					name      string
					want, got float64
				}{{"mean", w.mean, st.Mean}, {"median", w.median, st.Median}, {"std", w.std, st.Std}, {"min", w.min, st.Min},
					{"max", w.max, st.Max}, {"p25", w.p25, st.P25}, {"p75", w.p75, st.P75}} {
					assert.InDelta(t, f.want, f.got, 5e-7+1e-12, f.name)
				}
			})
		}
	}
}

type refStats struct {
	Mean, Median, Std, Min, Max, P25, P75 float64
	Num                                   int
	CloudCover                            float64 `json:"cloud_cover"`
}

type refField struct {
	Window      [4]int `json:"window"`
	FieldPixels int    `json:"field_pixels"`
	Indices     map[string]*refStats
}

func (r *refField) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	r.Indices = map[string]*refStats{}
	for k, v := range m {
		var err error
		switch k {
		case "window":
			err = json.Unmarshal(v, &r.Window)
		case "field_pixels":
			err = json.Unmarshal(v, &r.FieldPixels)
		default:
			var s *refStats
			err = json.Unmarshal(v, &s)
			r.Indices[k] = s
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// TestAgainstReferenceScript compares every index on every field of five
// scenes (clear, partly cloudy with SCL, the CLM mask, non-pixel-aligned
// slovenia polygons) with testdata/reference_stats.json, the output of
// testdata/reference_stats.py (rasterio + numpy), to 1e-6.
func TestAgainstReferenceScript(t *testing.T) {
	data, err := os.ReadFile("testdata/reference_stats.json")
	require.NoError(t, err)
	var ref map[string]map[string]*refField
	require.NoError(t, json.Unmarshal(data, &ref))
	require.Len(t, ref, 5)
	cat := NewCatalogue()
	for scene, fields := range ref {
		place, date, _ := strings.Cut(scene, "/")
		s := openScene(t, place, date)
		geoms := readFields(t, place)
		for name, want := range fields {
			t.Run(scene+"/"+name, func(t *testing.T) {
				fr, err := s.ReadField(context.Background(), geoms[name].Geometry, s.Bands())
				require.NoError(t, err)
				assert.Equal(t, want.Window, [4]int{fr.Window.Col, fr.Window.Row, fr.Window.Cols, fr.Window.Rows})
				assert.Equal(t, want.FieldPixels, fr.FieldPixels)
				require.Len(t, want.Indices, len(cat.ForSensor(Sentinel2, cat.Names())))
				for ixName, w := range want.Indices {
					ix, ok := cat.Lookup(ixName)
					require.True(t, ok, ixName)
					p, err := fr.Product(ix)
					require.NoError(t, err)
					if w == nil {
						assert.Zero(t, p.Stats.Num, ixName)
						continue
					}
					got := p.Stats
					assert.Equal(t, w.Num, got.Num, ixName)
					tol := 1e-6
					if ixName == "nirv" { // in DN units: 1e-6 relative
						tol = 1e-6 * math.Max(1, math.Abs(w.Mean))
					}
					for _, f := range []struct {
						name      string
						want, got float64
					}{{"mean", w.Mean, got.Mean}, {"median", w.Median, got.Median}, {"std", w.Std, got.Std},
						{"min", w.Min, got.Min}, {"max", w.Max, got.Max}, {"p25", w.P25, got.P25}, {"p75", w.P75, got.P75},
						{"cloud_cover", w.CloudCover, got.CloudCover}} {
						assert.InDelta(t, f.want, f.got, tol, "%s %s", ixName, f.name)
					}
				}
			})
		}
	}
}

// TestReferenceScriptUpToDate re-runs the reference script when python3 with
// rasterio is available and checks it still produces the committed JSON.
func TestReferenceScriptUpToDate(t *testing.T) {
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		py = testenv.RequireTool(t, "python3")
	}
	if err := exec.Command(py, "-c", "import rasterio, numpy").Run(); err != nil {
		if testenv.InCI() {
			t.Fatalf("python3 with rasterio and numpy is required under CI: %v", err)
		}
		t.Skip("python3 with rasterio and numpy is not installed")
	}
	dataDir := testenv.DataDir(t)
	out, err := exec.Command(py, "testdata/reference_stats.py", dataDir).Output()
	require.NoError(t, err)
	committed, err := os.ReadFile(filepath.Join("testdata", "reference_stats.json"))
	require.NoError(t, err)
	assert.JSONEq(t, string(committed), string(out))
}

// TestCloudyDatesHaveNoProduct: fully cloudy dates by SCL (flanders) and by
// CLM (slovenia) give ErrNoClearPixels for every field.
func TestCloudyDatesHaveNoProduct(t *testing.T) {
	for _, sc := range []struct{ place, date string }{
		{"flanders-31UES", "2018-08-14"},
		{"slovenia-eolearn", "2015-07-31"},
	} {
		s := openScene(t, sc.place, sc.date)
		for name, f := range readFields(t, sc.place) {
			_, err := s.FieldProducts(context.Background(), f.Geometry, []string{"ndvi", "ndre"}, nil)
			assert.ErrorIs(t, err, ErrNoClearPixels, "%s %s", sc.place, name)
			fr, err := s.ReadField(context.Background(), f.Geometry, []string{"B04"})
			require.NoError(t, err)
			for i, in := range fr.InField {
				if in {
					assert.False(t, fr.Clear[i])
				}
			}
		}
	}
}

func TestSceneOpenRealData(t *testing.T) {
	s := openScene(t, "flanders-31UES", "2019-06-20")
	assert.Equal(t, "flanders-31UES/2019-06-20", s.ID())
	assert.Equal(t, "2019-06-20T10:57:03Z", s.Date().Format("2006-01-02T15:04:05Z07:00"))
	assert.Equal(t, geo.Grid{EPSG: 32631, X0: 574680, Y0: 5622440, DX: 10, DY: 10, Cols: 64, Rows: 64}, s.Grid())
	assert.Equal(t, "SCL", s.MaskBand())
	assert.Equal(t, []string{"B02", "B03", "B04", "B05", "B06", "B07", "B08", "B11", "B12", "B8A"}, s.Bands())

	si := openScene(t, "slovenia-eolearn", "2015-07-11")
	assert.Equal(t, "CLM", si.MaskBand())
	assert.InDelta(t, 9.99479222007154, si.Grid().DX, 1e-12)
	assert.Equal(t, 32633, si.Grid().EPSG)

	// A field of another place does not overlap.
	fl := readFields(t, "flanders-31UES")
	_, err := si.FieldProducts(context.Background(), fl["UES-03"].Geometry, []string{"ndvi"}, nil)
	assert.ErrorIs(t, err, ErrNoOverlap)
}
