package geotiff

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/geo"
)

// The committed fixtures in testdata were made once with GDAL 3.6 by running
// CROPKIT_MAKE_FIXTURES=1 go test -run TestMakeFixtures. Each is GDAL's
// lossless encoding of syntheticRaster(typ, fixtureCols, fixtureRows, seed).
const fixtureCols, fixtureRows = 60, 45

var fixtures = []struct {
	file string
	typ  DataType
	seed uint64
	args []string
}{
	{"u16_tiled_deflate_pred2.tif", Uint16, 1, []string{"-co", "TILED=YES", "-co", "BLOCKXSIZE=32", "-co", "BLOCKYSIZE=32", "-co", "COMPRESS=DEFLATE", "-co", "PREDICTOR=2",
		"-a_nodata", "0", "-mo", "ACQUISITION_DATETIME_UTC=2019-06-20T10:57:03Z", "-mo", "BAND=B04"}},
	{"i16_stripped_lzw_pred2_be.tif", Int16, 2, []string{"-co", "ENDIANNESS=BIG", "-co", "BLOCKYSIZE=8", "-co", "COMPRESS=LZW", "-co", "PREDICTOR=2", "-a_nodata", "-32768"}},
	{"f32_bigtiff_tiled_deflate_pred3.tif", Float32, 3, []string{"-co", "BIGTIFF=YES", "-co", "TILED=YES", "-co", "BLOCKXSIZE=16", "-co", "BLOCKYSIZE=16", "-co", "COMPRESS=DEFLATE", "-co", "PREDICTOR=3", "-a_nodata", "nan"}},
	{"u8_cog_lzw.tif", Uint8, 4, []string{"-of", "COG", "-co", "BLOCKSIZE=16", "-co", "COMPRESS=LZW", "-co", "OVERVIEW_RESAMPLING=NEAREST"}},
	{"u16_pixel_is_point.tif", Uint16, 5, []string{"-mo", "AREA_OR_POINT=Point"}},
	{"u8_jpeg.tif", Uint8, 6, []string{"-co", "COMPRESS=JPEG", "-co", "TILED=YES", "-co", "BLOCKXSIZE=16", "-co", "BLOCKYSIZE=16"}},
}

func TestMakeFixtures(t *testing.T) {
	if os.Getenv("CROPKIT_MAKE_FIXTURES") == "" {
		t.Skip("set CROPKIT_MAKE_FIXTURES=1 to regenerate testdata with GDAL")
	}
	dir := t.TempDir()
	for _, fx := range fixtures {
		g := testGrid
		g.Cols, g.Rows = fixtureCols, fixtureRows
		var buf bytes.Buffer
		require.NoError(t, Write(&buf, g, syntheticRaster(fx.typ, fixtureCols, fixtureRows, fx.seed), WriteOptions{Compression: CompressionNone, Stripped: true}))
		src := filepath.Join(dir, fx.file)
		require.NoError(t, os.WriteFile(src, buf.Bytes(), 0o644))
		args := append([]string{"-q"}, fx.args...)
		args = append(args, src, filepath.Join("testdata", fx.file))
		out, err := exec.Command("gdal_translate", args...).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	// GDAL's decode of the COG's first overview.
	raw := gdalDecode(t, filepath.Join("testdata", "u8_cog_lzw.tif"), "-oo", "OVERVIEW_LEVEL=0")
	require.NoError(t, os.WriteFile(filepath.Join("testdata", "u8_cog_lzw.ovr0.bin"), raw, 0o644))
}

func TestFixtures(t *testing.T) {
	for _, fx := range fixtures {
		if fx.typ == Uint8 && fx.file == "u8_jpeg.tif" {
			continue
		}
		t.Run(fx.file, func(t *testing.T) {
			f, err := OpenFile(filepath.Join("testdata", fx.file))
			require.NoError(t, err)
			defer f.Close()
			assert.Equal(t, fx.typ, f.Type())
			want := syntheticRaster(fx.typ, fixtureCols, fixtureRows, fx.seed)
			g := testGrid
			g.Cols, g.Rows = fixtureCols, fixtureRows
			assert.Equal(t, g, f.Grid())
			r, err := f.ReadWindow(context.Background(), f.Grid().Full())
			require.NoError(t, err)
			assert.Equal(t, rasterBytes(want), rasterBytes(r))
		})
	}
}

func TestFixtureDetails(t *testing.T) {
	open := func(t *testing.T, name string) *File {
		f, err := OpenFile(filepath.Join("testdata", name))
		require.NoError(t, err)
		t.Cleanup(func() { f.Close() })
		return f
	}
	t.Run("nodata and metadata", func(t *testing.T) {
		f := open(t, "u16_tiled_deflate_pred2.tif")
		nd, ok := f.NoData()
		assert.True(t, ok)
		assert.Equal(t, 0.0, nd)
		assert.Equal(t, map[string]string{"ACQUISITION_DATETIME_UTC": "2019-06-20T10:57:03Z", "BAND": "B04"}, f.Metadata())
		assert.True(t, f.Image().Tiled())
		assert.Equal(t, CompressionDeflate, f.Image().Compression())
		c, r := f.Image().BlockSize()
		assert.Equal(t, []int{32, 32}, []int{c, r})
	})
	t.Run("negative and NaN nodata", func(t *testing.T) {
		nd, ok := open(t, "i16_stripped_lzw_pred2_be.tif").NoData()
		assert.True(t, ok)
		assert.Equal(t, -32768.0, nd)
		nd, ok = open(t, "f32_bigtiff_tiled_deflate_pred3.tif").NoData()
		assert.True(t, ok)
		assert.True(t, nd != nd, "NaN nodata, got %v", nd)
		_, ok = open(t, "u16_pixel_is_point.tif").NoData()
		assert.False(t, ok)
	})
	t.Run("COG overviews", func(t *testing.T) {
		f := open(t, "u8_cog_lzw.tif")
		ovs := f.Overviews()
		require.Len(t, ovs, 2)
		assert.Equal(t, geo.Grid{EPSG: 32631, X0: 574680, Y0: 5622440, DX: 20, DY: 10 * 45.0 / 22, Cols: 30, Rows: 22}, ovs[0].Grid())
		assert.Equal(t, []int{15, 11}, []int{ovs[1].Grid().Cols, ovs[1].Grid().Rows})
		want, err := os.ReadFile(filepath.Join("testdata", "u8_cog_lzw.ovr0.bin"))
		require.NoError(t, err)
		r, err := ovs[0].ReadWindow(context.Background(), ovs[0].Grid().Full())
		require.NoError(t, err)
		assert.Equal(t, want, r.U8)
	})
	t.Run("JPEG is a typed unsupported error", func(t *testing.T) {
		_, err := OpenFile(filepath.Join("testdata", "u8_jpeg.tif"))
		require.ErrorIs(t, err, ErrUnsupported)
		var ue *UnsupportedError
		require.ErrorAs(t, err, &ue)
		assert.Equal(t, "compression JPEG (7)", ue.Feature)
	})
}
