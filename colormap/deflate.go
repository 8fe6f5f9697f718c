package colormap

import (
	"encoding/binary"
	"hash/adler32"
	"io"
	"math/bits"
	"slices"
)

// rgbDeflater writes the zlib stream of RGB scanlines (a filter byte, then
// 3 bytes per pixel). A field image's colours are few (hundreds) but noisy
// from pixel to pixel, so most of what deflate can find are single pixels
// repeated somewhere in the last 32 KiB: 3-byte matches. The matchers of
// klauspost/compress and compress/flate need 4 bytes and look at every
// byte; this one looks only where a pixel starts, at the pixel before and
// at the last place the same colour started (a hash of its 3 bytes), takes
// the first that has the colour, greedily, and ends matches where a pixel
// starts. It writes one dynamic Huffman block per rgbBlockBytes of input.
// On noisy field images it is a third faster than klauspost's level 1 and
// its output 23–29 % smaller (BenchmarkEncodeFieldImages).
type rgbDeflater struct {
	head     [1 << rgbHashBits]int32 // 1 + where each hashed colour last started, 0 = nowhere
	tokens   []uint32                // see tokenize
	litFreq  [286]int32              // literal/length symbols (256 ends the block)
	distFreq [30]int32
	lit      huffmanCode
	dist     huffmanCode
	w        bitWriter
}

// bitWriter appends bits to out, the first in the lowest bit of a byte.
// Every write stores 8 bytes, so out must have 8 bytes of room beyond what
// is written (reserve).
type bitWriter struct {
	acc uint64 // pending bits, the first lowest
	n   uint   // pending bits in acc, < 8 between writes
	out []uint8
}

// reserve makes room for n more bytes of output.
func (w *bitWriter) reserve(n int) { w.out = slices.Grow(w.out, n+8) }

// write appends the n (≤ 56) lowest bits of b, without a branch: the
// pending bits are stored whole, and the complete bytes among them kept.
func (w *bitWriter) write(b uint64, n uint) {
	w.acc |= b << w.n
	w.n += n
	o := len(w.out)
	binary.LittleEndian.PutUint64(w.out[o:o+8], w.acc)
	k := w.n >> 3
	w.out = w.out[:o+int(k)]
	w.acc >>= k * 8 // a shift by 64 gives 0
	w.n &= 7
}

// flush writes the pending bits, the last byte padded with zeros.
func (w *bitWriter) flush() {
	if w.n > 0 {
		w.out = append(w.out, uint8(w.acc))
	}
	w.acc, w.n = 0, 0
}

const (
	rgbHashBits   = 13
	rgbBlockBytes = 1 << 17
	windowSize    = 1 << 15
	maxMatch      = 258
	matchToken    = 1 << 31
)

// huffmanCode is a canonical Huffman code: per symbol its length (0:
// unused) and its code with the bits reversed (deflate writes codes from
// the highest bit, but the bit writer from the lowest).
type huffmanCode struct {
	lengths [286]uint8
	codes   [286]uint16
}

// zlib writes to w the zlib stream (RFC 1950, deflate RFC 1951) of src,
// which holds scanlines of stride bytes, one block's output at a time.
func (d *rgbDeflater) zlib(w io.Writer, src []uint8, stride int) error {
	d.w = bitWriter{out: append(d.w.out[:0], 0x78, 0x01)} // deflate, 32 KiB window, no dictionary
	clear(d.head[:])
	for start := 0; ; start += rgbBlockBytes {
		end := min(start+rgbBlockBytes, len(src))
		d.tokenize(src, start, end, stride)
		final := end == len(src)
		d.writeBlock(final)
		if final {
			d.w.flush()
			d.w.out = binary.BigEndian.AppendUint32(d.w.out, adler32.Checksum(src))
		}
		// The complete bytes; a partial one stays in d.w.acc.
		if _, err := w.Write(d.w.out); err != nil {
			return err
		}
		d.w.out = d.w.out[:0]
		if final {
			return nil
		}
	}
}

