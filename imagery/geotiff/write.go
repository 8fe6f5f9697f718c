package geotiff

import (
	"encoding/binary"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/imagery/geotiff/internal/tiffenc"
)

// Compression codes accepted by WriteOptions.
const (
	CompressionNone    = 1
	CompressionDeflate = 8
)

// WriteOptions select the layout of a written GeoTIFF. The zero value writes
// 256×256 DEFLATE tiles without predictor, little-endian classic TIFF.
type WriteOptions struct {
	TileSize    int  // tile width and height, a multiple of 16; 0 means 256
	Stripped    bool // strips of about 64 KiB instead of tiles
	Compression int  // CompressionNone or CompressionDeflate (0 means DEFLATE)
	Predictor   int  // 1 (0) none, 2 horizontal differencing, 3 floating point
	HasNoData   bool
	NoData      float64
	Metadata    map[string]string // dataset items of GDAL_METADATA
	BigTIFF     bool
	BigEndian   bool
}

// WriteFloat32 writes data (g.Cols×g.Rows, row-major) as a tiled DEFLATE
// float32 GeoTIFF with floating-point predictor, georeferenced by g (EPSG,
// ModelPixelScale and ModelTiepoint) and GDAL_NODATA set to nodata.
func WriteFloat32(w io.Writer, g geo.Grid, data []float32, nodata float64) error {
	r := &Raster{Window: g.Full(), Type: Float32, F32: data}
	return Write(w, g, r, WriteOptions{Predictor: 3, HasNoData: true, NoData: nodata})
}

// Write writes raster r, which must cover all of grid g, as a single-band GeoTIFF.
func Write(w io.Writer, g geo.Grid, r *Raster, opt WriteOptions) error {
	if g.Cols <= 0 || g.Rows <= 0 || g.Cols > maxSide || g.Rows > maxSide {
		return fmt.Errorf("geotiff: write: grid size %dx%d", g.Cols, g.Rows)
	}
	if r.Window.Cols != g.Cols || r.Window.Rows != g.Rows {
		return fmt.Errorf("geotiff: write: raster %v does not cover grid %dx%d", r.Window, g.Cols, g.Rows)
	}
	if !(g.DX > 0 && g.DY > 0) {
		return fmt.Errorf("geotiff: write: pixel size %g × %g", g.DX, g.DY)
	}
	size := r.Type.Size()
	if size == 0 {
		return fmt.Errorf("geotiff: write: sample type %v", r.Type)
	}
	if got := rasterLen(r); got != g.Cols*g.Rows {
		return fmt.Errorf("geotiff: write: %d %v samples for a %dx%d grid", got, r.Type, g.Cols, g.Rows)
	}
	comp := opt.Compression
	if comp == 0 {
		comp = CompressionDeflate
	}
	if comp != CompressionNone && comp != CompressionDeflate {
		return fmt.Errorf("geotiff: write: compression %d", comp)
	}
	pred := max(opt.Predictor, 1)
	isFloat := r.Type == Float32 || r.Type == Float64
	if pred > 3 || (pred == 3 && !isFloat) {
		return fmt.Errorf("geotiff: write: predictor %d for %v", pred, r.Type)
	}
	var order binary.ByteOrder = binary.LittleEndian
	if opt.BigEndian {
		order = binary.BigEndian
	}

	bw, bh := opt.TileSize, opt.TileSize
	if bw == 0 {
		bw, bh = 256, 256
	}
	// 2048² float32 is 16 MiB, the largest block the reader accepts.
	if bw%16 != 0 || bw < 16 || bw*bw*size > maxBlockBytes {
		return fmt.Errorf("geotiff: write: tile size %d is not a multiple of 16 in 16..%d", bw, int(math.Sqrt(float64(maxBlockBytes/size))))
	}
	if opt.Stripped {
		bw = g.Cols
		bh = max(1, min(g.Rows, (1<<16)/(g.Cols*size)))
	}
	across, down := (g.Cols+bw-1)/bw, (g.Rows+bh-1)/bh
	blocks := make([][]byte, 0, across*down)
	for by := 0; by < down; by++ {
		for bx := 0; bx < across; bx++ {
			rows := bh
			if opt.Stripped {
				rows = min(bh, g.Rows-by*bh)
			}
			b := make([]byte, bw*rows*size)
			for y := 0; y < rows; y++ {
				row, col := by*bh+y, bx*bw
				if row >= g.Rows {
					break
				}
				n := min(bw, g.Cols-col)
				encodeSamples(b[y*bw*size:], r, row*g.Cols+col, n, order)
			}
			switch pred {
			case 2:
				tiffenc.PredictHorizontal(b, bw, rows, size, order)
			case 3:
				tiffenc.PredictFloat(b, bw, rows, size, order)
			}
			if comp == CompressionDeflate {
				b = tiffenc.Deflate(b)
			}
			blocks = append(blocks, b)
		}
	}

	format := uint16(1)
	switch r.Type {
	case Int16, Int32:
		format = 2
	case Float32, Float64:
		format = 3
	}
	tags := map[uint16]any{
		tagImageWidth:          []uint32{uint32(g.Cols)},
		tagImageLength:         []uint32{uint32(g.Rows)},
		tagBitsPerSample:       []uint16{uint16(8 * size)},
		tagCompression:         []uint16{uint16(comp)},
		262:                    []uint16{1}, // PhotometricInterpretation: BlackIsZero
		tagSamplesPerPixel:     []uint16{1},
		tagPlanarConfiguration: []uint16{1},
		tagSampleFormat:        []uint16{format},
		tagModelPixelScale:     []float64{g.DX, g.DY, 0},
		tagModelTiepoint:       []float64{0, 0, 0, g.X0, g.Y0, 0},
		tagGeoKeyDirectory:     geoKeys(g.EPSG),
	}
	if pred != 1 {
		tags[tagPredictor] = []uint16{uint16(pred)}
	}
	if opt.Stripped {
		tags[tagRowsPerStrip] = []uint32{uint32(bh)}
	} else {
		tags[tagTileWidth] = []uint32{uint32(bw)}
		tags[tagTileLength] = []uint32{uint32(bh)}
	}
	if opt.HasNoData {
		tags[tagGDALNoData] = formatNoData(opt.NoData)
	}
	if len(opt.Metadata) > 0 {
		tags[tagGDALMetadata] = metadataXML(opt.Metadata)
	}
	ifd := tiffenc.IFD{Tags: tags, Blocks: blocks, Tiled: !opt.Stripped}
	if err := tiffenc.Write(w, []tiffenc.IFD{ifd}, tiffenc.Options{BigTIFF: opt.BigTIFF, BigEndian: opt.BigEndian}); err != nil {
		return fmt.Errorf("geotiff: write: %w", err)
	}
	return nil
}

