package geotiff

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/internal/testenv"
)

// syntheticRaster is a deterministic image with gradients, noise and
// extreme values, so predictors and byte orders are all exercised.
func syntheticRaster(t DataType, cols, rows int, seed uint64) *Raster {
	rng := rand.New(rand.NewPCG(seed, 7))
	r := NewRaster(geo.Window{Cols: cols, Rows: rows}, t)
	for i := 0; i < cols*rows; i++ {
		col, row := i%cols, i/cols
		v := float64(col*37+row*11) + float64(rng.IntN(50))
		switch t {
		case Uint8:
			r.U8[i] = uint8(int(v) % 256)
		case Uint16:
			r.U16[i] = uint16(int(v*13) % 65536)
			if i%997 == 0 {
				r.U16[i] = math.MaxUint16
			}
		case Int16:
			r.I16[i] = int16(int(v*7)%65536 - 32768)
		case Uint32:
			r.U32[i] = uint32(v * 100003)
		case Int32:
			r.I32[i] = int32(v*1009) - 1<<30
		case Float32:
			r.F32[i] = float32(math.Sin(v/100)*1e3 + rng.Float64())
			if i%1013 == 0 {
				r.F32[i] = float32(math.NaN())
			}
		case Float64:
			r.F64[i] = math.Cos(v/70)*1e6 + rng.Float64()
		}
	}
	return r
}

var testGrid = geo.Grid{EPSG: 32631, X0: 574680, Y0: 5622440, DX: 10, DY: 10}

// gdalDecode returns GDAL's own decode of path (with extra open options) as raw
// little-endian samples, via gdal_translate -of ENVI.
func gdalDecode(t *testing.T, path string, args ...string) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out.bin")
	cmdArgs := append([]string{"-q", "-of", "ENVI"}, args...)
	cmdArgs = append(cmdArgs, path, out)
	cmd := exec.Command("gdal_translate", cmdArgs...)
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, "gdal_translate: %s", msg)
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	return b
}

// rasterBytes encodes r's samples little-endian, NaN bits preserved.
func rasterBytes(r *Raster) []byte {
	b := make([]byte, r.Len()*r.Type.Size())
	encodeSamples(b, r, 0, r.Len(), binary.LittleEndian)
	return b
}

type gdalInfo struct {
	GeoTransform []float64 `json:"geoTransform"`
	Size         []int     `json:"size"`
	Metadata     map[string]map[string]string
	CRS          struct {
		WKT string `json:"wkt"`
	} `json:"coordinateSystem"`
	Bands []struct {
		NoDataValue any `json:"noDataValue"`
		Overviews   []struct {
			Size []int `json:"size"`
		} `json:"overviews"`
	} `json:"bands"`
}

func gdalinfo(t *testing.T, path string, args ...string) gdalInfo {
	t.Helper()
	out, err := exec.Command("gdalinfo", append(append([]string{"-json"}, args...), path)...).Output()
	require.NoError(t, err)
	var info gdalInfo
	require.NoError(t, json.Unmarshal(out, &info))
	return info
}

