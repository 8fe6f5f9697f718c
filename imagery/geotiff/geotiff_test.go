package geotiff

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/imagery/geotiff/internal/tiffenc"
	"github.com/cropkit/cropkit/internal/testenv"
)

// craft writes a one-IFD uint16 TIFF of cols×rows in tiles of 16 from the given
// tags (which override the defaults) and blocks.
func craft(t *testing.T, cols, rows int, tags map[uint16]any, blocks [][]byte) []byte {
	t.Helper()
	all := map[uint16]any{
		tagImageWidth: []uint32{uint32(cols)}, tagImageLength: []uint32{uint32(rows)},
		tagBitsPerSample: []uint16{16}, tagCompression: []uint16{1}, tagSampleFormat: []uint16{1},
		tagTileWidth: []uint32{16}, tagTileLength: []uint32{16},
	}
	for k, v := range tags {
		if v == nil {
			delete(all, k)
			continue
		}
		all[k] = v
	}
	if blocks == nil {
		n := ((cols + 15) / 16) * ((rows + 15) / 16)
		for i := 0; i < n; i++ {
			b := make([]byte, 16*16*2)
			for j := 0; j < 256; j++ {
				binary.LittleEndian.PutUint16(b[2*j:], uint16(i*1000+j))
			}
			blocks = append(blocks, b)
		}
	}
	var buf bytes.Buffer
	require.NoError(t, tiffenc.Write(&buf, []tiffenc.IFD{{Tags: all, Blocks: blocks, Tiled: true}}, tiffenc.Options{}))
	return buf.Bytes()
}

func TestGeoreferencing(t *testing.T) {
	keys := func(rasterType, epsgKey, epsg uint16) []uint16 {
		return []uint16{1, 1, 0, 2, geoKeyRasterType, 0, 1, rasterType, epsgKey, 0, 1, epsg}
	}
	tests := []struct {
		name string
		tags map[uint16]any
		want geo.Grid
	}{
		{"scale and tiepoint", map[uint16]any{
			tagModelPixelScale: []float64{10, 20, 0}, tagModelTiepoint: []float64{0, 0, 0, 500000, 5600000, 0},
			tagGeoKeyDirectory: keys(1, geoKeyProjectedCSType, 32631)},
			geo.Grid{EPSG: 32631, X0: 500000, Y0: 5600000, DX: 10, DY: 20, Cols: 40, Rows: 30}},
		{"tiepoint at another pixel", map[uint16]any{
			tagModelPixelScale: []float64{10, 10, 0}, tagModelTiepoint: []float64{2, 3, 0, 500020, 5599970, 0},
			tagGeoKeyDirectory: keys(1, geoKeyProjectedCSType, 32633)},
			geo.Grid{EPSG: 32633, X0: 500000, Y0: 5600000, DX: 10, DY: 10, Cols: 40, Rows: 30}},
		{"pixel is point shifts half a pixel", map[uint16]any{
			tagModelPixelScale: []float64{10, 10, 0}, tagModelTiepoint: []float64{0, 0, 0, 500005, 5599995, 0},
			tagGeoKeyDirectory: keys(2, geoKeyProjectedCSType, 32631)},
			geo.Grid{EPSG: 32631, X0: 500000, Y0: 5600000, DX: 10, DY: 10, Cols: 40, Rows: 30}},
		{"model transformation, geographic", map[uint16]any{
			tagModelTransformation: []float64{0.001, 0, 0, 4.0, 0, -0.002, 0, 51.0, 0, 0, 0, 0, 0, 0, 0, 1},
			tagGeoKeyDirectory:     keys(1, geoKeyGeographicType, 4326)},
			geo.Grid{EPSG: 4326, X0: 4, Y0: 51, DX: 0.001, DY: 0.002, Cols: 40, Rows: 30}},
		{"user-defined CRS has no EPSG", map[uint16]any{
			tagModelPixelScale: []float64{1, 1, 0}, tagModelTiepoint: []float64{0, 0, 0, 0, 0, 0},
			tagGeoKeyDirectory: keys(1, geoKeyProjectedCSType, userDefined)},
			geo.Grid{X0: 0, Y0: 0, DX: 1, DY: 1, Cols: 40, Rows: 30}},
		{"not georeferenced", map[uint16]any{},
			geo.Grid{DX: 1, DY: 1, Cols: 40, Rows: 30}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Open(bytes.NewReader(craft(t, 40, 30, tc.tags, nil)))
			require.NoError(t, err)
			assert.Equal(t, tc.want, f.Grid())
		})
	}
}

