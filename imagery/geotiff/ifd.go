package geotiff

import (
	"encoding/binary"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/cropkit/cropkit/geo"
)

// Sanity limits on what a file may declare. They bound every allocation a
// header can cause, whatever the file claims.
const (
	maxSide = 1 << 20 // pixels per image side
	// maxBlockBytes bounds the decoded bytes of one tile or strip, which
	// a read decompresses whole even for one pixel. 16 MiB holds 2048²
	// uint32 tiles and, for stripped files, strips of 764 rows of a
	// 10980-column uint16 band (GDAL writes 8 KiB strips); a file with
	// RowsPerStrip spanning a whole large image is refused as unsupported.
	maxBlockBytes = 16 << 20
	// maxOverviews bounds the reduced-resolution levels: each halves a
	// side, so 30 covers maxSide; more (or levels not shrinking) only serve
	// to make a small file decompress the same block again and again.
	maxOverviews  = 30
	maxIFDEntries = 4096
	maxIFDs       = 64
	maxArray      = 1 << 22 // elements of one array tag when the source size is unknown
	maxTextBytes  = 1 << 20 // ASCII tags (GDAL_METADATA…)
	// maxBlocks bounds the tiles or strips of one image, so its offset and
	// byte-count arrays (16 bytes a block once decoded) stay under 64 MiB:
	// a 2^20-pixel square in 512² tiles is exactly 2^22 blocks. Sentinel-2
	// bands hold a few hundred tiles, or 10980 one-row strips.
	maxBlocks = 1 << 22
	// minBlockEntryBytes is the least a block costs in the file: a SHORT
	// offset and a SHORT byte count. A file declaring more blocks than its
	// size allows for these arrays is refused before they are read.
	minBlockEntryBytes = 4
	// maxWindowBytes bounds the decoded bytes of one ReadWindow result: a
	// 512 MiB raster is 16384² uint16 samples, more than a Sentinel-2 band
	// (10980²), and keeps one read well under a 1 GB process budget.
	maxWindowBytes = 512 << 20
)

// TIFF tags.
const (
	tagNewSubfileType      = 254
	tagImageWidth          = 256
	tagImageLength         = 257
	tagBitsPerSample       = 258
	tagCompression         = 259
	tagStripOffsets        = 273
	tagSamplesPerPixel     = 277
	tagRowsPerStrip        = 278
	tagStripByteCounts     = 279
	tagPlanarConfiguration = 284
	tagPredictor           = 317
	tagTileWidth           = 322
	tagTileLength          = 323
	tagTileOffsets         = 324
	tagTileByteCounts      = 325
	tagSampleFormat        = 339
	tagModelPixelScale     = 33550
	tagModelTiepoint       = 33922
	tagModelTransformation = 34264
	tagGeoKeyDirectory     = 34735
	tagGDALMetadata        = 42112
	tagGDALNoData          = 42113
	geoKeyModelType        = 1024
	geoKeyRasterType       = 1025
	geoKeyGeographicType   = 2048
	geoKeyProjectedCSType  = 3072
	rasterPixelIsPoint     = 2
	modelTypeProjected     = 1
	userDefined            = 32767
)

// TIFF field types and their sizes.
var typeSize = [...]int{1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 1, 7: 1, 8: 2, 9: 4, 10: 8, 11: 4, 12: 8, 16: 8, 17: 8, 18: 8}

type field struct {
	typ    uint16
	count  uint64
	inline []byte // value bytes when they fit in the entry
	offset int64  // value position otherwise
}

type tiffReader struct {
	s     *source
	order binary.ByteOrder
	big   bool // BigTIFF
}

