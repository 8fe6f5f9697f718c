package imagery

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/internal/testenv"
)

// serveItem serves the real item document name of stac-items with the
// assets of files (asset key → local file) at local URLs, and returns the
// item's URL. Other assets keep their real hrefs.
func serveItem(t *testing.T, name string, files map[string]string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testenv.DataDir(t, "stac-items"), name))
	require.NoError(t, err)
	var item map[string]any
	require.NoError(t, json.Unmarshal(raw, &item))
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	assets := item["assets"].(map[string]any)
	for key, path := range files {
		a, ok := assets[key].(map[string]any)
		require.True(t, ok, "item %s has no asset %s", name, key)
		a["href"] = srv.URL + "/assets/" + key + ".tif"
		mux.HandleFunc("/assets/"+key+".tif", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, path) })
	}
	doc, err := json.Marshal(item)
	require.NoError(t, err)
	mux.HandleFunc("/item.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/geo+json")
		w.Write(doc)
	})
	return srv.URL + "/item.json"
}

// The real Planetary Computer sentinel-1-rtc item, its vv/vh assets served
// as float32 linear power (as Planetary Computer serves γ0) made from the
// shared UES chip: statistics equal the dB folder's and an independent
// rasterio/numpy computation over the served files.
func TestSentinel1RTCItem(t *testing.T) {
	py := landsatPython(t)
	dates := []string{"2018-08-02", "2018-10-19", "2019-01-05", "2019-03-30", "2019-06-04", "2019-09-02", "2019-11-19"}
	fieldsPath := testenv.DataDir(t, "fields", "flanders-31UES.geojson")
	fields := readFields(t, "flanders-31UES")
	indices := []string{"vv", "vh", "vh_vv", "rvi"}
	for _, date := range dates {
		t.Run(date, func(t *testing.T) {
			folder := testenv.DataDir(t, "s1", "flanders-31UES", date)
			lin := filepath.Join(t.TempDir(), date)
			out, err := exec.Command(py, "testdata/s1_reference.py", "linear", folder, lin).CombinedOutput()
			require.NoError(t, err, "%s", out)
			url := serveItem(t, "pc-s1rtc-S1A_IW_GRDH_1SDV_20240419T045904_20240419T045916_053498_067DF2_rtc.json",
				map[string]string{"vv": filepath.Join(lin, "VV.tif"), "vh": filepath.Join(lin, "VH.tif")})
			item, err := OpenScene(context.Background(), url, SceneOptions{})
			require.NoError(t, err)
			defer item.Close()
			assert.Equal(t, Sentinel1A, item.Sensor(), "platform SENTINEL-1A")
			assert.Equal(t, "2024-04-19", item.Date().Format("2006-01-02"), "the item's datetime")
			assert.Empty(t, item.MaskBand())
			dir, err := OpenScene(context.Background(), folder, SceneOptions{})
			require.NoError(t, err)
			defer dir.Close()
			// The float32 files as a folder too: no VALUE_UNIT reads as linear power.
			linDir, err := OpenScene(context.Background(), lin, SceneOptions{Date: dir.Date()})
			require.NoError(t, err)
			defer linDir.Close()
			ref := s1Reference(t, fieldsPath, []string{lin})[lin]
			for name, f := range fields {
				var fieldPixels int
				require.NoError(t, json.Unmarshal(ref[name]["field_pixels"], &fieldPixels))
				if fieldPixels == 0 {
					continue
				}
				got, err := item.FieldProducts(context.Background(), f.Geometry, indices, nil)
				require.NoError(t, err, name)
				fromDir, err := dir.FieldProducts(context.Background(), f.Geometry, indices, nil)
				require.NoError(t, err)
				fromLin, err := linDir.FieldProducts(context.Background(), f.Geometry, indices, nil)
				require.NoError(t, err)
				for i, p := range got {
					var w s1RefStats
					require.NoError(t, json.Unmarshal(ref[name][p.Index], &w))
					msg := name + " " + p.Index
					assert.Equal(t, Sentinel1A, p.Sensor)
					assert.Equal(t, w.Num, p.Stats.Num, msg)
					for _, c := range []struct {
						stat      string
						want, got float64
					}{{"mean", w.Mean, p.Stats.Mean}, {"median", w.Median, p.Stats.Median}, {"p25", w.P25, p.Stats.P25},
						{"p75", w.P75, p.Stats.P75}, {"min", w.Min, p.Stats.Min}, {"max", w.Max, p.Stats.Max}, {"std", w.Std, p.Stats.Std}} {
						assert.InDelta(t, c.want, c.got, 1e-9, "%s %s", msg, c.stat)
					}
					// float32 linear power keeps the dB folder's values to ~1e-6 dB.
					assert.InDelta(t, fromDir[i].Stats.Mean, p.Stats.Mean, 1e-5, msg)
					assert.Equal(t, fromLin[i].Stats, p.Stats, msg+": linear folder = item")
				}
			}
		})
	}
}

