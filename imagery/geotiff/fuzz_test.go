package geotiff

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/cropkit/cropkit/geo"
)

// FuzzOpenAndRead feeds arbitrary bytes to Open and reads windows of every
// image: nothing may panic, and the sanity limits bound every allocation.
// The seed corpus (the testdata fixtures and freshly written files) runs in
// every go test; fuzz with go test -fuzz FuzzOpenAndRead -fuzztime 30s.
func FuzzOpenAndRead(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "*.tif"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	g := testGrid
	g.Cols, g.Rows = 40, 37
	for _, opt := range []WriteOptions{
		{TileSize: 16, Predictor: 2},
		{Stripped: true, Compression: CompressionNone, BigTIFF: true, BigEndian: true},
		{TileSize: 16, Predictor: 3, HasNoData: true, NoData: -1, Metadata: map[string]string{"A": "b"}},
	} {
		typ := Uint16
		if opt.Predictor == 3 {
			typ = Float32
		}
		var buf bytes.Buffer
		if err := Write(&buf, g, syntheticRaster(typ, g.Cols, g.Rows, 1), opt); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Open(bytes.NewReader(data))
		if err != nil {
			return
		}
		file.Metadata()
		file.NoData()
		ctx := context.Background()
		for _, im := range append([]*Image{file.Image()}, file.Overviews()...) {
			gr := im.Grid()
			for _, w := range []geo.Window{
				{Cols: 64, Rows: 64},
				{Col: gr.Cols - 20, Row: gr.Rows - 20, Cols: 64, Rows: 64},
			} {
				r, err := im.ReadWindow(ctx, w)
				if err != nil {
					continue
				}
				if r.Len() != w.Intersect(gr.Full()).Len() {
					t.Fatalf("window %v of %dx%d: %d samples", w, gr.Cols, gr.Rows, r.Len())
				}
				_ = r.At(r.Len() - 1)
			}
		}
	})
}
