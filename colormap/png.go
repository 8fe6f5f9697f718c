package colormap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"sync"

	"github.com/klauspost/compress/zlib"
)

// Limits on what one render may allocate, so a bad request cannot exhaust
// memory.
const (
	// MaxUpscale is the largest integer upscale factor.
	MaxUpscale = 64
	// MaxPixels is the largest number of output pixels (after upscaling).
	MaxPixels = 1 << 26
)

// ErrInvalidRaster is wrapped by errors about the values passed for
// rendering: non-positive size, a length that does not match cols×rows, an
// upscale outside [1, MaxUpscale] or an output beyond MaxPixels.
var ErrInvalidRaster = errors.New("invalid raster")

// PNGOptions tunes EncodePNG.
type PNGOptions struct {
	// Upscale repeats every value Upscale×Upscale times (nearest neighbour);
	// 0 means 1.
	Upscale int
	// CompressionLevel selects the deflate effort. The zero value
	// (png.DefaultCompression) means png.BestSpeed: rendering throughput
	// matters more here than a few bytes (an RGB image at upscale 1 is then
	// deflated by rgbDeflater, which is also smaller than klauspost's
	// levels on noisy field images). png.BestCompression and
	// png.NoCompression are honoured. Rows are never filtered (filters cost
	// more time than they save on paletted field images).
	CompressionLevel png.CompressionLevel
}

// Encoder renders PNGs and keeps its deflate writers, pixel buffers and the
// colour tables of the ramps it rendered (colourTable) between calls, which
// makes rendering thousands of small field images cheap.
// The zero value is ready to use; an Encoder is safe for concurrent use and
// must not be copied after first use.
type Encoder struct {
	zw      [3]sync.Pool // of *zlib.Writer, by zlibLevel index
	scratch sync.Pool    // of *scratch
	tables  colourTables // of the ramps rendered so far
}

// NewEncoder returns an Encoder with empty pools.
func NewEncoder() *Encoder { return &Encoder{} }

// EncodePNG writes values (row-major, cols×rows, NaN = transparent) as a PNG
// coloured with c. It is Encoder.Encode with fresh buffers; callers rendering
// many images should keep an Encoder.
func EncodePNG(w io.Writer, values []float64, cols, rows int, c Colormap, opts PNGOptions) error {
	var e Encoder
	return e.Encode(w, values, cols, rows, c, opts)
}

// Encode writes values (row-major, cols×rows, NaN = transparent: pixels
// outside the field or masked) as a PNG coloured with c, at one pixel per
// value times opts.Upscale. The PNG is paletted (8-bit indices) when the
// distinct colours, transparent included, fit in 256 entries, which is the
// usual case for a field; otherwise it is 8-bit RGB with a transparent colour
// key, or RGBA when no key colour is free. Decoders see the same pixels
// either way. Nothing is written when the input is invalid.
func (e *Encoder) Encode(w io.Writer, values []float64, cols, rows int, c Colormap, opts PNGOptions) error {
	upscale := opts.Upscale
	if upscale == 0 {
		upscale = 1
	}
	s, _ := e.scratch.Get().(*scratch)
	if s == nil {
		s = &scratch{}
	}
	defer e.scratch.Put(s)
	if err := s.render(values, cols, rows, c, upscale, &e.tables); err != nil {
		return err
	}
	li, level := zlibLevel(opts.CompressionLevel)
	zw, _ := e.zw[li].Get().(*zlib.Writer)
	if err := s.writePNG(w, values, &zw, level); err != nil {
		return fmt.Errorf("encode png %dx%d: %w", cols*upscale, rows*upscale, err)
	}
	if zw != nil { // nil when the image needed no zlib.Writer
		e.zw[li].Put(zw)
	}
	return nil
}

// zlibLevel maps a png level to the index of its writer pool and the
// deflate level.
func zlibLevel(l png.CompressionLevel) (int, int) {
	switch l {
	case png.BestCompression:
		return 1, zlib.BestCompression
	case png.NoCompression:
		return 2, zlib.NoCompression
	}
	return 0, zlib.BestSpeed
}

// Image renders values as Encode does and returns the image (an
// *image.Paletted or an *image.NRGBA) with freshly allocated pixels.
func Image(values []float64, cols, rows int, c Colormap, upscale int) (image.Image, error) {
	if upscale == 0 {
		upscale = 1
	}
	var s scratch
	if err := s.render(values, cols, rows, c, upscale, nil); err != nil {
		return nil, err
	}
	w, h := cols*upscale, rows*upscale
	rect := image.Rect(0, 0, w, h)
	if s.paletted {
		pal := make(color.Palette, len(s.palette))
		for i, p := range s.palette {
			pal[i] = p
		}
		pix := upscalePix(s.idx, cols, rows, 1, upscale)
		return &image.Paletted{Pix: pix, Stride: w, Rect: rect, Palette: pal}, nil
	}
	rgba := make([]uint8, 4*cols*rows)
	for y := range rows {
		s.rgbaRow(rgba[4*y*cols:4*(y+1)*cols], values[y*cols:(y+1)*cols], y)
	}
	pix := upscalePix(rgba, cols, rows, 4, upscale)
	return &image.NRGBA{Pix: pix, Stride: 4 * w, Rect: rect}, nil
}

