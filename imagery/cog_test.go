package imagery

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/imagery/geotiff"
	"github.com/cropkit/cropkit/imagery/geotiff/geotifftest"
)

// A full Sentinel-2 tile: 10980² at 10 m, 5490² at 20 m, 512² COG tiles.
var (
	tile10 = geo.Grid{EPSG: 32633, X0: 300000, Y0: 5100000, DX: 10, DY: 10, Cols: 10980, Rows: 10980}
	tile20 = geo.Grid{EPSG: 32633, X0: 300000, Y0: 5100000, DX: 20, DY: 20, Cols: 5490, Rows: 5490}
)

// writeTileScene writes B04, B08 (10 m) and SCL (20 m) COGs of a full tile
// into a folder named by date; the files are small because every tile repeats.
func writeTileScene(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "2023-07-01")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, b := range []struct {
		name string
		g    geo.Grid
		px   func(col, row int) uint16
	}{
		{"B04", tile10, func(col, row int) uint16 { return uint16(500 + col%64) }},
		{"B08", tile10, func(col, row int) uint16 { return uint16(3000 + row%32) }},
		{"SCL", tile20, func(col, row int) uint16 { return 4 }},
	} {
		f, err := os.Create(filepath.Join(dir, b.name+".tif"))
		require.NoError(t, err)
		require.NoError(t, geotifftest.WriteRepeatedCOG(f, b.g, 512, b.px))
		require.NoError(t, f.Close())
	}
	return dir
}

// countingOpener opens files through CountingReaderAt and keeps them by base name.
type countingOpener struct {
	mu    sync.Mutex
	files map[string]*geotifftest.CountingReaderAt
}

type countingFile struct {
	*geotifftest.CountingReaderAt
	f *os.File
}

func (c countingFile) Close() error { return c.f.Close() }

func (o *countingOpener) open(ctx context.Context, name string) (io.ReaderAt, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	c := &geotifftest.CountingReaderAt{R: f}
	o.mu.Lock()
	o.files[filepath.Base(name)] = c
	o.mu.Unlock()
	return countingFile{c, f}, nil
}

// tileBytes is the size of one stored tile of a repeated COG: what reading a
// one-pixel window costs after the header.
func tileBytes(t testing.TB, path string) int64 {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	c := &geotifftest.CountingReaderAt{R: f}
	gf, err := geotiff.Open(c)
	require.NoError(t, err)
	c.Reset()
	_, err = gf.ReadWindow(context.Background(), geo.Window{Cols: 1, Rows: 1})
	require.NoError(t, err)
	return c.Bytes()
}

// squareField is a field of (cols×10 m)² with its north-west pixel at (col, row) of tile10.
func squareField(t testing.TB, col, row, size int) orb.MultiPolygon {
	x0 := tile10.X0 + float64(col)*10 + 1
	y0 := tile10.Y0 - float64(row)*10 - 1
	x1, y1 := x0+float64(size)*10-2, y0-float64(size)*10+2
	return utm33(t, orb.Ring{{x0, y0}, {x1, y0}, {x1, y1}, {x0, y1}, {x0, y0}})
}

