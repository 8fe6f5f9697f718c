package main

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/colormap"
	"github.com/cropkit/cropkit/imagery"
	"github.com/cropkit/cropkit/internal/testenv"
)

func runIndexArgs(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var stderr bytes.Buffer
	err := runIndex(context.Background(), args, strings.NewReader(""), io.Discard, &stderr)
	return stderr.String(), err
}

func readReport(t *testing.T, path string) imagery.Report {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var r imagery.Report
	require.NoError(t, json.Unmarshal(data, &r))
	return r
}

func TestIndexCommandRealScenes(t *testing.T) {
	place := testenv.DataDir(t, "s2", "flanders-31UES")
	fields := testenv.DataDir(t, "fields", "flanders-31UES.geojson")
	out := t.TempDir()
	// Given out of order: the clear date, the fully cloudy one, the partly cloudy one.
	stderr, err := runIndexArgs(t,
		"--scene", filepath.Join(place, "2019-06-20"),
		"--scene", filepath.Join(place, "2018-08-14"),
		"--scene", filepath.Join(place, "2018-08-19"),
		"--fields", fields, "--index", "ndvi,ndre", "--out", out)
	require.NoError(t, err)

	// Fully cloudy: no files, one stderr line per field.
	assert.NoDirExists(t, filepath.Join(out, "UES-03", "2018-08-14"))
	assert.Equal(t, 16, strings.Count(stderr, "2018-08-14: no clear pixel"), stderr)

	first := readReport(t, filepath.Join(out, "UES-03", "2018-08-19", "ndvi.json"))
	assert.Nil(t, first.MeanVariation, "first image of the field")
	assert.Equal(t, 337, first.Stats.Num)
	assert.InDelta(t, 0.42822487688174804, first.Stats.Mean, 1e-9)

	second := readReport(t, filepath.Join(out, "UES-03", "2019-06-20", "ndvi.json"))
	assert.Equal(t, "ndvi", second.Index)
	assert.Equal(t, "2019-06-20", second.Date.Format("2006-01-02"))
	assert.Equal(t, 352, second.Stats.Num)
	assert.Equal(t, 352, second.Stats.FieldPixels)
	assert.InDelta(t, 0.849754, second.Stats.Mean, 5e-7) // README reference table
	assert.InDelta(t, 0.888130, second.Stats.Median, 5e-7)
	require.NotNil(t, second.MeanVariation)
	assert.InDelta(t, 100*(second.Stats.Mean-first.Stats.Mean)/first.Stats.Mean, *second.MeanVariation, 1e-9)
	// Bounds: south < north, west < east, around 50.745°N 4.06°E.
	assert.InDelta(t, 50.745, second.Bounds[0][0], 0.01)
	assert.InDelta(t, 4.06, second.Bounds[0][1], 0.01)
	assert.Less(t, second.Bounds[0][0], second.Bounds[1][0])
	assert.Less(t, second.Bounds[0][1], second.Bounds[1][1])

	// The PNG has one pixel per array value; transparent exactly where null.
	f, err := os.Open(filepath.Join(out, "UES-03", "2019-06-20", "ndvi.png"))
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	require.Equal(t, second.Cols, img.Bounds().Dx())
	require.Equal(t, second.Rows, img.Bounds().Dy())
	for row := 0; row < second.Rows; row++ {
		for col := 0; col < second.Cols; col++ {
			_, _, _, a := img.At(col, row).RGBA()
			assert.Equal(t, math.IsNaN(second.Values[row*second.Cols+col]), a == 0, "pixel (%d,%d)", col, row)
		}
	}
	// No temporary file left behind.
	entries, err := os.ReadDir(filepath.Join(out, "UES-03", "2019-06-20"))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{"ndvi.json", "ndvi.png", "ndre.json", "ndre.png"}, names)
}

