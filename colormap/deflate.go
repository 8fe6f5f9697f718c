package colormap

import (
	"encoding/binary"
	"hash/adler32"
	"math/bits"
	"slices"
)

// rgbDeflater writes the zlib stream of RGB scanlines (a filter byte, then
// 3 bytes per pixel). A field image's colours are few (hundreds) but noisy
// from pixel to pixel, so most of what deflate can find are single pixels
// repeated somewhere in the last 32 KiB: 3-byte matches. The general
// matchers of klauspost/compress and compress/flate need 4 bytes and look
// at every byte; this one looks only where a pixel starts, at the last
// place the same colour started (a hash of its 3 bytes) and at the pixel
// before, and takes the longer match, greedily. It writes one dynamic
// Huffman block per rgbBlockBytes of input. On noisy field images it is
// about a quarter smaller than klauspost's level 1 and faster.
type rgbDeflater struct {
	head     [1 << rgbHashBits]int32 // 1 + where each hashed colour last started, 0 = nowhere
	tokens   []uint32                // literal byte, or matchToken | length<<16 | distance
	litFreq  [286]int32              // literal/length symbols (256 ends the block)
	distFreq [30]int32
	lit      huffmanCode
	dist     huffmanCode
	bits     uint64 // pending output bits, the first in the lowest bit
	nbits    uint
	out      []uint8
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

// zlib appends to dst the zlib stream (RFC 1950, deflate RFC 1951) of src,
// which holds scanlines of stride bytes, and returns it.
func (d *rgbDeflater) zlib(dst, src []uint8, stride int) []uint8 {
	d.out = append(dst, 0x78, 0x01) // deflate, 32 KiB window, no dictionary
	d.bits, d.nbits = 0, 0
	clear(d.head[:])
	for start := 0; ; start += rgbBlockBytes {
		end := min(start+rgbBlockBytes, len(src))
		d.tokenize(src, start, end, stride)
		d.writeBlock(end == len(src))
		if end == len(src) {
			break
		}
	}
	d.flushBits()
	out := binary.BigEndian.AppendUint32(d.out, adler32.Checksum(src))
	d.out = nil
	return out
}

// tokenize finds the literals and matches of src[start:end] (matches may
// reach back before start, not beyond end) into d.tokens and counts their
// symbols.
func (d *rgbDeflater) tokenize(src []uint8, start, end, stride int) {
	d.tokens = d.tokens[:0]
	clear(d.litFreq[:])
	clear(d.distFreq[:])
	rowStart := start - start%stride
	i := start
	for i < end {
		for i >= rowStart+stride {
			rowStart += stride
		}
		off := i - rowStart - 1 // the byte's place in its row's pixels
		if off < 0 || off%3 != 0 || i+4 > end {
			d.literal(src[i])
			i++
			continue
		}
		colour := binary.LittleEndian.Uint32(src[i:]) & 0xffffff
		h := (colour * 0x9E3779B1) >> (32 - rgbHashBits)
		cand := int(d.head[h]) - 1
		d.head[h] = int32(i + 1)
		limit := min(maxMatch, end-i)
		length, dist := 0, 0
		if i >= 3 {
			length, dist = matchLength(src[i:i+limit], src[i-3:]), 3
		}
		if cand >= 0 && i-cand <= windowSize && i-cand != 3 {
			if l := matchLength(src[i:i+limit], src[cand:]); l > length {
				length, dist = l, i-cand
			}
		}
		if length < 3 {
			// No match of the colour: the pixel as three literals.
			d.literal(src[i])
			d.literal(src[i+1])
			d.literal(src[i+2])
			i += 3
			continue
		}
		d.tokens = append(d.tokens, matchToken|uint32(length)<<16|uint32(dist))
		sym, _, _ := lengthSymbol(length)
		d.litFreq[sym]++
		dsym, _, _ := distanceSymbol(dist)
		d.distFreq[dsym]++
		i += length
	}
}

func (d *rgbDeflater) literal(b uint8) {
	d.tokens = append(d.tokens, uint32(b))
	d.litFreq[b]++
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
	d.writeBits(bfinal|2<<1, 3) // BFINAL, BTYPE 2: dynamic Huffman codes
	d.writeBits(uint64(nlit-257)|uint64(ndist-1)<<5|uint64(nclen-4)<<10, 14)
	for _, s := range order[:nclen] {
		d.writeBits(uint64(cl.lengths[s]), 3)
	}
	for _, r := range rle[:n] {
		s := r & 0xff
		d.writeBits(uint64(cl.codes[s]), uint(cl.lengths[s]))
		switch s {
		case 16:
			d.writeBits(uint64(r>>8), 2)
		case 17:
			d.writeBits(uint64(r>>8), 3)
		case 18:
			d.writeBits(uint64(r>>8), 7)
		}
	}

	lit, dist := &d.lit, &d.dist
	for _, t := range d.tokens {
		if t&matchToken == 0 {
			d.writeBits(uint64(lit.codes[t]), uint(lit.lengths[t]))
			continue
		}
		sym, ne, extra := lengthSymbol(int(t >> 16 & 0x1ff))
		d.writeBits(uint64(lit.codes[sym])|uint64(extra)<<lit.lengths[sym], uint(lit.lengths[sym])+ne)
		dsym, dne, dextra := distanceSymbol(int(t & 0xffff))
		d.writeBits(uint64(dist.codes[dsym])|uint64(dextra)<<dist.lengths[dsym], uint(dist.lengths[dsym])+dne)
	}
	d.writeBits(uint64(lit.codes[256]), uint(lit.lengths[256]))
}

// writeBits appends the n (≤ 32) lowest bits of b to the output.
func (d *rgbDeflater) writeBits(b uint64, n uint) {
	d.bits |= b << d.nbits
	d.nbits += n
	if d.nbits >= 32 {
		d.out = binary.LittleEndian.AppendUint32(d.out, uint32(d.bits))
		d.bits >>= 32
		d.nbits -= 32
	}
}

// flushBits writes the pending bits, the last byte padded with zeros.
func (d *rgbDeflater) flushBits() {
	for d.nbits > 0 {
		d.out = append(d.out, uint8(d.bits))
		d.bits >>= 8
		d.nbits -= min(d.nbits, 8)
	}
	d.bits = 0
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
