package geotiff

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

// predictorRows is a block of 16-bit rows differenced as predictor 2 stores
// them (little- and big-endian), and the samples they decode to.
func predictorRows(rows, cols int, big bool) (raw []byte, want []uint16) {
	rnd := rand.New(rand.NewPCG(1, 2))
	raw = make([]byte, 2*rows*cols)
	want = make([]uint16, rows*cols)
	for y := range rows {
		var prev uint16
		for x := range cols {
			v := uint16(rnd.IntN(65536))
			want[y*cols+x] = v
			d := v - prev
			prev = v
			if big {
				binary.BigEndian.PutUint16(raw[2*(y*cols+x):], d)
			} else {
				binary.LittleEndian.PutUint16(raw[2*(y*cols+x):], d)
			}
		}
	}
	return raw, want
}

func TestUndoHorizontal16(t *testing.T) {
	for _, big := range []bool{false, true} {
		for _, cols := range []int{1, 3, 4, 7, 512, 513} {
			raw, want := predictorRows(3, cols, big)
			for c0 := 0; c0 < cols; c0 += max(1, cols/3) {
				for y := range 3 {
					got := make([]uint16, cols-c0)
					undoHorizontal16(got, raw[2*y*cols:2*(y+1)*cols], c0, big)
					assert.Equal(t, want[y*cols+c0:(y+1)*cols], got, "big %v cols %d c0 %d row %d", big, cols, c0, y)
				}
			}
		}
	}
}

func BenchmarkUndoHorizontal16(b *testing.B) {
	const side = 512
	raw, _ := predictorRows(side, side, false)
	dst := make([]uint16, side*side)
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		for y := range side {
			undoHorizontal16(dst[y*side:(y+1)*side], raw[2*y*side:2*(y+1)*side], 0, false)
		}
	}
}