func TestIndexCommandCLMScene(t *testing.T) {
	place := testenv.DataDir(t, "s2", "slovenia-eolearn")
	fields := testenv.DataDir(t, "fields", "slovenia-eolearn.geojson")
	out := t.TempDir()
	stderr, err := runIndexArgs(t, "--scene", filepath.Join(place, "2015-07-11"), "--scene", filepath.Join(place, "2015-07-31"),
		"--fields", fields, "--index", "ndvi", "--out", out, "--timings")
	require.NoError(t, err)
	assert.Equal(t, 7, strings.Count(stderr, "2015-07-31: no clear pixel"), stderr)
	// Step times are worker-seconds; their sum and the wall time are given.
	assert.Regexp(t, `timings \(worker-seconds summed over \d+ workers\): .* sum=[0-9.]+s; wall=[0-9.]+s \(parallelism [0-9.]+\)`, stderr)
	r := readReport(t, filepath.Join(out, "SI-01", "2015-07-11", "ndvi.json"))
	assert.Equal(t, 296, r.Stats.Num)
	assert.InDelta(t, 0.665177, r.Stats.Mean, 5e-7)
}

func TestIndexCommandBadInput(t *testing.T) {
	scene := testenv.DataDir(t, "s2", "flanders-31UES", "2019-06-20")
	fields := testenv.DataDir(t, "fields", "flanders-31UES.geojson")
	badJSON := filepath.Join(t.TempDir(), "bad.geojson")
	require.NoError(t, os.WriteFile(badJSON, []byte(`{"type":"FeatureCollection","features":[{"type":"Feature","properties":{},"geometry":{"type":"Point","coordinates":[4,50]}}]}`), 0o644))
	noName := filepath.Join(t.TempDir(), "noname.geojson")
	require.NoError(t, os.WriteFile(noName, []byte(`{"type":"FeatureCollection","features":[{"type":"Feature","properties":{},"geometry":{"type":"Polygon","coordinates":[[[4,50],[4.1,50],[4.1,50.1],[4,50]]]}}]}`), 0o644))
	// A ring of three points (closed: four positions, two of them equal
	// apart from the closing one) the server refuses.
	threePoint := filepath.Join(t.TempDir(), "tri.geojson")
	require.NoError(t, os.WriteFile(threePoint, []byte(`{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"name":"tri"},"geometry":{"type":"Polygon","coordinates":[[[4.06,50.74],[4.07,50.74],[4.06,50.74]]]}}]}`), 0o644))
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no scene", []string{"--fields", fields, "--index", "ndvi"}, "--scene is required"},
		{"no fields", []string{"--scene", scene, "--index", "ndvi"}, "--fields is required"},
		{"no index", []string{"--scene", scene, "--fields", fields}, "--index is required"},
		{"unknown index", []string{"--scene", scene, "--fields", fields, "--index", "ndvi,foo"}, `unknown index "foo"`},
		{"missing scene", []string{"--scene", scene + "-nope", "--fields", fields, "--index", "ndvi"}, "open scene"},
		{"missing fields file", []string{"--scene", scene, "--fields", fields + ".nope", "--index", "ndvi"}, "--fields"},
		{"not polygons", []string{"--scene", scene, "--fields", badJSON, "--index", "ndvi"}, "invalid GeoJSON"},
		{"no field name", []string{"--scene", scene, "--fields", noName, "--index", "ndvi"}, "no properties.field_name or properties.name"},
		{"date with two scenes", []string{"--scene", scene, "--scene", scene, "--date", "2020-01-01", "--fields", fields, "--index", "ndvi"}, "exactly one --scene"},
		{"bad date", []string{"--scene", scene, "--date", "2020-13-01", "--fields", fields, "--index", "ndvi"}, "YYYY-MM-DD"},
		{"same date twice", []string{"--scene", scene, "--scene", scene, "--fields", fields, "--index", "ndvi"}, "same date"},
		{"3-point ring", []string{"--scene", scene, "--fields", threePoint, "--index", "ndvi"}, `field "tri"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			_, err := runIndexArgs(t, append(tt.args, "--out", out)...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.NotContains(t, err.Error(), "\n", "one line")
			assert.NoDirExists(t, out, "no partial output")
		})
	}
}

func TestReadFieldFileNames(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.geojson")
	poly := `{"type":"Polygon","coordinates":[[[4,50],[4.1,50],[4.1,50.1],[4,50]]]}`
	doc := `{"type":"FeatureCollection","features":[
		{"type":"Feature","properties":{"field_name":"north","name":"ignored"},"geometry":` + poly + `},
		{"type":"Feature","properties":{"name":"south"},"geometry":` + poly + `}]}`
	require.NoError(t, os.WriteFile(path, []byte(doc), 0o644))
	fs, problems, err := readFieldFile(path)
	require.NoError(t, err)
	assert.Empty(t, problems)
	require.Len(t, fs, 2)
	assert.Equal(t, "north", fs[0].name)
	assert.Equal(t, "south", fs[1].name)

	for _, bad := range []string{`"../x"`, `"a/b"`, `".."`} {
		doc := `{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"field_name":` + bad + `},"geometry":` + poly + `}]}`
		require.NoError(t, os.WriteFile(path, []byte(doc), 0o644))
		_, _, err := readFieldFile(path)
		assert.ErrorContains(t, err, "folder name", bad)
	}
	dup := `{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"name":"a"},"geometry":` + poly + `},{"type":"Feature","properties":{"name":"a"},"geometry":` + poly + `}]}`
	require.NoError(t, os.WriteFile(path, []byte(dup), 0o644))
	fs, problems, err = readFieldFile(path)
	require.NoError(t, err)
	assert.Len(t, fs, 1)
	require.Len(t, problems, 1)
	assert.Contains(t, problems[0], "twice")
}

// BenchmarkFieldPNG renders a 100 ha field (100×100 px) with the ndvi ramp.
func BenchmarkFieldPNG(b *testing.B) {
	values := make([]float64, 100*100)
	for i := range values {
		values[i] = 0.5 + 0.4*math.Sin(float64(i)/37)
		if i%13 == 0 {
			values[i] = math.NaN()
		}
	}
	cm, _ := colormap.ForIndex("ndvi")
	var enc colormap.Encoder
	b.ReportAllocs()
	for b.Loop() {
		if err := enc.Encode(io.Discard, values, 100, 100, cm, colormap.PNGOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestIndexCommandRerun writes into an output folder that already holds a
// previous run's folders and files: the second run replaces them with the
// same bytes and leaves no temporary file.
func TestIndexCommandRerun(t *testing.T) {
	scene := testenv.DataDir(t, "s2", "flanders-31UES", "2019-06-20")
	fields := testenv.DataDir(t, "fields", "flanders-31UES.geojson")
	out := t.TempDir()
	args := []string{"--scene", scene, "--fields", fields, "--index", "ndvi,evi", "--out", out}
	_, err := runIndexArgs(t, args...)
	require.NoError(t, err)
	dir := filepath.Join(out, "UES-03", "2019-06-20")
	first, err := os.ReadFile(filepath.Join(dir, "evi.json"))
	require.NoError(t, err)
	firstPNG, err := os.ReadFile(filepath.Join(dir, "evi.png"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ndvi.json"), []byte("stale"), 0o644))

	_, err = runIndexArgs(t, args...)
	require.NoError(t, err)
	again, err := os.ReadFile(filepath.Join(dir, "evi.json"))
	require.NoError(t, err)
	assert.Equal(t, first, again)
	againPNG, err := os.ReadFile(filepath.Join(dir, "evi.png"))
	require.NoError(t, err)
	assert.Equal(t, firstPNG, againPNG)
	r := readReport(t, filepath.Join(dir, "ndvi.json")) // the stale file was replaced
	assert.Equal(t, "ndvi", r.Index)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{"ndvi.json", "ndvi.png", "evi.json", "evi.png"}, names)

	// A file where a field's folder belongs is an error, not a crash.
	blocked := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(blocked, "UES-03"), nil, 0o644))
	_, err = runIndexArgs(t, "--scene", scene, "--fields", fields, "--index", "ndvi", "--out", blocked)
	assert.ErrorContains(t, err, "UES-03")
}

func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.json")
	require.NoError(t, writeAtomic(path, []byte("one")))
	require.NoError(t, writeAtomic(path, []byte("two")))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "two", string(got))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file left")
	assert.Error(t, writeAtomic(filepath.Join(dir, "missing", "b.json"), []byte("x")))
}

func TestIndexCommandCPUProfile(t *testing.T) {
	scene := testenv.DataDir(t, "s2", "flanders-31UES", "2019-06-20")
	fields := testenv.DataDir(t, "fields", "flanders-31UES.geojson")
	prof := filepath.Join(t.TempDir(), "cpu.prof")
	_, err := runIndexArgs(t, "--scene", scene, "--fields", fields, "--index", "ndvi", "--out", t.TempDir(), "--cpuprofile", prof)
	require.NoError(t, err)
	data, err := os.ReadFile(prof)
	require.NoError(t, err)
	require.Greater(t, len(data), 2)
	assert.Equal(t, []byte{0x1f, 0x8b}, data[:2], "a gzipped pprof profile")

	_, err = runIndexArgs(t, "--scene", scene, "--fields", fields, "--index", "ndvi", "--out", t.TempDir(),
		"--cpuprofile", filepath.Join(t.TempDir(), "missing", "cpu.prof"))
	assert.ErrorContains(t, err, "--cpuprofile")
}

// A run that writes nothing (every field cloudy) exits non-zero, and says so.
func TestIndexCommandNothingProduced(t *testing.T) {
	place := testenv.DataDir(t, "s2", "slovenia-eolearn")
	fields := testenv.DataDir(t, "fields", "slovenia-eolearn.geojson")
	_, err := runIndexArgs(t, "--scene", filepath.Join(place, "2015-07-31"), "--fields", fields, "--index", "ndvi", "--out", t.TempDir())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no product written")
}

// TestIndexCommandSentinel1 runs the radar indices over a Sentinel-1
// folder scene, and refuses an optical index on it.
func TestIndexCommandSentinel1(t *testing.T) {
	scene := testenv.DataDir(t, "s1", "flanders-31UES", "2019-06-04")
	fields := testenv.DataDir(t, "fields", "flanders-31UES.geojson")
	out := t.TempDir()
	_, err := runIndexArgs(t, "--scene", scene, "--fields", fields, "--index", "vv,vh,vh_vv,rvi", "--out", out)
	require.NoError(t, err)
	for _, ix := range []string{"vv", "vh", "vh_vv", "rvi"} {
		r := readReport(t, filepath.Join(out, "UES-03", "2019-06-04", ix+".json"))
		assert.Equal(t, imagery.Sentinel1, r.Sensor, ix)
		assert.Equal(t, ix, r.Index)
		assert.Equal(t, 93, r.Stats.Num, "UES-03's 20 m pixel centres")
		assert.FileExists(t, filepath.Join(out, "UES-03", "2019-06-04", ix+".png"))
	}
	vv := readReport(t, filepath.Join(out, "UES-03", "2019-06-04", "vv.json"))
	assert.InDelta(t, -12.048636433581004, vv.Stats.Mean, 1e-9)
	assert.InDelta(t, -12.1633, vv.Stats.Median, 1e-9)

	_, err = runIndexArgs(t, "--scene", scene, "--fields", fields, "--index", "ndvi", "--out", t.TempDir())
	assert.ErrorContains(t, err, "is sentinel-1: index ndvi applies to [sentinel-2 landsat]")
}

// TestIndexCommandLandsat runs optical indices over a Landsat 8 folder
// (Collection 1, QA_PIXEL_C1), and refuses a red-edge index on it.
func TestIndexCommandLandsat(t *testing.T) {
	scene := testenv.DataDir(t, "landsat8", "flanders-31UDS", "2018-06-06")
	fields := testenv.DataDir(t, "fields", "flanders-31UDS.geojson")
	out := t.TempDir()
	_, err := runIndexArgs(t, "--scene", scene, "--fields", fields, "--index", "ndvi,ndmi", "--out", out)
	require.NoError(t, err)
	r := readReport(t, filepath.Join(out, "UDS-01", "2018-06-06", "ndvi.json"))
	assert.Equal(t, imagery.Landsat8, r.Sensor)
	assert.Equal(t, 628, r.Stats.Num)
	_, err = runIndexArgs(t, "--scene", scene, "--fields", fields, "--index", "ndre", "--out", t.TempDir())
	assert.ErrorContains(t, err, "is landsat-8: index ndre applies to [sentinel-2]")
}

// One run over Sentinel-2, Sentinel-1 and Landsat scenes with optical and
// radar indices: each index is computed on the scenes of its sensors (a
// Sentinel-2 and a Sentinel-1 scene of one date both write), and two
// scenes of one date that would write the same index are refused.
func TestIndexCommandMixedSensors(t *testing.T) {
	s2 := testenv.DataDir(t, "s2", "flanders-31UDS", "2018-08-02")
	s1 := testenv.DataDir(t, "s1", "flanders-31UDS", "2018-08-02")
	l8 := testenv.DataDir(t, "landsat8", "flanders-31UDS", "2018-07-17")
	l8same := testenv.DataDir(t, "landsat8", "flanders-31UDS", "2018-08-02")
	fields := testenv.DataDir(t, "fields", "flanders-31UDS.geojson")

	mixed := t.TempDir()
	_, err := runIndexArgs(t, "--scene", s2, "--scene", s1, "--scene", l8, "--fields", fields, "--index", "ndvi,vv", "--out", mixed)
	require.NoError(t, err)
	for _, tt := range []struct {
		scene, index, date string
		sensor             imagery.Sensor
	}{
		{s2, "ndvi", "2018-08-02", imagery.Sentinel2},
		{s1, "vv", "2018-08-02", imagery.Sentinel1},
		{l8, "ndvi", "2018-07-17", imagery.Landsat8},
	} {
		// The same product as a run over that scene alone.
		alone := t.TempDir()
		_, err := runIndexArgs(t, "--scene", tt.scene, "--fields", fields, "--index", tt.index, "--out", alone)
		require.NoError(t, err)
		want := readReport(t, filepath.Join(alone, "UDS-01", tt.date, tt.index+".json"))
		got := readReport(t, filepath.Join(mixed, "UDS-01", tt.date, tt.index+".json"))
		assert.Equal(t, tt.sensor, got.Sensor)
		assert.Equal(t, want.Stats, got.Stats, tt.index)
	}
	assert.NoFileExists(t, filepath.Join(mixed, "UDS-01", "2018-07-17", "vv.json"))

	_, err = runIndexArgs(t, "--scene", s2, "--scene", s1, "--scene", l8same, "--fields", fields, "--index", "ndvi,vv", "--out", t.TempDir())
	assert.ErrorContains(t, err, "have the same date 2018-08-02")
	_, err = runIndexArgs(t, "--scene", s2, "--scene", s1, "--fields", fields, "--index", "ndre,vv", "--out", t.TempDir())
	require.NoError(t, err)
	_, err = runIndexArgs(t, "--scene", s1, "--fields", fields, "--index", "ndvi,vv", "--out", t.TempDir())
	assert.ErrorContains(t, err, "index ndvi applies to [sentinel-2 landsat]")
}