// The real Planetary Computer landsat-c2-l2 item (Landsat 9), its assets
// served as Collection 2 files made from the shared Landsat 8 chip: the
// statistics (raster:bands scaling, HLS adjustment, qa_pixel mask) equal the
// independent computation within 1e-6 (1e-9 here) and the folder's.
func TestLandsatC2Item(t *testing.T) {
	py := landsatPython(t)
	fieldsPath := testenv.DataDir(t, "fields", "flanders-31UDS.geojson")
	fields := readFields(t, "flanders-31UDS")
	dates := []string{"2017-08-31", "2018-05-30", "2018-06-15", "2018-09-19"}
	c2 := convertToC2(t, py, dates)
	indices := []string{"ndvi", "ndwi", "evi", "gndvi", "ndmi"}
	var dirs []string
	for _, d := range dates {
		dirs = append(dirs, c2[d])
	}
	cmd := exec.Command(py, append([]string{"testdata/landsat_reference.py", "stats", fieldsPath, "C2"}, dirs...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	require.NoError(t, err)
	var ref map[string]map[string]map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(out, &ref))
	masked := 0
	for _, d := range dates {
		files := map[string]string{}
		for _, key := range []string{"blue", "green", "red", "nir08", "swir16", "swir22", "qa_pixel"} {
			files[key] = filepath.Join(c2[d], key+".tif")
		}
		url := serveItem(t, "pc-landsat-LC09_L2SP_089090_20240417_02_T1.json", files)
		s, err := OpenScene(context.Background(), url, SceneOptions{})
		require.NoError(t, err, d)
		assert.Equal(t, Landsat9, s.Sensor())
		assert.Equal(t, "QA_PIXEL", s.MaskBand())
		assert.Equal(t, []string{"B02", "B03", "B04", "B08", "B11", "B12", "B8A"}, s.Bands())
		for name, f := range fields {
			want := ref[c2[d]][name]
			ps, err := s.FieldProducts(context.Background(), f.Geometry, indices, nil)
			if errors.Is(err, ErrNoClearPixels) {
				assert.Equal(t, "null", string(want["ndvi"]), d+" "+name)
				continue
			}
			require.NoError(t, err)
			for _, p := range ps {
				var w s1RefStats
				require.NoError(t, json.Unmarshal(want[p.Index], &w))
				msg := d + " " + name + " " + p.Index
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
			}
		}
		s.Close()
	}
	assert.Greater(t, masked, 5, "cloudy pixels masked by qa_pixel")
}

// Earth Search's Landsat (requester-pays s3:// only) and Sentinel-1 GRD
// (radar geometry) items are refused with a message saying so.
func TestRefusedSensorItems(t *testing.T) {
	for _, tt := range []struct {
		item, want string
	}{
		{"earthsearch-v1-landsat-LC08_L2SP_033032_20231008_02_T1.json", "requester-pays"},
		{"earthsearch-v1-s1grd-S1A_IW_GRDH_1SSH_20250731T135702_20250731T135722_060328_077F7E.json", "radar geometry"},
	} {
		url := serveItem(t, tt.item, nil)
		_, err := OpenScene(context.Background(), url, SceneOptions{})
		require.Error(t, err, tt.item)
		assert.Contains(t, err.Error(), tt.want)
		assert.True(t, errors.Is(err, ErrUnsupportedSensor) || errors.Is(err, ErrUnreadableAsset), "%v", err)
		assert.False(t, strings.Contains(err.Error(), "panic"))
	}
}
