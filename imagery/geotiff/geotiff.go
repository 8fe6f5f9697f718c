// Package geotiff reads GeoTIFF and Cloud-Optimized GeoTIFF rasters in pure Go,
// decoding only the tiles or strips a window needs, from any io.ReaderAt:
// a local file (OpenFile) or an HTTP(S) server answering Range requests
// (NewHTTPReaderAt). It reads classic TIFF and BigTIFF in both byte orders,
// tiled or stripped, uncompressed, LZW or DEFLATE, with predictors 1, 2 and 3,
// and internal overviews. A small writer (WriteFloat32, Write) produces tiled
// DEFLATE GeoTIFFs that GDAL opens.
//
// Everything a file declares is checked against sanity limits and against the
// file's size before it is allocated (image sides up to 2^20 pixels, decoded
// tiles or strips up to 16 MiB, at most 2^22 blocks per image and never more
// blocks than the file has bytes for their offsets, block offsets inside the
// file, shrinking overview chains, array tags no longer than the file, at
// most 512 MiB decoded per ReadWindow), and decompression never produces
// more than a block's expected size, so a crafted file yields an error
// wrapping ErrFormat (ErrLimit for a limit) or ErrUnsupported, never a panic
// or an unbounded allocation.
package geotiff

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"sync"

	"github.com/cropkit/cropkit/geo"
)

// DataType is a raster's sample type.
type DataType int

// The sample types cropkit reads.
const (
	Uint8 DataType = iota + 1
	Uint16
	Int16
	Float32
	Uint32
	Int32
	Float64
)

// Size is the number of bytes of one sample.
func (t DataType) Size() int {
	switch t {
	case Uint8:
		return 1
	case Uint16, Int16:
		return 2
	case Float32, Uint32, Int32:
		return 4
	case Float64:
		return 8
	}
	return 0
}

func (t DataType) String() string {
	switch t {
	case Uint8:
		return "uint8"
	case Uint16:
		return "uint16"
	case Int16:
		return "int16"
	case Float32:
		return "float32"
	case Uint32:
		return "uint32"
	case Int32:
		return "int32"
	case Float64:
		return "float64"
	}
	return fmt.Sprintf("DataType(%d)", int(t))
}

// ErrUnsupported is matched (errors.Is) by every *UnsupportedError: a valid
// TIFF using a variant this package does not decode (JPEG, ZSTD, rotated
// geotransforms, multi-sample pixel-interleaved images…).
var ErrUnsupported = errors.New("geotiff: unsupported")

// ErrFormat is matched (errors.Is) by every *FormatError: the file is not a
// TIFF, is truncated or corrupt, or exceeds this package's sanity limits.
var ErrFormat = errors.New("geotiff: malformed file")

// ErrLimit is matched (errors.Is) by every *LimitError: the file declares
// more than this package's sanity limits allow (image sides, blocks, IFDs,
// overviews, array tags, the decoded bytes of one window). A *LimitError
// matches ErrFormat too, since such a file is refused like a malformed one.
var ErrLimit = errors.New("geotiff: sanity limit exceeded")

// ErrEmptyWindow is returned by ReadWindow when the window does not overlap the image.
var ErrEmptyWindow = errors.New("geotiff: window does not overlap the image")

// UnsupportedError names the unsupported feature.
type UnsupportedError struct {
	Feature string
}

func (e *UnsupportedError) Error() string        { return "geotiff: unsupported " + e.Feature }
func (e *UnsupportedError) Is(target error) bool { return target == ErrUnsupported }

// FormatError describes why a file is malformed.
type FormatError struct {
	Msg string
}

func (e *FormatError) Error() string        { return "geotiff: malformed file: " + e.Msg }
func (e *FormatError) Is(target error) bool { return target == ErrFormat }

// LimitError names the quantity a file or a read declared, and the limit it exceeds.
type LimitError struct {
	// What is the quantity: "image width", "blocks", "window bytes"…
	What  string
	Value int64
	Limit int64
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("geotiff: %s %d exceeds the limit of %d", e.What, e.Value, e.Limit)
}

// Is matches ErrLimit and ErrFormat.
func (e *LimitError) Is(target error) bool { return target == ErrLimit || target == ErrFormat }

func limitErr(what string, value, limit int64) error {
	return &LimitError{What: what, Value: value, Limit: limit}
}