func TestOpenErrors(t *testing.T) {
	tests := []struct {
		name    string
		data    func(t *testing.T) []byte
		target  error
		message string
	}{
		{"empty", func(*testing.T) []byte { return nil }, ErrFormat, "too short"},
		{"not a TIFF", func(*testing.T) []byte { return []byte("GIF89a..........") }, ErrFormat, "not a TIFF"},
		{"wrong version", func(*testing.T) []byte { return []byte("II\x2b\x00\x04\x00\x00\x00\x10\x00\x00\x00\x00\x00\x00\x00") }, ErrFormat, "BigTIFF offset size"},
		{"truncated IFD", func(t *testing.T) []byte { return craft(t, 40, 30, nil, nil)[:40] }, ErrFormat, "IFD 0"},
		{"IFD loop", func(t *testing.T) []byte {
			b := craft(t, 40, 30, nil, nil)
			n := int(binary.LittleEndian.Uint16(b[8:]))
			binary.LittleEndian.PutUint32(b[8+2+12*n:], 8) // next IFD: itself
			return b
		}, ErrFormat, "loops"},
		{"rotated", func(t *testing.T) []byte {
			return craft(t, 40, 30, map[uint16]any{tagModelTransformation: []float64{1, 0.5, 0, 0, 0.5, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}}, nil)
		}, ErrUnsupported, "rotated"},
		{"south-up", func(t *testing.T) []byte {
			return craft(t, 40, 30, map[uint16]any{tagModelTransformation: []float64{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}}, nil)
		}, ErrUnsupported, "north-up"},
		{"ZSTD", func(t *testing.T) []byte {
			return craft(t, 40, 30, map[uint16]any{tagCompression: []uint16{50000}}, nil)
		}, ErrUnsupported, "ZSTD"},
		{"JPEG", func(t *testing.T) []byte { return craft(t, 40, 30, map[uint16]any{tagCompression: []uint16{7}}, nil) }, ErrUnsupported, "JPEG"},
		{"12-bit samples", func(t *testing.T) []byte {
			return craft(t, 40, 30, map[uint16]any{tagBitsPerSample: []uint16{12}}, nil)
		}, ErrUnsupported, "12 bits"},
		{"float predictor on integers", func(t *testing.T) []byte { return craft(t, 40, 30, map[uint16]any{tagPredictor: []uint16{3}}, nil) }, ErrUnsupported, "predictor 3"},
		{"RGB pixel-interleaved", func(t *testing.T) []byte {
			return craft(t, 40, 30, map[uint16]any{tagSamplesPerPixel: []uint16{3}, tagBitsPerSample: []uint16{16, 16, 16}}, nil)
		}, ErrUnsupported, "pixel-interleaved"},
		{"missing tile offsets", func(t *testing.T) []byte { return craft(t, 40, 30, nil, [][]byte{{1, 2}}) }, ErrFormat, "1 block offsets"},
		{"huge image", func(t *testing.T) []byte { return craft(t, 1<<21, 30, nil, [][]byte{{1}}) }, ErrLimit, "image side 2097152 exceeds the limit of 1048576"},
		{"huge tiles", func(t *testing.T) []byte {
			return craft(t, 40, 30, map[uint16]any{tagTileWidth: []uint32{1 << 14}, tagTileLength: []uint32{1 << 14}}, [][]byte{{1}})
		}, ErrUnsupported, "bytes"},
		{"bad nodata", func(t *testing.T) []byte { return craft(t, 40, 30, map[uint16]any{tagGDALNoData: "none"}, nil) }, ErrFormat, "GDAL_NODATA"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(bytes.NewReader(tc.data(t)))
			require.ErrorIs(t, err, tc.target)
			assert.ErrorContains(t, err, tc.message)
		})
	}
}

