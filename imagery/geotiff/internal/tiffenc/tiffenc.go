// Package tiffenc lays out TIFF and BigTIFF files: IFDs with their tag values
// and the tile or strip data they point to. It is the shared back end of the
// geotiff writer and of the geotifftest fixtures; it knows nothing of GeoTIFF.
package tiffenc

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"

	"github.com/klauspost/compress/zlib"
)

// TIFF field types.
const (
	typeASCII  = 2
	typeShort  = 3
	typeLong   = 4
	typeDouble = 12
	typeLong8  = 16
)

// Tags the encoder fills in itself.
const (
	tagStripOffsets    = 273
	tagStripByteCounts = 279
	tagTileOffsets     = 324
	tagTileByteCounts  = 325
)

// IFD is one image directory. Tags maps a tag to its value: []uint16 (SHORT),
// []uint32 (LONG), []float64 (DOUBLE) or string (ASCII). The offsets and byte
// counts of Blocks are written as TileOffsets/TileByteCounts when Tiled, else
// as StripOffsets/StripByteCounts. A block slice repeated in Blocks (same
// backing array and length) is stored once, so huge uniform images stay cheap.
type IFD struct {
	Tags   map[uint16]any
	Blocks [][]byte
	Tiled  bool
}

// Options select the container variant.
type Options struct {
	BigTIFF   bool
	BigEndian bool
}

type entry struct {
	tag, typ uint16
	count    uint64
	data     []byte // encoded value bytes
	pos      int64  // file position of data when not inline
}

// Write writes ifds as one TIFF file to w.
func Write(w io.Writer, ifds []IFD, opt Options) error {
	if len(ifds) == 0 {
		return errors.New("tiffenc: no IFD")
	}
	var order binary.ByteOrder = binary.LittleEndian
	if opt.BigEndian {
		order = binary.BigEndian
	}
	headerSize, entrySize, inlineSize := int64(8), int64(12), 4
	if opt.BigTIFF {
		headerSize, entrySize, inlineSize = 16, 20, 8
	}

	// Blocks, deduplicated by identity.
	type blockKey struct {
		p *byte
		n int
	}
	blockPos := map[blockKey]int64{}
	var blockOrder [][]byte

	all := make([][]entry, len(ifds))
	pos := headerSize
	ifdPos := make([]int64, len(ifds))
	for i, ifd := range ifds {
		es := make([]entry, 0, len(ifd.Tags)+2)
		for tag, v := range ifd.Tags {
			e, err := encodeValue(order, tag, v)
			if err != nil {
				return err
			}
			es = append(es, e)
		}
		offTag, cntTag := uint16(tagStripOffsets), uint16(tagStripByteCounts)
		if ifd.Tiled {
			offTag, cntTag = tagTileOffsets, tagTileByteCounts
		}
		n := uint64(len(ifd.Blocks))
		wide := opt.BigTIFF
		elem := 4
		typ := uint16(typeLong)
		if wide {
			elem, typ = 8, typeLong8
		}
		es = append(es,
			entry{tag: offTag, typ: typ, count: n, data: make([]byte, int(n)*elem)},
			entry{tag: cntTag, typ: typ, count: n, data: make([]byte, int(n)*elem)})
		sort.Slice(es, func(a, b int) bool { return es[a].tag < es[b].tag })
		ifdPos[i] = pos
		if opt.BigTIFF {
			pos += 8 + int64(len(es))*entrySize + 8
		} else {
			pos += 2 + int64(len(es))*entrySize + 4
		}
		for j := range es {
			if len(es[j].data) > inlineSize {
				pos += pos & 1 // word alignment
				es[j].pos = pos
				pos += int64(len(es[j].data))
			}
		}
		all[i] = es
	}
	for _, ifd := range ifds {
		for _, b := range ifd.Blocks {
			if len(b) == 0 {
				continue
			}
			k := blockKey{&b[0], len(b)}
			if _, ok := blockPos[k]; ok {
				continue
			}
			pos += pos & 1
			blockPos[k] = pos
			blockOrder = append(blockOrder, b)
			pos += int64(len(b))
		}
	}
	if !opt.BigTIFF && pos > math.MaxUint32 {
		return fmt.Errorf("tiffenc: %d bytes do not fit a classic TIFF, use BigTIFF", pos)
	}
	// Fill offsets and byte counts.
	for i, ifd := range ifds {
		for j := range all[i] {
			e := &all[i][j]
			isOff := e.tag == tagStripOffsets || e.tag == tagTileOffsets
			isCnt := e.tag == tagStripByteCounts || e.tag == tagTileByteCounts
			if !isOff && !isCnt {
				continue
			}
			for k, b := range ifd.Blocks {
				var v uint64
				if isCnt {
					v = uint64(len(b))
				} else if len(b) > 0 {
					v = uint64(blockPos[blockKey{&b[0], len(b)}])
				}
				if opt.BigTIFF {
					order.PutUint64(e.data[8*k:], v)
				} else {
					order.PutUint32(e.data[4*k:], uint32(v))
				}
			}
		}
	}

	bw := bufio.NewWriterSize(w, 1<<16)
	cw := &countWriter{w: bw}
	u16 := func(v uint16) { var b [2]byte; order.PutUint16(b[:], v); cw.Write(b[:]) }
	u32 := func(v uint32) { var b [4]byte; order.PutUint32(b[:], v); cw.Write(b[:]) }
	u64 := func(v uint64) { var b [8]byte; order.PutUint64(b[:], v); cw.Write(b[:]) }
	pad := func(to int64) {
		for cw.n < to {
			cw.Write([]byte{0})
		}
	}
	if opt.BigEndian {
		cw.Write([]byte("MM"))
	} else {
		cw.Write([]byte("II"))
	}
	if opt.BigTIFF {
		u16(43)
		u16(8)
		u16(0)
		u64(uint64(ifdPos[0]))
	} else {
		u16(42)
		u32(uint32(ifdPos[0]))
	}
	for i, es := range all {
		pad(ifdPos[i])
		if opt.BigTIFF {
			u64(uint64(len(es)))
		} else {
			u16(uint16(len(es)))
		}
		for _, e := range es {
			u16(e.tag)
			u16(e.typ)
			if opt.BigTIFF {
				u64(e.count)
			} else {
				u32(uint32(e.count))
			}
			if len(e.data) > inlineSize {
				if opt.BigTIFF {
					u64(uint64(e.pos))
				} else {
					u32(uint32(e.pos))
				}
			} else {
				var v [8]byte
				copy(v[:], e.data)
				cw.Write(v[:inlineSize])
			}
		}
		next := uint64(0)
		if i+1 < len(all) {
			next = uint64(ifdPos[i+1])
		}
		if opt.BigTIFF {
			u64(next)
		} else {
			u32(uint32(next))
		}
		for _, e := range es {
			if len(e.data) > inlineSize {
				pad(e.pos)
				cw.Write(e.data)
			}
		}
	}
	for _, b := range blockOrder {
		pad(blockPos[blockKey{&b[0], len(b)}])
		cw.Write(b)
	}
	if cw.err != nil {
		return fmt.Errorf("tiffenc: %w", cw.err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("tiffenc: %w", err)
	}
	return nil
}

func encodeValue(order binary.ByteOrder, tag uint16, v any) (entry, error) {
	e := entry{tag: tag}
	switch v := v.(type) {
	case []uint16:
		e.typ, e.count = typeShort, uint64(len(v))
		e.data = make([]byte, 2*len(v))
		for i, x := range v {
			order.PutUint16(e.data[2*i:], x)
		}
	case []uint32:
		e.typ, e.count = typeLong, uint64(len(v))
		e.data = make([]byte, 4*len(v))
		for i, x := range v {
			order.PutUint32(e.data[4*i:], x)
		}
	case []float64:
		e.typ, e.count = typeDouble, uint64(len(v))
		e.data = make([]byte, 8*len(v))
		for i, x := range v {
			order.PutUint64(e.data[8*i:], math.Float64bits(x))
		}
	case string:
		e.typ = typeASCII
		e.data = append([]byte(v), 0)
		e.count = uint64(len(e.data))
	default:
		return e, fmt.Errorf("tiffenc: tag %d: unsupported value type %T", tag, v)
	}
	return e, nil
}

type countWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.err = err
	return n, err
}