// TestReadOnlyTilesUnderField: stats for a 100 ha field of a 10980² COG read
// exactly the tiles under the field, in every band, with and without the cache.
func TestReadOnlyTilesUnderField(t *testing.T) {
	dir := writeTileScene(t)
	// Each band repeats one tile, so every tile of a band has the same size.
	per := tileBytes(t, filepath.Join(dir, "B04.tif"))
	perB08 := tileBytes(t, filepath.Join(dir, "B08.tif"))
	perSCL := tileBytes(t, filepath.Join(dir, "SCL.tif"))
	require.Positive(t, per)
	// 100×100 px at col 480, row 490: 10 m tiles (0..1)×(0..1); 20 m pixels 240..289 × 245..294: SCL tile (0, 0).
	field := squareField(t, 480, 490, 100)
	for _, cache := range []int64{0, -1} {
		o := &countingOpener{files: map[string]*geotifftest.CountingReaderAt{}}
		s, err := OpenScene(context.Background(), dir, SceneOptions{Open: o.open, CacheBytes: cache})
		require.NoError(t, err)
		for _, c := range o.files {
			c.Reset() // headers are read at open
		}
		ps, err := s.FieldProducts(context.Background(), field, []string{"ndvi"}, nil)
		require.NoError(t, err)
		assert.Equal(t, 10000, ps[0].Stats.Num)
		assert.Equal(t, 100, ps[0].Grid.Cols)
		assert.Equal(t, 4*per, o.files["B04.tif"].Bytes(), "cache %d: B04 reads 4 tiles", cache)
		assert.Equal(t, 4*perB08, o.files["B08.tif"].Bytes(), "cache %d: B08 reads 4 tiles", cache)
		assert.Equal(t, perSCL, o.files["SCL.tif"].Bytes(), "cache %d: SCL reads 1 tile", cache)

		// A second field on the same tiles: nothing more read through the cache.
		for _, c := range o.files {
			c.Reset()
		}
		_, err = s.FieldProducts(context.Background(), squareField(t, 520, 520, 50), []string{"ndvi"}, nil)
		require.NoError(t, err)
		if cache == 0 {
			assert.Zero(t, o.files["B04.tif"].Bytes(), "served from the tile cache")
		} else {
			assert.Equal(t, per, o.files["B04.tif"].Bytes(), "uncached: the one tile under the field")
		}
		require.NoError(t, s.Close())
	}
}

func utm33(t testing.TB, ring orb.Ring) orb.MultiPolygon {
	t.Helper()
	return toLonLat(t, 32633, ring)
}

func TestTileCacheEviction(t *testing.T) {
	c := newTileCache(3 * 512) // three 256-sample uint16 blocks
	loads := 0
	load := func(*geotiff.Raster, int) (*geotiff.Raster, error) {
		loads++
		return geotiff.NewRaster(geo.Window{Cols: 16, Rows: 16}, geotiff.Uint16), nil
	}
	b := &band{name: "B04"}
	get := func(bx int) {
		e, err := c.get(context.Background(), blockKey{b, bx, 0}, geotiff.Uint16, 16, load)
		require.NoError(t, err)
		c.release(e)
	}
	for i := 0; i < 4; i++ {
		get(i)
	}
	assert.Equal(t, 4, loads)
	assert.Equal(t, int64(3*512), c.used)
	get(3) // most recent: kept
	assert.Equal(t, 4, loads)
	get(0) // evicted first
	assert.Equal(t, 5, loads)
}

// The raster of an evicted block is decoded into again once nobody reads
// it — and never while a reader still holds it.
func TestTileCacheRecyclesEvictedRasters(t *testing.T) {
	c := newTileCache(2 * 512) // two 256-sample uint16 blocks
	b := &band{name: "B04"}
	var got []*geotiff.Raster // the reuse each load was offered
	load := func(reuse *geotiff.Raster, _ int) (*geotiff.Raster, error) {
		got = append(got, reuse)
		if reuse != nil {
			return reuse, nil
		}
		return geotiff.NewRaster(geo.Window{Cols: 16, Rows: 16}, geotiff.Uint16), nil
	}
	get := func(bx int) *cacheEntry {
		e, err := c.get(context.Background(), blockKey{b, bx, 0}, geotiff.Uint16, 16, load)
		require.NoError(t, err)
		return e
	}
	held := get(0) // read, not released
	c.release(get(1))
	c.release(get(2)) // evicts block 0, still held: not recycled
	require.Len(t, got, 3)
	assert.Nil(t, got[2])
	c.release(get(3)) // evicts block 1, released: recycled into block 3
	require.Len(t, got, 4)
	assert.Nil(t, got[3], "block 1 is evicted only after block 3 is loaded")
	c.release(get(4)) // evicts block 2: block 1's raster is offered
	require.Len(t, got, 5)
	require.NotNil(t, got[4])
	assert.NotSame(t, held.r, got[4], "a held raster is never offered")
	block0 := held.r
	c.release(held) // block 0's raster: recycled at its last release
	assert.Contains(t, c.free, block0)
	// A raster of another sample type is not offered for uint8 blocks.
	e, err := c.get(context.Background(), blockKey{b, 9, 0}, geotiff.Uint8, 16, load)
	require.NoError(t, err)
	c.release(e)
	assert.Nil(t, got[len(got)-1])
}

