package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/internal/testenv"
)

func runTimeseriesArgs(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var stderr bytes.Buffer
	err := runTimeseries(context.Background(), args, strings.NewReader(""), io.Discard, &stderr)
	return stderr.String(), err
}

// TestTimeseriesCommandRealScenes gives every 31UES scene but 2019-06-20 and
// checks the withheld day's estimate against the README's GDAL reference
// mean, then gives that scene too and checks it is the day's observation.
func TestTimeseriesCommandRealScenes(t *testing.T) {
	place := testenv.DataDir(t, "s2", "flanders-31UES")
	fields := testenv.DataDir(t, "fields", "flanders-31UES.geojson")
	entries, err := os.ReadDir(place)
	require.NoError(t, err)
	var without, with []string
	globbed := []string{"--scene"} // --scene DIR DIR …, as a shell glob gives them
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		arg := []string{"--scene", filepath.Join(place, e.Name())}
		with = append(with, arg...)
		globbed = append(globbed, filepath.Join(place, e.Name()))
		if e.Name() != "2019-06-20" {
			without = append(without, arg...)
		}
	}
	const truth = 0.849754 // UES-03 mean NDVI on 2019-06-20 (GDAL + numpy)
	for _, tt := range []struct {
		name     string
		scenes   []string
		observed bool
		// The neighbours (0.750 on 06-10, 0.718 on 06-30) say less than the
		// withheld date: no interpolation reaches it.
		tolerance float64
	}{{"withheld", without, false, 0.12}, {"given", with, true, 0.03}, {"globbed", globbed, true, 0.03}} {
		t.Run(tt.name, func(t *testing.T) {
			out := t.TempDir()
			args := append(append([]string{}, tt.scenes...), "--fields", fields, "--index", "ndvi",
				"--from", "2019-06-01", "--to", "2019-06-30", "--out", out)
			_, err := runTimeseriesArgs(t, args...)
			require.NoError(t, err)
			data, err := os.ReadFile(filepath.Join(out, "UES-03", "ndvi.json"))
			require.NoError(t, err)
			var doc struct {
				Field, Index string
				Series       []struct {
					Date                   string
					Observed               *float64
					Sensor                 *string
					Estimate, Lower, Upper float64
				}
			}
			require.NoError(t, json.Unmarshal(data, &doc))
			assert.Equal(t, "UES-03", doc.Field)
			assert.Equal(t, "ndvi", doc.Index)
			require.Len(t, doc.Series, 30)
			assert.Equal(t, "2019-06-01", doc.Series[0].Date)
			d := doc.Series[19]
			require.Equal(t, "2019-06-20", d.Date)
			t.Logf("2019-06-20: estimate %.4f [%.4f, %.4f], truth %.4f", d.Estimate, d.Lower, d.Upper, truth)
			assert.InDelta(t, truth, d.Estimate, tt.tolerance)
			assert.Less(t, d.Lower, d.Estimate)
			assert.Less(t, d.Estimate, d.Upper)
			if tt.observed {
				require.NotNil(t, d.Observed)
				assert.InDelta(t, truth, *d.Observed, 1e-6)
				assert.Equal(t, "sentinel-2", *d.Sensor)
			} else {
				assert.Nil(t, d.Observed)
				assert.Nil(t, d.Sensor)
			}
			assert.Nil(t, doc.Series[0].Observed, "2019-06-01 has no scene")
		})
	}
}

func TestTimeseriesCommandErrors(t *testing.T) {
	place := testenv.DataDir(t, "s2", "flanders-31UES", "2019-06-20")
	fields := testenv.DataDir(t, "fields", "flanders-31UES.geojson")
	base := []string{"--scene", place, "--fields", fields, "--out", t.TempDir()}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--index", "ndvi", "--from", "2019-06-01"}, "--from and --to are required"},
		{[]string{"--index", "ndvi", "--from", "2019-06-01", "--to", "2019-05-01"}, "before --from"},
		{[]string{"--index", "ndvi", "--from", "2019-6-1", "--to", "2019-07-01"}, "want YYYY-MM-DD"},
		{[]string{"--index", "nope", "--from", "2019-06-01", "--to", "2019-07-01"}, "unknown index"},
		{[]string{"--index", "ndvi", "--from", "1900-01-01", "--to", "2019-07-01"}, "at most"},
	} {
		_, err := runTimeseriesArgs(t, append(append([]string{}, base...), tt.args...)...)
		require.ErrorContains(t, err, tt.want)
	}
}