func formatErr(format string, args ...any) error {
	return &FormatError{Msg: fmt.Sprintf(format, args...)}
}

func unsupported(format string, args ...any) error {
	return &UnsupportedError{Feature: fmt.Sprintf(format, args...)}
}

// Raster is a decoded window of one band. Exactly one of the typed slices is
// set, per Type, row-major with Window.Cols samples per row.
type Raster struct {
	Window geo.Window
	Type   DataType
	U8     []uint8
	U16    []uint16
	I16    []int16
	F32    []float32
	U32    []uint32
	I32    []int32
	F64    []float64
}

// NewRaster allocates a zeroed raster of type t covering w.
func NewRaster(w geo.Window, t DataType) *Raster {
	r := &Raster{Window: w, Type: t}
	n := w.Len()
	switch t {
	case Uint8:
		r.U8 = make([]uint8, n)
	case Uint16:
		r.U16 = make([]uint16, n)
	case Int16:
		r.I16 = make([]int16, n)
	case Float32:
		r.F32 = make([]float32, n)
	case Uint32:
		r.U32 = make([]uint32, n)
	case Int32:
		r.I32 = make([]int32, n)
	case Float64:
		r.F64 = make([]float64, n)
	}
	return r
}

// resize makes r a raster of type t covering w over its own samples, when
// it has that type and room for them, and reports whether it could. The
// samples keep their old values.
func (r *Raster) resize(w geo.Window, t DataType) bool {
	if r.Type != t {
		return false
	}
	n := w.Len()
	var ok bool
	switch t {
	case Uint8:
		ok = reslice(&r.U8, n)
	case Uint16:
		ok = reslice(&r.U16, n)
	case Int16:
		ok = reslice(&r.I16, n)
	case Float32:
		ok = reslice(&r.F32, n)
	case Uint32:
		ok = reslice(&r.U32, n)
	case Int32:
		ok = reslice(&r.I32, n)
	case Float64:
		ok = reslice(&r.F64, n)
	}
	if ok {
		r.Window = w
	}
	return ok
}

// reslice sets *s to its first n elements when its capacity holds them.
func reslice[T any](s *[]T, n int) bool {
	if cap(*s) < n {
		return false
	}
	*s = (*s)[:n]
	return true
}

// At returns sample i (row-major index within the window) as float64.
func (r *Raster) At(i int) float64 {
	switch r.Type {
	case Uint8:
		return float64(r.U8[i])
	case Uint16:
		return float64(r.U16[i])
	case Int16:
		return float64(r.I16[i])
	case Float32:
		return float64(r.F32[i])
	case Uint32:
		return float64(r.U32[i])
	case Int32:
		return float64(r.I32[i])
	case Float64:
		return r.F64[i]
	}
	return math.NaN()
}

// Len is the number of samples.
func (r *Raster) Len() int { return r.Window.Len() }

// Held is the length and capacity of r's slice of its type (0, 0 for an
// unknown type): a raster is consistent when n ≥ Len(), and can be resized
// without allocating to up to capacity samples.
func (r *Raster) Held() (n, capacity int) {
	switch r.Type {
	case Uint8:
		return len(r.U8), cap(r.U8)
	case Uint16:
		return len(r.U16), cap(r.U16)
	case Int16:
		return len(r.I16), cap(r.I16)
	case Float32:
		return len(r.F32), cap(r.F32)
	case Uint32:
		return len(r.U32), cap(r.U32)
	case Int32:
		return len(r.I32), cap(r.I32)
	case Float64:
		return len(r.F64), cap(r.F64)
	}
	return 0, 0
}

// File is an open GeoTIFF: its full-resolution image and any internal overviews.
type File struct {
	full      *Image
	overviews []*Image
	metadata  map[string]string
	closer    io.Closer
}

// Open reads the header of a GeoTIFF (classic or BigTIFF) from r: every IFD
// with its tile or strip offsets, so that later reads touch only pixel data.
// r must allow concurrent ReadAt calls (os.File, bytes.Reader and
// HTTPReaderAt do). When r has a Size() int64 method, or is an *os.File,
// array lengths in the header are checked against the source size.
func Open(r io.ReaderAt) (*File, error) {
	size := int64(-1)
	switch s := r.(type) {
	case interface{ Size() int64 }:
		size = s.Size()
	case *os.File:
		if fi, err := s.Stat(); err == nil && fi.Mode().IsRegular() {
			size = fi.Size()
		}
	}
	return open(r, size)
}

