package demodata

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/internal/testenv"
)

// maxBytes is the budget for the embedded sample.
const maxBytes = 5 << 20

var bands = []string{"B02", "B03", "B04", "B05", "B06", "B07", "B08", "B11", "B12", "B8A", "SCL"}

func TestScenes(t *testing.T) {
	assert.Equal(t, []string{
		"flanders-31UES/2019-04-21", // clear
		"flanders-31UES/2019-04-26", // partly cloudy
		"flanders-31UES/2019-05-16",
		"flanders-31UES/2019-06-20",
		"flanders-31UES/2019-06-25", // fully cloudy
		"flanders-31UES/2019-07-05",
		"flanders-31UES/2019-07-30",
		"flanders-31UES/2019-08-24",
	}, Scenes())
}

func TestEverySceneHasAllBands(t *testing.T) {
	for _, scene := range Scenes() {
		entries, err := fs.ReadDir(FS(), scene)
		require.NoError(t, err)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		want := make([]string, len(bands))
		for i, b := range bands {
			want[i] = b + ".tif"
		}
		assert.ElementsMatch(t, want, names, scene)
		for _, b := range bands {
			data, err := fs.ReadFile(FS(), path.Join(scene, b+".tif"))
			require.NoError(t, err)
			require.Greater(t, len(data), 8)
			assert.Equal(t, []byte("II*\x00"), data[:4], "%s/%s is a little-endian classic TIFF", scene, b)
			// The acquisition date in the GDAL metadata matches the folder.
			assert.Contains(t, string(data), path.Base(scene)+"T", "%s/%s ACQUISITION_DATETIME_UTC", scene, b)
		}
	}
}

func TestSizeBudget(t *testing.T) {
	var total int64
	require.NoError(t, fs.WalkDir(FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		total += info.Size()
		return nil
	}))
	t.Logf("embedded sample: %d bytes", total)
	assert.LessOrEqual(t, total, int64(maxBytes))
	assert.Greater(t, total, int64(300<<10), "all bands of eight dates")
}

func TestDatesCSV(t *testing.T) {
	b, err := fs.ReadFile(FS(), "flanders-31UES/dates.csv")
	require.NoError(t, err)
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	require.NoError(t, err)
	require.Len(t, rows, 1+len(Scenes()))
	assert.Equal(t, "frac_scl_cloud_8_9_10", rows[0][3])
	cloud := map[string]string{}
	for i, r := range rows[1:] {
		assert.Equal(t, path.Base(Scenes()[i]), r[0])
		cloud[r[0]] = r[3]
	}
	assert.Equal(t, "0.000", cloud["2019-06-20"])
	assert.Equal(t, "0.312", cloud["2019-04-26"], "partly cloudy")
	assert.Equal(t, "1.000", cloud["2019-06-25"], "fully cloudy")
}

func TestFields(t *testing.T) {
	var fc struct {
		Type     string
		Features []struct {
			Properties struct {
				Name      string
				Pixels10m int `json:"pixels_10m"`
			}
			Geometry struct{ Type string }
		}
	}
	require.NoError(t, json.Unmarshal(Fields(), &fc))
	assert.Equal(t, "FeatureCollection", fc.Type)
	require.Len(t, fc.Features, 16)
	assert.Equal(t, "UES-01", fc.Features[0].Properties.Name)
	assert.Equal(t, "UES-16", fc.Features[15].Properties.Name)
	total := 0
	for _, f := range fc.Features {
		assert.Equal(t, "Polygon", f.Geometry.Type)
		total += f.Properties.Pixels10m
	}
	assert.Equal(t, 3701, total)
}

func TestREADMEAttribution(t *testing.T) {
	b, err := fs.ReadFile(FS(), "README.md")
	require.NoError(t, err)
	for _, s := range []string{"Copernicus Sentinel data", "MIT", "Modellicentie Gratis Hergebruik", "5db1e24d918f99e5b2471b826fbcb8fd2afea252"} {
		assert.Contains(t, string(b), s)
	}
	assert.Contains(t, Attribution, "Copernicus Sentinel data 2019")
}

func TestExtract(t *testing.T) {
	dir := t.TempDir()
	for range 2 { // a second extraction overwrites
		scenes, err := Extract(dir)
		require.NoError(t, err)
		require.Len(t, scenes, 8)
		assert.Equal(t, filepath.Join(dir, "flanders-31UES", "2019-04-21"), scenes[0])
		for _, s := range scenes {
			for _, b := range bands {
				got, err := os.ReadFile(filepath.Join(s, b+".tif"))
				require.NoError(t, err)
				want, err := fs.ReadFile(FS(), path.Join("flanders-31UES", filepath.Base(s), b+".tif"))
				require.NoError(t, err)
				require.Equal(t, want, got)
			}
		}
	}
	fields, err := os.ReadFile(filepath.Join(dir, "flanders-31UES", "fields.geojson"))
	require.NoError(t, err)
	assert.Equal(t, Fields(), fields)
	_, err = os.Stat(filepath.Join(dir, "README.md"))
	require.NoError(t, err)
}

func TestExtractError(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	_, err := Extract(file)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "extract demo data")
}

// TestSameAsSharedData checks that every embedded file is a byte-for-byte
// copy of the shared real data (provenance), and that GDAL reads the
// extracted scenes as 64×64 10 m / 32×32 20 m EPSG:32631 rasters.
func TestSameAsSharedData(t *testing.T) {
	shared := testenv.DataDir(t)
	require.NoError(t, fs.WalkDir(FS(), Place, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel := strings.TrimPrefix(p, Place+"/")
		src := filepath.Join(shared, "s2", Place, filepath.FromSlash(rel))
		switch {
		case rel == "fields.geojson":
			src = filepath.Join(shared, "fields", Place+".geojson")
		case rel == "dates.csv":
			return nil // a subset, checked below
		}
		want, err := os.ReadFile(src)
		require.NoError(t, err, p)
		got, err := fs.ReadFile(FS(), p)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(want, got), "%s differs from %s", p, src)
		return nil
	}))
	full, err := os.ReadFile(filepath.Join(shared, "s2", Place, "dates.csv"))
	require.NoError(t, err)
	sub, err := fs.ReadFile(FS(), path.Join(Place, "dates.csv"))
	require.NoError(t, err)
	lines := func(b []byte) []string { return strings.Split(strings.TrimSpace(string(b)), "\r\n") }
	require.Len(t, lines(sub), 9, "CRLF rows as in the source")
	assert.Subset(t, lines(full), lines(sub), "dates.csv rows are copied unchanged")

	gdalinfo := testenv.RequireTool(t, "gdalinfo")
	scenes, err := Extract(t.TempDir())
	require.NoError(t, err)
	for _, tc := range []struct {
		band string
		size string
	}{{"B04", "64, 64"}, {"B8A", "32, 32"}, {"SCL", "32, 32"}} {
		out, err := exec.Command(gdalinfo, filepath.Join(scenes[3], tc.band+".tif")).CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Contains(t, string(out), "Size is "+tc.size, tc.band)
		assert.Contains(t, string(out), `ID["EPSG",32631]`, tc.band)
		assert.Contains(t, string(out), "ACQUISITION_DATETIME_UTC=2019-06-20T10:57:03Z", tc.band)
	}
}
