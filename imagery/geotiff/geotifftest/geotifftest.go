// Package geotifftest writes synthetic GeoTIFFs for tests and counts the
// reads a GeoTIFF reader makes.
package geotifftest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/imagery/geotiff"
	"github.com/cropkit/cropkit/imagery/geotiff/internal/tiffenc"
)

// WriteTiled writes a single-band tiled GeoTIFF of type typ on grid g whose
// pixel (col, row) is pixel(col, row), converted to typ. compression is
// geotiff.CompressionNone or geotiff.CompressionDeflate, predictor 1, 2 or 3.
func WriteTiled(w io.Writer, g geo.Grid, typ geotiff.DataType, tileSize, compression, predictor int, pixel func(col, row int) float64) error {
	r := geotiff.NewRaster(g.Full(), typ)
	for row := 0; row < g.Rows; row++ {
		for col := 0; col < g.Cols; col++ {
			i, v := row*g.Cols+col, pixel(col, row)
			switch typ {
			case geotiff.Uint8:
				r.U8[i] = uint8(v)
			case geotiff.Uint16:
				r.U16[i] = uint16(v)
			case geotiff.Int16:
				r.I16[i] = int16(v)
			case geotiff.Uint32:
				r.U32[i] = uint32(v)
			case geotiff.Int32:
				r.I32[i] = int32(v)
			case geotiff.Float32:
				r.F32[i] = float32(v)
			case geotiff.Float64:
				r.F64[i] = v
			default:
				return fmt.Errorf("geotifftest: sample type %v", typ)
			}
		}
	}
	return geotiff.Write(w, g, r, geotiff.WriteOptions{TileSize: tileSize, Compression: compression, Predictor: predictor})
}

// WriteRepeatedCOG writes a Cloud-Optimized-like uint16 GeoTIFF of any size
// (e.g. a 10980×10980 Sentinel-2 band) without per-pixel work: every tile, at
// every level, holds the same tileSize² pattern tile(col, row) (tile-local
// coordinates), DEFLATE-compressed once with predictor 2. Each tile is stored
// at its own offset, so a counting reader can tell which tiles were read. The
// IFDs and their tile arrays come first, as in a COG, followed by reduced
// overviews (halved until they fit one tile) whose tiles repeat the same
// pattern. A smooth pattern compresses to a few KiB, so the file stays small.
func WriteRepeatedCOG(w io.Writer, g geo.Grid, tileSize int, tile func(col, row int) uint16) error {
	if tileSize < 16 || tileSize%16 != 0 {
		return fmt.Errorf("geotifftest: tile size %d is not a multiple of 16", tileSize)
	}
	raw := make([]byte, tileSize*tileSize*2)
	for row := 0; row < tileSize; row++ {
		for col := 0; col < tileSize; col++ {
			binary.LittleEndian.PutUint16(raw[2*(row*tileSize+col):], tile(col, row))
		}
	}
	tiffenc.PredictHorizontal(raw, tileSize, tileSize, 2, binary.LittleEndian)
	compressed := tiffenc.Deflate(raw)

	var ifds []tiffenc.IFD
	cols, rows := g.Cols, g.Rows
	for level := 0; ; level++ {
		across, down := (cols+tileSize-1)/tileSize, (rows+tileSize-1)/tileSize
		blocks := make([][]byte, across*down)
		for i := range blocks {
			blocks[i] = bytes.Clone(compressed)
		}
		tags := map[uint16]any{
			256: []uint32{uint32(cols)},
			257: []uint32{uint32(rows)},
			258: []uint16{16},
			259: []uint16{8},
			262: []uint16{1},
			277: []uint16{1},
			284: []uint16{1},
			317: []uint16{2},
			322: []uint32{uint32(tileSize)},
			323: []uint32{uint32(tileSize)},
			339: []uint16{1},
		}
		if level == 0 {
			tags[33550] = []float64{g.DX, g.DY, 0}
			tags[33922] = []float64{0, 0, 0, g.X0, g.Y0, 0}
			tags[34735] = []uint16{1, 1, 0, 3, 1024, 0, 1, 1, 1025, 0, 1, 1, 3072, 0, 1, uint16(g.EPSG)}
		} else {
			tags[254] = []uint32{1} // reduced-resolution image
		}
		ifds = append(ifds, tiffenc.IFD{Tags: tags, Blocks: blocks, Tiled: true})
		if cols <= tileSize && rows <= tileSize {
			break
		}
		cols, rows = (cols+1)/2, (rows+1)/2
	}
	size := 0
	for _, ifd := range ifds {
		size += len(ifd.Blocks) * len(compressed)
	}
	return tiffenc.Write(w, ifds, tiffenc.Options{BigTIFF: size > math.MaxUint32/2})
}