func TestReadWindow(t *testing.T) {
	ctx := context.Background()
	f, err := Open(bytes.NewReader(craft(t, 40, 30, nil, nil)))
	require.NoError(t, err)
	// Tile i holds i*1000 + (row*16 + col) at tile-local (col, row).
	value := func(col, row int) uint16 { return uint16((row/16*3+col/16)*1000 + row%16*16 + col%16) }

	tests := []struct {
		name string
		w    geo.Window
		want geo.Window
	}{
		{"inside one tile", geo.Window{Col: 1, Row: 2, Cols: 3, Rows: 4}, geo.Window{Col: 1, Row: 2, Cols: 3, Rows: 4}},
		{"across four tiles", geo.Window{Col: 10, Row: 10, Cols: 20, Rows: 12}, geo.Window{Col: 10, Row: 10, Cols: 20, Rows: 12}},
		{"partial edge tile", geo.Window{Col: 35, Row: 25, Cols: 5, Rows: 5}, geo.Window{Col: 35, Row: 25, Cols: 5, Rows: 5}},
		{"clipped", geo.Window{Col: -5, Row: 20, Cols: 100, Rows: 100}, geo.Window{Col: 0, Row: 20, Cols: 40, Rows: 10}},
		{"whole image", geo.Window{Cols: 40, Rows: 30}, geo.Window{Cols: 40, Rows: 30}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := f.ReadWindow(ctx, tc.w)
			require.NoError(t, err)
			require.Equal(t, tc.want, r.Window)
			require.Equal(t, Uint16, r.Type)
			require.Len(t, r.U16, tc.want.Len())
			for i := range r.U16 {
				col, row := tc.want.Col+i%tc.want.Cols, tc.want.Row+i/tc.want.Cols
				require.Equal(t, value(col, row), r.U16[i], "pixel %d,%d", col, row)
				require.Equal(t, float64(value(col, row)), r.At(i))
			}
		})
	}

	_, err = f.ReadWindow(ctx, geo.Window{Col: 40, Row: 0, Cols: 5, Rows: 5})
	require.ErrorIs(t, err, ErrEmptyWindow)
	_, err = f.ReadWindow(ctx, geo.Window{Col: 0, Row: 0, Cols: 0, Rows: 5})
	require.ErrorIs(t, err, ErrEmptyWindow)

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = f.ReadWindow(canceled, f.Grid().Full())
	require.ErrorIs(t, err, context.Canceled)
}

func TestSparseTilesReadAsNoData(t *testing.T) {
	blocks := make([][]byte, 4) // all sparse: offset 0, byte count 0
	blocks[3] = make([]byte, 16*16*2)
	for i := range 256 {
		binary.LittleEndian.PutUint16(blocks[3][2*i:], 7)
	}
	for _, tc := range []struct {
		nodata any
		want   uint16
	}{{"65535", 65535}, {nil, 0}, {"-1", 0}} {
		f, err := Open(bytes.NewReader(craft(t, 32, 32, map[uint16]any{tagGDALNoData: tc.nodata}, blocks)))
		require.NoError(t, err)
		r, err := f.ReadWindow(context.Background(), geo.Window{Col: 14, Row: 14, Cols: 4, Rows: 4})
		require.NoError(t, err)
		assert.Equal(t, []uint16{
			tc.want, tc.want, tc.want, tc.want,
			tc.want, tc.want, tc.want, tc.want,
			tc.want, tc.want, 7, 7,
			tc.want, tc.want, 7, 7,
		}, r.U16, "nodata %v", tc.nodata)
	}
}

func TestCorruptBlocks(t *testing.T) {
	ctx := context.Background()
	deflated := tiffenc.Deflate(make([]byte, 16*16*2))
	tests := []struct {
		name    string
		comp    uint16
		block   []byte
		message string
	}{
		{"short uncompressed", 1, make([]byte, 100), "uncompressed block"},
		{"bad zlib header", 8, []byte{0, 0, 1, 2, 3}, "zlib header"},
		{"truncated DEFLATE", 8, deflated[:len(deflated)/2], "DEFLATE"},
		{"implausible byte count", 8, append([]byte{0x78, 0x9c}, make([]byte, 2*512+4096)...), "compressed bytes"},
		{"garbage LZW", 5, []byte{0xff, 0xff, 0xff, 0xff}, "LZW"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Open(bytes.NewReader(craft(t, 16, 16, map[uint16]any{tagCompression: []uint16{tc.comp}}, [][]byte{tc.block})))
			require.NoError(t, err)
			_, err = f.ReadWindow(ctx, f.Grid().Full())
			require.ErrorIs(t, err, ErrFormat)
			assert.ErrorContains(t, err, tc.message)
			assert.ErrorContains(t, err, "block 0")
		})
	}
}