// Sentinel-2 and Sentinel-1 folders together: each index is measured on
// the scenes of its sensors, radar series name their sensor.
func TestTimeseriesCommandRadarAndOptical(t *testing.T) {
	s2 := testenv.DataDir(t, "s2", "flanders-31UES", "2019-06-20")
	s1 := testenv.DataDir(t, "s1", "flanders-31UES")
	fields := testenv.DataDir(t, "fields", "flanders-31UES.geojson")
	out := t.TempDir()
	args := []string{"--scene", s2, "--fields", fields, "--index", "ndvi,vh", "--from", "2019-06-01", "--to", "2019-06-30", "--out", out}
	for _, d := range []string{"2019-06-04", "2019-06-10", "2019-06-16", "2019-06-22", "2019-06-28"} {
		args = append(args, "--scene", filepath.Join(s1, d))
	}
	_, err := runTimeseriesArgs(t, args...)
	require.NoError(t, err)
	var doc struct {
		Series []struct {
			Date     string
			Observed *float64
			Sensor   *string
		}
	}
	data, err := os.ReadFile(filepath.Join(out, "UES-03", "vh.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &doc))
	require.Len(t, doc.Series, 30)
	require.NotNil(t, doc.Series[3].Observed, doc.Series[3].Date)
	assert.Equal(t, "sentinel-1", *doc.Series[3].Sensor)
	assert.Less(t, *doc.Series[3].Observed, -5.0, "VH in dB")
	assert.Nil(t, doc.Series[19].Observed, "the S2 date is not a radar observation")
	data, err = os.ReadFile(filepath.Join(out, "UES-03", "ndvi.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &doc))
	require.NotNil(t, doc.Series[19].Observed)
	assert.Nil(t, doc.Series[3].Observed, "a radar date is no NDVI observation")
}

// A fields file with one invalid polygon: the other fields' series are
// written, the bad one is named, and the command fails at the end.
func TestTimeseriesCommandInvalidFieldKeepsGoing(t *testing.T) {
	scene := testenv.DataDir(t, "s2", "flanders-31UES", "2019-06-20")
	fields := testenv.DataDir(t, "fields", "flanders-31UES.geojson")
	data, err := os.ReadFile(fields)
	require.NoError(t, err)
	var fc map[string]any
	require.NoError(t, json.Unmarshal(data, &fc))
	features := fc["features"].([]any)
	bad := features[2].(map[string]any)
	badName := bad["properties"].(map[string]any)["name"].(string)
	// A bow tie: the exterior ring crosses itself.
	bad["geometry"] = map[string]any{"type": "Polygon", "coordinates": [][][]float64{
		{{4.06, 50.74}, {4.061, 50.741}, {4.061, 50.74}, {4.06, 50.741}, {4.06, 50.74}}}}
	data, err = json.Marshal(fc)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "fields.geojson")
	require.NoError(t, os.WriteFile(path, data, 0o644))

	out := t.TempDir()
	stderr, err := runTimeseriesArgs(t, "--scene", scene, "--fields", path, "--index", "ndvi",
		"--from", "2019-06-18", "--to", "2019-06-22", "--out", out)
	require.Error(t, err)
	assert.Contains(t, err.Error(), badName)
	assert.Contains(t, stderr, badName)
	assert.NoDirExists(t, filepath.Join(out, badName))
	good := features[0].(map[string]any)["properties"].(map[string]any)["name"].(string)
	assert.FileExists(t, filepath.Join(out, good, "ndvi.json"))
}