func rasterLen(r *Raster) int {
	switch r.Type {
	case Uint8:
		return len(r.U8)
	case Uint16:
		return len(r.U16)
	case Int16:
		return len(r.I16)
	case Float32:
		return len(r.F32)
	case Uint32:
		return len(r.U32)
	case Int32:
		return len(r.I32)
	case Float64:
		return len(r.F64)
	}
	return -1
}

// encodeSamples writes n samples of r from index i into b in order.
func encodeSamples(b []byte, r *Raster, i, n int, order binary.ByteOrder) {
	for k := 0; k < n; k++ {
		switch r.Type {
		case Uint8:
			b[k] = r.U8[i+k]
		case Uint16:
			order.PutUint16(b[2*k:], r.U16[i+k])
		case Int16:
			order.PutUint16(b[2*k:], uint16(r.I16[i+k]))
		case Uint32:
			order.PutUint32(b[4*k:], r.U32[i+k])
		case Int32:
			order.PutUint32(b[4*k:], uint32(r.I32[i+k]))
		case Float32:
			order.PutUint32(b[4*k:], math.Float32bits(r.F32[i+k]))
		case Float64:
			order.PutUint64(b[8*k:], math.Float64bits(r.F64[i+k]))
		}
	}
}

// geoKeys is the GeoKeyDirectory for an EPSG code: geographic for 4000..4999,
// projected otherwise; area pixels.
func geoKeys(epsg int) []uint16 {
	keys := []uint16{1, 1, 0, 0}
	add := func(id, v uint16) { keys = append(keys, id, 0, 1, v) }
	switch {
	case epsg <= 0 || epsg > math.MaxUint16:
		add(geoKeyRasterType, 1)
	case epsg >= 4000 && epsg < 5000:
		add(1024, 2) // GTModelTypeGeoKey: geographic
		add(geoKeyRasterType, 1)
		add(geoKeyGeographicType, uint16(epsg))
	default:
		add(1024, 1) // GTModelTypeGeoKey: projected
		add(geoKeyRasterType, 1)
		add(geoKeyProjectedCSType, uint16(epsg))
	}
	keys[3] = uint16((len(keys) - 4) / 4)
	return keys
}

func formatNoData(v float64) string {
	switch {
	case math.IsNaN(v):
		return "nan"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func metadataXML(md map[string]string) string {
	names := make([]string, 0, len(md))
	for k := range md {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("<GDALMetadata>\n")
	for _, k := range names {
		b.WriteString(`  <Item name="`)
		xml.EscapeText(&b, []byte(k))
		b.WriteString(`">`)
		xml.EscapeText(&b, []byte(md[k]))
		b.WriteString("</Item>\n")
	}
	b.WriteString("</GDALMetadata>")
	return b.String()
}
