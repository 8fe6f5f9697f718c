package geotiff

import (
	"encoding/binary"
	"errors"
	"math/bits"
)

// inflater decodes raw DEFLATE (RFC 1951) from one byte slice into another.
//
// It exists for speed: a block's compressed bytes are in memory and its
// decoded size is known, so the decoder reads the input 64 bits at a time,
// writes straight into the caller's buffer (which serves as the history
// window) and stops as soon as that buffer is full. Its hot loop follows
// libdeflate (see huffmanFast). On Sentinel-2 tiles it is about 2.6× as
// fast as klauspost/compress's streaming decoder, which refills byte by
// byte and copies out of a 32 KiB window, and takes about 1.1× libdeflate's
// time (BenchmarkInflateRealTiles, docs/performance.md); DEFLATE decoding
// is most of the CPU time of reading a tile. The zero value is ready to
// use; tables are rebuilt per block, so one inflater serves one goroutine.
type inflater struct {
	src    []byte
	pos    int    // next byte of src to load into bitbuf
	bitbuf uint64 // pending bits, least significant first
	nbits  uint   // valid bits in bitbuf, at most 63; bits above may hold the next input bits

	lens    [maxLitLen + maxDist]uint8
	litlen  [litlenTableSize]uint32
	dist    [distTableSize]uint32
	codelen [1 << 7]uint32

	fixedBuilt bool
	fixedLit   [litlenTableSize]uint32
	fixedDist  [distTableSize]uint32
	fixedLens  [maxLitLen]uint8 // code lengths of the fixed literal/length code
}

const (
	maxLitLen  = 288 // literal/length symbols, 286 and 287 invalid
	maxDist    = 32  // distance symbols, 30 and 31 invalid
	maxCodeLen = 15

	// litlenBits of the first-level literal/length table: 12 lets a literal
	// and the length code after it share one entry (see combineCodes).
	litlenBits = 12
	distBits   = 10 // bits of the first-level distance table
	// Second-level tables hang off first-level entries; each symbol longer
	// than the first level adds at most 2^(15−bits) entries.
	litlenTableSize = 1<<litlenBits + maxLitLen<<(maxCodeLen-litlenBits)
	distTableSize   = 1<<distBits + maxDist<<(maxCodeLen-distBits)
)

// A table entry packs, from the least significant bits up:
//   - bits 0–5: the input bits the entry consumes: the code and the extra
//     bits after it (so that one shift advances past both), both codes of
//     a two-code entry, or the first-level bits of a link;
//   - bit 6 (entryExtra): extra bits follow the code;
//   - bit 7 (entryPlusByte): a literal entry holds two literals, a length
//     entry holds the literal before the length;
//   - bits 8–11: the code length, under which the extra bits start, or the
//     index bits of a link's second-level table;
//   - bits 12–15: the kind;
//   - bits 16–31: the value: the literal byte(s) (16–23, 24–31); for a
//     length the literal before it (16–23) and the base length − 3
//     (24–31); the base distance; or the offset of a second-level table.
const (
	entryBits     = 63 // mask of the bits to consume
	entryExtra    = 1 << 6
	entryPlusByte = 1 << 7
)

const (
	kindLiteral = 1 << (12 + iota)
	kindLength  // a match length, or in the distance table a valid distance
	kindLink
	kindEnd
	kindInvalid = 0 // unused code (an incomplete code) or invalid symbol
)

var (
	errInflateData = errors.New("corrupt DEFLATE data")
	errInflateEOF  = errors.New("DEFLATE data ends early")
)

