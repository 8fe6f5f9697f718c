package imagery

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/internal/testenv"
)

// landsatDates are partly cloudy (QA cloud, shadow, high cirrus
// confidence), clear and edge-of-swath dates of the shared Landsat 8 chip.
var landsatDates = []string{"2017-08-31", "2017-10-18", "2017-11-19", "2018-05-30", "2018-06-06", "2018-06-15", "2018-07-17", "2018-09-19"}

func landsatPython(t *testing.T) string {
	t.Helper()
	py := testenv.RequireTool(t, "/usr/bin/python3")
	if err := exec.Command(py, "-c", "import numpy, rasterio, shapely, pyproj").Run(); err != nil {
		testenv.RequireTool(t, "python3-rasterio python3-shapely python3-pyproj (import failed)")
	}
	return py
}

// convertToC2 writes Collection 2 Level-2 folders (asset-key file names,
// 2.75e-5/−0.2 DNs, QA_PIXEL bits) of the shared Collection 1 dates.
func convertToC2(t *testing.T, py string, dates []string) map[string]string {
	t.Helper()
	root := testenv.DataDir(t, "landsat8", "flanders-31UDS")
	out := map[string]string{}
	for _, d := range dates {
		dst := filepath.Join(t.TempDir(), d)
		cmd := exec.Command(py, "testdata/landsat_reference.py", "convert", filepath.Join(root, d), dst)
		cmd.Stderr = os.Stderr
		require.NoError(t, cmd.Run())
		out[d] = dst
	}
	return out
}

// TestLandsatAgainstReference checks ndvi, ndwi, evi, gndvi and ndmi of
// every UDS field on eight dates, through the shared Collection 1 folders
// and through Collection 2 folders converted from them, against an
// independent rasterio/numpy computation with the HLS bandpass adjustment
// and the QA_PIXEL mask, to 1e-6 (1e-9 observed).
func TestLandsatAgainstReference(t *testing.T) {
	py := landsatPython(t)
	fieldsPath := testenv.DataDir(t, "fields", "flanders-31UDS.geojson")
	fields := readFields(t, "flanders-31UDS")
	root := testenv.DataDir(t, "landsat8", "flanders-31UDS")
	c2 := convertToC2(t, py, landsatDates)
	indices := []string{"ndvi", "ndwi", "evi", "gndvi", "ndmi"}
	for _, coll := range []string{"C1", "C2"} {
		t.Run(coll, func(t *testing.T) {
			var dirs []string
			for _, d := range landsatDates {
				if coll == "C1" {
					dirs = append(dirs, filepath.Join(root, d))
				} else {
					dirs = append(dirs, c2[d])
				}
			}
			cmd := exec.Command(py, append([]string{"testdata/landsat_reference.py", "stats", fieldsPath, coll}, dirs...)...)
			cmd.Stderr = os.Stderr
			out, err := cmd.Output()
			require.NoError(t, err)
			var ref map[string]map[string]map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(out, &ref))
			checked, masked := 0, 0
			for _, dir := range dirs {
				s, err := OpenScene(context.Background(), dir, SceneOptions{})
				require.NoError(t, err)
				if coll == "C1" {
					assert.Equal(t, Landsat8, s.Sensor(), "from the PRODUCT metadata")
					assert.Equal(t, "QA_PIXEL_C1", s.MaskBand())
				} else {
					assert.Equal(t, Landsat, s.Sensor(), "no metadata: the mission only")
					assert.Equal(t, "QA_PIXEL", s.MaskBand())
				}
				for name, f := range fields {
					want := ref[dir][name]
					ps, err := s.FieldProducts(context.Background(), f.Geometry, indices, nil)
					if errors.Is(err, ErrNoClearPixels) {
						for _, ix := range indices {
							assert.Equal(t, "null", string(want[ix]), "%s %s %s", dir, name, ix)
						}
						continue
					}
					require.NoError(t, err)
					got := map[string]Product{}
					for _, p := range ps {
						got[p.Index] = p
					}
					for _, ix := range indices {
						msg := filepath.Base(dir) + " " + name + " " + ix
						if string(want[ix]) == "null" {
							assert.NotContains(t, got, ix, msg)
							continue
						}
						var w s1RefStats
						require.NoError(t, json.Unmarshal(want[ix], &w), msg)
						p := got[ix]
						assert.Equal(t, w.Num, p.Stats.Num, msg)
						if p.Stats.Num < p.Stats.FieldPixels {
							masked++
						}
						for _, c := range []struct {
							stat      string
							want, got float64
						}{{"mean", w.Mean, p.Stats.Mean}, {"median", w.Median, p.Stats.Median}, {"p25", w.P25, p.Stats.P25},
							{"p75", w.P75, p.Stats.P75}, {"min", w.Min, p.Stats.Min}, {"max", w.Max, p.Stats.Max}, {"std", w.Std, p.Stats.Std}} {
							assert.InDelta(t, c.want, c.got, 1e-9, "%s %s", msg, c.stat)
						}
						assert.Equal(t, s.Sensor(), p.Sensor)
						checked++
					}
				}
				s.Close()
			}
			t.Logf("%s: %d statistics checked, %d of them with QA-masked pixels", coll, checked, masked)
			assert.GreaterOrEqual(t, checked, 250)
			assert.Greater(t, masked, 20, "cloudy pixels are masked")
		})
	}
}

// TestLandsatBandpass pins the inverse HLS adjustment on one band value.
func TestLandsatBandpass(t *testing.T) {
	c := hlsCoefficients()
	v := []float64{0.3}
	c["B04"].harmonize(v)
	assert.InDelta(t, (0.3-0.0009)/0.9765, v[0], 1e-15)
	assert.Equal(t, c["B8A"], c["B08"], "OLI B5 serves both NIR bands")
	for _, tt := range []struct {
		qa     float64
		kind   qaKind
		usable bool
	}{
		{21824, qaLandsatC2, true},  // clear, low confidences (a typical C2 value)
		{21952, qaLandsatC2, true},  // water
		{1, qaLandsatC2, false},     // fill
		{21826, qaLandsatC2, false}, // dilated cloud
		{54596, qaLandsatC2, false}, // cirrus
		{22280, qaLandsatC2, false}, // cloud
		{23888, qaLandsatC2, false}, // cloud shadow
		{30048, qaLandsatC2, false}, // snow
		{322, qaLandsatC1, true},
		{328, qaLandsatC1, false}, // shadow
		{480, qaLandsatC1, false}, // cloud
		{834, qaLandsatC1, false}, // cirrus confidence high
		{1, qaLandsatC1, false},   // fill
	} {
		assert.Equal(t, tt.usable, landsatUsable(tt.kind, tt.qa), "QA %v", tt.qa)
	}
}
