package geotiff

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/internal/testenv"
)

// rasterioDump prints, for every GeoTIFF under a folder, what GDAL (through
// rasterio) reads: size, geotransform, EPSG, type, nodata and the sha256 of
// the little-endian pixels.
const rasterioDump = `
import sys, json, glob, hashlib, os, rasterio
for p in sorted(glob.glob(os.path.join(sys.argv[1], "**", "*.tif"), recursive=True)):
    with rasterio.open(p) as ds:
        a = ds.read(1)
        print(json.dumps({"path": p, "size": [ds.width, ds.height], "gt": list(ds.transform.to_gdal()),
            "epsg": ds.crs.to_epsg() if ds.crs else 0, "dtype": ds.dtypes[0], "nodata": ds.nodata,
            "sha256": hashlib.sha256(a.astype(a.dtype.newbyteorder("<")).tobytes()).hexdigest()}))
`

// TestRealSentinel2 opens every real Sentinel-2 GeoTIFF of the shared data
// and checks grid, EPSG, type, nodata and every pixel against GDAL.
func TestRealSentinel2(t *testing.T) {
	dir := testenv.DataDir(t, "s2")
	python := testenv.RequireTool(t, "/usr/bin/python3")
	out, err := exec.Command(python, "-c", rasterioDump, dir).Output()
	if err != nil {
		var msg []byte
		if ee, ok := err.(*exec.ExitError); ok {
			msg = ee.Stderr
		}
		if bytes.Contains(msg, []byte("No module named")) {
			testenv.RequireTool(t, "python3-rasterio (module rasterio)")
		}
		t.Fatalf("rasterio dump: %v: %s", err, msg)
	}
	type info struct {
		Path   string    `json:"path"`
		Size   []int     `json:"size"`
		GT     []float64 `json:"gt"`
		EPSG   int       `json:"epsg"`
		DType  string    `json:"dtype"`
		NoData *float64  `json:"nodata"`
		SHA256 string    `json:"sha256"`
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var want info
		require.NoError(t, json.Unmarshal(sc.Bytes(), &want))
		rel, _ := filepath.Rel(dir, want.Path)
		f, err := OpenFile(want.Path)
		require.NoError(t, err, rel)
		g := f.Grid()
		assert.Equal(t, want.Size, []int{g.Cols, g.Rows}, rel)
		assert.Equal(t, want.GT, []float64{g.X0, g.DX, 0, g.Y0, 0, -g.DY}, rel)
		assert.Equal(t, want.EPSG, g.EPSG, rel)
		assert.Equal(t, want.DType, f.Type().String(), rel)
		nd, ok := f.NoData()
		if want.NoData == nil {
			assert.False(t, ok, rel)
		} else {
			assert.True(t, ok, rel)
			assert.Equal(t, *want.NoData, nd, rel)
		}
		if strings.Contains(rel, "flanders") {
			assert.NotEmpty(t, f.Metadata()["ACQUISITION_DATETIME_UTC"], rel)
		}
		r, err := f.ReadWindow(context.Background(), g.Full())
		require.NoError(t, err, rel)
		sum := sha256.Sum256(rasterBytes(r))
		assert.Equal(t, want.SHA256, hex.EncodeToString(sum[:]), "pixels of %s", rel)
		f.Close()
		n++
	}
	require.NoError(t, sc.Err())
	assert.Greater(t, n, 2000, "GeoTIFFs under %s", dir)
}
