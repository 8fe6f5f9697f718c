package colormap

import (
	"encoding/binary"
	"hash/crc32"
	"io"

	"github.com/klauspost/compress/zlib"
)

// The PNG writer below exists for speed: compared with image/png it skips
// row filtering, deflates with klauspost/compress, writes RGB with a colour
// key instead of RGBA when it can, and upscales row by row without building
// the upscaled image.

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
func (s *scratch) writePNG(w io.Writer, zw **zlib.Writer, level int) error {
	width, height := s.cols*s.upscale, s.rows*s.upscale
	var ctype uint8
	var src []uint8
	sbpp, dbpp := 1, 1
	var key [3]uint8
	useKey := false
	switch {
	case s.paletted:
		ctype, src = ctPaletted, s.idx
	case !s.hasNaN:
		ctype, src, sbpp, dbpp = ctRGB, s.rgba, 4, 3
	default:
		src, sbpp = s.rgba, 4
		if key, useKey = s.freeKey(); useKey {
			ctype, dbpp = ctRGB, 3
			for i := 0; i < len(src); i += 4 {
				if src[i+3] == 0 {
					src[i], src[i+1], src[i+2] = key[0], key[1], key[2]
				}
			}
		} else {
			ctype, dbpp = ctRGBA, 4
		}
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
		hdr = appendChunk(hdr, "tRNS", []uint8{0, key[0], 0, key[1], 0, key[2]})
	}
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	s.line = hdr[:0] // keep the buffer for the scanlines

	s.idat.reset(w)
	if *zw == nil {
		z, err := zlib.NewWriterLevel(&s.idat, level)
		if err != nil {
			return err
		}
		*zw = z
	} else {
		(*zw).Reset(&s.idat)
	}
	rowLen := 1 + width*dbpp
	s.line = grow(s.line, rowLen)
	s.line[0] = 0 // filter type None
	srcRow := s.cols * sbpp
	for y := range s.rows {
		expandRow(s.line[1:], src[y*srcRow:(y+1)*srcRow], sbpp, dbpp, s.upscale)
		for range s.upscale {
			if _, err := (*zw).Write(s.line); err != nil {
				return err
			}
		}
	}
	if err := (*zw).Close(); err != nil {
		return err
	}
	if err := s.idat.flush(); err != nil {
		return err
	}
	_, err := w.Write(appendChunk(s.line[:0], "IEND", nil))
	return err
}

// freeKey finds an RGB colour absent from s.rgba to serve as the
// transparent colour key: the first free colour of the family (0, 0, b),
// black when it is free, so a viewer that ignores transparency shows the
// same black as for the paletted form. It fails only when all 256 are used.
func (s *scratch) freeKey() ([3]uint8, bool) {
	var used [256]bool
	for i := 0; i < len(s.rgba); i += 4 {
		if s.rgba[i] == 0 && s.rgba[i+1] == 0 && s.rgba[i+3] != 0 {
			used[s.rgba[i+2]] = true
		}
	}
	for b, u := range used {
		if !u {
			return [3]uint8{0, 0, uint8(b)}, true
		}
	}
	return [3]uint8{}, false
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