// WriteUniform writes a tiled uint16 GeoTIFF on g (any size up to the
// reader's 2^20-pixel sides) whose every pixel is value, with no overviews:
// all tiles point at one DEFLATE tile stored once, so the file is little
// more than its offset and byte-count arrays (8 bytes a tile). It crafts
// files that declare far more pixels than their size suggests, such as a
// 2^20×2^20 band of 1 cm pixels in 2 MiB.
func WriteUniform(w io.Writer, g geo.Grid, tileSize int, value uint16) error {
	if tileSize < 16 || tileSize%16 != 0 {
		return fmt.Errorf("geotifftest: tile size %d is not a multiple of 16", tileSize)
	}
	raw := make([]byte, tileSize*tileSize*2)
	for i := 0; i < len(raw); i += 2 {
		binary.LittleEndian.PutUint16(raw[i:], value)
	}
	tile := tiffenc.Deflate(raw)
	across, down := (g.Cols+tileSize-1)/tileSize, (g.Rows+tileSize-1)/tileSize
	blocks := make([][]byte, across*down)
	for i := range blocks {
		blocks[i] = tile // the same slice: stored once
	}
	tags := map[uint16]any{
		256:   []uint32{uint32(g.Cols)},
		257:   []uint32{uint32(g.Rows)},
		258:   []uint16{16},
		259:   []uint16{8},
		262:   []uint16{1},
		277:   []uint16{1},
		284:   []uint16{1},
		322:   []uint32{uint32(tileSize)},
		323:   []uint32{uint32(tileSize)},
		339:   []uint16{1},
		33550: []float64{g.DX, g.DY, 0},
		33922: []float64{0, 0, 0, g.X0, g.Y0, 0},
		34735: []uint16{1, 1, 0, 3, 1024, 0, 1, 1, 1025, 0, 1, 1, 3072, 0, 1, uint16(g.EPSG)},
	}
	return tiffenc.Write(w, []tiffenc.IFD{{Tags: tags, Blocks: blocks, Tiled: true}}, tiffenc.Options{})
}

// Read is one ReadAt call.
type Read struct {
	Off int64
	N   int
}

// CountingReaderAt records every ReadAt call made on R. It is safe for
// concurrent use and passes Size through when R has it.
type CountingReaderAt struct {
	R io.ReaderAt

	mu    sync.Mutex
	reads []Read
}

// ReadAt reads from R and records the call.
func (c *CountingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	c.mu.Lock()
	c.reads = append(c.reads, Read{Off: off, N: len(p)})
	c.mu.Unlock()
	return c.R.ReadAt(p, off)
}

// Size is R's Size, or -1 when R has none.
func (c *CountingReaderAt) Size() int64 {
	if s, ok := c.R.(interface{ Size() int64 }); ok {
		return s.Size()
	}
	return -1
}

// Reads returns the calls so far, in call order.
func (c *CountingReaderAt) Reads() []Read {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Read(nil), c.reads...)
}

// Bytes is the number of bytes asked for so far.
func (c *CountingReaderAt) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, r := range c.reads {
		n += int64(r.N)
	}
	return n
}

// Reset forgets the recorded calls.
func (c *CountingReaderAt) Reset() {
	c.mu.Lock()
	c.reads = nil
	c.mu.Unlock()
}
