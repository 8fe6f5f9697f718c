package colormap

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/internal/testenv"
)

// TestRealFieldAgainstReference renders real index values of field UES-03
// (flanders-31UES, 2019-06-20, cropped to the field's pixel window, NaN
// outside the polygon), then has an independent implementation (numpy
// colours, GDAL/libpng decoding) check every pixel of the PNG.
func TestRealFieldAgainstReference(t *testing.T) {
	scene := testenv.DataDir(t, "s2", "flanders-31UES", "2019-06-20")
	fields := testenv.DataDir(t, "fields", "flanders-31UES.geojson")
	python := testenv.RequireTool(t, "/usr/bin/python3")
	if err := exec.Command(python, "-c", "import numpy, rasterio").Run(); err != nil {
		testenv.RequireTool(t, "python3-rasterio (import numpy, rasterio failed)")
	}
	dir := t.TempDir()
	type size struct{ Cols, Rows int }
	sizes := map[string]size{}
	for _, field := range []string{"UES-03", "ALL"} {
		out, err := run(python, "testdata/reference.py", "values", scene, fields, field, filepath.Join(dir, field))
		require.NoError(t, err)
		var s size
		require.NoError(t, json.Unmarshal(out, &s), "%s", out)
		sizes[field] = s
	}
	require.Equal(t, size{29, 33}, sizes["UES-03"])
	require.Equal(t, size{64, 64}, sizes["ALL"])

	enc := NewEncoder()
	for _, tt := range []struct {
		field    string
		index    string
		upscale  int
		inside   int
		wantType uint8 // PNG colour type
	}{
		{"UES-03", "ndvi", 1, 352, ctPaletted},
		{"UES-03", "ndvi", 3, 352, ctPaletted},
		{"UES-03", "ndwi", 2, 352, ctPaletted},
		{"UES-03", "nirv", 1, 352, ctPaletted},
		// All 16 fields hold more than 256 colours: RGB with a colour key.
		{"ALL", "ndvi", 2, 3701, ctRGB}, // the sum of pixels_10m
		{"ALL", "ndvi", 1, 3701, ctRGB}, // deflated by rgbDeflater, inflated by libpng
	} {
		t.Run(fmt.Sprintf("%s_%s_x%d", tt.field, tt.index, tt.upscale), func(t *testing.T) {
			size := sizes[tt.field]
			c, _ := ForIndex(tt.index)
			valuesPath := filepath.Join(dir, tt.field+"."+tt.index+".f64")
			raw, err := os.ReadFile(valuesPath)
			require.NoError(t, err)
			require.Len(t, raw, 8*size.Cols*size.Rows)
			values := make([]float64, size.Cols*size.Rows)
			inside := 0
			for i := range values {
				values[i] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:]))
				if !math.IsNaN(values[i]) {
					inside++
				}
			}
			// The pixel-centre rule selects the README's pixels_10m.
			require.Equal(t, tt.inside, inside)

			pngPath := filepath.Join(dir, fmt.Sprintf("%s_%s_x%d.png", tt.field, tt.index, tt.upscale))
			f, err := os.Create(pngPath)
			require.NoError(t, err)
			require.NoError(t, enc.Encode(f, values, size.Cols, size.Rows, c, PNGOptions{Upscale: tt.upscale}))
			require.NoError(t, f.Close())
			head, err := os.ReadFile(pngPath)
			require.NoError(t, err)
			require.Equal(t, tt.wantType, head[25], "PNG colour type")

			out, err := run(python, "testdata/reference.py", "check", pngPath, valuesPath,
				fmt.Sprint(size.Cols), fmt.Sprint(size.Rows), fmt.Sprint(tt.upscale),
				fmt.Sprint(c.Start), fmt.Sprint(c.Stop), strings.Join(c.Hex, ","))
			require.NoError(t, err)
			var got struct {
				Kind          string
				Shape         []int
				AlphaEqual    bool    `json:"alpha_equal"`
				Opaque        int     `json:"opaque"`
				MaxDiff       int     `json:"max_diff"`
				ExactFraction float64 `json:"exact_fraction"`
			}
			require.NoError(t, json.Unmarshal(out, &got), "%s", out)
			t.Logf("reference: %s", out)
			assert.Equal(t, []int{size.Rows * tt.upscale, size.Cols * tt.upscale}, got.Shape)
			assert.True(t, got.AlphaEqual, "transparent exactly outside the field")
			assert.Equal(t, tt.inside*tt.upscale*tt.upscale, got.Opaque)
			// numpy and Go may round an exact .5 differently after floating-point
			// noise; anything beyond one level is a real disagreement.
			assert.LessOrEqual(t, got.MaxDiff, 1)
			assert.GreaterOrEqual(t, got.ExactFraction, 0.99)

			// Go's own decoder agrees with the values too.
			f, err = os.Open(pngPath)
			require.NoError(t, err)
			defer f.Close()
			img, err := png.Decode(f)
			require.NoError(t, err)
			for y := range size.Rows {
				for x := range size.Cols {
					v := values[y*size.Cols+x]
					require.Equal(t, wantPixel(c, v), nrgbaAt(img, x*tt.upscale, y*tt.upscale), "pixel (%d,%d) value %v", x, y, v)
				}
			}
		})
	}
}

// run returns a command's standard output; its error carries standard error.
func run(name string, args ...string) ([]byte, error) {
	cmd := exec.Command(name, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}