func open(r io.ReaderAt, size int64) (*File, error) {
	s := &source{r: r, size: size}
	if lr, ok := r.(largeReader); ok {
		s.mergeReads = lr.PrefersLargeReads()
	}
	var hdr [16]byte
	if size >= 0 && size < 8 {
		return nil, formatErr("%d bytes is too short for a TIFF", size)
	}
	if err := s.readAt(hdr[:8], 0); err != nil {
		return nil, formatErr("header: %v", err)
	}
	t := &tiffReader{s: s}
	switch string(hdr[:2]) {
	case "II":
		t.order = binary.LittleEndian
	case "MM":
		t.order, s.big = binary.BigEndian, true
	default:
		return nil, formatErr("not a TIFF (byte order %q)", hdr[:2])
	}
	var next int64
	switch t.order.Uint16(hdr[2:]) {
	case 42:
		next = int64(t.order.Uint32(hdr[4:]))
	case 43:
		t.big = true
		if err := s.readAt(hdr[8:16], 8); err != nil {
			return nil, formatErr("BigTIFF header: %v", err)
		}
		if t.order.Uint16(hdr[4:]) != 8 || t.order.Uint16(hdr[6:]) != 0 {
			return nil, formatErr("BigTIFF offset size %d", t.order.Uint16(hdr[4:]))
		}
		next = int64(t.order.Uint64(hdr[8:]))
	default:
		return nil, formatErr("not a TIFF (version %d)", t.order.Uint16(hdr[2:]))
	}

	f := &File{}
	seen := map[int64]bool{}
	for i := 0; next != 0; i++ {
		if i >= maxIFDs {
			return nil, limitErr("IFDs", int64(i+1), maxIFDs)
		}
		if seen[next] || next < 0 {
			return nil, formatErr("IFD chain loops at offset %d", next)
		}
		seen[next] = true
		fields, nxt, err := t.readIFD(next)
		if err != nil {
			return nil, formatErr("IFD %d: %v", i, err)
		}
		next = nxt
		if i > 0 {
			sub, err := t.uint(fields, tagNewSubfileType, 0)
			if err != nil {
				return nil, err
			}
			if sub&4 != 0 || sub&1 == 0 { // masks and unrelated pages
				continue
			}
		}
		im, err := t.image(fields, i == 0)
		if err != nil {
			return nil, wrapIFD(i, err)
		}
		if i == 0 {
			f.full = im
			if f.metadata, err = t.metadata(fields); err != nil {
				return nil, wrapIFD(i, err)
			}
			continue
		}
		// Each level must be smaller than the one before: a crafted file
		// could otherwise list one huge block as many "overviews".
		prev := f.full.grid
		if len(f.overviews) > 0 {
			prev = f.overviews[len(f.overviews)-1].grid
		}
		if c, r := im.grid.Cols, im.grid.Rows; c > prev.Cols || r > prev.Rows || c*r >= prev.Cols*prev.Rows {
			return nil, formatErr("IFD %d: overview of %dx%d is not smaller than the level before (%dx%d)", i, c, r, prev.Cols, prev.Rows)
		}
		if len(f.overviews) == maxOverviews {
			return nil, limitErr("overviews", maxOverviews+1, maxOverviews)
		}
		// An overview shares the full image's georeferencing, scaled.
		g := f.full.grid
		im.grid = geo.Grid{
			EPSG: g.EPSG, X0: g.X0, Y0: g.Y0,
			DX:   g.DX * float64(g.Cols) / float64(im.grid.Cols),
			DY:   g.DY * float64(g.Rows) / float64(im.grid.Rows),
			Cols: im.grid.Cols, Rows: im.grid.Rows,
		}
		im.nodata, im.hasNoData = f.full.nodata, f.full.hasNoData
		f.overviews = append(f.overviews, im)
	}
	if f.full == nil {
		return nil, formatErr("no image")
	}
	return f, nil
}

func wrapIFD(i int, err error) error {
	return &wrapped{msg: "IFD " + strconv.Itoa(i), err: err}
}

// wrapped adds context while keeping errors.Is/As working.
type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string {
	return "geotiff: " + w.msg + ": " + strings.TrimPrefix(w.err.Error(), "geotiff: ")
}
func (w *wrapped) Unwrap() error { return w.err }

