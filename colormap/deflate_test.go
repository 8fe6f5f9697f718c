package colormap

import (
	"bytes"
	"compress/zlib"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// deflateInputs are scanline buffers that exercise the rgbDeflater: empty
// and tiny inputs, random bytes (no matches), long runs (matches of 258 at
// distance 3, across rows and blocks), few colours at random (3-byte
// matches at every distance up to the window), a single repeated byte.
func deflateInputs() []struct {
	name   string
	src    []uint8
	stride int
} {
	rnd := rand.New(rand.NewPCG(22, 2))
	var in []struct {
		name   string
		src    []uint8
		stride int
	}
	add := func(name string, src []uint8, stride int) {
		in = append(in, struct {
			name   string
			src    []uint8
			stride int
		}{name, src, stride})
	}
	for _, n := range []int{0, 1, 2, 3, 4, 5, 7, 8, 9, 16} {
		src := make([]uint8, n)
		for i := range src {
			src[i] = uint8(rnd.IntN(3))
		}
		add("tiny", src, 4)
	}
	scanlines := func(cols, rows, colours int, runs bool) []uint8 {
		stride := 1 + 3*cols
		src := make([]uint8, stride*rows)
		palette := make([][3]uint8, colours)
		for i := range palette {
			palette[i] = [3]uint8{uint8(rnd.Uint32()), uint8(rnd.Uint32()), uint8(rnd.Uint32())}
		}
		run := 0
		var c [3]uint8
		for y := range rows {
			for x := range cols {
				if run == 0 {
					c = palette[rnd.IntN(colours)]
					if runs && rnd.IntN(4) == 0 {
						run = rnd.IntN(2000)
					}
				} else {
					run--
				}
				copy(src[y*stride+1+3*x:], c[:])
			}
		}
		return src
	}
	add("random bytes", func() []uint8 {
		b := make([]uint8, 300_000)
		for i := range b {
			b[i] = uint8(rnd.Uint32())
		}
		return b
	}(), 1+3*100)
	add("one byte", bytes.Repeat([]uint8{7}, 400_000), 1+3*250)
	add("zeros", make([]uint8, 1+3*5), 1+3*5)
	for _, colours := range []int{1, 2, 5, 300, 5000, 1 << 20} {
		for _, runs := range []bool{false, true} {
			cols := 1 + rnd.IntN(400)
			rows := 1 + rnd.IntN(300)
			add("scanlines", scanlines(cols, rows, colours, runs), 1+3*cols)
		}
	}
	add("wide", scanlines(11000, 3, 700, true), 1+3*11000)
	return in
}

func TestRGBDeflaterRoundTrip(t *testing.T) {
	var d rgbDeflater
	var buf bytes.Buffer
	for _, tc := range deflateInputs() {
		buf.Reset()
		require.NoError(t, d.zlib(&buf, tc.src, tc.stride))
		out := buf.Bytes()
		r, err := zlib.NewReader(bytes.NewReader(out))
		require.NoError(t, err, "%s, %d bytes", tc.name, len(tc.src))
		got, err := io.ReadAll(r)
		require.NoError(t, err, "%s, %d bytes", tc.name, len(tc.src))
		require.NoError(t, r.Close())
		require.Equal(t, tc.src, got, "%s, %d bytes", tc.name, len(tc.src))
		if len(tc.src) > 1000 {
			t.Logf("%s: %d → %d bytes", tc.name, len(tc.src), len(out))
		}
	}
}

func TestLengthAndDistanceSymbols(t *testing.T) {
	// RFC 1951 3.2.5, the tables written out.
	lengthBase := []int{3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258}
	lengthExtra := []uint{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
	for l := 3; l <= 258; l++ {
		sym, ne, extra := lengthSymbol(l)
		k := sym - 257
		require.Equal(t, lengthExtra[k], ne, "length %d", l)
		require.Equal(t, l, lengthBase[k]+int(extra), "length %d", l)
		require.Less(t, extra, uint32(1)<<ne+boolInt(ne == 0), "length %d", l)
	}
	distBase := []int{1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577}
	for dist := 1; dist <= 32768; dist++ {
		sym, ne, extra := distanceSymbol(dist)
		wantExtra := uint(0)
		if sym >= 4 {
			wantExtra = uint(sym-2) / 2
		}
		require.Equal(t, wantExtra, ne, "distance %d", dist)
		require.Equal(t, dist, distBase[sym]+int(extra), "distance %d", dist)
	}
}

func boolInt(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

func FuzzRGBDeflater(f *testing.F) {
	for _, tc := range deflateInputs() {
		if len(tc.src) <= 1<<15 {
			f.Add(tc.src, uint16(tc.stride))
		}
	}
	var d rgbDeflater
	f.Fuzz(func(t *testing.T, src []uint8, stride uint16) {
		s := max(int(stride), 1)
		var buf bytes.Buffer
		require.NoError(t, d.zlib(&buf, src, s))
		r, err := zlib.NewReader(&buf)
		require.NoError(t, err)
		got, err := io.ReadAll(r)
		require.NoError(t, err)
		require.Equal(t, len(src), len(got))
		require.True(t, bytes.Equal(src, got))
	})
}
