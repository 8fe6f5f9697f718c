package geotifftest_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/imagery/geotiff"
	"github.com/cropkit/cropkit/imagery/geotiff/geotifftest"
)

func TestWriteTiled(t *testing.T) {
	g := geo.Grid{EPSG: 32633, X0: 465180, Y0: 5080250, DX: 10, DY: 10, Cols: 70, Rows: 50}
	tests := []struct {
		typ              geotiff.DataType
		comp, pred, tile int
	}{
		{geotiff.Uint16, geotiff.CompressionDeflate, 2, 32},
		{geotiff.Uint8, geotiff.CompressionNone, 1, 16},
		{geotiff.Int16, geotiff.CompressionDeflate, 1, 64},
		{geotiff.Float32, geotiff.CompressionDeflate, 3, 16},
	}
	for _, tc := range tests {
		t.Run(tc.typ.String(), func(t *testing.T) {
			var buf bytes.Buffer
			pixel := func(col, row int) float64 { return float64(col + 2*row) }
			require.NoError(t, geotifftest.WriteTiled(&buf, g, tc.typ, tc.tile, tc.comp, tc.pred, pixel))
			f, err := geotiff.Open(bytes.NewReader(buf.Bytes()))
			require.NoError(t, err)
			assert.Equal(t, g, f.Grid())
			assert.Equal(t, tc.typ, f.Type())
			assert.Equal(t, tc.comp, f.Image().Compression())
			cols, _ := f.Image().BlockSize()
			assert.Equal(t, tc.tile, cols)
			r, err := f.ReadWindow(context.Background(), g.Full())
			require.NoError(t, err)
			for i := 0; i < r.Len(); i++ {
				require.Equal(t, pixel(i%g.Cols, i/g.Cols), r.At(i))
			}
		})
	}
}

func TestWriteRepeatedCOG(t *testing.T) {
	g := geo.Grid{EPSG: 32631, X0: 499980, Y0: 5700000, DX: 10, DY: 10, Cols: 10980, Rows: 10980}
	var buf bytes.Buffer
	require.NoError(t, geotifftest.WriteRepeatedCOG(&buf, g, 256, func(col, row int) uint16 { return uint16(col*256 + row) }))
	assert.Less(t, buf.Len(), 8<<20, "a smooth pattern keeps the file small")
	src := &geotifftest.CountingReaderAt{R: bytes.NewReader(buf.Bytes())}
	f, err := geotiff.Open(src)
	require.NoError(t, err)
	assert.Equal(t, g, f.Grid())
	var sizes [][2]int
	for _, ov := range f.Overviews() {
		sizes = append(sizes, [2]int{ov.Grid().Cols, ov.Grid().Rows})
	}
	assert.Equal(t, [][2]int{{5490, 5490}, {2745, 2745}, {1373, 1373}, {687, 687}, {344, 344}, {172, 172}}, sizes)
	assert.Equal(t, int64(buf.Len()), src.Size())

	src.Reset()
	r, err := f.ReadWindow(context.Background(), geo.Window{Col: 300, Row: 10, Cols: 2, Rows: 1})
	require.NoError(t, err)
	assert.Equal(t, []uint16{44*256 + 10, 45*256 + 10}, r.U16)
	assert.Len(t, src.Reads(), 1)
	assert.Positive(t, src.Bytes())
}

func ExampleWriteRepeatedCOG() {
	// A full Sentinel-2 band in a few MiB, for tests that count tile reads.
	g := geo.Grid{EPSG: 32631, X0: 499980, Y0: 5700000, DX: 10, DY: 10, Cols: 10980, Rows: 10980}
	var buf bytes.Buffer
	if err := geotifftest.WriteRepeatedCOG(&buf, g, 512, func(col, row int) uint16 { return 1000 }); err != nil {
		log.Fatal(err)
	}
	src := &geotifftest.CountingReaderAt{R: bytes.NewReader(buf.Bytes())}
	f, err := geotiff.Open(src)
	if err != nil {
		log.Fatal(err)
	}
	src.Reset()
	// A 100 ha field (100×100 pixels) across a tile corner: four tiles.
	if _, err := f.ReadWindow(context.Background(), geo.Window{Col: 5070, Row: 5070, Cols: 100, Rows: 100}); err != nil {
		log.Fatal(err)
	}
	fmt.Println("tile reads:", len(src.Reads()))
	// Output: tile reads: 4
}

func TestWriteUniform(t *testing.T) {
	// A 2^20-pixel square of 1 cm pixels in a couple of MiB.
	g := geo.Grid{EPSG: 32631, X0: 500000, Y0: 5600000, DX: 0.01, DY: 0.01, Cols: 1 << 20, Rows: 1 << 20}
	var buf bytes.Buffer
	require.NoError(t, geotifftest.WriteUniform(&buf, g, 2048, 4))
	assert.Less(t, buf.Len(), 3<<20)
	f, err := geotiff.Open(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	assert.Equal(t, g, f.Grid())
	r, err := f.ReadWindow(context.Background(), geo.Window{Col: g.Cols - 3, Row: 5000, Cols: 3, Rows: 2})
	require.NoError(t, err)
	assert.Equal(t, []uint16{4, 4, 4, 4, 4, 4}, r.U16)
}
