package geotiff

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/binary"
	"math"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/internal/testenv"
)

// tiffEntry is one IFD entry for buildTIFF: SHORT (3), LONG (4) or DOUBLE
// (12) values, stored inline when they fit and after the IFDs otherwise.
type tiffEntry struct {
	tag, typ uint16
	vals     []float64
}

// buildTIFF writes a little-endian classic TIFF: data first (at offset 8),
// then the IFDs in order. Entries may refer to data at offset 8.
func buildTIFF(data []byte, ifds [][]tiffEntry) []byte {
	le := binary.LittleEndian
	var b bytes.Buffer
	b.Write([]byte{'I', 'I', 42, 0, 0, 0, 0, 0})
	b.Write(data)
	for b.Len()%2 != 0 {
		b.WriteByte(0)
	}
	// Out-of-line arrays go after all IFDs: compute the IFD sizes first.
	ifdStart := b.Len()
	extra := ifdStart
	for _, es := range ifds {
		extra += 2 + 12*len(es) + 4
	}
	var arrays bytes.Buffer
	le.PutUint32(b.Bytes()[4:], uint32(ifdStart))
	for i, es := range ifds {
		_ = binary.Write(&b, le, uint16(len(es)))
		for _, e := range es {
			size := map[uint16]int{3: 2, 4: 4, 12: 8}[e.typ]
			var v bytes.Buffer
			for _, x := range e.vals {
				switch e.typ {
				case 3:
					_ = binary.Write(&v, le, uint16(x))
				case 4:
					_ = binary.Write(&v, le, uint32(x))
				default:
					_ = binary.Write(&v, le, x)
				}
			}
			_ = binary.Write(&b, le, e.tag)
			_ = binary.Write(&b, le, e.typ)
			_ = binary.Write(&b, le, uint32(len(e.vals)))
			if size*len(e.vals) <= 4 {
				inline := make([]byte, 4)
				copy(inline, v.Bytes())
				b.Write(inline)
			} else {
				_ = binary.Write(&b, le, uint32(extra+arrays.Len()))
				arrays.Write(v.Bytes())
			}
		}
		next := uint32(0)
		if i+1 < len(ifds) {
			next = uint32(b.Len() + 4)
		}
		_ = binary.Write(&b, le, next)
	}
	b.Write(arrays.Bytes())
	return b.Bytes()
}

func zlibZeros(n int) []byte {
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, 9)
	_, _ = zw.Write(make([]byte, n))
	_ = zw.Close()
	return z.Bytes()
}

// tiledU8 is the entries of a deflate uint8 image of one side×side tile at
// offset 8 of comp bytes.
func tiledU8(sub, side, tile, comp int) []tiffEntry {
	f := func(v ...float64) []float64 { return v }
	return []tiffEntry{
		{tagNewSubfileType, 4, f(float64(sub))},
		{tagImageWidth, 4, f(float64(side))}, {tagImageLength, 4, f(float64(side))},
		{tagBitsPerSample, 3, f(8)}, {tagCompression, 3, f(8)}, {tagSamplesPerPixel, 3, f(1)},
		{tagTileWidth, 4, f(float64(tile))}, {tagTileLength, 4, f(float64(tile))},
		{tagTileOffsets, 4, f(8)}, {tagTileByteCounts, 4, f(float64(comp))},
	}
}