func BenchmarkReadField100ha(b *testing.B) {
	dir := writeTileScene(b)
	field := squareField(b, 480, 490, 100)
	for _, bc := range []struct {
		name  string
		cache int64
	}{{"uncached", -1}, {"cached", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := OpenScene(context.Background(), dir, SceneOptions{CacheBytes: bc.cache})
			require.NoError(b, err)
			defer s.Close()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.ReadField(context.Background(), field, []string{"B04", "B08"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestConcurrentFieldsShareCache reads neighbouring fields from many
// goroutines (run with -race): every result equals the sequential one.
func TestConcurrentFieldsShareCache(t *testing.T) {
	dir := writeTileScene(t)
	s, err := OpenScene(context.Background(), dir, SceneOptions{CacheBytes: 4 << 20}) // small: forces evictions
	require.NoError(t, err)
	defer s.Close()
	var fields []orb.MultiPolygon
	for i := 0; i < 16; i++ {
		fields = append(fields, squareField(t, 400+i*37, 450+(i%4)*90, 60))
	}
	want := make([]Stats, len(fields))
	for i, f := range fields {
		ps, err := s.FieldProducts(context.Background(), f, []string{"ndvi"}, nil)
		require.NoError(t, err)
		want[i] = ps[0].Stats
	}
	var wg sync.WaitGroup
	got := make([]Stats, len(fields))
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(fields); i += 4 {
				ps, err := s.FieldProducts(context.Background(), fields[i], []string{"ndvi"}, nil)
				if err != nil {
					t.Error(err)
					return
				}
				got[i] = ps[0].Stats
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, want, got)
	assert.Equal(t, 3600, want[0].Num)
}

// BenchmarkPeerTileField100ha reads and computes ndvi, ndre, ndwi, evi for
// the peers' 100 ha field of their real-size 10980² COG tile (DEFLATE +
// predictor, realistic compression), without the tile cache: the cost of one
// field in a one-off request. Skipped when the peers' inputs are absent
// (see ../shared/bench/peers/README.md; PEERS_DATA overrides /tmp/peers-data).
func BenchmarkPeerTileField100ha(b *testing.B) {
	dir := os.Getenv("PEERS_DATA")
	if dir == "" {
		dir = "/tmp/peers-data"
	}
	dir = filepath.Join(dir, "tile")
	data, err := os.ReadFile(filepath.Join(dir, "field_100ha.geojson"))
	if err != nil {
		b.Skipf("peers' inputs absent: %v", err)
	}
	feats, err := geo.ReadFeatures(data)
	require.NoError(b, err)
	s, err := OpenScene(context.Background(), dir, SceneOptions{CacheBytes: -1, Date: time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)})
	require.NoError(b, err)
	defer s.Close()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.FieldProducts(context.Background(), feats[0].Geometry, []string{"ndvi", "ndre", "ndwi", "evi"}, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// TestTileCacheCancelledLoader: when the caller loading a block is cancelled,
// a waiter with a live context loads it itself instead of failing.
func TestTileCacheCancelledLoader(t *testing.T) {
	c := newTileCache(1 << 20)
	k := blockKey{&band{name: "B04"}, 0, 0}
	ctx1, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	done1 := make(chan error)
	go func() {
		_, err := c.get(ctx1, k, geotiff.Uint16, 4, func(*geotiff.Raster, int) (*geotiff.Raster, error) {
			close(started)
			<-ctx1.Done()
			return nil, ctx1.Err()
		})
		done1 <- err
	}()
	<-started
	done2 := make(chan error)
	go func() {
		e, err := c.get(context.Background(), k, geotiff.Uint16, 4, func(*geotiff.Raster, int) (*geotiff.Raster, error) {
			return geotiff.NewRaster(geo.Window{Cols: 4, Rows: 4}, geotiff.Uint16), nil
		})
		if err == nil {
			if e.r.Window.Cols != 4 {
				err = io.ErrUnexpectedEOF
			}
			c.release(e)
		}
		done2 <- err
	}()
	cancel()
	assert.ErrorIs(t, <-done1, context.Canceled)
	assert.NoError(t, <-done2)
}