func (t *tiffReader) readIFD(off int64) (map[uint16]field, int64, error) {
	countSize, entrySize, nextSize := 2, 12, 4
	if t.big {
		countSize, entrySize, nextSize = 8, 20, 8
	}
	var cb [8]byte
	if err := t.s.readAt(cb[:countSize], off); err != nil {
		return nil, 0, err
	}
	var n uint64
	if t.big {
		n = t.order.Uint64(cb[:])
	} else {
		n = uint64(t.order.Uint16(cb[:]))
	}
	if n == 0 || n > maxIFDEntries {
		return nil, 0, formatErr("%d IFD entries", n)
	}
	buf := make([]byte, int(n)*entrySize+nextSize)
	if err := t.s.readAt(buf, off+int64(countSize)); err != nil {
		return nil, 0, err
	}
	fields := make(map[uint16]field, n)
	inlineSize := 4 // value bytes held in the entry itself
	if t.big {
		inlineSize = 8
	}
	for i := 0; i < int(n); i++ {
		e := buf[i*entrySize:]
		tag, typ := t.order.Uint16(e), t.order.Uint16(e[2:])
		var count uint64
		var val []byte
		if t.big {
			count, val = t.order.Uint64(e[4:]), e[12:20]
		} else {
			count, val = uint64(t.order.Uint32(e[4:])), e[8:12]
		}
		if int(typ) >= len(typeSize) || typeSize[typ] == 0 {
			continue // unknown types are skipped, as libtiff does
		}
		f := field{typ: typ, count: count}
		if count <= uint64(inlineSize/typeSize[typ]) {
			f.inline = val[:int(count)*typeSize[typ]]
		} else if t.big {
			f.offset = int64(t.order.Uint64(val))
		} else {
			f.offset = int64(t.order.Uint32(val))
		}
		fields[tag] = f
	}
	tail := buf[int(n)*entrySize:]
	var next int64
	if t.big {
		next = int64(t.order.Uint64(tail))
	} else {
		next = int64(t.order.Uint32(tail))
	}
	return fields, next, nil
}

// raw returns the value bytes of f, at most maxCount elements.
func (t *tiffReader) raw(tag uint16, f field, maxCount int) ([]byte, error) {
	if f.count > uint64(maxCount) {
		return nil, &wrapped{msg: "tag " + strconv.Itoa(int(tag)), err: limitErr("values", int64(min(f.count, math.MaxInt64)), int64(maxCount))}
	}
	if f.inline != nil || f.count == 0 {
		return f.inline, nil
	}
	n := int(f.count) * typeSize[f.typ]
	if t.s.size >= 0 && int64(n) > t.s.size {
		return nil, formatErr("tag %d: %d bytes in a %d-byte file", tag, n, t.s.size)
	}
	b := make([]byte, n)
	if err := t.s.readAt(b, f.offset); err != nil {
		return nil, formatErr("tag %d: %v", tag, err)
	}
	return b, nil
}

// uints reads an integer array tag.
func (t *tiffReader) uints(fields map[uint16]field, tag uint16, maxCount int) ([]uint64, error) {
	return tagArray(t, fields, tag, maxCount, "an unsigned integer", func(typ uint16, b []byte, i int) (uint64, bool) {
		switch typ {
		case 1, 7: // BYTE, UNDEFINED
			return uint64(b[i]), true
		case 3: // SHORT
			return uint64(t.order.Uint16(b[2*i:])), true
		case 4, 13: // LONG, IFD
			return uint64(t.order.Uint32(b[4*i:])), true
		case 16, 18: // LONG8, IFD8
			return t.order.Uint64(b[8*i:]), true
		}
		return 0, false
	})
}

// tagArray reads the values of an array tag (nil when absent) with value,
// which decodes the i-th value of the tag's bytes b and reports false for a
// type that is not of the kind asked.
func tagArray[T any](t *tiffReader, fields map[uint16]field, tag uint16, maxCount int, kind string, value func(typ uint16, b []byte, i int) (T, bool)) ([]T, error) {
	f, ok := fields[tag]
	if !ok {
		return nil, nil
	}
	b, err := t.raw(tag, f, maxCount)
	if err != nil {
		return nil, err
	}
	out := make([]T, f.count)
	for i := range out {
		v, ok := value(f.typ, b, i)
		if !ok {
			return nil, formatErr("tag %d: type %d is not %s", tag, f.typ, kind)
		}
		out[i] = v
	}
	return out, nil
}

