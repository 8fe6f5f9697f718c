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

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/geo/crs"
	"github.com/cropkit/cropkit/imagery"
	"github.com/cropkit/cropkit/internal/testenv"
)

func runBoundariesArgs(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := runBoundaries(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
	return stdout.String(), stderr.String(), err
}

// chipAOIFile writes the lon/lat extent of a scene's grid, shrunk by 1 m, as
// a GeoJSON Polygon and returns its path.
func chipAOIFile(t *testing.T, scene string) string {
	t.Helper()
	sc, err := imagery.OpenScene(context.Background(), scene, imagery.SceneOptions{})
	require.NoError(t, err)
	g := sc.Grid()
	require.NoError(t, sc.Close())
	b := g.Bound()
	ring := orb.Ring{{b.Min[0] + 1, b.Min[1] + 1}, {b.Max[0] - 1, b.Min[1] + 1}, {b.Max[0] - 1, b.Max[1] - 1}, {b.Min[0] + 1, b.Max[1] - 1}, {b.Min[0] + 1, b.Min[1] + 1}}
	tr, err := crs.New(g.EPSG, 4326)
	require.NoError(t, err)
	mp, err := geo.Transform(orb.MultiPolygon{{ring}}, tr)
	require.NoError(t, err)
	js, err := json.Marshal(map[string]any{"type": "Polygon", "coordinates": mp[0]})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "aoi.geojson")
	require.NoError(t, os.WriteFile(path, js, 0o644))
	return path
}

func sceneDirs(t *testing.T, place string) []string {
	t.Helper()
	entries, err := os.ReadDir(place)
	require.NoError(t, err)
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, filepath.Join(place, e.Name()))
		}
	}
	return dirs
}

func TestBoundariesCommandRealScenes(t *testing.T) {
	place := testenv.DataDir(t, "s2", "flanders-31UES")
	dirs := sceneDirs(t, place)
	aoi := chipAOIFile(t, dirs[0])
	out := filepath.Join(t.TempDir(), "fields.geojson")
	// All dates as one glob-like --scene list; the 2019 season is picked.
	args := append(append([]string{"--scene"}, dirs...), "--aoi", aoi, "--out", out)
	_, msg, err := runBoundariesArgs(t, args...)
	require.NoError(t, err, msg)
	assert.Contains(t, msg, "from 19 date(s) (2019-03-22 to 2019-10-28)")
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	var fc struct {
		Type     string `json:"type"`
		Features []struct {
			ID         int `json:"id"`
			Properties struct {
				AreaHa     float64 `json:"area_ha"`
				Confidence float64 `json:"confidence"`
			} `json:"properties"`
		} `json:"features"`
	}
	require.NoError(t, json.Unmarshal(data, &fc))
	assert.Equal(t, "FeatureCollection", fc.Type)
	require.NotEmpty(t, fc.Features)
	feats, err := geo.ReadFeatures(data)
	require.NoError(t, err)
	total := 0.0
	for i, f := range fc.Features {
		assert.Equal(t, i+1, f.ID)
		assert.GreaterOrEqual(t, f.Properties.AreaHa, 0.2)
		assert.InDelta(t, geo.GeodesicArea(feats[i].Geometry)/1e4, f.Properties.AreaHa, 1e-4)
		assert.True(t, f.Properties.Confidence >= 0 && f.Properties.Confidence <= 1)
		require.NoError(t, geo.ValidateLonLat(feats[i].Geometry))
		total += f.Properties.AreaHa
	}
	assert.Less(t, total, 41.0, "inside the 40.96 ha chip")

	// --start/--end pick a window; stdout output; a larger minimum area.
	args = append(append([]string{"--scene"}, dirs...), "--aoi", aoi, "--out", "-",
		"--start", "2019-04-01", "--end", "2019-07-30", "--min-area-ha", "1")
	stdout, msg, err := runBoundariesArgs(t, args...)
	require.NoError(t, err, msg)
	assert.Contains(t, msg, "to 2019-07-30)")
	feats, err = geo.ReadFeatures([]byte(stdout))
	require.NoError(t, err)
	for _, f := range feats {
		assert.GreaterOrEqual(t, geo.GeodesicArea(f.Geometry), 0.99e4)
	}
}

func TestBoundariesCommandBadInput(t *testing.T) {
	scene := testenv.DataDir(t, "s2", "flanders-31UES", "2019-06-20")
	aoi := chipAOIFile(t, scene)
	winter := testenv.DataDir(t, "s2", "flanders-31UES", "2019-01-11")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no scene", []string{"--aoi", aoi}, "--scene is required"},
		{"no aoi", []string{"--scene", scene}, "--aoi is required"},
		{"missing aoi", []string{"--scene", scene, "--aoi", aoi + ".nope"}, "--aoi"},
		{"bad start", []string{"--scene", scene, "--aoi", aoi, "--start", "2019-13-01"}, `--start "2019-13-01": want YYYY-MM-DD`},
		{"bad end", []string{"--scene", scene, "--aoi", aoi, "--end", "x"}, `--end "x": want YYYY-MM-DD`},
		{"end before start", []string{"--scene", scene, "--aoi", aoi, "--start", "2019-06-01", "--end", "2019-05-01"}, "--end 2019-05-01 is before --start"},
		{"bad area", []string{"--scene", scene, "--aoi", aoi, "--min-area-ha", "0"}, "--min-area-ha 0"},
		{"missing scene", []string{"--scene", scene + "-nope", "--aoi", aoi}, "--scene"},
		{"winter only", []string{"--scene", winter, "--aoi", aoi}, "no clear imagery"},
		{"stray argument", []string{"--aoi", aoi, "x", "--scene", scene}, `unexpected argument "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out.geojson")
			_, _, err := runBoundariesArgs(t, append(tt.args, "--out", out)...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.NoFileExists(t, out, "no partial output")
		})
	}
}

func TestBoundariesHelpExitsZero(t *testing.T) {
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"boundaries", "-h"}, strings.NewReader(""), io.Discard, &stderr)
	assert.Equal(t, 0, code)
	assert.Contains(t, stderr.String(), "usage: cropkit boundaries")
	assert.Contains(t, stderr.String(), "-min-area-ha")
}

func TestExpandScenes(t *testing.T) {
	tests := []struct {
		in, want []string
	}{
		{[]string{"--scene", "a", "b", "--aoi", "x"}, []string{"--scene", "a", "--scene", "b", "--aoi", "x"}},
		{[]string{"-scene=a", "b", "--out", "o"}, []string{"-scene=a", "--scene", "b", "--out", "o"}},
		{[]string{"--aoi", "x", "y"}, []string{"--aoi", "x", "y"}},
		{[]string{"--scene", "a", "--", "b"}, []string{"--scene", "a", "--", "b"}},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, expandScenes(tc.in))
	}
}