// Deflate compresses raw as one zlib stream (TIFF compression 8).
func Deflate(raw []byte) []byte {
	var buf bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&buf, 6) // level 6 is valid: no error
	zw.Write(raw)
	zw.Close()
	return buf.Bytes()
}

// PredictHorizontal applies TIFF predictor 2 in place to a block of rows of
// cols samples of size bytes each (1, 2, 4 or 8), stored in order.
func PredictHorizontal(b []byte, cols, rows, size int, order binary.ByteOrder) {
	stride := cols * size
	for r := 0; r < rows; r++ {
		row := b[r*stride : (r+1)*stride]
		for c := cols - 1; c > 0; c-- {
			i, j := c*size, (c-1)*size
			switch size {
			case 1:
				row[i] -= row[j]
			case 2:
				order.PutUint16(row[i:], order.Uint16(row[i:])-order.Uint16(row[j:]))
			case 4:
				order.PutUint32(row[i:], order.Uint32(row[i:])-order.Uint32(row[j:]))
			case 8:
				order.PutUint64(row[i:], order.Uint64(row[i:])-order.Uint64(row[j:]))
			}
		}
	}
}

// PredictFloat applies TIFF predictor 3 (floating point) in place to a block
// of rows of cols samples of size bytes, stored in order.
func PredictFloat(b []byte, cols, rows, size int, order binary.ByteOrder) {
	stride := cols * size
	tmp := make([]byte, stride)
	for r := 0; r < rows; r++ {
		row := b[r*stride : (r+1)*stride]
		// Split into byte planes, most significant byte first.
		for c := 0; c < cols; c++ {
			s := row[c*size : (c+1)*size]
			for k := 0; k < size; k++ {
				msb := k
				if order == binary.LittleEndian {
					msb = size - 1 - k
				}
				tmp[k*cols+c] = s[msb]
			}
		}
		for i := stride - 1; i > 0; i-- {
			tmp[i] -= tmp[i-1]
		}
		copy(row, tmp)
	}
}
