package geotiff

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/internal/testenv"
)

// realBands returns the band files of one real Sentinel-2 date when
// ../shared/data is present; under CI its absence fails the target, elsewhere
// the target runs on its other seeds.
func realBands(f *testing.F) []string {
	dir := filepath.Join("..", "..", "..", "shared", "data", "s2", "flanders-31UDS", "2018-07-05")
	if env := os.Getenv("CROPKIT_SHARED"); env != "" {
		dir = filepath.Join(env, "data", "s2", "flanders-31UDS", "2018-07-05")
	}
	if _, err := os.Stat(dir); err != nil {
		if testenv.InCI() {
			f.Fatalf("real Sentinel-2 bands missing under CI: %v", err)
		}
		return nil
	}
	// A 10 m band, a 20 m band and the uint8 SCL.
	var out []string
	for _, name := range []string{"B04.tif", "B05.tif", "SCL.tif"} {
		out = append(out, filepath.Join(dir, name))
	}
	return out
}

// FuzzOpenAndRead feeds arbitrary bytes to Open and reads windows of every
// image. Invariants: nothing panics; every Open error matches ErrFormat or
// ErrUnsupported (limits also ErrLimit); Open allocates at most 64 MiB plus
// 32 bytes per input byte, whatever the header declares; a read of the whole
// image is refused with ErrLimit, before allocating, when it would exceed
// maxWindowBytes; a successful read has the window's samples. Seeds: the
// testdata fixtures, real Sentinel-2 bands (when present) and freshly written
// files. Fuzz with go test -fuzz FuzzOpenAndRead -fuzztime 30s.
func FuzzOpenAndRead(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "*.tif"))
	for _, p := range append(paths, realBands(f)...) {
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
	// A sparse 2^15-pixel square whose whole read (1 GiB) is over the limit.
	sparse := tiledU8(0, 1<<15, 4096, 0)
	sparse[8] = tiffEntry{tagTileOffsets, 4, make([]float64, 64)}
	sparse[9] = tiffEntry{tagTileByteCounts, 4, make([]float64, 64)}
	f.Add(buildTIFF(nil, [][]tiffEntry{sparse}))
	f.Fuzz(func(t *testing.T, data []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		file, err := Open(bytes.NewReader(data))
		runtime.ReadMemStats(&after)
		if d := after.TotalAlloc - before.TotalAlloc; d > 64<<20+32*uint64(len(data)) {
			t.Fatalf("Open allocated %d bytes for %d input bytes", d, len(data))
		}
		if err != nil {
			if !errors.Is(err, ErrFormat) && !errors.Is(err, ErrUnsupported) {
				t.Fatalf("Open error matches neither ErrFormat nor ErrUnsupported: %v", err)
			}
			return
		}
		file.Metadata()
		file.NoData()
		ctx := context.Background()
		for _, im := range append([]*Image{file.Image()}, file.Overviews()...) {
			gr := im.Grid()
			if full := int64(gr.Cols) * int64(gr.Rows) * int64(im.Type().Size()); full > maxWindowBytes {
				runtime.ReadMemStats(&before)
				_, err := im.ReadWindow(ctx, gr.Full())
				runtime.ReadMemStats(&after)
				if !errors.Is(err, ErrLimit) {
					t.Fatalf("read of %d bytes: %v, want ErrLimit", full, err)
				}
				if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
					t.Fatalf("refused read allocated %d bytes", d)
				}
			}
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