// blockArray reads the first n values of a block offset or byte count tag
// (planar images list further planes after them, which are never read), so
// the allocation follows the block count, already bounded, not the tag's count.
func (t *tiffReader) blockArray(fields map[uint16]field, tag uint16, n int) ([]uint64, error) {
	f, ok := fields[tag]
	if !ok {
		return nil, nil
	}
	if f.count > uint64(n) {
		f.count = uint64(n)
		if f.inline != nil {
			f.inline = f.inline[:n*typeSize[f.typ]]
		}
		fields = map[uint16]field{tag: f}
	}
	return t.uints(fields, tag, n)
}

// uint reads a single-valued integer tag, def when absent.
func (t *tiffReader) uint(fields map[uint16]field, tag uint16, def uint64) (uint64, error) {
	if _, ok := fields[tag]; !ok {
		return def, nil
	}
	v, err := t.uints(fields, tag, maxIFDEntries)
	if err != nil {
		return 0, err
	}
	if len(v) == 0 {
		return 0, formatErr("tag %d has no value", tag)
	}
	return v[0], nil
}

func (t *tiffReader) floats(fields map[uint16]field, tag uint16, maxCount int) ([]float64, error) {
	return tagArray(t, fields, tag, maxCount, "a float", func(typ uint16, b []byte, i int) (float64, bool) {
		switch typ {
		case 12: // DOUBLE
			return math.Float64frombits(t.order.Uint64(b[8*i:])), true
		case 11: // FLOAT
			return float64(math.Float32frombits(t.order.Uint32(b[4*i:]))), true
		}
		return 0, false
	})
}

func (t *tiffReader) ascii(fields map[uint16]field, tag uint16) (string, bool, error) {
	f, ok := fields[tag]
	if !ok {
		return "", false, nil
	}
	if typeSize[f.typ] != 1 {
		return "", false, formatErr("tag %d: type %d is not ASCII", tag, f.typ)
	}
	b, err := t.raw(tag, f, maxTextBytes)
	if err != nil {
		return "", false, err
	}
	return strings.TrimRight(string(b), "\x00"), true, nil
}

