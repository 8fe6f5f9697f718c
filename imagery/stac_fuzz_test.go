package imagery

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/paulmach/orb"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/geo/crs"
	"github.com/cropkit/cropkit/imagery/geotiff/geotifftest"
	"github.com/cropkit/cropkit/internal/testenv"
)

// fuzzBands are the band files a fuzzed STAC item's assets resolve to: the
// real Flanders bands of one date when ../shared/data is present (under CI
// its absence fails the target), else the synthetic scene; an href
// containing "huge" gets the crafted 2^20×2^20 band of 1 cm pixels.
func fuzzBands(f *testing.F) map[string][]byte {
	dir := filepath.Join("..", "..", "shared", "data", "s2", "flanders-31UDS", "2018-07-05")
	if env := os.Getenv("CROPKIT_SHARED"); env != "" {
		dir = filepath.Join(env, "data", "s2", "flanders-31UDS", "2018-07-05")
	}
	if _, err := os.Stat(dir); err != nil {
		if testenv.InCI() {
			f.Fatalf("real Sentinel-2 bands missing under CI: %v", err)
		}
		dir = filepath.Join(f.TempDir(), "synthetic")
		writeSyntheticScene(f, dir, nil)
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.tif"))
	if err != nil || len(paths) == 0 {
		f.Fatalf("no band in %s: %v", dir, err)
	}
	out := map[string][]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		out[strings.TrimSuffix(filepath.Base(p), ".tif")] = b
	}
	var huge bytes.Buffer
	if err := geotifftest.WriteUniform(&huge, centimetre, 2048, 3000); err != nil {
		f.Fatal(err)
	}
	out["huge"] = huge.Bytes()
	return out
}

// FuzzSTACItem feeds arbitrary STAC item JSON to OpenScene, its assets served
// from memory (no file or network access), and computes a field's products
// over the opened scene. Invariants: no panic, and the whole exercise
// allocates less than 64 MiB beyond the inputs, whatever the item or the
// band files it points at declare (the field-window budget holds for STAC
// scenes too). Seeds: the committed corpus (Earth Search and CDSE keys).
func FuzzSTACItem(f *testing.F) {
	bands := fuzzBands(f)
	f.Add([]byte(`{"type":"Feature","id":"S2B_31UDS_20180705","properties":{"datetime":"2018-07-05T10:56:31Z"},` +
		`"assets":{"red":{"href":"B04.tif"},"nir":{"href":"B08.tif"},"scl":{"href":"SCL.tif"}}}`))
	f.Add([]byte(`{"type":"Feature","id":"huge","properties":{"datetime":"2024-06-01T00:00:00Z"},` +
		`"assets":{"B04_10m":{"href":"huge/B04.tif"},"B08_10m":{"href":"huge/B08.tif"},"SCL_20m":{"href":"huge/SCL.tif"}}}`))
	// Landsat and Sentinel-1 RTC items (their own key and mask rules).
	f.Add([]byte(`{"type":"Feature","id":"LC08_L2SP_199025_20180705_02_T1","collection":"landsat-c2-l2","properties":{"platform":"landsat-8","datetime":"2018-07-05T10:40:00Z"},` +
		`"assets":{"red":{"href":"B04.tif","raster:bands":[{"scale":2.75e-05,"offset":-0.2}]},"nir08":{"href":"B08.tif"},"qa_pixel":{"href":"SCL.tif"}}}`))
	f.Add([]byte(`{"type":"Feature","id":"S1A_rtc","collection":"sentinel-1-rtc","properties":{"platform":"SENTINEL-1A","datetime":"2018-07-05T17:30:00Z"},` +
		`"assets":{"vv":{"href":"B04.tif"},"vh":{"href":"B08.tif"}}}`))
	// The real item documents of Earth Search, Planetary Computer and CDSE.
	items := filepath.Join("..", "..", "shared", "data", "stac-items")
	if env := os.Getenv("CROPKIT_SHARED"); env != "" {
		items = filepath.Join(env, "data", "stac-items")
	}
	real, _ := filepath.Glob(filepath.Join(items, "*.json"))
	for _, p := range real {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, item []byte) {
		path := filepath.Join(t.TempDir(), "item.json")
		if err := os.WriteFile(path, item, 0o600); err != nil {
			t.Fatal(err)
		}
		open := func(_ context.Context, name string) (io.ReaderAt, error) {
			key := strings.TrimSuffix(filepath.Base(name), ".tif")
			if strings.Contains(name, "huge") {
				key = "huge"
			}
			b, ok := bands[key]
			if !ok {
				return nil, fmt.Errorf("no band %q", name)
			}
			return bytes.NewReader(b), nil
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		ctx := context.Background()
		s, err := OpenScene(ctx, path, SceneOptions{Open: open, Date: time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)})
		if err == nil {
			if field, ok := centreField(s.Grid()); ok {
				index := "ndvi"
				if s.Sensor().Radar() {
					index = "vh_vv"
				}
				_, _ = s.FieldProducts(ctx, field, []string{index}, nil)
			}
			_ = s.Close()
		}
		runtime.ReadMemStats(&after)
		if d := after.TotalAlloc - before.TotalAlloc; d > 64<<20 {
			t.Fatalf("%d MiB allocated for a %d-byte item", d>>20, len(item))
		}
	})
}

// centreField is a field of at most 316 m a side at the centre of g, in lon/lat.
func centreField(g geo.Grid) (orb.MultiPolygon, bool) {
	tr, err := crs.New(g.EPSG, 4326)
	if err != nil {
		return nil, false
	}
	w, h := float64(g.Cols)*g.DX, float64(g.Rows)*g.DY
	side := min(316, 0.6*w, 0.6*h)
	cx, cy := g.X0+w/2, g.Y0-h/2
	r := orb.Ring{{cx - side/2, cy - side/2}, {cx + side/2, cy - side/2}, {cx + side/2, cy + side/2}, {cx - side/2, cy + side/2}, {cx - side/2, cy - side/2}}
	mp, err := geo.Transform(orb.MultiPolygon{{r}}, tr)
	return mp, err == nil
}
