package colormap

import (
	"encoding/binary"
	"hash/crc32"
	"io"

	"github.com/klauspost/compress/zlib"
)

// The PNG writer below exists for speed: compared with image/png it skips
// row filtering, deflates RGB field images with a matcher made for their
// scanlines (rgbDeflater) and the others with klauspost/compress, writes
// RGB with a colour key instead of RGBA when it can, and upscales row by
// row without building the upscaled image.

const (
	pngSignature = "\x89PNG\r\n\x1a\n"
	// idatMax is the largest IDAT payload written at once.
	idatMax = 1 << 16
	// PNG colour types.
	ctRGB      = 2
	ctPaletted = 3
	ctRGBA     = 6
)

// writePNG writes the rendered raster in s to w. *zw is a reusable zlib
// writer of the given level, created when nil.
func (s *scratch) writePNG(w io.Writer, values []float64, zw **zlib.Writer, level int) error {
	width, height := s.cols*s.upscale, s.rows*s.upscale
	var ctype uint8
	useKey := false
	switch {
	case s.paletted:
		ctype = ctPaletted
	case !s.hasNaN:
		ctype = ctRGB
	case s.keyOK:
		ctype, useKey = ctRGB, true
	default:
		ctype = ctRGBA
	}

	// Signature, IHDR, PLTE and tRNS in one write.
	hdr := append(s.line[:0], pngSignature...)
	var ihdr [13]uint8
	binary.BigEndian.PutUint32(ihdr[0:], uint32(width))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(height))
	ihdr[8], ihdr[9] = 8, ctype // bit depth 8; compression, filter, interlace 0
	hdr = appendChunk(hdr, "IHDR", ihdr[:])
	switch {
	case ctype == ctPaletted:
		start := len(hdr)
		hdr = appendChunk(hdr, "PLTE", make([]uint8, 3*len(s.palette)))
		plte := hdr[start+8 : start+8+3*len(s.palette)]
		for i, p := range s.palette {
			plte[3*i], plte[3*i+1], plte[3*i+2] = p.R, p.G, p.B
		}
		binary.BigEndian.PutUint32(hdr[len(hdr)-4:], crc32.ChecksumIEEE(hdr[start+4:len(hdr)-4]))
		if s.hasNaN { // transparent is entry 0, all others opaque
			hdr = appendChunk(hdr, "tRNS", []uint8{0})
		}
	case useKey:
		hdr = appendChunk(hdr, "tRNS", []uint8{0, s.key[0], 0, s.key[1], 0, s.key[2]})
	}
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	s.line = hdr[:0] // keep the buffer for the scanlines

	s.idat.reset(w)
	if ctype == ctRGB && s.upscale == 1 && level == zlib.BestSpeed {
		// The usual field image: its scanlines as they are, deflated by
		// the matcher made for them.
		if err := s.deflater.zlib(&s.idat, s.rgb[:(1+3*s.cols)*s.rows], 1+3*s.cols); err != nil {
			return err
		}
	} else if err := s.deflate(zw, level, ctype, values); err != nil {
		return err
	}
	if err := s.idat.flush(); err != nil {
		return err
	}
	_, err := w.Write(appendChunk(s.line[:0], "IEND", nil))
	return err
}

// deflate writes the zlib stream of the image's scanlines into s.idat
// through zw, a reusable writer of the given level, created when nil.
func (s *scratch) deflate(zw **zlib.Writer, level int, ctype uint8, values []float64) error {
	if *zw == nil {
		z, err := zlib.NewWriterLevel(&s.idat, level)
		if err != nil {
			return err
		}
		*zw = z
	} else {
		(*zw).Reset(&s.idat)
	}
	if err := s.writeRows(*zw, ctype, values); err != nil {
		return err
	}
	return (*zw).Close()
}

// writeRows deflates the scanlines of the image into zw: the RGB rows
// without upscale in one write (they are scanlines already), the others one
// scanline at a time.
func (s *scratch) writeRows(zw *zlib.Writer, ctype uint8, values []float64) error {
	if ctype == ctRGB && s.upscale == 1 {
		_, err := zw.Write(s.rgb[:(1+3*s.cols)*s.rows])
		return err
	}
	bpp := 4
	switch ctype {
	case ctPaletted:
		bpp = 1
	case ctRGB:
		bpp = 3
	}
	s.line = grow(s.line, 1+s.cols*s.upscale*bpp)
	s.line[0] = 0 // filter type None
	for y := range s.rows {
		var src []uint8
		switch ctype {
		case ctPaletted:
			src = s.idx[y*s.cols : (y+1)*s.cols]
		case ctRGB:
			src = s.rgb[y*(1+3*s.cols)+1 : (y+1)*(1+3*s.cols)]
		default:
			s.rgba = grow(s.rgba, 4*s.cols)
			s.rgbaRow(s.rgba, values[y*s.cols:(y+1)*s.cols], y)
			src = s.rgba
		}
		expandRow(s.line[1:], src, bpp, s.upscale)
		for range s.upscale {
			if _, err := zw.Write(s.line); err != nil {
				return err
			}
		}
	}
	return nil
}

// appendChunk appends one PNG chunk (length, type, data, CRC) to b.
func appendChunk(b []uint8, typ string, data []uint8) []uint8 {
	b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
	start := len(b)
	b = append(b, typ...)
	b = append(b, data...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b[start:]))
}

// idatWriter cuts the zlib stream into IDAT chunks of at most idatMax bytes.
// buf holds the pending chunk: 8 header bytes (length, "IDAT") then data.
type idatWriter struct {
	w   io.Writer
	buf []uint8
	err error
}

func (d *idatWriter) reset(w io.Writer) {
	d.w, d.buf, d.err = w, d.buf[:0], nil
}

func (d *idatWriter) Write(p []uint8) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if d.err != nil {
			return 0, d.err
		}
		if len(d.buf) == 0 {
			d.buf = append(d.buf, 0, 0, 0, 0, 'I', 'D', 'A', 'T')
		}
		m := min(len(p), idatMax-(len(d.buf)-8))
		d.buf = append(d.buf, p[:m]...)
		p = p[m:]
		if len(d.buf)-8 == idatMax {
			d.err = d.flush()
		}
	}
	return n, d.err
}

// flush writes the pending chunk, if any.
func (d *idatWriter) flush() error {
	if d.err != nil || len(d.buf) <= 8 {
		return d.err
	}
	binary.BigEndian.PutUint32(d.buf, uint32(len(d.buf)-8))
	d.buf = binary.BigEndian.AppendUint32(d.buf, crc32.ChecksumIEEE(d.buf[4:]))
	_, err := d.w.Write(d.buf)
	d.buf = d.buf[:0]
	return err
}