func TestAgainstGDAL(t *testing.T) {
	testenv.RequireTool(t, "gdal_translate")
	testenv.RequireTool(t, "gdalinfo")
	dir := t.TempDir()
	const cols, rows = 700, 530 // partial edge tiles and strips

	sources := map[DataType]string{}
	for _, typ := range []DataType{Uint8, Uint16, Int16, Uint32, Int32, Float32, Float64} {
		g := testGrid
		g.Cols, g.Rows = cols, rows
		var buf bytes.Buffer
		require.NoError(t, Write(&buf, g, syntheticRaster(typ, cols, rows, uint64(typ)), WriteOptions{Stripped: true, Compression: CompressionNone}))
		p := filepath.Join(dir, "src-"+typ.String()+".tif")
		require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o644))
		sources[typ] = p
	}

	tests := []struct {
		name string
		typ  DataType
		args []string
	}{
		{"uint16 tiled deflate predictor 2", Uint16, []string{"-co", "TILED=YES", "-co", "COMPRESS=DEFLATE", "-co", "PREDICTOR=2"}},
		{"uint16 tiled 512 deflate", Uint16, []string{"-co", "TILED=YES", "-co", "BLOCKXSIZE=512", "-co", "BLOCKYSIZE=512", "-co", "COMPRESS=DEFLATE"}},
		{"uint16 tiled none", Uint16, []string{"-co", "TILED=YES", "-co", "COMPRESS=NONE"}},
		{"uint16 tiled LZW predictor 2", Uint16, []string{"-co", "TILED=YES", "-co", "COMPRESS=LZW", "-co", "PREDICTOR=2"}},
		{"uint16 stripped none", Uint16, []string{"-co", "TILED=NO", "-co", "COMPRESS=NONE"}},
		{"uint16 stripped deflate predictor 2", Uint16, []string{"-co", "TILED=NO", "-co", "COMPRESS=DEFLATE", "-co", "PREDICTOR=2"}},
		{"uint16 stripped LZW", Uint16, []string{"-co", "TILED=NO", "-co", "COMPRESS=LZW", "-co", "BLOCKYSIZE=7"}},
		{"uint16 BigTIFF tiled deflate", Uint16, []string{"-co", "BIGTIFF=YES", "-co", "TILED=YES", "-co", "COMPRESS=DEFLATE", "-co", "PREDICTOR=2"}},
		{"uint16 BigTIFF stripped LZW", Uint16, []string{"-co", "BIGTIFF=YES", "-co", "COMPRESS=LZW"}},
		{"uint16 big-endian LZW predictor 2", Uint16, []string{"-co", "ENDIANNESS=BIG", "-co", "TILED=YES", "-co", "COMPRESS=LZW", "-co", "PREDICTOR=2"}},
		{"uint16 COG", Uint16, []string{"-of", "COG", "-co", "COMPRESS=DEFLATE", "-co", "PREDICTOR=YES", "-co", "BLOCKSIZE=256"}},
		{"uint8 stripped deflate predictor 2", Uint8, []string{"-co", "COMPRESS=DEFLATE", "-co", "PREDICTOR=2"}},
		{"uint8 tiled LZW", Uint8, []string{"-co", "TILED=YES", "-co", "COMPRESS=LZW"}},
		{"int16 tiled LZW predictor 2", Int16, []string{"-co", "TILED=YES", "-co", "COMPRESS=LZW", "-co", "PREDICTOR=2"}},
		{"int16 big-endian deflate", Int16, []string{"-co", "ENDIANNESS=BIG", "-co", "COMPRESS=DEFLATE", "-co", "PREDICTOR=2"}},
		{"uint32 tiled deflate predictor 2", Uint32, []string{"-co", "TILED=YES", "-co", "COMPRESS=DEFLATE", "-co", "PREDICTOR=2"}},
		{"int32 stripped LZW", Int32, []string{"-co", "COMPRESS=LZW"}},
		{"float32 tiled deflate predictor 3", Float32, []string{"-co", "TILED=YES", "-co", "COMPRESS=DEFLATE", "-co", "PREDICTOR=3"}},
		{"float32 stripped LZW predictor 3", Float32, []string{"-co", "COMPRESS=LZW", "-co", "PREDICTOR=3"}},
		{"float32 big-endian deflate predictor 3", Float32, []string{"-co", "ENDIANNESS=BIG", "-co", "TILED=YES", "-co", "COMPRESS=DEFLATE", "-co", "PREDICTOR=3"}},
		{"float32 tiled deflate predictor 2", Float32, []string{"-co", "TILED=YES", "-co", "COMPRESS=DEFLATE", "-co", "PREDICTOR=2"}},
		{"float32 COG", Float32, []string{"-of", "COG", "-co", "COMPRESS=LZW", "-co", "PREDICTOR=YES", "-co", "BLOCKSIZE=256"}},
		{"float64 tiled deflate predictor 3", Float64, []string{"-co", "TILED=YES", "-co", "COMPRESS=DEFLATE", "-co", "PREDICTOR=3"}},
		{"float64 big-endian stripped none", Float64, []string{"-co", "ENDIANNESS=BIG"}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := filepath.Join(dir, "case"+string(rune('a'+i))+".tif")
			args := append([]string{"-q"}, tc.args...)
			args = append(args, sources[tc.typ], p)
			out, err := exec.Command("gdal_translate", args...).CombinedOutput()
			require.NoError(t, err, "%s", out)
			want := gdalDecode(t, p)

			f, err := OpenFile(p)
			require.NoError(t, err)
			defer f.Close()
			require.Equal(t, tc.typ, f.Type())
			info := gdalinfo(t, p)
			assertGridMatches(t, info, f.Grid())
			assert.Equal(t, 32631, f.Grid().EPSG)

			r, err := f.ReadWindow(context.Background(), f.Grid().Full())
			require.NoError(t, err)
			require.True(t, bytes.Equal(want, rasterBytes(r)), "full image differs from GDAL's decode")

			// Reading runs of adjacent blocks at once, as over HTTP, gives the same pixels.
			f.full.src.mergeReads = true
			merged, err := f.ReadWindow(context.Background(), f.Grid().Full())
			f.full.src.mergeReads = false
			require.NoError(t, err)
			require.True(t, bytes.Equal(want, rasterBytes(merged)), "merged reads differ from GDAL's decode")
			if strings.Contains(tc.name, "COG") {
				// GDAL's COG tiles have 4-byte leaders and trailers between them: still one read per row of tiles.
				b, err := os.ReadFile(p)
				require.NoError(t, err)
				src := &largeReads{r: bytes.NewReader(b)}
				cf, err := Open(src)
				require.NoError(t, err)
				src.reads.Store(0)
				merged, err := cf.ReadWindow(context.Background(), cf.Grid().Full())
				require.NoError(t, err)
				require.True(t, bytes.Equal(want, rasterBytes(merged)))
				assert.Equal(t, int64(3), src.reads.Load(), "700x530 in 256 tiles: three rows of tiles")
			}

			// Windows straddling block edges agree with the same pixels of the full decode.
			for _, w := range []geo.Window{{Col: 250, Row: 250, Cols: 13, Rows: 9}, {Col: 690, Row: 0, Cols: 50, Rows: 600}, {Col: 0, Row: 511, Cols: 700, Rows: 3}} {
				got, err := f.ReadWindow(context.Background(), w)
				require.NoError(t, err)
				cw := w.Intersect(f.Grid().Full())
				require.Equal(t, cw, got.Window)
				for i := 0; i < cw.Len(); i++ {
					c, rr := cw.Col+i%cw.Cols, cw.Row+i/cw.Cols
					a, b := got.At(i), r.At(rr*cols+c)
					if !(a == b || (math.IsNaN(a) && math.IsNaN(b))) {
						t.Fatalf("window %v pixel %d,%d: %v, full read %v", w, c, rr, a, b)
					}
				}
			}

			// Overviews agree with GDAL's decode of the same level.
			require.Len(t, f.Overviews(), len(info.Bands[0].Overviews))
			if strings.Contains(tc.name, "COG") {
				require.Len(t, f.Overviews(), 2, "a 700x530 COG with 256 blocks has two overviews")
			}
			for level, ov := range f.Overviews() {
				assert.Equal(t, info.Bands[0].Overviews[level].Size, []int{ov.Grid().Cols, ov.Grid().Rows})
				oo := "OVERVIEW_LEVEL=" + strconv.Itoa(level)
				assertGridMatches(t, gdalinfo(t, p, "-oo", oo), ov.Grid())
				want := gdalDecode(t, p, "-oo", oo)
				r, err := ov.ReadWindow(context.Background(), ov.Grid().Full())
				require.NoError(t, err)
				require.True(t, bytes.Equal(want, rasterBytes(r)), "overview %d differs from GDAL's decode", level)
			}
		})
	}
}