// tokenize finds the literals and matches of src[start:end] (matches may
// reach back before start, not beyond end) into d.tokens and counts their
// symbols. A token is 1 to 3 literal bytes (their count<<24 | the bytes,
// the first lowest) or a match (matchToken | distance symbol<<24 |
// (length−3)<<16 | distance−1).
func (d *rgbDeflater) tokenize(src []uint8, start, end, stride int) {
	// Locals, not d's fields: the loop keeps them in registers and on
	// its stack.
	tokens := d.tokens[:0]
	var litFreq [286]int32
	var distFreq [30]int32
	var pixelMatches int32
	rowStart := start - start%stride
	i := start
	for i < end {
		for i >= rowStart+stride {
			rowStart += stride
		}
		off := i - rowStart - 1 // the byte's place in its row's pixels
		if off < 0 || off%3 != 0 || i+8 > end {
			// Up to the next pixel's start (1 or 2 bytes; 1 at the filter
			// byte), or the last bytes, as literals.
			k := 1
			if off >= 0 {
				k = min(3-off%3, end-i, 2)
			}
			t := uint32(k) << 24
			for j := range k {
				t |= uint32(src[i+j]) << (8 * j)
				litFreq[src[i+j]]++
			}
			tokens = append(tokens, t)
			i += k
			continue
		}
		// The pixel and the 5 bytes after it, against the same bytes at the
		// pixel before and at the last place of the pixel's colour: a match
		// starts with the same colour, and most are a pixel or two long.
		cur := binary.LittleEndian.Uint64(src[i:])
		colour := uint32(cur) & 0xffffff
		h := (colour * 0x9E3779B1) >> (32 - rgbHashBits)
		cand := int(d.head[h]) - 1
		d.head[h] = int32(i + 1)
		var diff uint64
		dist := 0
		if i >= 3 {
			if diff = cur ^ binary.LittleEndian.Uint64(src[i-3:]); diff&0xffffff == 0 {
				dist = 3
			}
		}
		if dist == 0 && cand >= 0 && i-cand <= windowSize {
			if diff = cur ^ binary.LittleEndian.Uint64(src[cand:]); diff&0xffffff == 0 {
				dist = i - cand
			}
		}
		if dist == 0 {
			// A new colour here: the pixel as three literals.
			tokens = append(tokens, 3<<24|colour)
			litFreq[uint8(colour)]++
			litFreq[uint8(colour>>8)]++
			litFreq[uint8(colour>>16)]++
			i += 3
			continue
		}
		dsym, _, _ := distanceSymbol(dist)
		distFreq[dsym]++
		length := bits.TrailingZeros64(diff) >> 3
		if length < 6 {
			// One pixel, the usual match: taken as 3 bytes, so that the
			// next pixel's place does not wait for this comparison (the
			// loop is bound by that chain of loads otherwise).
			tokens = append(tokens, matchToken|uint32(dsym)<<24|uint32(dist-1))
			pixelMatches++
			i += 3
			continue
		}
		if diff == 0 {
			limit := min(maxMatch, end-i)
			length = 8 + matchLength(src[i+8:i+limit], src[i+8-dist:])
		}
		if i+length < rowStart+stride {
			// Within the row: end where a pixel starts, for the next
			// pixel's colour to be looked up (a byte or two of the next
			// pixel would otherwise go as literals).
			length -= length % 3
		}
		tokens = append(tokens, matchToken|uint32(dsym)<<24|uint32(length-3)<<16|uint32(dist-1))
		sym, _, _ := lengthSymbol(length)
		litFreq[sym]++
		i += length
	}
	litFreq[257] += pixelMatches // length 3
	d.tokens, d.litFreq, d.distFreq = tokens, litFreq, distFreq
}

// matchLength is the length of the common prefix of a and b (len(a) at
// most, and len(b) ≥ len(a)).
func matchLength(a, b []uint8) int {
	n := 0
	for len(a)-n >= 8 {
		x := binary.LittleEndian.Uint64(a[n:]) ^ binary.LittleEndian.Uint64(b[n:])
		if x != 0 {
			return n + bits.TrailingZeros64(x)>>3
		}
		n += 8
	}
	for n < len(a) && a[n] == b[n] {
		n++
	}
	return n
}

// lengthSymbol returns the literal/length symbol of a match length (3 to
// 258), its extra bits' count and value (RFC 1951 3.2.5).
func lengthSymbol(length int) (sym int, nextra uint, extra uint32) {
	x := uint32(length - 3)
	switch {
	case x < 8:
		return 257 + int(x), 0, 0
	case x == 255:
		return 285, 0, 0
	}
	e := uint(bits.Len32(x)) - 3
	return 261 + 4*int(e) + int(x>>e&3), e, x & (1<<e - 1)
}

// distanceSymbol returns the distance symbol of a distance (1 to 32768),
// its extra bits' count and value.
func distanceSymbol(dist int) (sym int, nextra uint, extra uint32) {
	y := uint32(dist - 1)
	if y < 4 {
		return int(y), 0, 0
	}
	e := uint(bits.Len32(y)) - 2
	return 2*int(e) + int(y>>e&1) + 2, e, y & (1<<e - 1)
}