// sizeless hides a reader's Size, as a source of unknown length would.
type sizeless struct{ r io.ReaderAt }

func (s sizeless) ReadAt(p []byte, off int64) (int, error) { return s.r.ReadAt(p, off) }

func TestTruncatedTileData(t *testing.T) {
	b := craft(t, 40, 30, nil, nil)
	// With the size known, Open checks every block against it.
	_, err := Open(bytes.NewReader(b[:len(b)-100]))
	require.ErrorIs(t, err, ErrFormat)
	assert.ErrorContains(t, err, "block 5: 512 bytes at offset 2730 lie beyond the end of the 3142-byte file")

	// Without it, the tiles that are whole still read.
	f, err := Open(sizeless{bytes.NewReader(b[:len(b)-100])})
	require.NoError(t, err)
	_, err = f.ReadWindow(context.Background(), geo.Window{Col: 0, Row: 0, Cols: 5, Rows: 5})
	require.NoError(t, err, "the first tile is whole")
	_, err = f.ReadWindow(context.Background(), f.Grid().Full())
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.ErrorContains(t, err, "block 5 at offset 2730")
}

func TestDecompressionIsCapped(t *testing.T) {
	// A 1 MiB stream of zeros for a 512-byte tile decodes the tile only.
	f, err := Open(bytes.NewReader(craft(t, 16, 16, map[uint16]any{tagCompression: []uint16{8}}, [][]byte{tiffenc.Deflate(make([]byte, 1<<20))})))
	require.NoError(t, err)
	r, err := f.ReadWindow(context.Background(), f.Grid().Full())
	require.NoError(t, err)
	assert.Equal(t, make([]uint16, 256), r.U16)
}

func TestPlanarSeparateReadsFirstBand(t *testing.T) {
	blocks := make([][]byte, 6) // 3 planes of 2 tiles
	for i := range blocks {
		blocks[i] = make([]byte, 16*16*2)
		for j := 0; j < 256; j++ {
			binary.LittleEndian.PutUint16(blocks[i][2*j:], uint16(100*i+j))
		}
	}
	f, err := Open(bytes.NewReader(craft(t, 32, 16, map[uint16]any{
		tagSamplesPerPixel: []uint16{3}, tagBitsPerSample: []uint16{16, 16, 16}, tagPlanarConfiguration: []uint16{2},
	}, blocks)))
	require.NoError(t, err)
	r, err := f.ReadWindow(context.Background(), geo.Window{Col: 15, Row: 0, Cols: 2, Rows: 1})
	require.NoError(t, err)
	assert.Equal(t, []uint16{15, 100}, r.U16)
}

func TestWriteRoundTrip(t *testing.T) {
	ctx := context.Background()
	g := testGrid
	g.Cols, g.Rows = 83, 61
	for _, typ := range []DataType{Uint8, Uint16, Int16, Uint32, Int32, Float32, Float64} {
		for _, opt := range []WriteOptions{
			{},
			{TileSize: 32, Predictor: 2, BigEndian: true},
			{Stripped: true, Compression: CompressionNone, BigTIFF: true},
			{Stripped: true, Predictor: 2, HasNoData: true, NoData: 3, Metadata: map[string]string{"BAND": "B04", "NOTE": `<a & "b">`}},
		} {
			want := syntheticRaster(typ, g.Cols, g.Rows, 9)
			var buf bytes.Buffer
			require.NoError(t, Write(&buf, g, want, opt))
			f, err := Open(bytes.NewReader(buf.Bytes()))
			require.NoError(t, err, "%v %+v", typ, opt)
			assert.Equal(t, g, f.Grid())
			assert.Equal(t, typ, f.Type())
			nd, ok := f.NoData()
			assert.Equal(t, opt.HasNoData, ok)
			assert.Equal(t, opt.NoData, nd)
			if opt.Metadata != nil {
				assert.Equal(t, opt.Metadata, f.Metadata())
			}
			got, err := f.ReadWindow(ctx, g.Full())
			require.NoError(t, err)
			require.Equal(t, rasterBytes(want), rasterBytes(got), "%v %+v", typ, opt)
		}
	}
	var buf bytes.Buffer
	require.ErrorContains(t, Write(&buf, g, NewRaster(geo.Window{Cols: 3, Rows: 3}, Uint8), WriteOptions{}), "does not cover")
	require.ErrorContains(t, Write(&buf, g, NewRaster(g.Full(), Uint8), WriteOptions{Predictor: 3}), "predictor 3")
	require.ErrorContains(t, Write(&buf, g, NewRaster(g.Full(), Uint8), WriteOptions{TileSize: 10}), "tile size")
}