func TestOverviewAmplificationRefused(t *testing.T) {
	const side = 2048 // one 4 MiB tile, shared by every IFD
	comp := zlibZeros(side * side)
	var ifds [][]tiffEntry
	for i := range 64 {
		ifds = append(ifds, tiledU8(min(i, 1), side, side, len(comp)))
	}
	_, err := Open(bytes.NewReader(buildTIFF(comp, ifds)))
	require.ErrorIs(t, err, ErrFormat)
	assert.ErrorContains(t, err, "overview of 2048x2048 is not smaller than the level before (2048x2048)")

	// Shrinking levels are fine, up to maxOverviews of them.
	ifds = [][]tiffEntry{tiledU8(0, side, side, len(comp))}
	for i := range maxOverviews + 1 {
		ifds = append(ifds, tiledU8(1, side-1-i, side, len(comp)))
	}
	_, err = Open(bytes.NewReader(buildTIFF(comp, ifds[:maxOverviews+1])))
	require.NoError(t, err)
	_, err = Open(bytes.NewReader(buildTIFF(comp, ifds)))
	require.ErrorIs(t, err, ErrFormat)
	require.ErrorIs(t, err, ErrLimit)
	assert.ErrorContains(t, err, "overviews 31 exceeds the limit of 30")

	// A level growing again after a smaller one.
	ifds = [][]tiffEntry{tiledU8(0, side, 256, len(comp)), tiledU8(1, side/4, 256, len(comp)), tiledU8(1, side/2, 256, len(comp))}
	_, err = Open(bytes.NewReader(buildTIFF(comp, ifds)))
	require.ErrorIs(t, err, ErrFormat)

	// A good file: the full image and one overview read back.
	ifds = [][]tiffEntry{tiledU8(0, side, side, len(comp)), tiledU8(1, side/2, side/2, len(comp))}
	f, err := Open(bytes.NewReader(buildTIFF(comp, ifds)))
	require.NoError(t, err)
	require.Len(t, f.Overviews(), 1)
	r, err := f.ReadWindow(context.Background(), geo.Window{Col: side - 1, Row: side - 1, Cols: 1, Rows: 1})
	require.NoError(t, err)
	assert.Equal(t, 1, r.Window.Cols)
}

func TestBlockSizeLimit(t *testing.T) {
	// 4096² uint8 is 16 MiB: the limit; 4104² exceeds it. The writer keeps
	// to it too.
	for _, tc := range []struct {
		tile int
		ok   bool
	}{{4096, true}, {4104, false}} {
		comp := zlibZeros(16)
		_, err := Open(bytes.NewReader(buildTIFF(comp, [][]tiffEntry{tiledU8(0, tc.tile, tc.tile, len(comp))})))
		if tc.ok {
			require.NoError(t, err, tc.tile)
		} else {
			require.ErrorIs(t, err, ErrUnsupported, tc.tile)
		}
	}
	g := geo.Grid{EPSG: 32631, X0: 0, Y0: 0, DX: 10, DY: 10, Cols: 16, Rows: 16}
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, g, NewRaster(g.Full(), Float32), WriteOptions{TileSize: 2048}))
	require.ErrorContains(t, Write(&buf, g, NewRaster(g.Full(), Float32), WriteOptions{TileSize: 2064}), "16..2048")
}

func TestUserDefinedProjectedCRS(t *testing.T) {
	f := func(v ...float64) []float64 { return v }
	geo := func(keys ...float64) []tiffEntry {
		dir := append(f(1, 1, 0, float64(len(keys)/4)), keys...)
		return []tiffEntry{
			{tagGeoKeyDirectory, 3, dir},
			{tagModelPixelScale, 12, f(10, 10, 0)},
			{tagModelTiepoint, 12, f(0, 0, 0, 500000, 5600000, 0)},
		}
	}
	comp := zlibZeros(256 * 256)
	for _, tc := range []struct {
		name string
		keys []float64
		want int
	}{
		{"projected with EPSG", f(1024, 0, 1, 1, 3072, 0, 1, 32631), 32631},
		{"geographic", f(1024, 0, 1, 2, 2048, 0, 1, 4326), 4326},
		{"user-defined projected CS", f(1024, 0, 1, 1, 2048, 0, 1, 4326, 3072, 0, 1, 32767), 0},
		{"projected model without a CS key", f(1024, 0, 1, 1, 2048, 0, 1, 4326), 0},
		{"user-defined CS, no model type", f(2048, 0, 1, 4326, 3072, 0, 1, 32767), 0},
		{"projected key before geographic", f(2048, 0, 1, 4258, 3072, 0, 1, 25831), 25831},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file, err := Open(bytes.NewReader(buildTIFF(comp, [][]tiffEntry{append(tiledU8(0, 256, 256, len(comp)), geo(tc.keys...)...)})))
			require.NoError(t, err)
			assert.Equal(t, tc.want, file.Grid().EPSG)
			assert.Equal(t, 500000.0, file.Grid().X0)
			assert.False(t, math.IsNaN(file.Grid().DX))
		})
	}
}

