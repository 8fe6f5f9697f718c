package geotiff_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/imagery/geotiff"
	"github.com/cropkit/cropkit/imagery/geotiff/geotifftest"
)

// s2Grid is a Sentinel-2 10 m band of tile 31UES.
var s2Grid = geo.Grid{EPSG: 32631, X0: 499980, Y0: 5700000, DX: 10, DY: 10, Cols: 10980, Rows: 10980}

func pattern(col, row int) uint16 { return uint16(1000 + col + 3*row) }

func repeatedCOG(t testing.TB, g geo.Grid, tileSize int) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, geotifftest.WriteRepeatedCOG(&buf, g, tileSize, pattern))
	return buf.Bytes()
}

func TestWindowReadsOnlyTilesUnderIt(t *testing.T) {
	for _, tileSize := range []int{512, 256} {
		data := repeatedCOG(t, s2Grid, tileSize)
		src := &geotifftest.CountingReaderAt{R: bytes.NewReader(data)}
		f, err := geotiff.Open(src)
		require.NoError(t, err)
		assert.Equal(t, s2Grid, f.Grid())
		across := (10980 + tileSize - 1) / tileSize
		require.NotEmpty(t, f.Overviews())

		// Open reads the header only: everything before the first tile.
		var headerEnd int64
		for _, r := range src.Reads() {
			headerEnd = max(headerEnd, r.Off+int64(r.N))
		}
		assert.Less(t, headerEnd, int64(across*across*16+4096), "tile size %d: open read up to byte %d", tileSize, headerEnd)

		// A 1 km × 1 km (100 ha) field straddling four tiles.
		c0 := 10*tileSize - 50
		w := geo.Window{Col: c0, Row: c0, Cols: 100, Rows: 100}
		src.Reset()
		r, err := f.ReadWindow(context.Background(), w)
		require.NoError(t, err)
		reads := src.Reads()
		require.Len(t, reads, 4, "tile size %d: one read per tile under the window", tileSize)
		sort.Slice(reads, func(i, j int) bool { return reads[i].Off < reads[j].Off })
		tileBytes := reads[0].N
		for _, rd := range reads {
			assert.Equal(t, tileBytes, rd.N)
			assert.Greater(t, rd.Off, headerEnd)
		}
		assert.Equal(t, int64(4*tileBytes), src.Bytes())
		// The four tiles are (9,9), (10,9), (9,10), (10,10): two consecutive pairs a row of tiles apart.
		assert.Equal(t, reads[1].Off-reads[0].Off, reads[3].Off-reads[2].Off)
		assert.Greater(t, reads[2].Off-reads[0].Off, int64(across-1)*int64(tileBytes))
		// Pixel values follow the per-tile pattern.
		for i := 0; i < w.Len(); i++ {
			col, row := w.Col+i%w.Cols, w.Row+i/w.Cols
			require.Equal(t, pattern(col%tileSize, row%tileSize), r.U16[i])
		}
	}
}

// rangeServer serves data with http.ServeContent (Range and 206 support) and
// counts the requests.
func rangeServer(t *testing.T, data []byte, requests *atomic.Int64) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.ServeContent(w, r, "b04.tif", time.Time{}, bytes.NewReader(data))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestHTTPReaderAt(t *testing.T) {
	ctx := context.Background()
	data := repeatedCOG(t, s2Grid, 512)
	var requests atomic.Int64
	srv := rangeServer(t, data, &requests)

	h, err := geotiff.NewHTTPReaderAt(ctx, srv.Client(), srv.URL+"/b04.tif")
	require.NoError(t, err)
	assert.Equal(t, int64(len(data)), h.Size())
	f, err := geotiff.Open(h)
	require.NoError(t, err)
	assert.Equal(t, int64(1), requests.Load(), "opening a COG costs one request")
	assert.Equal(t, s2Grid, f.Grid())

	w := geo.Window{Col: 5070, Row: 5070, Cols: 100, Rows: 100}
	r, err := f.ReadWindow(ctx, w)
	require.NoError(t, err)
	assert.Equal(t, int64(1+2), requests.Load(), "one Range request per row of tiles stored back to back")
	assert.Equal(t, pattern(5070%512, 5070%512), r.U16[0])

	// Reads at the end of the file are short with io.EOF, as io.ReaderAt requires.
	buf := make([]byte, 10)
	n, err := h.ReadAt(buf, int64(len(data))-4)
	assert.Equal(t, 4, n)
	assert.ErrorIs(t, err, io.EOF)
	assert.Equal(t, data[len(data)-4:], buf[:4])
}

