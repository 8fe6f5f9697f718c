package imagery

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/internal/testenv"
)

// s1RefStats is one index's statistics from testdata/s1_reference.py.
type s1RefStats struct {
	Num                                   int
	Mean, Median, P25, P75, Min, Max, Std float64
}

// s1Reference runs the independent rasterio/numpy computation over scenes.
func s1Reference(t *testing.T, fields string, scenes []string) map[string]map[string]map[string]json.RawMessage {
	t.Helper()
	py := testenv.RequireTool(t, "/usr/bin/python3")
	if err := exec.Command(py, "-c", "import numpy, rasterio, shapely, pyproj").Run(); err != nil {
		testenv.RequireTool(t, "python3-rasterio python3-shapely python3-pyproj (import failed)")
	}
	cmd := exec.Command(py, append([]string{"testdata/s1_reference.py", fields}, scenes...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	require.NoError(t, err)
	var ref map[string]map[string]map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(out, &ref))
	return ref
}

// TestSentinel1AgainstReference checks vv, vh, vh_vv and rvi of every
// Flanders field on a spread of dates of each chip (every 10th of 80 and 159)
// against an independent rasterio/numpy computation, to 1e-9.
func TestSentinel1AgainstReference(t *testing.T) {
	indices := []string{"vv", "vh", "vh_vv", "rvi"}
	for _, place := range []string{"flanders-31UES", "flanders-31UDS"} {
		t.Run(place, func(t *testing.T) {
			root := testenv.DataDir(t, "s1", place)
			entries, err := os.ReadDir(root)
			require.NoError(t, err)
			var scenes []string
			for i, e := range entries {
				if i%10 == 0 {
					scenes = append(scenes, filepath.Join(root, e.Name()))
				}
			}
			require.GreaterOrEqual(t, len(scenes), 6)
			fieldsPath := testenv.DataDir(t, "fields", place+".geojson")
			ref := s1Reference(t, fieldsPath, scenes)
			fields := readFields(t, place)
			checked := 0
			for _, dir := range scenes {
				s, err := OpenScene(context.Background(), dir, SceneOptions{})
				require.NoError(t, err)
				assert.Equal(t, Sentinel1, s.Sensor())
				assert.Equal(t, 20.0, s.Grid().DX, "the radar grid")
				assert.Empty(t, s.MaskBand(), "no cloud mask for radar")
				for name, f := range fields {
					want := ref[dir][name]
					var fieldPixels int
					require.NoError(t, json.Unmarshal(want["field_pixels"], &fieldPixels))
					if fieldPixels == 0 {
						continue // thinner than a 20 m pixel: no centre inside
					}
					ps, err := s.FieldProducts(context.Background(), f.Geometry, indices, nil)
					require.NoError(t, err, "%s %s", dir, name)
					require.Len(t, ps, len(indices))
					for _, p := range ps {
						var w s1RefStats
						require.NoError(t, json.Unmarshal(want[p.Index], &w), "%s %s %s", dir, name, p.Index)
						msg := filepath.Base(dir) + " " + name + " " + p.Index
						assert.Equal(t, Sentinel1, p.Sensor)
						assert.Equal(t, fieldPixels, p.Stats.FieldPixels, msg)
						assert.Equal(t, w.Num, p.Stats.Num, msg)
						for _, c := range []struct {
							stat      string
							want, got float64
						}{{"mean", w.Mean, p.Stats.Mean}, {"median", w.Median, p.Stats.Median}, {"p25", w.P25, p.Stats.P25},
							{"p75", w.P75, p.Stats.P75}, {"min", w.Min, p.Stats.Min}, {"max", w.Max, p.Stats.Max}, {"std", w.Std, p.Stats.Std}} {
							assert.InDelta(t, c.want, c.got, 1e-9, "%s %s", msg, c.stat)
						}
						checked++
					}
				}
				s.Close()
			}
			t.Logf("%s: %d field-date-index statistics checked on %d dates", place, checked, len(scenes))
			assert.Greater(t, checked, 6*4*10)
		})
	}
}

// TestSentinel1Statistics pins the rules on a hand-made field: the dB mean
// is the mean of linear power, the rest order statistics of dB values.
func TestSentinel1DecibelMean(t *testing.T) {
	cat := NewCatalogue()
	vv, ok := cat.Lookup("vv")
	require.True(t, ok)
	// Linear power 0.1 and 0.001: −10 dB and −30 dB.
	fr := &FieldRaster{InField: []bool{true, true}, Clear: []bool{true, true}, FieldPixels: 2,
		Bands: map[string][]float64{"VV": {0.1, 0.001}, "VH": {0.01, 0.0001}}}
	fr.Grid.Cols, fr.Grid.Rows = 2, 1
	p, err := fr.Product(vv)
	require.NoError(t, err)
	assert.InDelta(t, 10*math.Log10(0.0505), p.Stats.Mean, 1e-12, "10·log10 of the mean linear power")
	assert.InDelta(t, -20, p.Stats.Median, 1e-12, "median of the dB values")
	assert.InDelta(t, 10, p.Stats.Std, 1e-12, "population std of the dB values")
	assert.InDelta(t, -30, p.Stats.Min, 1e-12)
	rvi, _ := cat.Lookup("rvi")
	p, err = fr.Product(rvi)
	require.NoError(t, err)
	assert.InDelta(t, 4*0.01/0.11, p.Stats.Mean, 1e-12, "rvi: plain mean")
	ratio, _ := cat.Lookup("vh_vv")
	p, err = fr.Product(ratio)
	require.NoError(t, err)
	assert.InDelta(t, -10, p.Stats.Mean, 1e-12)
}

func TestSentinel1SensorRules(t *testing.T) {
	dir := testenv.DataDir(t, "s1", "flanders-31UES", "2019-06-04")
	s, err := OpenScene(context.Background(), dir, SceneOptions{})
	require.NoError(t, err)
	defer s.Close()
	assert.Equal(t, "2019-06-04T17:32:45Z", s.Date().Format("2006-01-02T15:04:05Z07:00"))
	f := readFields(t, "flanders-31UES")["UES-03"]
	_, err = s.FieldProducts(context.Background(), f.Geometry, []string{"ndvi"}, nil)
	require.ErrorIs(t, err, ErrSensorMismatch)
	assert.Equal(t, []string{"vv", "rvi"}, NewCatalogue().ForSensor(Sentinel1A, []string{"ndvi", "vv", "chi", "rvi"}))
	assert.Equal(t, []string{"ndvi"}, NewCatalogue().ForSensor(Landsat8, []string{"ndvi", "vv", "chi"}))
}