func TestUserDefinedProjectedCRSGDAL(t *testing.T) {
	gdalCreate := testenv.RequireTool(t, "gdal_create")
	dir := t.TempDir()
	for _, tc := range []struct {
		srs  string
		want int
	}{
		// GDAL writes a user-defined projected CS with GeographicTypeGeoKey 4326.
		{"+proj=tmerc +lat_0=0 +lon_0=4 +k=0.9996 +x_0=500000 +y_0=0 +datum=WGS84 +units=m", 0},
		{"EPSG:32631", 32631},
	} {
		path := filepath.Join(dir, "ud.tif")
		out, err := exec.Command(gdalCreate, "-q", "-of", "GTiff", "-outsize", "16", "16", "-bands", "1", "-ot", "UInt16",
			"-a_srs", tc.srs, "-a_ullr", "500000", "5600000", "500160", "5599840", path).CombinedOutput()
		require.NoError(t, err, "%s", out)
		f, err := OpenFile(path)
		require.NoError(t, err)
		assert.Equal(t, tc.want, f.Grid().EPSG, tc.srs)
		assert.Equal(t, 10.0, f.Grid().DX)
		require.NoError(t, f.Close())
	}
}

func TestBlockCountLimits(t *testing.T) {
	f := func(v ...float64) []float64 { return v }
	comp := zlibZeros(16 * 16)
	huge := func(tile int) []tiffEntry {
		es := tiledU8(0, 1<<20, tile, len(comp))
		return es
	}
	for _, tc := range []struct {
		name    string
		entries []tiffEntry
		want    string
	}{
		// 2^16 × 2^16 tiles of 16 pixels: 2^32 blocks.
		{"more blocks than any image may have", huge(16), "blocks 4294967296 exceeds the limit of 4194304"},
		// 2^22 blocks of 512 pixels (the cap), declared by a file of a few hundred bytes.
		{"more blocks than the file can list", huge(512), "blocks in a "},
		{"offset past the end", append(tiledU8(0, 16, 16, len(comp))[:8],
			tiffEntry{tagTileOffsets, 4, f(1 << 20)}, tiffEntry{tagTileByteCounts, 4, f(float64(len(comp)))}), "beyond the end of the"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(bytes.NewReader(buildTIFF(comp, [][]tiffEntry{tc.entries})))
			require.ErrorIs(t, err, ErrFormat)
			assert.ErrorContains(t, err, tc.want)
		})
	}
	_, err := Open(bytes.NewReader(buildTIFF(comp, [][]tiffEntry{huge(16)})))
	var le *LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, LimitError{What: "blocks", Value: 1 << 32, Limit: maxBlocks}, *le)
}

func TestWindowBytesLimit(t *testing.T) {
	// A sparse 2^20-pixel square: opening is cheap, a whole-image read is not.
	side := 1 << 20
	comp := zlibZeros(16)
	es := tiledU8(0, side, 4096, len(comp))
	n := (side / 4096) * (side / 4096)
	zeros := make([]float64, n)
	es[8] = tiffEntry{tagTileOffsets, 4, zeros}
	es[9] = tiffEntry{tagTileByteCounts, 4, zeros}
	file, err := Open(bytes.NewReader(buildTIFF(comp, [][]tiffEntry{es})))
	require.NoError(t, err)
	_, err = file.ReadWindow(context.Background(), geo.Window{Cols: 1 << 15, Rows: 1 << 15})
	require.ErrorIs(t, err, ErrLimit)
	assert.ErrorContains(t, err, "window bytes 1073741824 exceeds the limit of 536870912")
	r, err := file.ReadWindow(context.Background(), geo.Window{Col: side - 8, Row: side - 8, Cols: 16, Rows: 16})
	require.NoError(t, err)
	assert.Equal(t, make([]uint8, 64), r.U8)
}

func TestBlockArraysReadToBlockCount(t *testing.T) {
	// One 16×16 tile whose offset and byte-count tags list 2^20 values:
	// only the first is read, so Open allocates kilobytes, not the 12 MiB
	// the whole arrays would take as bytes and uint64s.
	comp := zlibZeros(16 * 16)
	es := tiledU8(0, 16, 16, len(comp))
	offsets, counts := make([]float64, 1<<20), make([]float64, 1<<20)
	offsets[0], counts[0] = 8, float64(len(comp))
	es[8] = tiffEntry{tagTileOffsets, 4, offsets}
	es[9] = tiffEntry{tagTileByteCounts, 4, counts}
	data := buildTIFF(comp, [][]tiffEntry{es})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f, err := Open(bytes.NewReader(data))
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<10))
	r, err := f.ReadWindow(context.Background(), f.Grid().Full())
	require.NoError(t, err)
	assert.Equal(t, make([]uint8, 256), r.U8)
}