// scratch holds the buffers of one render.
type scratch struct {
	cols, rows, upscale int
	paletted            bool
	hasNaN              bool
	idx                 []uint8 // palette index per value, when paletted
	// rgb holds the rows of an RGB render as PNG scanlines: a filter byte
	// (0, none) then 3 bytes per value, NaN as the colour key.
	rgb []uint8
	// key is the RGB colour of NaN values in rgb; keyOK is false when every
	// candidate key is a colour of the image (then the PNG is RGBA).
	key     [3]uint8
	keyOK   bool
	rgba    []uint8 // one RGBA row, for the RGBA form
	palette []color.NRGBA
	lookup  paletteLookup
	// idIndex is 1 + the palette index of each colour id of the ramp's
	// table met so far (colourTable.ids), 0 for the others.
	idIndex  []uint16
	line     []uint8 // one output scanline, filter byte first
	idat     idatWriter
	deflater rgbDeflater // for the RGB scanlines
}

// render colours values into s, through the ramp's table in tables when
// there is one (the same colours as ramp.color, faster).
func (s *scratch) render(values []float64, cols, rows int, c Colormap, upscale int, tables *colourTables) error {
	if err := checkRaster(len(values), cols, rows, upscale); err != nil {
		return err
	}
	if err := c.Validate(); err != nil {
		return err
	}
	s.cols, s.rows, s.upscale = cols, rows, upscale
	r := newRamp(c)
	tab := &colourTable{} // no table: every colour from r.packed
	if tables != nil {
		if t := tables.get(&r); t != nil {
			tab = t
		}
	}
	n := cols * rows
	s.idx = grow(s.idx, n)
	s.lookup.reset()
	s.palette = s.palette[:0]
	s.hasNaN = false
	// Transparent first, when present, keeps the PNG tRNS chunk one byte long.
	for _, v := range values {
		if v != v {
			s.hasNaN = true
			s.palette = append(s.palette, color.NRGBA{})
			s.lookup.transparent = 0
			break
		}
	}
	// Colour into palette indices while the colours fit; on the 257th colour
	// switch to RGB scanlines, filling the pixels done so far from the
	// palette. A colour of the table is hashed once (s.lookup), then found
	// by its id.
	s.paletted = true
	s.idIndex = grow(s.idIndex, tab.colours)
	clear(s.idIndex)
	i := 0
	for ; i < n; i++ {
		v := values[i]
		b, inTable := tab.bucket(&r, v)
		var p uint32
		switch {
		case inTable:
			if k := s.idIndex[tab.ids[b]]; k != 0 {
				s.idx[i] = uint8(k - 1)
				continue
			}
			p = tab.buckets[b]
		case v != v:
			s.idx[i] = 0 // transparent is entry 0 when there is a NaN
			continue
		default:
			p = r.packed(v)
		}
		k, ok := s.lookup.index(p, len(s.palette))
		if !ok {
			s.paletted = false
			break
		}
		if int(k) == len(s.palette) {
			s.palette = append(s.palette, unpackColour(p))
		}
		if inTable {
			s.idIndex[tab.ids[b]] = uint16(k) + 1
		}
		s.idx[i] = k
	}
	if s.paletted {
		return nil
	}
	s.renderRGB(values, i, tab, &r)
	return nil
}

// renderRGB writes the RGB scanlines of values into s.rgb: the values
// before from from the palette and indices rendered so far, the rest
// coloured. NaN values get the colour key: the first colour (0, 0, b) that
// no value has, black when it is free, so a viewer that ignores
// transparency shows the same black as for the paletted form.
func (s *scratch) renderRGB(values []float64, from int, tab *colourTable, r *ramp) {
	cols, rows := s.cols, s.rows
	stride := 1 + 3*cols
	// One byte more than the scanlines: colourRow stores 4 bytes per pixel.
	s.rgb = grow(s.rgb, stride*rows+1)
	rgb := s.rgb
	for y := range rows {
		line := rgb[y*stride : (y+1)*stride+1]
		line[0] = 0 // filter type None; the previous row's last store wrote here
		row := values[y*cols : (y+1)*cols]
		x := min(max(from-y*cols, 0), cols)
		for j, k := range s.idx[y*cols : y*cols+x] {
			p := s.palette[k] // transparent is black
			d := line[1+3*j : 4+3*j : 4+3*j]
			d[0], d[1], d[2] = p.R, p.G, p.B
		}
		colourRow(line[1+3*x:], row[x:], tab, r)
	}
	s.keyOK = false
	if !s.hasNaN {
		return
	}
	if !r.mayHaveZeroRG() {
		s.key, s.keyOK = [3]uint8{}, true // no value is black: NaN is black
		return
	}
	var used [256]bool // which colours (0, 0, b) the values have
	for i, v := range values {
		o := (i/cols)*stride + 1 + 3*(i%cols)
		if v == v && rgb[o]|rgb[o+1] == 0 {
			used[rgb[o+2]] = true
		}
	}
	for b, u := range used {
		if !u {
			s.key, s.keyOK = [3]uint8{0, 0, uint8(b)}, true
			break
		}
	}
	if !s.keyOK || s.key == [3]uint8{} {
		return // NaN is black already, or the PNG is RGBA
	}
	for i, v := range values {
		if v != v {
			o := (i/cols)*stride + 1 + 3*(i%cols)
			rgb[o], rgb[o+1], rgb[o+2] = s.key[0], s.key[1], s.key[2]
		}
	}
}

