package geotiff

import (
	"bytes"
	stdflate "compress/flate"
	"encoding/binary"
	"io"
	"math/bits"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/klauspost/compress/flate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// inflateInputs are data sets of the shapes DEFLATE meets in GeoTIFFs.
func inflateInputs() map[string][]byte {
	rng := rand.New(rand.NewPCG(7, 8))
	random := make([]byte, 100_000)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	text := bytes.Repeat([]byte("the quick brown fox jumps over the lazy dog; "), 3000)
	// A 512×512 uint16 tile of noisy reflectance after predictor 2, as
	// Sentinel-2 bands store them.
	tile := make([]byte, 2*512*512)
	for y := range 512 {
		prev := uint16(0)
		for x := range 512 {
			v := uint16(1500 + 400*(x/64%3) + rng.IntN(200))
			binary.LittleEndian.PutUint16(tile[2*(y*512+x):], v-prev)
			prev = v
		}
	}
	runs := make([]byte, 70_000) // long matches, distances 1 and beyond 32 KiB
	for i := range runs {
		runs[i] = byte(i / 5000)
	}
	copy(runs[40_000:], runs[:5000])
	// Geometric frequencies of literals and of match distance codes: the
	// rare ones get codes longer than the first-level tables (12 and 10
	// bits), decoded through second-level tables.
	skewed := make([]byte, 0, 300_000)
	for len(skewed) < cap(skewed)-300 {
		if k := min(bits.TrailingZeros32(rng.Uint32()), 29); len(skewed) > 33_000 && rng.IntN(3) == 0 {
			d := int(distBase[k])
			if k < 29 {
				d += rng.IntN(int(distBase[k+1] - distBase[k]))
			}
			from := len(skewed) - d
			skewed = append(skewed, skewed[from:from+8+rng.IntN(24)]...)
		} else {
			skewed = append(skewed, byte(k+rng.IntN(2)*32))
		}
	}
	return map[string][]byte{
		"empty": {}, "one byte": {42}, "short": []byte("abcabcabcabcabcab"),
		"random": random, "text": text, "tile": tile, "runs": runs, "skewed": skewed,
	}
}

// compressWith returns data compressed by klauspost/compress (levels −2 to
// 9: Huffman only, stored, fast and dynamic blocks) and by the standard
// library, which writes fixed-code blocks for short inputs.
func compressWith(t testing.TB, data []byte) map[string][]byte {
	out := map[string][]byte{}
	for _, level := range []int{-2, 0, 1, 5, 9} {
		var b bytes.Buffer
		w, err := flate.NewWriter(&b, level)
		require.NoError(t, err)
		_, err = w.Write(data)
		require.NoError(t, err)
		require.NoError(t, w.Close())
		out["klauspost level "+string(rune('0'+level+2))] = b.Bytes()
	}
	for _, level := range []int{1, 6, 9} {
		var b bytes.Buffer
		w, err := stdflate.NewWriter(&b, level)
		require.NoError(t, err)
		_, err = w.Write(data[:len(data)/2])
		require.NoError(t, err)
		require.NoError(t, w.Flush()) // an empty stored block mid-stream
		_, err = w.Write(data[len(data)/2:])
		require.NoError(t, err)
		require.NoError(t, w.Close())
		out["stdlib level "+string(rune('0'+level))] = b.Bytes()
	}
	return out
}

func TestInflateMatchesFlate(t *testing.T) {
	var f inflater
	for name, data := range inflateInputs() {
		for how, comp := range compressWith(t, data) {
			dst := make([]byte, len(data))
			require.NoError(t, f.inflate(dst, comp), "%s, %s", name, how)
			require.True(t, bytes.Equal(data, dst), "%s, %s", name, how)
			// A prefix: decoding stops when dst is full, mid-block.
			if n := len(data) / 3; n > 0 {
				require.NoError(t, f.inflate(dst[:n], comp), "%s, %s", name, how)
				require.True(t, bytes.Equal(data[:n], dst[:n]), "%s, %s", name, how)
			}
			// More output asked than the stream holds.
			err := f.inflate(make([]byte, len(data)+1), comp)
			assert.ErrorIs(t, err, errInflateEOF, "%s, %s", name, how)
			// A truncated stream never passes for a full one.
			if len(comp) > 4 && len(data) > 0 {
				err := f.inflate(dst, comp[:len(comp)/2])
				assert.Error(t, err, "%s, %s truncated", name, how)
			}
		}
	}
}

// TestInflateTruncated cuts streams after every byte: whatever the
// standard library decodes from a cut stream, the inflater decodes too.
// A two-code table entry whose second code lies past the cut must not stop
// it, and the careful loop near the end of the input has to decode each
// symbol on its own bits.
func TestInflateTruncated(t *testing.T) {
	inputs := inflateInputs()
	var f inflater
	for _, tc := range []struct {
		name  string
		data  []byte
		level int
	}{
		{"text, Huffman only", inputs["text"][:3000], -2}, // short literal codes: two-literal entries
		{"tile", inputs["tile"][:6000], 6},                // literal-length entries
	} {
		var b bytes.Buffer
		w, err := flate.NewWriter(&b, tc.level)
		require.NoError(t, err)
		_, err = w.Write(tc.data)
		require.NoError(t, err)
		require.NoError(t, w.Close())
		comp := b.Bytes()
		for k := range len(comp) {
			want, _ := io.ReadAll(stdflate.NewReader(bytes.NewReader(comp[:k])))
			dst := make([]byte, len(want))
			require.NoError(t, f.inflate(dst, comp[:k]), "%s cut at %d of %d", tc.name, k, len(comp))
			require.Equal(t, want, dst, "%s cut at %d", tc.name, k)
		}
	}
}

// TestInflateCorruptMidStream corrupts a long stream at many places, so
// that the fast loop (not only the careful one near the end) meets invalid
// codes and distances: errors or the standard library's output, no panic.
func TestInflateCorruptMidStream(t *testing.T) {
	data := inflateInputs()["tile"][:64<<10]
	var b bytes.Buffer
	w, err := flate.NewWriter(&b, 6)
	require.NoError(t, err)
	_, err = w.Write(data)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	comp := b.Bytes()
	rng := rand.New(rand.NewPCG(1, 2))
	var f inflater
	dst := make([]byte, len(data))
	errs := 0
	for range 300 {
		bad := bytes.Clone(comp)
		bad[rng.IntN(len(bad))] ^= byte(1 + rng.IntN(255))
		err := f.inflate(dst, bad)
		want, rerr := io.ReadAll(stdflate.NewReader(bytes.NewReader(bad)))
		if rerr == nil && len(want) >= len(dst) {
			require.NoError(t, err)
			require.Equal(t, want[:len(dst)], dst)
		}
		if err != nil {
			errs++
		}
	}
	assert.Greater(t, errs, 30, "corruptions detected (64 of 300 when written)")
}

func TestInflateCorrupt(t *testing.T) {
	var f inflater
	dst := make([]byte, 1000)
	for _, tc := range []struct {
		name string
		src  []byte
		want error
	}{
		{"reserved block type", []byte{0x07}, errInflateData},
		{"stored length check", []byte{0x01, 0x05, 0x00, 0x00, 0x00}, errInflateData},
		{"stored data missing", []byte{0x01, 0x05, 0x00, 0xfa, 0xff, 'a'}, errInflateEOF},
		{"nothing", nil, errInflateEOF},
		// A fixed block whose first symbol copies from before the start.
		{"distance before start", []byte{0x63, 0x00, 0x42, 0x00}, errInflateData},
		// A dynamic block header of all ones declares 288 literal/length
		// codes, more than the 286 symbols.
		{"too many literal/length codes", []byte{0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, errInflateData},
		// The same mid-stream, where the fast loop decodes: after 400
		// literals, length symbol 286 (fixed code 11000110); length 3
		// (0000001) then distance symbol 30 (11110); length 3 then
		// distance 24577 (11101, 13 zero extra bits) before the start.
		{"invalid length symbol mid-stream", fixedStream(400, [2]uint{0xc6, 8}), errInflateData},
		{"invalid distance symbol mid-stream", fixedStream(400, [2]uint{1, 7}, [2]uint{0x1e, 5}), errInflateData},
		{"distance before start mid-stream", fixedStream(400, [2]uint{1, 7}, [2]uint{0x1d, 5}), errInflateData},
	} {
		assert.ErrorIs(t, f.inflate(dst, tc.src), tc.want, tc.name)
	}
}

// fixedStream is a final fixed-Huffman block of n literals 'a' and then
// the given Huffman codes (value, length), followed by zero bytes.
func fixedStream(n int, codes ...[2]uint) []byte {
	var out []byte
	var acc, nacc uint
	put := func(v, n uint) { // least significant bit first
		acc |= v << nacc
		for nacc += n; nacc >= 8; nacc -= 8 {
			out = append(out, byte(acc))
			acc >>= 8
		}
	}
	putCode := func(c, n uint) { // Huffman codes: most significant bit first
		put(uint(bits.Reverse16(uint16(c)))>>(16-n), n)
	}
	put(1, 1) // final
	put(1, 2) // fixed Huffman codes
	for range n {
		putCode(0x30+'a', 8)
	}
	for _, c := range codes {
		putCode(c[0], c[1])
	}
	put(0, 7)
	return append(out, make([]byte, 32)...)
}

func FuzzInflate(f *testing.F) {
	for _, data := range []string{"", "a", "abcabcabcabcabc", "hello, hello, hello, world"} {
		for _, comp := range compressWith(f, []byte(data)) {
			f.Add(comp, uint16(len(data)))
		}
	}
	// Real DEFLATE tiles (zlib header stripped), truncated to the uint16
	// size the target takes: the decoder must stop at n bytes.
	for _, p := range realBands(f) {
		file, err := OpenFile(p)
		if err != nil {
			f.Fatal(err)
		}
		im := file.Image()
		for i := 0; i < len(im.offsets) && i < 2; i++ {
			if im.counts[i] < 3 {
				continue
			}
			b := make([]byte, im.counts[i])
			if err := im.src.readAt(b, int64(im.offsets[i])); err != nil {
				f.Fatal(err)
			}
			f.Add(b[2:], uint16(min(im.blockW*im.blockH*im.typ.Size(), 65535)))
		}
		file.Close()
	}
	f.Fuzz(func(t *testing.T, comp []byte, n uint16) {
		var inf inflater
		dst := make([]byte, n)
		err := inf.inflate(dst, comp) // must not panic
		want, rerr := io.ReadAll(io.LimitReader(stdflate.NewReader(bytes.NewReader(comp)), int64(n)))
		if rerr == nil && len(want) == int(n) {
			// The standard library decodes n bytes: so must we, the same.
			require.NoError(t, err)
			require.Equal(t, want, dst)
		}
		if err == nil && len(want) == int(n) {
			require.Equal(t, want, dst)
		}
	})
}

// BenchmarkInflateTile decodes a 512×512 uint16 predictor-2 tile compressed
// at zlib's default level (as GDAL writes), with this package's inflater
// and with klauspost/compress/flate, the streaming decoder it replaced.
func BenchmarkInflateTile(b *testing.B) {
	data := inflateInputs()["tile"]
	var c bytes.Buffer
	w, err := flate.NewWriter(&c, 6)
	require.NoError(b, err)
	_, err = w.Write(data)
	require.NoError(b, err)
	require.NoError(b, w.Close())
	comp := c.Bytes()
	dst := make([]byte, len(data))
	b.Run("inflater", func(b *testing.B) {
		var f inflater
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if err := f.inflate(dst, comp); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("klauspost", func(b *testing.B) {
		var br bytes.Reader
		br.Reset(comp)
		fr := flate.NewReader(&br)
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			br.Reset(comp)
			if err := fr.(flate.Resetter).Reset(&br, nil); err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(fr, dst); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkInflateRealTiles inflates the first 40 tiles of the band named
// by CROPKIT_BENCH_TILE (a real or realistic Sentinel-2 COG) on one
// goroutine, with this package's inflater and with klauspost/compress/flate.
func BenchmarkInflateRealTiles(b *testing.B) {
	name := os.Getenv("CROPKIT_BENCH_TILE")
	if name == "" {
		b.Skip("set CROPKIT_BENCH_TILE to a full-size GeoTIFF band")
	}
	file, err := OpenFile(name)
	require.NoError(b, err)
	defer file.Close()
	im := file.Image()
	if im.compression != 8 && im.compression != 32946 {
		b.Skipf("compression %d is not DEFLATE", im.compression)
	}
	var tiles [][]byte
	for i := 0; i < len(im.offsets) && len(tiles) < 40; i++ {
		if im.counts[i] == 0 {
			continue
		}
		comp := make([]byte, im.counts[i])
		require.NoError(b, im.src.readAt(comp, int64(im.offsets[i])))
		tiles = append(tiles, comp[2:]) // past the zlib header
	}
	size := im.blockW * im.blockH * im.typ.Size()
	dst := make([]byte, size)
	var f inflater
	for _, t := range tiles { // the two decoders agree
		require.NoError(b, f.inflate(dst, t))
		want, err := io.ReadAll(flate.NewReader(bytes.NewReader(t)))
		require.NoError(b, err)
		require.Equal(b, want[:size], dst)
	}
	b.Run("inflater", func(b *testing.B) {
		b.SetBytes(int64(size * len(tiles)))
		for b.Loop() {
			for _, t := range tiles {
				if err := f.inflate(dst, t); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("klauspost", func(b *testing.B) {
		var br bytes.Reader
		fr := flate.NewReader(&br)
		b.SetBytes(int64(size * len(tiles)))
		for b.Loop() {
			for _, t := range tiles {
				br.Reset(t)
				if err := fr.(flate.Resetter).Reset(&br, nil); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(fr, dst); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

func TestBuildTable(t *testing.T) {
	table := make([]uint32, 1<<3)
	// Over-subscribed: three codes of one bit.
	assert.ErrorIs(t, buildTable(table, 3, []uint8{1, 1, 1}, codelenEntry), errInflateData)
	// Complete: A = 0, B = 10, C = 11 (sent least significant bit first).
	require.NoError(t, buildTable(table, 3, []uint8{1, 2, 2}, codelenEntry))
	for i, want := range []uint32{0, 1, 0, 2, 0, 1, 0, 2} { // index bits 0bCBA, read from the right
		e := table[i]
		assert.Equal(t, want, e>>16, "index %03b", i)
		assert.Equal(t, uint32(1+min(want, 1)), e&15, "code length at index %03b", i)
	}
	// Incomplete (a single one-bit code, as DEFLATE allows for distances):
	// the unused code decodes as invalid.
	require.NoError(t, buildTable(table, 3, []uint8{0, 1}, distEntry))
	assert.NotZero(t, table[0]&kindLength)
	assert.Equal(t, uint32(kindInvalid), table[1])
	// Codes longer than the first level go through a second-level table.
	long := make([]uint32, 1<<2+4<<(maxCodeLen-2))
	require.NoError(t, buildTable(long, 2, []uint8{1, 2, 3, 3}, codelenEntry))
	link := long[3] // 11 then one more bit: symbols 2 (110) and 3 (111)
	require.NotZero(t, link&kindLink)
	assert.Equal(t, uint32(2), long[link>>16+0]>>16)
	assert.Equal(t, uint32(3), long[link>>16+1]>>16)
}

// TestCombineCodes checks the two-code entries on the shape of 16-bit
// imagery: 9-bit literals followed by 3-bit match lengths share one entry,
// a literal followed by the end of the block does not.
func TestCombineCodes(t *testing.T) {
	// Complete code: literals 9 bits (256 × 2⁻⁹), end of block 2 bits,
	// lengths 3 and 4 (symbols 257, 258) 3 bits each.
	lens := make([]uint8, 259)
	for i := range 256 {
		lens[i] = 9
	}
	lens[256], lens[257], lens[258] = 2, 3, 3
	table := make([]uint32, litlenTableSize)
	require.NoError(t, buildTable(table, litlenBits, lens, litlenEntry))
	combineCodes(table)
	litLen, single := 0, 0
	for i := range 1 << litlenBits {
		e := table[i]
		switch {
		case e&kindLength != 0 && e&entryPlusByte != 0:
			litLen++
			assert.Equal(t, uint32(12), e&entryBits, "index %012b: 9 + 3 bits", i)
			assert.Contains(t, []uint32{3, 4}, e>>24+3, "index %012b: length", i)
		case e&kindLiteral != 0:
			single++
			assert.Zero(t, e&entryPlusByte, "index %012b: 18 bits of literals do not fit", i)
		}
	}
	// Of the 8 values of the 3 index bits after a literal code, each length
	// code takes 1; the end code (2 bits) takes 2 and the start of another
	// literal 4, which stay single literals.
	assert.Equal(t, 256*2, litLen)
	assert.Equal(t, 256*6, single)
}