// writeBlock writes d.tokens as one dynamic Huffman block.
func (d *rgbDeflater) writeBlock(final bool) {
	d.litFreq[256] = 1                 // end of block
	if countUsed(d.distFreq[:]) == 0 { // only literals: a distance code all the same
		d.distFreq[0] = 1
	}
	d.lit.build(d.litFreq[:], 15)
	d.dist.build(d.distFreq[:], 15)
	nlit := lastUsed(d.lit.lengths[:286], 257)
	ndist := lastUsed(d.dist.lengths[:30], 1)

	// The code lengths of both codes, run-length coded (RFC 1951 3.2.7):
	// symbols 0–15 a length, 16 the previous length 3–6 times, 17 zero
	// 3–10 times, 18 zero 11–138 times; each with its extra bits.
	var lengths [286 + 30]uint8
	copy(lengths[:], d.lit.lengths[:nlit])
	copy(lengths[nlit:], d.dist.lengths[:ndist])
	var rle [286 + 30]uint16 // symbol | extra<<8
	var clFreq [19]int32
	n := 0
	all := lengths[:nlit+ndist]
	for i := 0; i < len(all); {
		l := all[i]
		run := 1
		for i+run < len(all) && all[i+run] == l {
			run++
		}
		i += run
		if l == 0 {
			for run >= 11 {
				r := min(run, 138)
				rle[n], n, run = 18|uint16(r-11)<<8, n+1, run-r
				clFreq[18]++
			}
			if run >= 3 {
				rle[n], n, run = 17|uint16(run-3)<<8, n+1, 0
				clFreq[17]++
			}
		} else {
			rle[n], n, run = uint16(l), n+1, run-1
			clFreq[l]++
			for run >= 3 {
				r := min(run, 6)
				rle[n], n, run = 16|uint16(r-3)<<8, n+1, run-r
				clFreq[16]++
			}
		}
		for ; run > 0; run-- {
			rle[n], n = uint16(l), n+1
			clFreq[l]++
		}
	}
	var cl huffmanCode
	cl.build(clFreq[:], 7)
	order := [19]uint8{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}
	nclen := 19
	for nclen > 4 && cl.lengths[order[nclen-1]] == 0 {
		nclen--
	}

	var bfinal uint64
	if final {
		bfinal = 1
	}
	// The writer in a local variable, and room for the block's worst case
	// (48 bits a token), keep the loop below in registers.
	w := d.w
	w.reserve(6*len(d.tokens) + 512)
	w.write(bfinal|2<<1, 3) // BFINAL, BTYPE 2: dynamic Huffman codes
	w.write(uint64(nlit-257)|uint64(ndist-1)<<5|uint64(nclen-4)<<10, 14)
	for _, s := range order[:nclen] {
		w.write(uint64(cl.lengths[s]), 3)
	}
	for _, r := range rle[:n] {
		s := r & 0xff
		w.write(uint64(cl.codes[s]), uint(cl.lengths[s]))
		switch s {
		case 16:
			w.write(uint64(r>>8), 2)
		case 17:
			w.write(uint64(r>>8), 3)
		case 18:
			w.write(uint64(r>>8), 7)
		}
	}

	// The codes of the tokens: a match's length code and extra bits for
	// each length, the distance codes with their count of extra bits.
	lit := &d.lit
	var lengthCode [256]uint32
	var lengthBits [256]uint8
	for x := range lengthCode {
		sym, ne, extra := lengthSymbol(x + 3)
		lengthCode[x] = uint32(lit.codes[sym]) | extra<<lit.lengths[sym]
		lengthBits[x] = lit.lengths[sym] + uint8(ne)
	}
	var distCode [30]uint32
	var distLen, distExtra [30]uint8
	for s := range distCode {
		distCode[s], distLen[s] = uint32(d.dist.codes[s]), d.dist.lengths[s]
		distExtra[s] = uint8(max(s-2, 0) / 2)
	}
	for _, t := range d.tokens {
		if t&matchToken == 0 {
			// One to three literals in one write (≤ 45 bits).
			b0, b1, b2 := uint8(t), uint8(t>>8), uint8(t>>16)
			code, n := uint64(lit.codes[b0]), uint(lit.lengths[b0])
			if t>>24 >= 2 {
				code |= uint64(lit.codes[b1]) << n
				n += uint(lit.lengths[b1])
			}
			if t>>24 == 3 {
				code |= uint64(lit.codes[b2]) << n
				n += uint(lit.lengths[b2])
			}
			w.write(code, n)
			continue
		}
		// A match in one write (≤ 48 bits).
		x, ds := t>>16&0xff, t>>24&0x1f
		ln := uint(lengthBits[x])
		dextra := t & 0xffff & (1<<distExtra[ds] - 1)
		w.write(uint64(lengthCode[x])|uint64(distCode[ds]|dextra<<distLen[ds])<<ln, ln+uint(distLen[ds])+uint(distExtra[ds]))
	}
	w.write(uint64(lit.codes[256]), uint(lit.lengths[256]))
	d.w = w
}