// colourRow writes the RGB colours of values into dst, NaN as black, with
// one 4-byte store per value: dst holds one byte more than 3 per value,
// and that byte is overwritten.
func colourRow(dst []uint8, values []float64, tab *colourTable, r *ramp) {
	dst = dst[:3*len(values)+1]
	for x, v := range values {
		p, ok := tab.lookup(r, v)
		if !ok {
			p = r.packed(v)
		}
		binary.LittleEndian.PutUint32(dst[3*x:3*x+4], p)
	}
}

// rgbaRow writes row y of an RGB render as RGBA into dst (4 bytes per
// value): NaN, values, transparent.
func (s *scratch) rgbaRow(dst []uint8, values []float64, y int) {
	src := s.rgb[y*(1+3*s.cols)+1:]
	for x, v := range values {
		d := dst[4*x : 4*x+4 : 4*x+4]
		if v != v {
			d[0], d[1], d[2], d[3] = 0, 0, 0, 0
			continue
		}
		d[0], d[1], d[2], d[3] = src[3*x], src[3*x+1], src[3*x+2], 0xff
	}
}

// checkRaster validates the shape of a render request.
func checkRaster(n, cols, rows, upscale int) error {
	if cols <= 0 || rows <= 0 {
		return fmt.Errorf("%w: size %dx%d", ErrInvalidRaster, cols, rows)
	}
	if upscale < 1 || upscale > MaxUpscale {
		return fmt.Errorf("%w: upscale %d outside [1, %d]", ErrInvalidRaster, upscale, MaxUpscale)
	}
	if cols > MaxPixels/rows || cols*rows > MaxPixels/(upscale*upscale) {
		return fmt.Errorf("%w: %dx%d at upscale %d exceeds %d pixels", ErrInvalidRaster, cols, rows, upscale, MaxPixels)
	}
	if n != cols*rows {
		return fmt.Errorf("%w: %d values for %dx%d", ErrInvalidRaster, n, cols, rows)
	}
	return nil
}

// upscalePix returns a new buffer with each bpp-byte pixel of src
// (cols×rows) repeated k times across and each row k times down.
func upscalePix(src []uint8, cols, rows, bpp, k int) []uint8 {
	rowLen := cols * bpp * k
	dst := make([]uint8, rowLen*rows*k)
	for y := range rows {
		line := dst[y*k*rowLen : (y*k+1)*rowLen]
		expandRow(line, src[y*cols*bpp:(y+1)*cols*bpp], bpp, k)
		for j := 1; j < k; j++ {
			copy(dst[(y*k+j)*rowLen:(y*k+j+1)*rowLen], line)
		}
	}
	return dst
}

// expandRow writes each bpp-byte pixel of src k times into dst.
func expandRow(dst, src []uint8, bpp, k int) {
	switch {
	case k == 1:
		copy(dst, src)
	case bpp == 1:
		o := 0
		for _, p := range src {
			row := dst[o : o+k : o+k]
			for j := range row {
				row[j] = p
			}
			o += k
		}
	default:
		o := 0
		for x := 0; x < len(src); x += bpp {
			px := src[x : x+bpp]
			for range k {
				o += copy(dst[o:o+bpp], px)
			}
		}
	}
}

// grow returns b resliced to n elements, reallocating only when too small.
func grow[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	return b[:n]
}

// paletteLookup maps opaque colours to palette indices with an
// open-addressing hash table: far cheaper per pixel than a Go map, and it
// never holds more than 256 entries.
type paletteLookup struct {
	keys        [1024]uint32 // packColour; 0 = empty (opaque colours pack to non-zero)
	vals        [1024]uint8
	transparent int // palette index of transparent, or -1
}

func (l *paletteLookup) reset() {
	clear(l.keys[:])
	l.transparent = -1
}

// index returns the palette index of the packed colour p (packColour),
// assigning next when p is new, and false when a new colour does not fit in
// 256 entries.
func (l *paletteLookup) index(p uint32, next int) (uint8, bool) {
	if p>>24 == 0 { // transparent
		if l.transparent < 0 {
			if next >= 256 {
				return 0, false
			}
			l.transparent = next
		}
		return uint8(l.transparent), true
	}
	h := (p * 0x9E3779B1) >> 22 // top 10 bits
	for {
		switch l.keys[h] {
		case p:
			return l.vals[h], true
		case 0:
			if next >= 256 {
				return 0, false
			}
			l.keys[h], l.vals[h] = p, uint8(next)
			return uint8(next), true
		}
		h = (h + 1) & 1023
	}
}
