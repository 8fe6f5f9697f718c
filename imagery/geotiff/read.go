package geotiff

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"runtime"

	"golang.org/x/image/tiff/lzw"
	"golang.org/x/sync/errgroup"

	"github.com/cropkit/cropkit/geo"
)

// decoder is the per-goroutine state of block decoding, pooled by the File.
type decoder struct {
	comp []byte       // compressed bytes of the block
	span []byte       // stored bytes of a run of adjacent blocks
	raw  []byte       // decoded bytes of the block
	br   bytes.Reader // over comp, for LZW
	inf  inflater     // DEFLATE state
}

// ReadWindow decodes window w of the image (clipped to the image), reading
// only the tiles or strips that intersect it, on up to GOMAXPROCS goroutines.
// Sparse blocks (offset and byte count 0) read as the nodata value, or 0.
func (im *Image) ReadWindow(ctx context.Context, w geo.Window) (*Raster, error) {
	return im.ReadWindowInto(ctx, w, nil)
}

// ReadWindowInto is ReadWindow decoding into reuse when reuse has the
// image's sample type and room for the window — every sample of the
// window is then overwritten and reuse, resized, returned; the caller must
// own it — and into a new raster otherwise. A reader of many tiles that
// recycles the rasters of tiles it is done with spares the allocation and
// zeroing of each (a full 10980² band is 470 MB of samples).
func (im *Image) ReadWindowInto(ctx context.Context, w geo.Window, reuse *Raster) (*Raster, error) {
	cw := w.Intersect(im.grid.Full())
	if cw.Empty() {
		return nil, fmt.Errorf("read window %v of a %dx%d image: %w", w, im.grid.Cols, im.grid.Rows, ErrEmptyWindow)
	}
	if int64(cw.Len())*int64(im.typ.Size()) > maxWindowBytes {
		return nil, fmt.Errorf("read window %v of %s: %w", cw, im.typ, limitErr("window bytes", int64(cw.Len())*int64(im.typ.Size()), maxWindowBytes))
	}
	r := reuse
	if r == nil || !r.resize(cw, im.typ) {
		r = NewRaster(cw, im.typ)
	}
	if err := im.readInto(ctx, r); err != nil {
		return nil, err
	}
	return r, nil
}

// maxMergedRead bounds one merged read of adjacent blocks.
const maxMergedRead = 16 << 20

// blockRun is a run of horizontally adjacent blocks bx0..bx1 of block row by.
// When the source prefers large reads, blocks stored back to back (as a COG
// stores a row of tiles) form one run, read with a single ReadAt.
type blockRun struct{ by, bx0, bx1 int }