// image builds the Image of one IFD; georeferencing only for the first one.
func (t *tiffReader) image(fields map[uint16]field, first bool) (*Image, error) {
	im := &Image{src: t.s}
	width, err := t.uint(fields, tagImageWidth, 0)
	if err != nil {
		return nil, err
	}
	height, err := t.uint(fields, tagImageLength, 0)
	if err != nil {
		return nil, err
	}
	if width == 0 || height == 0 {
		return nil, formatErr("image size %dx%d", width, height)
	}
	if width > maxSide || height > maxSide {
		return nil, limitErr("image side", int64(min(max(width, height), math.MaxInt64)), maxSide)
	}
	spp, err := t.uint(fields, tagSamplesPerPixel, 1)
	if err != nil {
		return nil, err
	}
	if spp == 0 || spp > 1<<12 {
		return nil, formatErr("%d samples per pixel", spp)
	}
	planar, err := t.uint(fields, tagPlanarConfiguration, 1)
	if err != nil {
		return nil, err
	}
	if spp > 1 && planar != 2 {
		return nil, unsupported("pixel-interleaved image with %d samples per pixel", spp)
	}
	bps, err := t.uints(fields, tagBitsPerSample, int(spp))
	if err != nil {
		return nil, err
	}
	bits := uint64(1)
	if len(bps) > 0 {
		bits = bps[0]
	}
	format, err := t.uint(fields, tagSampleFormat, 1)
	if err != nil {
		return nil, err
	}
	switch {
	case bits == 8 && format == 1:
		im.typ = Uint8
	case bits == 16 && format == 1:
		im.typ = Uint16
	case bits == 16 && format == 2:
		im.typ = Int16
	case bits == 32 && format == 1:
		im.typ = Uint32
	case bits == 32 && format == 2:
		im.typ = Int32
	case bits == 32 && format == 3:
		im.typ = Float32
	case bits == 64 && format == 3:
		im.typ = Float64
	default:
		return nil, unsupported("sample type: %d bits, sample format %d", bits, format)
	}
	comp, err := t.uint(fields, tagCompression, 1)
	if err != nil {
		return nil, err
	}
	switch comp {
	case 1, 5, 8, 32946:
	case 7:
		return nil, unsupported("compression JPEG (7)")
	case 50000:
		return nil, unsupported("compression ZSTD (50000)")
	case 34887:
		return nil, unsupported("compression LERC (34887)")
	case 50001:
		return nil, unsupported("compression WEBP (50001)")
	case 32773:
		return nil, unsupported("compression PackBits (32773)")
	default:
		return nil, unsupported("compression %d", comp)
	}
	im.compression = int(comp)
	pred, err := t.uint(fields, tagPredictor, 1)
	if err != nil {
		return nil, err
	}
	switch {
	case pred == 1, pred == 2:
	case pred == 3 && (im.typ == Float32 || im.typ == Float64):
	default:
		return nil, unsupported("predictor %d for %s", pred, im.typ)
	}
	im.predictor = int(pred)

	_, hasTW := fields[tagTileWidth]
	offTag, cntTag := uint16(tagStripOffsets), uint16(tagStripByteCounts)
	if hasTW {
		im.tiled = true
		offTag, cntTag = tagTileOffsets, tagTileByteCounts
		tw, err := t.uint(fields, tagTileWidth, 0)
		if err != nil {
			return nil, err
		}
		th, err := t.uint(fields, tagTileLength, 0)
		if err != nil {
			return nil, err
		}
		if tw == 0 || th == 0 || tw > maxSide || th > maxSide {
			return nil, formatErr("tile size %dx%d", tw, th)
		}
		im.blockW, im.blockH = int(tw), int(th)
	} else {
		rps, err := t.uint(fields, tagRowsPerStrip, height)
		if err != nil {
			return nil, err
		}
		if rps == 0 || rps > height {
			rps = height
		}
		im.blockW, im.blockH = int(width), int(rps)
	}
	if im.blockW*im.blockH*im.typ.Size() > maxBlockBytes {
		return nil, unsupported("blocks of %dx%d %s samples (more than %d bytes)", im.blockW, im.blockH, im.typ, maxBlockBytes)
	}
	im.across = (int(width) + im.blockW - 1) / im.blockW
	im.down = (int(height) + im.blockH - 1) / im.blockH
	n := im.across * im.down // blocks of the first plane; planar images hold spp planes
	if n > maxBlocks {
		return nil, limitErr("blocks", int64(n), maxBlocks)
	}
	// Every block needs an offset and a byte count in the file: a header
	// declaring more blocks than the file could list is refused before the
	// arrays are allocated.
	if t.s.size >= 0 && n > 1 && int64(n)*minBlockEntryBytes > t.s.size {
		return nil, limitErr(fmt.Sprintf("blocks in a %d-byte file:", t.s.size), int64(n), t.s.size/minBlockEntryBytes)
	}
	if im.offsets, err = t.blockArray(fields, offTag, n); err != nil {
		return nil, err
	}
	if im.counts, err = t.blockArray(fields, cntTag, n); err != nil {
		return nil, err
	}
	if len(im.offsets) < n || len(im.counts) < n {
		return nil, formatErr("%d block offsets and %d byte counts for %d blocks", len(im.offsets), len(im.counts), n)
	}
	if t.s.size >= 0 {
		for i, off := range im.offsets {
			if cnt := im.counts[i]; cnt > 0 && (off > uint64(t.s.size) || cnt > uint64(t.s.size)-off) {
				return nil, formatErr("block %d: %d bytes at offset %d lie beyond the end of the %d-byte file", i, cnt, off, t.s.size)
			}
		}
	}
	im.grid = geo.Grid{Cols: int(width), Rows: int(height), DX: 1, DY: 1}
	if !first {
		return im, nil
	}
	if err := t.georef(fields, im); err != nil {
		return nil, err
	}
	s, ok, err := t.ascii(fields, tagGDALNoData)
	if err != nil {
		return nil, err
	}
	if ok {
		v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return nil, formatErr("GDAL_NODATA %q: %v", s, err)
		}
		im.nodata, im.hasNoData = v, true
	}
	return im, nil
}