func TestWriteFloat32OpensInGDAL(t *testing.T) {
	g := geo.Grid{EPSG: 32631, X0: 574680, Y0: 5622440, DX: 10, DY: 10, Cols: 300, Rows: 270}
	data := syntheticRaster(Float32, g.Cols, g.Rows, 4).F32
	for i := 0; i < len(data); i += 17 {
		data[i] = -9999
	}
	var buf bytes.Buffer
	require.NoError(t, WriteFloat32(&buf, g, data, -9999))

	f, err := Open(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	nd, ok := f.NoData()
	require.True(t, ok)
	assert.Equal(t, -9999.0, nd)
	r, err := f.ReadWindow(context.Background(), g.Full())
	require.NoError(t, err)
	for i := range data {
		if !(r.F32[i] == data[i] || math.IsNaN(float64(data[i])) && math.IsNaN(float64(r.F32[i]))) {
			t.Fatalf("pixel %d: %v, wrote %v", i, r.F32[i], data[i])
		}
	}

	testenv.RequireTool(t, "gdalinfo")
	p := filepath.Join(t.TempDir(), "ndvi.tif")
	require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o644))
	info := gdalinfo(t, p)
	assertGridMatches(t, info, g)
	assert.Equal(t, -9999.0, info.Bands[0].NoDataValue)
	out, err := exec.Command("gdalinfo", "-checksum", p).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.NotContains(t, string(out), "ERROR")
	want := make([]byte, 4*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint32(want[4*i:], math.Float32bits(v))
	}
	assert.Equal(t, want, gdalDecode(t, p), "GDAL decodes what WriteFloat32 wrote")
}

func TestWriteGeoKeysAndNoData(t *testing.T) {
	tests := []struct {
		grid   geo.Grid
		nodata float64
	}{
		{geo.Grid{EPSG: 4326, X0: 4.05, Y0: 50.75, DX: 0.0001, DY: 0.0001, Cols: 20, Rows: 10}, math.NaN()},
		{geo.Grid{EPSG: 32633, X0: 465181.0522318204, Y0: 5080254.63349641, DX: 9.99479222007154, DY: 9.997448467363668, Cols: 20, Rows: 10}, math.Inf(-1)},
		{geo.Grid{X0: 0, Y0: 100, DX: 1, DY: 1, Cols: 20, Rows: 10}, -3.5e38},
	}
	for _, tc := range tests {
		var buf bytes.Buffer
		require.NoError(t, WriteFloat32(&buf, tc.grid, make([]float32, 200), tc.nodata))
		f, err := Open(bytes.NewReader(buf.Bytes()))
		require.NoError(t, err)
		assert.Equal(t, tc.grid, f.Grid())
		nd, ok := f.NoData()
		require.True(t, ok)
		if math.IsNaN(tc.nodata) {
			assert.True(t, math.IsNaN(nd))
		} else {
			assert.Equal(t, tc.nodata, nd)
		}
	}
}

func TestRasterHeld(t *testing.T) {
	w := geo.Window{Cols: 4, Rows: 3}
	for _, typ := range []DataType{Uint8, Uint16, Int16, Float32, Uint32, Int32, Float64} {
		r := NewRaster(w, typ)
		n, c := r.Held()
		assert.Equal(t, 12, n, "%v", typ)
		assert.Equal(t, 12, c, "%v", typ)
		require.True(t, r.resize(geo.Window{Cols: 4, Rows: 2}, typ))
		n, c = r.Held()
		assert.Equal(t, 8, n, "%v", typ)
		assert.Equal(t, 12, c, "%v: the capacity stays", typ)
	}
	n, c := (&Raster{Window: w}).Held()
	assert.Zero(t, n+c, "unknown type")
}