var (
	lengthBase  = [29]uint16{3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258}
	lengthExtra = [29]uint8{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
	distBase    = [30]uint16{1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577}
	distExtra   = [30]uint8{0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13}
	// codelenOrder is the order of the code length code lengths in a dynamic block header.
	codelenOrder = [19]uint8{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}
)

// inflate decodes src into dst until dst is full and returns an error when
// src is not valid DEFLATE or ends before dst is full. What follows in src
// once dst is full is not examined.
func (f *inflater) inflate(dst, src []byte) error {
	f.src, f.pos, f.bitbuf, f.nbits = src, 0, 0, 0
	defer func() { f.src = nil }()
	out := 0
	for out < len(dst) {
		// Zero bits past the end of src decode as empty fixed blocks: stop
		// at a block boundary once the input is used up.
		if f.overrun() {
			return errInflateEOF
		}
		f.refill()
		final := f.bitbuf&1 != 0
		btype := (f.bitbuf >> 1) & 3
		f.consume(3)
		var err error
		switch btype {
		case 0:
			out, err = f.stored(dst, out)
		case 1:
			f.buildFixed()
			out, err = f.huffman(dst, out, &f.fixedLit, &f.fixedDist, f.fixedLens[:])
		case 2:
			var nlit int
			if nlit, err = f.readDynamic(); err == nil {
				out, err = f.huffman(dst, out, &f.litlen, &f.dist, f.lens[:nlit])
			}
		default:
			err = errInflateData
		}
		if err != nil {
			return err
		}
		if final && out < len(dst) {
			return errInflateEOF
		}
	}
	// Output decoded from the zero bits past the end of src is not data.
	if f.overrun() {
		return errInflateEOF
	}
	return nil
}

// refill loads input bytes until at least 56 bits are pending. Past the end
// of src it loads zero bytes; overrun tells whether any was consumed.
func (f *inflater) refill() {
	if f.pos+8 <= len(f.src) {
		f.bitbuf |= binary.LittleEndian.Uint64(f.src[f.pos:]) << f.nbits
		f.pos += int(63-f.nbits) >> 3
		f.nbits |= 56
		return
	}
	for f.nbits < 56 { // and at most 63: the fast paths compute with nbits&63
		if f.pos < len(f.src) {
			f.bitbuf |= uint64(f.src[f.pos]) << f.nbits
		} else {
			// Clear whatever a fast refill left above nbits.
			f.bitbuf &= 1<<f.nbits - 1
		}
		f.pos++
		f.nbits += 8
	}
}

func (f *inflater) consume(n uint) {
	f.bitbuf >>= n
	f.nbits -= n
}

// overrun reports whether more bits were consumed than src holds.
func (f *inflater) overrun() bool {
	return 8*f.pos-int(f.nbits) > 8*len(f.src)
}

// stored copies a stored block.
func (f *inflater) stored(dst []byte, out int) (int, error) {
	// Back to a byte boundary, then read the rest straight from src.
	f.consume(f.nbits & 7)
	p := f.pos - int(f.nbits>>3)
	f.bitbuf, f.nbits = 0, 0
	if p+4 > len(f.src) {
		return out, errInflateEOF
	}
	n := int(binary.LittleEndian.Uint16(f.src[p:]))
	if ^uint16(n) != binary.LittleEndian.Uint16(f.src[p+2:]) {
		return out, errInflateData
	}
	p += 4
	m := min(n, len(dst)-out)
	if p+m > len(f.src) {
		return out, errInflateEOF
	}
	copy(dst[out:], f.src[p:p+m])
	f.pos = p + m // when m < n, dst is full and nothing more is read
	return out + m, nil
}

// huffman decodes one compressed block with the given tables and the code
// lengths of its literal/length symbols. It returns at the end of the block
// or when dst is full. The fast loop decodes while the input and output
// have room for a whole iteration, so that it needs no end checks; the
// careful loop decodes the rest of the block one symbol at a time.
func (f *inflater) huffman(dst []byte, out int, lit *[litlenTableSize]uint32, dist *[distTableSize]uint32, lens []uint8) (int, error) {
	out, end, err := f.huffmanFast(dst, out, lit, dist)
	if end || err != nil {
		return out, err
	}
	return f.huffmanCareful(dst, out, lit, dist, lens)
}

const (
	// fastInMargin is the input the fast loop needs at the top of an
	// iteration: two 8-byte refills, each advancing at most 7 bytes.
	fastInMargin = 16
	// fastOutMargin is the output it needs: two literal entries of two
	// bytes, the literal of a literal-length entry, the longest match and
	// the 8 bytes a match copy may write past its end.
	fastOutMargin = 2 + 2 + 1 + 258 + 8
)

// huffmanFast is the hot loop of the whole read path, modelled on
// libdeflate's decompress_template.h. The bit reader lives in locals and is
// refilled without a branch (8 bytes loaded, whole bytes kept) at the top
// of each iteration, which leaves at least 56 bits: two literal entries
// (2×12) and the lookup after them, or one literal entry and a length code
// with its extra bits (≤ 20: link, 3 more bits, 5 extra) fit. A second
// refill before the distance leaves enough for the distance (≤ 28) and the
// first-level lookup of the next symbol (12). The next symbol's entry e is
// looked up before the match is copied, so that its load overlaps the
// copy. It returns end true at the end of the block, and false with the
// reader state in f when the margins run out.
func (f *inflater) huffmanFast(dst []byte, out int, lit *[litlenTableSize]uint32, dist *[distTableSize]uint32) (int, bool, error) {
	// Only the low 6 bits of nbits count (it is below 64, refill never
	// leaves more): then whole entries can be subtracted from it, their
	// bits above the count borrowing into bits that do not count.
	// libdeflate does the same.
	src, pos, bitbuf, nbits := f.src, f.pos, f.bitbuf, f.nbits
	if pos > len(src)-fastInMargin || out > len(dst)-fastOutMargin {
		return out, false, nil
	}
	bitbuf |= binary.LittleEndian.Uint64(src[pos:pos+8]) << (nbits & 63)
	pos += int(^nbits&63) >> 3
	nbits |= 56
	e := lit[bitbuf&(1<<litlenBits-1)]
	for pos <= len(src)-fastInMargin && out <= len(dst)-fastOutMargin {
		// The input of both refills of this iteration: one bounds check.
		in := (*[fastInMargin]byte)(src[pos : pos+fastInMargin])
		bitbuf |= binary.LittleEndian.Uint64(in[:8]) << (nbits & 63)
		k := int(^nbits&63) >> 3
		pos += k
		nbits |= 56
		if e&kindLiteral != 0 {
			// One or two literals per entry, two entries without a
			// refill. The second byte is written either way (dst has
			// room) and counted only for a pair: no branch.
			bitbuf >>= e & 63
			nbits -= uint(e)
			binary.LittleEndian.PutUint16(dst[out:out+2], uint16(e>>16))
			out += 1 + int(e>>7&1)
			e = lit[bitbuf&(1<<litlenBits-1)]
			if e&kindLiteral != 0 {
				bitbuf >>= e & 63
				nbits -= uint(e)
				binary.LittleEndian.PutUint16(dst[out:out+2], uint16(e>>16))
				out += 1 + int(e>>7&1)
				e = lit[bitbuf&(1<<litlenBits-1)]
				continue
			}
		}
		if e&kindLength == 0 {
			// A link to a second-level table, the end of the block or an
			// invalid code.
			if e&kindLink != 0 {
				bitbuf >>= litlenBits
				nbits -= litlenBits
				i := e>>16 + uint32(bitbuf&(1<<(e>>8&15)-1))
				if i >= litlenTableSize {
					return out, true, errInflateData
				}
				e = lit[i]
				if e&kindLiteral != 0 {
					bitbuf >>= e & 63
					nbits -= uint(e)
					dst[out] = byte(e >> 16)
					out++
					e = lit[bitbuf&(1<<litlenBits-1)]
					continue
				}
			}
			if e&kindLength == 0 {
				if e&kindEnd == 0 {
					return out, true, errInflateData
				}
				f.pos, f.bitbuf, f.nbits = pos, bitbuf>>(e&63), (nbits-uint(e))&63
				return out, true, nil
			}
		}
		// A match length, maybe after a literal (the usual unit of 16-bit
		// imagery: a literal, then a short match). Without the literal the
		// byte written is overwritten by the match.
		saved := bitbuf
		n := e & entryBits
		bitbuf >>= n
		nbits -= uint(e)
		dst[out] = byte(e >> 16)
		out += int(e >> 7 & 1)
		length := int(e>>24) + 3
		if e&entryExtra != 0 {
			// Lengths of 16-bit imagery are 3 to 5 (no extra bits):
			// the branch is predicted and the extraction skipped.
			length += int(saved & (1<<n - 1) >> (e >> 8 & 15))
		}

		// At least 24 bits are left (56 − 12 − 20): the distance entry is
		// looked up before the refill, whose OR then stays off the chain
		// of dependent lookups. (The refill is unconditional: a branch on
		// the bit count mispredicts, 20 % slower.)
		d := dist[bitbuf&(1<<distBits-1)]
		bitbuf |= binary.LittleEndian.Uint64(in[k:k+8]) << (nbits & 63)
		pos += int(^nbits&63) >> 3
		nbits |= 56
		if d&kindLength == 0 {
			if d&kindLink == 0 {
				return out, true, errInflateData
			}
			bitbuf >>= distBits
			nbits -= distBits
			i := d>>16 + uint32(bitbuf&(1<<(d>>8&15)-1))
			if i >= distTableSize {
				return out, true, errInflateData
			}
			d = dist[i]
			if d&kindLength == 0 {
				return out, true, errInflateData
			}
		}
		saved = bitbuf
		n = d & entryBits
		bitbuf >>= n
		nbits -= uint(d)
		distance := int(d>>16) + int(saved&(1<<n-1)>>(d>>8&15))
		if distance > out {
			return out, true, errInflateData
		}
		e = lit[bitbuf&(1<<litlenBits-1)]

		from := out - distance
		switch {
		case distance >= 8:
			// Eight bytes at a time, each word read from bytes already
			// final. On 16-bit imagery almost all matches are 3 to 5
			// bytes long: the first word is copied without a loop test.
			// Writing past the match is harmless: those bytes come
			// later.
			*(*[8]byte)(dst[out : out+8]) = *(*[8]byte)(dst[from : from+8])
			for i := 8; i < length; i += 8 {
				*(*[8]byte)(dst[out+i : out+i+8]) = *(*[8]byte)(dst[from+i : from+i+8])
			}
		case distance == 1:
			// A run of one byte.
			v := uint64(dst[from]) * 0x0101010101010101
			for i := 0; i < length; i += 8 {
				binary.LittleEndian.PutUint64(dst[out+i:], v)
			}
		default:
			// Overlapping: the copy repeats the last distance bytes.
			for i := range length {
				dst[out+i] = dst[from+i]
			}
		}
		out += length
	}
	f.pos, f.bitbuf, f.nbits = pos, bitbuf, nbits&63
	return out, false, nil
}

// huffmanCareful decodes the rest of a block one symbol at a time, with
// every check: near the end of src (past which refill loads zero bits) or
// of dst. lens are the code lengths of the literal/length symbols.
func (f *inflater) huffmanCareful(dst []byte, out int, lit *[litlenTableSize]uint32, dist *[distTableSize]uint32, lens []uint8) (int, error) {
	for out < len(dst) {
		if f.nbits < 48 {
			f.refill()
		}
		e := lit[f.bitbuf&(1<<litlenBits-1)]
		if e&kindLink != 0 {
			f.consume(litlenBits)
			i := e>>16 + uint32(f.bitbuf&(1<<(e>>8&15)-1))
			if i >= litlenTableSize {
				return out, errInflateData
			}
			e = lit[i]
		}
		if e&entryPlusByte != 0 && out+1 == len(dst) {
			// dst fills with the first literal of a two-code entry:
			// consume only its code, so that the second code's bits are
			// not taken from past the end of src.
			f.consume(uint(lens[byte(e>>16)]))
			dst[out] = byte(e >> 16)
			return out + 1, nil
		}
		switch {
		case e&kindLiteral != 0:
			f.consume(uint(e & entryBits))
			dst[out] = byte(e >> 16)
			out++
			if e&entryPlusByte != 0 {
				dst[out] = byte(e >> 24)
				out++
			}
		case e&kindLength != 0:
			if e&entryPlusByte != 0 {
				dst[out] = byte(e >> 16)
				out++
			}
			saved, n := f.bitbuf, uint(e&entryBits)
			f.consume(n)
			length := int(e>>24) + 3 + int(saved&(1<<n-1)>>(e>>8&15))
			if f.nbits < 32 {
				f.refill()
			}
			d := dist[f.bitbuf&(1<<distBits-1)]
			if d&kindLink != 0 {
				f.consume(distBits)
				i := d>>16 + uint32(f.bitbuf&(1<<(d>>8&15)-1))
				if i >= distTableSize {
					return out, errInflateData
				}
				d = dist[i]
			}
			if d&kindLength == 0 {
				return out, errInflateData
			}
			saved, n = f.bitbuf, uint(d&entryBits)
			f.consume(n)
			distance := int(d>>16) + int(saved&(1<<n-1)>>(d>>8&15))
			if distance > out {
				return out, errInflateData
			}
			length = min(length, len(dst)-out)
			for i := range length {
				dst[out+i] = dst[out-distance+i]
			}
			out += length
		case e&kindEnd != 0:
			f.consume(uint(e & entryBits))
			return out, nil
		default:
			return out, errInflateData
		}
	}
	return out, nil
}

// buildFixed builds the tables of the fixed Huffman code once.
func (f *inflater) buildFixed() {
	if f.fixedBuilt {
		return
	}
	var lens [maxLitLen + maxDist]uint8
	for i := range maxLitLen {
		switch {
		case i < 144:
			lens[i] = 8
		case i < 256:
			lens[i] = 9
		case i < 280:
			lens[i] = 7
		default:
			lens[i] = 8
		}
	}
	for i := range maxDist {
		lens[maxLitLen+i] = 5
	}
	copy(f.fixedLens[:], lens[:maxLitLen])
	// The fixed code is complete and valid: errors cannot happen.
	_ = buildTable(f.fixedLit[:], litlenBits, lens[:maxLitLen], litlenEntry)
	combineCodes(f.fixedLit[:])
	_ = buildTable(f.fixedDist[:], distBits, lens[maxLitLen:], distEntry)
	f.fixedBuilt = true
}

// readDynamic reads a dynamic block's code lengths and builds f.litlen and f.dist.
func (f *inflater) readDynamic() (nlit int, err error) {
	f.refill()
	nlit = int(f.bitbuf&31) + 257
	ndist := int(f.bitbuf>>5&31) + 1
	nclen := int(f.bitbuf>>10&15) + 4
	f.consume(14)
	if nlit > 286 || ndist > 30 {
		return 0, errInflateData
	}
	var clens [19]uint8
	for i := range nclen {
		if f.nbits < 3 {
			f.refill()
		}
		clens[codelenOrder[i]] = uint8(f.bitbuf & 7)
		f.consume(3)
	}
	if err := buildTable(f.codelen[:], 7, clens[:], codelenEntry); err != nil {
		return 0, err
	}
	lens := f.lens[:nlit+ndist]
	for i := 0; i < len(lens); {
		if f.nbits < 7+7 {
			f.refill()
		}
		e := f.codelen[f.bitbuf&127]
		if e&kindLiteral == 0 {
			return 0, errInflateData
		}
		f.consume(uint(e & entryBits))
		sym := e >> 16
		if sym < 16 {
			lens[i] = uint8(sym)
			i++
			continue
		}
		var rep int
		var v uint8
		switch sym {
		case 16:
			if i == 0 {
				return 0, errInflateData
			}
			rep, v = 3+int(f.bitbuf&3), lens[i-1]
			f.consume(2)
		case 17:
			rep = 3 + int(f.bitbuf&7)
			f.consume(3)
		default:
			rep = 11 + int(f.bitbuf&127)
			f.consume(7)
		}
		if i+rep > len(lens) {
			return 0, errInflateData
		}
		for range rep {
			lens[i] = v
			i++
		}
	}
	if lens[256] == 0 { // no end-of-block code
		return 0, errInflateData
	}
	if err := buildTable(f.litlen[:], litlenBits, lens[:nlit], litlenEntry); err != nil {
		return 0, err
	}
	combineCodes(f.litlen[:])
	return nlit, buildTable(f.dist[:], distBits, lens[nlit:], distEntry)
}

// combineCodes lets one first-level lookup decode two codes: each literal
// entry whose next code fits in the remaining index bits becomes a
// two-literal entry when that code is a literal too, and a literal-length
// entry when it is a match length (whose extra bits, read from the bit
// buffer, need not fit). 16-bit imagery with horizontal differencing mostly
// decodes as a literal of about 9 bits then a length of 2 or 3 bits and a
// distance: a third fewer dependent lookups.
func combineCodes(table []uint32) {
	// Descending: entry i>>l (≤ i) is read before it is itself combined.
	for i := 1<<litlenBits - 1; i >= 0; i-- {
		e := table[i]
		l := e & entryBits
		if e&kindLiteral == 0 || l >= litlenBits {
			continue
		}
		next := table[uint32(i)>>l]
		switch {
		case next&kindLiteral != 0 && next&entryPlusByte == 0 && l+next&entryBits <= litlenBits:
			table[i] = e&0xff0000 | next>>16<<24 | kindLiteral | entryPlusByte | (l + next&entryBits)
		case next&kindLength != 0 && next&entryPlusByte == 0 && l+next>>8&15 <= litlenBits:
			table[i] = e&0xff0000 | next&0xff000000 | kindLength | entryPlusByte |
				next&entryExtra | (l+next>>8&15)<<8 | (l + next&entryBits)
		}
	}
}

// litlenEntry is the table entry of literal/length symbol sym, without its code length.
func litlenEntry(sym int) uint32 {
	switch {
	case sym < 256:
		return uint32(sym)<<16 | kindLiteral
	case sym == 256:
		return kindEnd
	case sym < 286:
		i := sym - 257
		e := uint32(lengthBase[i]-3)<<24 | kindLength | uint32(lengthExtra[i])
		if lengthExtra[i] != 0 {
			e |= entryExtra
		}
		return e
	}
	return kindInvalid
}

// distEntry is the table entry of distance symbol sym (kindLength marks a
// valid one), without its code length.
func distEntry(sym int) uint32 {
	if sym < 30 {
		return uint32(distBase[sym])<<16 | kindLength | uint32(distExtra[sym])
	}
	return kindInvalid
}

// codelenEntry is the table entry of code length symbol sym, without its code length.
func codelenEntry(sym int) uint32 { return uint32(sym)<<16 | kindLiteral }

// buildTable fills table with the canonical Huffman code of lens (RFC 1951
// §3.2.2): a first level indexed by the next rootBits input bits and, for
// longer codes, second-level tables linked from it. Entries of unused codes
// (an incomplete code, which DEFLATE allows) stay kindInvalid; an
// over-subscribed code is an error.
func buildTable(table []uint32, rootBits uint, lens []uint8, entry func(int) uint32) error {
	var count [maxCodeLen + 1]int
	for _, l := range lens {
		count[l]++
	}
	count[0] = 0
	var next [maxCodeLen + 2]uint32
	left := 1
	code := uint32(0)
	for l := 1; l <= maxCodeLen; l++ {
		left = 2*left - count[l]
		if left < 0 {
			return errInflateData
		}
		code = (code + uint32(count[l-1])) << 1
		next[l] = code
	}
	// Codes are assigned in symbol order within each length; DEFLATE reads
	// them bit-reversed.
	var codes [maxLitLen + maxDist]uint32
	for sym, l := range lens {
		if l != 0 {
			codes[sym] = reverse(next[l], uint(l))
			next[l]++
		}
	}
	root := 1 << rootBits
	clear(table[:root])
	// Longest code per first-level slot, to size the second-level tables.
	var longest [1 << litlenBits]uint8
	for sym, l := range lens {
		if uint(l) > rootBits {
			slot := codes[sym] & uint32(root-1)
			longest[slot] = max(longest[slot], l)
		}
	}
	end := uint32(root)
	for slot := range root {
		if l := longest[slot]; l != 0 {
			subBits := uint32(l) - uint32(rootBits)
			table[slot] = end<<16 | kindLink | subBits<<8 | uint32(rootBits)
			clear(table[end : end+1<<subBits])
			end += 1 << subBits
		}
	}
	for sym, l := range lens {
		if l == 0 {
			continue
		}
		c := codes[sym]
		// The entry consumes the code and its extra bits (which entry
		// put in the low bits), and the extra bits start past the code.
		e := entry(sym)
		if uint(l) <= rootBits {
			e += uint32(l) | uint32(l)<<8
			for i := c; i < uint32(root); i += 1 << l {
				table[i] = e
			}
			continue
		}
		link := table[c&uint32(root-1)]
		base, subBits := link>>16, link>>8&15
		sub := l - uint8(rootBits)
		e += uint32(sub) | uint32(sub)<<8
		for i := c >> rootBits; i < 1<<subBits; i += 1 << sub {
			table[base+i] = e
		}
	}
	return nil
}

// reverse reverses the low n bits of c: DEFLATE sends Huffman codes most
// significant bit first into a least-significant-first bit stream.
func reverse(c uint32, n uint) uint32 {
	return uint32(bits.Reverse16(uint16(c))) >> (16 - n)
}