func countUsed(freq []int32) int {
	n := 0
	for _, f := range freq {
		if f != 0 {
			n++
		}
	}
	return n
}

// lastUsed is 1 + the last symbol with a non-zero length, at least least.
func lastUsed(lengths []uint8, least int) int {
	n := len(lengths)
	for n > least && lengths[n-1] == 0 {
		n--
	}
	return n
}

// build makes the code of symbols with the given frequencies, no code
// longer than maxBits: minimum-redundancy lengths (Moffat and Katajainen's
// in-place algorithm over the frequencies sorted), the longest ones cut to
// maxBits and the code made complete again (as miniz does), then canonical
// codes (RFC 1951 3.2.2). Every symbol with a non-zero frequency gets a
// code, and the code is complete (a lone symbol gets a 1-bit code and a
// spare).
func (c *huffmanCode) build(freq []int32, maxBits int) {
	n := len(freq)
	clear(c.lengths[:n])
	var sorted [286]uint64 // frequency<<16 | symbol, ascending
	used := 0
	for s, f := range freq {
		if f != 0 {
			sorted[used] = uint64(f)<<16 | uint64(s)
			used++
		}
	}
	syms := sorted[:used]
	switch used {
	case 0:
		return
	case 1:
		// zlib refuses an incomplete code: a second 1-bit code, never used.
		s := int(syms[0] & 0xffff)
		c.lengths[s], c.lengths[1-min(s, 1)] = 1, 1
		c.assign(n, maxBits)
		return
	}
	slices.Sort(syms)

	// Moffat–Katajainen: a[i] ends as the code length of the i-th least
	// frequent symbol.
	var work [286]int32
	a := work[:used]
	for i, s := range syms {
		a[i] = int32(s >> 16)
	}
	a[0] += a[1]
	root, leaf := 0, 2
	for next := 1; next < used-1; next++ {
		if leaf >= used || a[root] < a[leaf] {
			a[next] = a[root]
			a[root] = int32(next)
			root++
		} else {
			a[next] = a[leaf]
			leaf++
		}
		if leaf >= used || (root < next && a[root] < a[leaf]) {
			a[next] += a[root]
			a[root] = int32(next)
			root++
		} else {
			a[next] += a[leaf]
			leaf++
		}
	}
	a[used-2] = 0
	for next := used - 3; next >= 0; next-- {
		a[next] = a[a[next]] + 1
	}
	avail, usedNodes, depth := 1, 0, int32(0)
	root, next := used-2, used-1
	for avail > 0 {
		for root >= 0 && a[root] == depth {
			usedNodes++
			root--
		}
		for avail > usedNodes {
			a[next] = depth
			next--
			avail--
		}
		avail, depth, usedNodes = 2*usedNodes, depth+1, 0
	}

	// Count the codes of each length, the longest cut to maxBits, then
	// lengthen shorter codes until the code is complete again.
	var count [33]int
	for _, l := range a {
		count[min(int(l), 32)]++
	}
	for l := maxBits + 1; l <= 32; l++ {
		count[maxBits] += count[l]
		count[l] = 0
	}
	total := 0
	for l := 1; l <= maxBits; l++ {
		total += count[l] << (maxBits - l)
	}
	for total > 1<<maxBits {
		count[maxBits]--
		for l := maxBits - 1; l > 0; l-- {
			if count[l] != 0 {
				count[l]--
				count[l+1] += 2
				break
			}
		}
		total--
	}
	// The most frequent symbols get the shortest codes.
	k := used - 1
	for l := 1; l <= maxBits; l++ {
		for range count[l] {
			c.lengths[syms[k]&0xffff] = uint8(l)
			k--
		}
	}
	c.assign(n, maxBits)
}

// assign gives the first n symbols their canonical codes from their lengths.
func (c *huffmanCode) assign(n, maxBits int) {
	var count [16]uint16
	for _, l := range c.lengths[:n] {
		count[l]++
	}
	count[0] = 0
	var next [16]uint16
	code := uint16(0)
	for l := 1; l <= maxBits; l++ {
		code = (code + count[l-1]) << 1
		next[l] = code
	}
	for s, l := range c.lengths[:n] {
		if l != 0 {
			c.codes[s] = bits.Reverse16(next[l]) >> (16 - l)
			next[l]++
		}
	}
}
