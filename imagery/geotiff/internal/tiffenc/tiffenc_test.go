package tiffenc_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/imagery/geotiff"
	"github.com/cropkit/cropkit/imagery/geotiff/internal/tiffenc"
)

func TestSharedBlocksAreStoredOnce(t *testing.T) {
	for _, opt := range []tiffenc.Options{{}, {BigTIFF: true}, {BigEndian: true}, {BigTIFF: true, BigEndian: true}} {
		var order binary.ByteOrder = binary.LittleEndian
		if opt.BigEndian {
			order = binary.BigEndian
		}
		tile := make([]byte, 16*16*2)
		for i := 0; i < 256; i++ {
			order.PutUint16(tile[2*i:], uint16(i))
		}
		other := bytes.Clone(tile)
		order.PutUint16(other, 999)
		ifd := tiffenc.IFD{Tiled: true, Blocks: [][]byte{tile, tile, tile, other}, Tags: map[uint16]any{
			256: []uint32{32}, 257: []uint32{32}, 258: []uint16{16}, 259: []uint16{1}, 322: []uint32{16}, 323: []uint32{16},
		}}
		var buf bytes.Buffer
		require.NoError(t, tiffenc.Write(&buf, []tiffenc.IFD{ifd}, opt))
		assert.Less(t, buf.Len(), 3*len(tile), "%+v: the shared tile is stored once", opt)

		f, err := geotiff.Open(bytes.NewReader(buf.Bytes()))
		require.NoError(t, err)
		r, err := f.ReadWindow(context.Background(), f.Grid().Full())
		require.NoError(t, err)
		assert.Equal(t, uint16(17), r.U16[1*32+17], "%+v: tile 1, pixel 1,1", opt)
		assert.Equal(t, uint16(999), r.U16[16*32+16], "%+v: tile 3 starts with its own value", opt)
	}
}

func TestWriteRejectsBadInput(t *testing.T) {
	var buf bytes.Buffer
	require.Error(t, tiffenc.Write(&buf, nil, tiffenc.Options{}))
	require.ErrorContains(t, tiffenc.Write(&buf, []tiffenc.IFD{{Tags: map[uint16]any{1: 3.5}}}, tiffenc.Options{}), "unsupported value type")
}