func TestHTTPReaderAtGrowsHeader(t *testing.T) {
	// 16-pixel tiles on 2000² make tile arrays of ~125 KiB, beyond the first 64 KiB.
	g := geo.Grid{EPSG: 32631, X0: 500000, Y0: 5600000, DX: 10, DY: 10, Cols: 2000, Rows: 2000}
	data := repeatedCOG(t, g, 16)
	var requests atomic.Int64
	srv := rangeServer(t, data, &requests)
	h, err := geotiff.NewHTTPReaderAt(context.Background(), nil, srv.URL)
	require.NoError(t, err)
	f, err := geotiff.Open(h)
	require.NoError(t, err)
	assert.LessOrEqual(t, requests.Load(), int64(4), "the header prefix grows by doubling")
	r, err := f.ReadWindow(context.Background(), geo.Window{Col: 1990, Row: 1990, Cols: 20, Rows: 20})
	require.NoError(t, err)
	assert.Equal(t, geo.Window{Col: 1990, Row: 1990, Cols: 10, Rows: 10}, r.Window)
	assert.Equal(t, pattern(1990%16, 1990%16), r.U16[0])
}

func TestHTTPReaderAtErrors(t *testing.T) {
	ctx := context.Background()
	noRange := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("II*\x00 whole file, Range ignored"))
	}))
	defer noRange.Close()
	_, err := geotiff.NewHTTPReaderAt(ctx, nil, noRange.URL)
	require.ErrorIs(t, err, geotiff.ErrRangeUnsupported)

	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	_, err = geotiff.NewHTTPReaderAt(ctx, nil, notFound.URL)
	var he *geotiff.HTTPError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, http.StatusNotFound, he.StatusCode)

	noSize := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Range", "bytes 0-3/*")
		w.WriteHeader(http.StatusPartialContent)
		w.Write([]byte("II*\x00"))
	}))
	defer noSize.Close()
	_, err = geotiff.NewHTTPReaderAt(ctx, nil, noSize.URL)
	require.ErrorContains(t, err, "file size is needed")

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	var requests atomic.Int64
	srv := rangeServer(t, []byte("II*\x00"), &requests)
	_, err = geotiff.NewHTTPReaderAt(canceled, nil, srv.URL)
	require.True(t, errors.Is(err, context.Canceled), "got %v", err)
}

// ReadWindowInto decodes into a raster of the right type and room, whatever
// it held, and allocates for any other.
func TestReadWindowInto(t *testing.T) {
	f, err := geotiff.Open(bytes.NewReader(repeatedCOG(t, s2Grid, 256)))
	require.NoError(t, err)
	ctx := context.Background()
	w := geo.Window{Col: 1000, Row: 2000, Cols: 300, Rows: 200}
	want, err := f.ReadWindow(ctx, w)
	require.NoError(t, err)

	dirty := geotiff.NewRaster(geo.Window{Cols: 400, Rows: 400}, want.Type)
	for i := range dirty.U16 {
		dirty.U16[i] = 0xbeef
	}
	got, err := f.ReadWindowInto(ctx, w, dirty)
	require.NoError(t, err)
	assert.Same(t, dirty, got, "room enough: decoded in place")
	assert.Equal(t, want.Window, got.Window)
	assert.Equal(t, want.U16, got.U16)

	for _, other := range []*geotiff.Raster{
		geotiff.NewRaster(geo.Window{Cols: 10, Rows: 10}, want.Type),       // too small
		geotiff.NewRaster(geo.Window{Cols: 400, Rows: 400}, geotiff.Uint8), // another type
	} {
		got, err := f.ReadWindowInto(ctx, w, other)
		require.NoError(t, err)
		assert.NotSame(t, other, got)
		assert.Equal(t, want.U16, got.U16)
	}
}