// readInto decodes r.Window (inside the image) into r.
func (im *Image) readInto(ctx context.Context, r *Raster) error {
	w := r.Window
	bc0, bc1 := w.Col/im.blockW, (w.Col+w.Cols-1)/im.blockW
	br0, br1 := w.Row/im.blockH, (w.Row+w.Rows-1)/im.blockH
	runs := make([]blockRun, 0, (bc1-bc0+1)*(br1-br0+1))
	for by := br0; by <= br1; by++ {
		for bx := bc0; bx <= bc1; bx++ {
			if n := len(runs); n > 0 && im.src.mergeReads && runs[n-1].by == by && im.adjacent(by, runs[n-1].bx0, bx) {
				runs[n-1].bx1 = bx
				continue
			}
			runs = append(runs, blockRun{by: by, bx0: bx, bx1: bx})
		}
	}
	workers := min(runtime.GOMAXPROCS(0), len(runs))

	if workers <= 1 {
		d := im.getDecoder()
		defer im.src.pool.Put(d)
		for _, run := range runs {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := im.decodeRun(d, run, r); err != nil {
				return err
			}
		}
		return nil
	}

	// One decoder per run from the source's pool (decoders keep their
	// buffers), the runs spread over GOMAXPROCS goroutines.
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for _, run := range runs {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			d := im.getDecoder()
			defer im.src.pool.Put(d)
			return im.decodeRun(d, run, r)
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err() // cancelled before any run started
}

// maxMergeGap is the most bytes between two blocks read together: GDAL's
// COGs put a 4-byte leader and trailer around each tile.
const maxMergeGap = 1 << 10

// adjacent reports whether block bx of row by follows block bx-1 in the file,
// at most maxMergeGap bytes after it, and the run from bx0 stays within
// maxMergedRead.
func (im *Image) adjacent(by, bx0, bx int) bool {
	i := by*im.across + bx
	first, prev := by*im.across+bx0, i-1
	if im.counts[i] == 0 || im.counts[prev] == 0 || im.offsets[i] > maxMergedRead+im.offsets[first] ||
		im.offsets[prev] > math.MaxInt64-im.counts[prev] || im.offsets[i] > math.MaxInt64-im.counts[i] {
		return false
	}
	prevEnd, end := im.offsets[prev]+im.counts[prev], im.offsets[i]+im.counts[i]
	return im.offsets[i] >= prevEnd && im.offsets[i]-prevEnd <= maxMergeGap && end-im.offsets[first] <= maxMergedRead
}

// decodeRun decodes the blocks of run, reading them with one ReadAt when there are several.
func (im *Image) decodeRun(d *decoder, run blockRun, r *Raster) error {
	if run.bx0 == run.bx1 {
		return im.decodeBlock(d, run.bx0, run.by, r, nil)
	}
	first, last := run.by*im.across+run.bx0, run.by*im.across+run.bx1
	start := im.offsets[first]
	n := im.offsets[last] + im.counts[last] - start // ≤ maxMergedRead, see adjacent
	if uint64(cap(d.span)) < n {
		d.span = make([]byte, n)
	}
	span := d.span[:n]
	if err := im.src.readAt(span, int64(start)); err != nil {
		return fmt.Errorf("geotiff: blocks %d-%d at offset %d: %w", first, last, start, err)
	}
	for bx := run.bx0; bx <= run.bx1; bx++ {
		i := run.by*im.across + bx
		off := im.offsets[i] - start
		if err := im.decodeBlock(d, bx, run.by, r, span[off:off+im.counts[i]]); err != nil {
			return err
		}
	}
	return nil
}

func (im *Image) getDecoder() *decoder {
	if d, ok := im.src.pool.Get().(*decoder); ok {
		return d
	}
	return &decoder{}
}

// decodeBlock decodes block (bx, by) and copies its part of r.Window into r.
// stored holds the block's bytes when the caller has read them already.
func (im *Image) decodeBlock(d *decoder, bx, by int, r *Raster, stored []byte) error {
	idx := by*im.across + bx
	size := im.typ.Size()
	x0, y0 := bx*im.blockW, by*im.blockH
	rows := im.blockH
	if !im.tiled {
		rows = min(im.blockH, im.grid.Rows-y0) // the last strip may be short
	}
	w := r.Window
	// The part of the block inside the window, in block coordinates.
	part := w.Intersect(geo.Window{Col: x0, Row: y0, Cols: im.blockW, Rows: rows})
	part.Col -= x0
	part.Row -= y0
	if part.Empty() {
		return nil
	}

	off, cnt := im.offsets[idx], im.counts[idx]
	if cnt == 0 {
		im.fillBlock(r, x0+part.Col, y0+part.Row, part.Cols, part.Rows)
		return nil
	}
	// Only the rows up to the window's last row are needed.
	needRows := part.Row + part.Rows
	expected := im.blockW * needRows * size
	if cap(d.raw) < expected {
		d.raw = make([]byte, expected)
	}
	raw := d.raw[:expected]
	if off > math.MaxInt64-cnt {
		return formatErr("block %d: offset %d", idx, off)
	}
	if err := im.inflate(d, raw, int64(off), cnt, im.blockW*rows*size, stored); err != nil {
		return fmt.Errorf("geotiff: block %d at offset %d: %w", idx, off, err)
	}

	stride := im.blockW * size
	big := im.src.big
	for y := part.Row; y < part.Row+part.Rows; y++ {
		row := raw[y*stride : (y+1)*stride]
		dst := (y0+y-w.Row)*w.Cols + (x0 + part.Col - w.Col)
		switch im.predictor {
		case 2:
			// 16-bit samples, the Sentinel-2 case, undo and convert in one pass.
			switch r.Type {
			case Uint16:
				undoHorizontal16(r.U16[dst:dst+part.Cols], row, part.Col, big)
				continue
			case Int16:
				undoHorizontal16(r.I16[dst:dst+part.Cols], row, part.Col, big)
				continue
			}
			undoHorizontal(row[:(part.Col+part.Cols)*size], size, big)
		case 3:
			undoFloat(row, im.blockW, size)
			copyFloatPlanes(r, dst, row, im.blockW, part.Col, part.Cols)
			continue
		}
		copySamples(r, dst, row[part.Col*size:(part.Col+part.Cols)*size], big)
	}
	return nil
}

// inflate fills raw (the first rows of a block of full bytes) from the
// block's cnt stored bytes at off, or from stored when not nil.
func (im *Image) inflate(d *decoder, raw []byte, off int64, cnt uint64, full int, stored []byte) error {
	if im.compression == 1 {
		if cnt < uint64(len(raw)) {
			return formatErr("%d bytes stored for an uncompressed block of %d", cnt, full)
		}
		if stored != nil {
			copy(raw, stored)
			return nil
		}
		return im.src.readAt(raw, off)
	}
	// Compressed data never legitimately exceeds twice the decoded size.
	if cnt > uint64(2*full+4096) {
		return formatErr("%d compressed bytes for a block of %d", cnt, full)
	}
	comp := stored
	if comp == nil {
		if im.src.size >= 0 && (off > im.src.size || cnt > uint64(im.src.size-off)) {
			return formatErr("%d bytes at offset %d lie beyond the end of the file", cnt, off)
		}
		if uint64(cap(d.comp)) < cnt {
			d.comp = make([]byte, cnt)
		}
		comp = d.comp[:cnt]
		if err := im.src.readAt(comp, off); err != nil {
			return err
		}
	}
	switch im.compression {
	case 5:
		d.br.Reset(comp)
		lr := lzw.NewReader(&d.br, lzw.MSB, 8)
		_, err := io.ReadFull(lr, raw)
		lr.Close()
		if err != nil {
			return formatErr("LZW: %v", err)
		}
	case 8, 32946:
		// A zlib stream: 2-byte header, raw DEFLATE, Adler-32. The checksum is
		// not verified (GDAL does not either), which saves a pass over the data.
		if len(comp) < 2 || comp[0]&0x0f != 8 || (uint16(comp[0])<<8|uint16(comp[1]))%31 != 0 {
			return formatErr("DEFLATE: bad zlib header")
		}
		if comp[1]&0x20 != 0 {
			return unsupported("DEFLATE with a preset dictionary")
		}
		// The block is in memory and its size known: inflate it straight
		// into raw (see inflater).
		if err := d.inf.inflate(raw, comp[2:]); err != nil {
			return formatErr("DEFLATE: %v", err)
		}
	}
	return nil
}

// fillBlock sets a sparse block's part of r to the nodata value (0 when the
// type cannot hold it).
func (im *Image) fillBlock(r *Raster, col, row, cols, rows int) {
	v := 0.0
	if im.hasNoData {
		v = im.nodata
	}
	w := r.Window
	for y := row; y < row+rows; y++ {
		i := (y-w.Row)*w.Cols + col - w.Col
		switch r.Type {
		case Uint8:
			fill(r.U8[i:i+cols], convertInt[uint8](v, 0, math.MaxUint8))
		case Uint16:
			fill(r.U16[i:i+cols], convertInt[uint16](v, 0, math.MaxUint16))
		case Int16:
			fill(r.I16[i:i+cols], convertInt[int16](v, math.MinInt16, math.MaxInt16))
		case Uint32:
			fill(r.U32[i:i+cols], convertInt[uint32](v, 0, math.MaxUint32))
		case Int32:
			fill(r.I32[i:i+cols], convertInt[int32](v, math.MinInt32, math.MaxInt32))
		case Float32:
			fill(r.F32[i:i+cols], float32(v))
		case Float64:
			fill(r.F64[i:i+cols], v)
		}
	}
}

func convertInt[T uint8 | uint16 | int16 | uint32 | int32](v, lo, hi float64) T {
	if v != math.Trunc(v) || v < lo || v > hi {
		return 0
	}
	return T(v)
}

func fill[T any](s []T, v T) {
	for i := range s {
		s[i] = v
	}
}

// undoHorizontal reverses TIFF predictor 2 on one row of samples of size
// bytes stored in the file's byte order.
func undoHorizontal(row []byte, size int, big bool) {
	switch size {
	case 1:
		for i := 1; i < len(row); i++ {
			row[i] += row[i-1]
		}
	case 2: // Uint16 and Int16 use undoHorizontal16; kept for completeness
		var o binary.ByteOrder = binary.LittleEndian
		if big {
			o = binary.BigEndian
		}
		prev := o.Uint16(row)
		for i := 2; i+1 < len(row); i += 2 {
			prev += o.Uint16(row[i:])
			o.PutUint16(row[i:], prev)
		}
	case 4:
		var o binary.ByteOrder = binary.LittleEndian
		if big {
			o = binary.BigEndian
		}
		prev := o.Uint32(row)
		for i := 4; i+3 < len(row); i += 4 {
			prev += o.Uint32(row[i:])
			o.PutUint32(row[i:], prev)
		}
	case 8:
		var o binary.ByteOrder = binary.LittleEndian
		if big {
			o = binary.BigEndian
		}
		prev := o.Uint64(row)
		for i := 8; i+7 < len(row); i += 8 {
			prev += o.Uint64(row[i:])
			o.PutUint64(row[i:], prev)
		}
	}
}

// undoHorizontal16 reverses TIFF predictor 2 on a row of 16-bit samples in
// the file's byte order, storing samples c0..c0+len(dst) into dst.
func undoHorizontal16[T ~uint16 | ~int16](dst []T, row []byte, c0 int, big bool) {
	row = row[:2*(c0+len(dst))]
	var acc uint16
	if big {
		for i := 0; i < c0; i++ {
			acc += binary.BigEndian.Uint16(row[2*i:])
		}
		src := row[2*c0:]
		for i := range dst {
			acc += binary.BigEndian.Uint16(src[2*i:])
			dst[i] = T(acc)
		}
		return
	}
	for i := 0; i < c0; i++ {
		acc += binary.LittleEndian.Uint16(row[2*i:])
	}
	src := row[2*c0:]
	src = src[:2*len(dst)]
	// Four samples per 64-bit load: fewer loads and bounds checks.
	i := 0
	for ; i+4 <= len(dst); i += 4 {
		w := binary.LittleEndian.Uint64(src[2*i:])
		a0 := acc + uint16(w)
		a1 := a0 + uint16(w>>16)
		a2 := a1 + uint16(w>>32)
		acc = a2 + uint16(w>>48)
		d := dst[i : i+4 : i+4]
		d[0], d[1], d[2], d[3] = T(a0), T(a1), T(a2), T(acc)
	}
	for ; i < len(dst); i++ {
		acc += binary.LittleEndian.Uint16(src[2*i:])
		dst[i] = T(acc)
	}
}

// undoFloat reverses the byte differencing of TIFF predictor 3 over a whole row.
func undoFloat(row []byte, cols, size int) {
	row = row[:cols*size]
	for i := 1; i < len(row); i++ {
		row[i] += row[i-1]
	}
}

// copyFloatPlanes gathers samples c0..c0+n of a predictor-3 row, whose bytes
// are stored as planes, most significant byte first, into r at dst.
func copyFloatPlanes(r *Raster, dst int, row []byte, cols, c0, n int) {
	switch r.Type {
	case Float32:
		p0, p1, p2, p3 := row[:cols], row[cols:2*cols], row[2*cols:3*cols], row[3*cols:4*cols]
		out := r.F32[dst : dst+n]
		for i := range out {
			c := c0 + i
			out[i] = math.Float32frombits(uint32(p0[c])<<24 | uint32(p1[c])<<16 | uint32(p2[c])<<8 | uint32(p3[c]))
		}
	case Float64:
		out := r.F64[dst : dst+n]
		for i := range out {
			var bits uint64
			for k := 0; k < 8; k++ {
				bits = bits<<8 | uint64(row[k*cols+c0+i])
			}
			out[i] = math.Float64frombits(bits)
		}
	}
}

// copySamples converts src (samples in the file's byte order) into r at dst.
func copySamples(r *Raster, dst int, src []byte, big bool) {
	switch r.Type {
	case Uint8:
		copy(r.U8[dst:], src)
	case Uint16:
		put16(r.U16[dst:dst+len(src)/2], src, big)
	case Int16:
		put16(r.I16[dst:dst+len(src)/2], src, big)
	case Uint32:
		put32(r.U32[dst:dst+len(src)/4], src, big)
	case Int32:
		put32(r.I32[dst:dst+len(src)/4], src, big)
	case Float32:
		out := r.F32[dst : dst+len(src)/4]
		if big {
			for i := range out {
				out[i] = math.Float32frombits(binary.BigEndian.Uint32(src[4*i:]))
			}
		} else {
			for i := range out {
				out[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
			}
		}
	case Float64:
		out := r.F64[dst : dst+len(src)/8]
		var o binary.ByteOrder = binary.LittleEndian
		if big {
			o = binary.BigEndian
		}
		for i := range out {
			out[i] = math.Float64frombits(o.Uint64(src[8*i:]))
		}
	}
}

func put16[T ~uint16 | ~int16](dst []T, src []byte, big bool) {
	src = src[:2*len(dst)]
	if big {
		for i := range dst {
			dst[i] = T(binary.BigEndian.Uint16(src[2*i:]))
		}
		return
	}
	for i := range dst {
		dst[i] = T(binary.LittleEndian.Uint16(src[2*i:]))
	}
}

func put32[T ~uint32 | ~int32](dst []T, src []byte, big bool) {
	src = src[:4*len(dst)]
	if big {
		for i := range dst {
			dst[i] = T(binary.BigEndian.Uint32(src[4*i:]))
		}
		return
	}
	for i := range dst {
		dst[i] = T(binary.LittleEndian.Uint32(src[4*i:]))
	}
}