// OpenFile opens the GeoTIFF at path name; Close releases it.
func OpenFile(name string) (*File, error) {
	fh, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("geotiff: %w", err)
	}
	f, err := Open(fh)
	if err != nil {
		fh.Close()
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	f.closer = fh
	return f, nil
}

// Close closes the file opened by OpenFile; for Open it does nothing.
func (f *File) Close() error {
	if f.closer == nil {
		return nil
	}
	return f.closer.Close()
}

// Grid is the full-resolution image's grid (EPSG from the GeoKeys, 0 if none).
func (f *File) Grid() geo.Grid { return f.full.grid }

// Type is the sample type.
func (f *File) Type() DataType { return f.full.typ }

// NoData is the GDAL_NODATA value, if the file has one.
func (f *File) NoData() (float64, bool) { return f.full.nodata, f.full.hasNoData }

// Metadata holds the GDAL_METADATA items (dataset and band 0 items, e.g.
// ACQUISITION_DATETIME_UTC). The map is the caller's to modify.
func (f *File) Metadata() map[string]string { return maps.Clone(f.metadata) }

// Image is the full-resolution image.
func (f *File) Image() *Image { return f.full }

// Overviews are the internal reduced-resolution images, largest first
// (mask IFDs are skipped).
func (f *File) Overviews() []*Image { return f.overviews }

// ReadWindow decodes window w of the full-resolution image (clipped to the
// image), reading only the tiles or strips that intersect it, concurrently.
func (f *File) ReadWindow(ctx context.Context, w geo.Window) (*Raster, error) {
	return f.full.ReadWindow(ctx, w)
}

// ReadWindowInto is Image.ReadWindowInto on the full-resolution image.
func (f *File) ReadWindowInto(ctx context.Context, w geo.Window, reuse *Raster) (*Raster, error) {
	return f.full.ReadWindowInto(ctx, w, reuse)
}

// Image is one resolution level of a GeoTIFF.
type Image struct {
	src       *source
	grid      geo.Grid
	typ       DataType
	nodata    float64
	hasNoData bool

	compression int
	predictor   int
	tiled       bool
	blockW      int // tile width, or image width for strips
	blockH      int // tile height, or rows per strip
	across      int // blocks per row of blocks
	down        int // rows of blocks
	offsets     []uint64
	counts      []uint64
}

// Grid is the image's grid; an overview's pixels are larger than the full image's.
func (im *Image) Grid() geo.Grid { return im.grid }

// Type is the sample type.
func (im *Image) Type() DataType { return im.typ }

// NoData is the file's GDAL_NODATA value, if it has one.
func (im *Image) NoData() (float64, bool) { return im.nodata, im.hasNoData }

// BlockSize is the tile size, or the image width and rows per strip of a stripped image.
func (im *Image) BlockSize() (cols, rows int) { return im.blockW, im.blockH }

// Tiled reports whether the image is tiled rather than stripped.
func (im *Image) Tiled() bool { return im.tiled }

// Compression is the TIFF compression code (1 none, 5 LZW, 8 DEFLATE).
func (im *Image) Compression() int { return im.compression }

// source is the shared reader of a File: the io.ReaderAt, byte order and the
// pool of decoder states reused across reads.
type source struct {
	r          io.ReaderAt
	size       int64 // -1 when unknown
	big        bool  // big-endian ("MM")
	mergeReads bool  // read adjacent blocks with one ReadAt
	pool       sync.Pool
}

// largeReader is implemented by sources for which one large read is cheaper
// than several small ones, such as HTTPReaderAt: ReadWindow then reads runs
// of blocks stored back to back with a single ReadAt.
type largeReader interface {
	PrefersLargeReads() bool
}

// readAt reads exactly len(p) bytes at off.
func (s *source) readAt(p []byte, off int64) error {
	if off < 0 || (s.size >= 0 && off+int64(len(p)) > s.size) {
		return formatErr("%d bytes at offset %d lie beyond the end of the file", len(p), off)
	}
	n, err := s.r.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("read %d bytes at offset %d: %w", len(p), off, err)
}