// georef sets the image's grid from the GeoTIFF tags, as GDAL does. Without
// them the grid has unit pixels and origin (0, 0).
func (t *tiffReader) georef(fields map[uint16]field, im *Image) error {
	keys, err := t.uints(fields, tagGeoKeyDirectory, 4*maxIFDEntries)
	if err != nil {
		return err
	}
	var pixelIsPoint bool
	if len(keys) >= 4 {
		// A projected model (or any ProjectedCSTypeGeoKey, even
		// user-defined) is a metric grid: its GeographicTypeGeoKey names
		// only the datum, so a projected CRS without an EPSG code stays
		// EPSG 0 (unsupported) rather than being labelled lon/lat.
		projected := false
		projCode, geogCode := 0, 0
		n := int(keys[3])
		for i := 0; i < n && 4+4*i+3 < len(keys); i++ {
			k := keys[4+4*i:]
			id, loc, val := k[0], k[1], k[3]
			if loc != 0 { // value stored in another tag: none of ours
				continue
			}
			switch id {
			case geoKeyModelType:
				projected = projected || val == modelTypeProjected
			case geoKeyRasterType:
				pixelIsPoint = val == rasterPixelIsPoint
			case geoKeyProjectedCSType:
				projected = true
				if val != userDefined && val != 0 {
					projCode = int(val)
				}
			case geoKeyGeographicType:
				if val != userDefined && val != 0 {
					geogCode = int(val)
				}
			}
		}
		im.grid.EPSG = geogCode
		if projected {
			im.grid.EPSG = projCode
		}
	}
	scale, err := t.floats(fields, tagModelPixelScale, 3)
	if err != nil {
		return err
	}
	ties, err := t.floats(fields, tagModelTiepoint, 6*maxIFDEntries)
	if err != nil {
		return err
	}
	mat, err := t.floats(fields, tagModelTransformation, 16)
	if err != nil {
		return err
	}
	// gt is GDAL's geotransform: x = gt0 + col·gt1 + row·gt2, y = gt3 + col·gt4 + row·gt5.
	var gt [6]float64
	switch {
	case len(scale) >= 2 && len(ties) >= 6:
		gt = [6]float64{ties[3] - ties[0]*scale[0], scale[0], 0, ties[4] + ties[1]*scale[1], 0, -scale[1]}
	case len(mat) == 16:
		gt = [6]float64{mat[3], mat[0], mat[1], mat[7], mat[4], mat[5]}
	default:
		return nil // not georeferenced (or GCPs only)
	}
	if gt[2] != 0 || gt[4] != 0 {
		return unsupported("rotated or sheared geotransform")
	}
	if !(gt[1] > 0) || !(gt[5] < 0) || math.IsInf(gt[1], 0) || math.IsInf(gt[5], 0) || math.IsNaN(gt[0]) || math.IsNaN(gt[3]) {
		return unsupported("geotransform that is not north-up (pixel size %g × %g)", gt[1], gt[5])
	}
	if pixelIsPoint {
		gt[0] -= gt[1] * 0.5
		gt[3] -= gt[5] * 0.5
	}
	im.grid.X0, im.grid.Y0, im.grid.DX, im.grid.DY = gt[0], gt[3], gt[1], -gt[5]
	return nil
}

// gdalMetadata is the XML of the GDAL_METADATA tag.
type gdalMetadata struct {
	Items []struct {
		Name   string `xml:"name,attr"`
		Sample *int   `xml:"sample,attr"`
		Role   string `xml:"role,attr"`
		Domain string `xml:"domain,attr"`
		Value  string `xml:",chardata"`
	} `xml:"Item"`
}

// metadata returns the dataset and band-0 items of the default domain.
func (t *tiffReader) metadata(fields map[uint16]field) (map[string]string, error) {
	s, ok, err := t.ascii(fields, tagGDALMetadata)
	if err != nil || !ok {
		return map[string]string{}, err
	}
	var md gdalMetadata
	if err := xml.Unmarshal([]byte(s), &md); err != nil {
		return nil, formatErr("GDAL_METADATA: %v", err)
	}
	out := make(map[string]string, len(md.Items))
	for _, it := range md.Items {
		if it.Role != "" || it.Domain != "" || it.Name == "" || (it.Sample != nil && *it.Sample != 0) {
			continue
		}
		out[it.Name] = it.Value
	}
	return out, nil
}
