package main

import (
	"archive/zip"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/zoning"
)

func runZonesArgs(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var stderr bytes.Buffer
	err := runZones(context.Background(), args, strings.NewReader(""), io.Discard, &stderr)
	return stderr.String(), err
}

func TestZonesCommandRealScenes(t *testing.T) {
	place := testenv.DataDir(t, "s2", "flanders-31UES")
	fields := testenv.DataDir(t, "fields", "flanders-31UES.geojson")
	dir := t.TempDir()

	// One date, GeoJSON in UTM.
	out := filepath.Join(dir, "z.geojson")
	msg, err := runZonesArgs(t, "--scene", filepath.Join(place, "2019-06-20"), "--fields", fields, "--field", "UES-03",
		"--zones", "4", "--dst-crs", "32631", "--out", out)
	require.NoError(t, err, msg)
	assert.Contains(t, msg, "352 pixels", "UES-03 holds 352 pixels")
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	c, err := zoning.ParseCollection(data)
	require.NoError(t, err)
	assert.Equal(t, 32631, c.EPSG)
	// A zone whose regions are all below 0.1 ha is absorbed by the sieve.
	zones := c.Zones()
	assert.GreaterOrEqual(t, len(zones), 2)
	for i, z := range zones {
		assert.Equal(t, i+1, z)
	}
	// Without the sieve all four zones remain.
	msg, err = runZonesArgs(t, "--scene", filepath.Join(place, "2019-06-20"), "--fields", fields, "--field", "UES-03",
		"--zones", "4", "--min-area-ha", "-1", "--out", out)
	require.NoError(t, err, msg)
	assert.Contains(t, msg, "4 zones")
	var area float64
	for _, f := range c.Features { // in EPSG:32631: m²
		area += geo.Area(orb.MultiPolygon{f.Polygon})
	}
	assert.InDelta(t, 352*100, area, 0.1, "zones tile the field, here pixel-aligned: its 352 pixels")

	// A season mean over three dates, seeding, shapefile.
	shp := filepath.Join(dir, "z.zip")
	msg, err = runZonesArgs(t, "--scene", filepath.Join(place, "2019-05-16"), "--scene", filepath.Join(place, "2019-06-20"),
		"--scene", filepath.Join(place, "2019-07-05"), "--fields", fields, "--field", "UES-01", "--zones", "3",
		"--type", "seeding", "--format", "shapefile", "--out", shp)
	require.NoError(t, err, msg)
	assert.Contains(t, msg, "3 image(s)")
	zr, err := zip.OpenReader(shp)
	require.NoError(t, err)
	assert.Len(t, zr.File, 4)
	zr.Close()

	// --date picks one scene; ISOXML.
	iso := filepath.Join(dir, "t.zip")
	msg, err = runZonesArgs(t, "--scene", filepath.Join(place, "2019-05-16"), "--scene", filepath.Join(place, "2019-06-20"),
		"--date", "2019-06-20", "--fields", fields, "--field", "UES-03", "--zones", "3", "--format", "isoxml", "--out", iso)
	require.NoError(t, err, msg)
	assert.Contains(t, msg, "1 image(s)")
	zr, err = zip.OpenReader(iso)
	require.NoError(t, err)
	require.Len(t, zr.File, 1)
	assert.Equal(t, "TASKDATA/TASKDATA.XML", zr.File[0].Name)
	zr.Close()
}

func TestZonesCommandErrors(t *testing.T) {
	place := testenv.DataDir(t, "s2", "flanders-31UES")
	fields := testenv.DataDir(t, "fields", "flanders-31UES.geojson")
	scene := filepath.Join(place, "2019-06-20")
	out := filepath.Join(t.TempDir(), "z.geojson")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"missing flags", []string{"--scene", scene}, "required"},
		{"bad format", []string{"--scene", scene, "--fields", fields, "--field", "UES-03", "--zones", "3", "--out", out, "--format", "kml"}, "unknown format"},
		{"bad crs", []string{"--scene", scene, "--fields", fields, "--field", "UES-03", "--zones", "3", "--out", out, "--dst-crs", "8857"}, "8857"},
		{"unknown field", []string{"--scene", scene, "--fields", fields, "--field", "XX", "--zones", "3", "--out", out}, "no field \"XX\""},
		{"no scene of date", []string{"--scene", scene, "--fields", fields, "--field", "UES-03", "--zones", "3", "--out", out, "--date", "2019-01-01"}, "no scene of 2019-01-01"},
		{"too many zones", []string{"--scene", scene, "--fields", fields, "--field", "UES-16", "--zones", "100", "--out", out}, "n_zones 100 is above the 27 usable pixels"},
		{"bad type", []string{"--scene", scene, "--fields", fields, "--field", "UES-03", "--zones", "3", "--out", out, "--type", "lime"}, "neither n_fertilizer nor seeding"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runZonesArgs(t, tc.args...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	_, err := os.Stat(out)
	assert.True(t, os.IsNotExist(err), "failed runs write nothing")
}