func assertGridMatches(t *testing.T, info gdalInfo, g geo.Grid) {
	t.Helper()
	require.Len(t, info.GeoTransform, 6)
	assert.Equal(t, info.Size, []int{g.Cols, g.Rows})
	gt := info.GeoTransform
	assert.InDelta(t, gt[0], g.X0, 1e-9*math.Abs(gt[0])+1e-12)
	assert.InDelta(t, gt[3], g.Y0, 1e-9*math.Abs(gt[3])+1e-12)
	assert.InDelta(t, gt[1], g.DX, 1e-12)
	assert.InDelta(t, -gt[5], g.DY, 1e-12)
	assert.Zero(t, gt[2])
	assert.Zero(t, gt[4])
	if g.EPSG != 0 {
		assert.Contains(t, info.CRS.WKT, `ID["EPSG",`+strconv.Itoa(g.EPSG)+`]]`, "EPSG %d", g.EPSG)
	}
}

// largeReads counts ReadAt calls of a source that prefers large reads.
type largeReads struct {
	r     io.ReaderAt
	reads atomic.Int64
}

func (l *largeReads) ReadAt(p []byte, off int64) (int, error) {
	l.reads.Add(1)
	return l.r.ReadAt(p, off)
}
func (l *largeReads) PrefersLargeReads() bool { return true }
