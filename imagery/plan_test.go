package imagery

import (
	"context"
	"math"
	"sort"
	"sync"
	"testing"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/imagery/geotiff"
)

// decodedRows is how many rows of a band's block the scene's cache holds
// (0: not cached).
func decodedRows(s *Scene, band string, bx, by int) int {
	s.cache.mu.Lock()
	defer s.cache.mu.Unlock()
	b := s.bands[band]
	if b == nil && s.mask != nil && s.mask.name == band {
		b = s.mask
	}
	if e, ok := s.cache.entries[blockKey{b, bx, by}]; ok {
		return e.rows
	}
	return 0
}

// TestPlanFieldsDecodesTilesOnlyAsDeepAsNeeded: with a plan, each tile is
// decoded from its top down to the deepest row a planned field needs, the
// statistics are those of whole tiles, and a field outside the plan that
// reaches deeper gets the block decoded again, deeper.
func TestPlanFieldsDecodesTilesOnlyAsDeepAsNeeded(t *testing.T) {
	dir := writeTileScene(t)
	// Two fields in 10 m tile (0, 0) (rows 0..511) ending at rows 140 and
	// 200; one in tile (1, 0) ending at row 60; a deeper one not planned.
	planned := []orb.MultiPolygon{squareField(t, 40, 100, 40), squareField(t, 200, 150, 50), squareField(t, 600, 20, 40)}
	deeper := squareField(t, 100, 400, 50) // rows 400..449 of tile (0, 0)

	ref, err := OpenScene(context.Background(), dir, SceneOptions{})
	require.NoError(t, err)
	defer ref.Close()
	s, err := OpenScene(context.Background(), dir, SceneOptions{})
	require.NoError(t, err)
	defer s.Close()
	s.PlanFields(planned)

	stats := func(s *Scene, f orb.MultiPolygon) []Stats {
		ps, err := s.FieldProducts(context.Background(), f, []string{"ndvi"}, nil)
		require.NoError(t, err)
		var out []Stats
		for _, p := range ps {
			out = append(out, p.Stats)
		}
		return out
	}
	for _, f := range planned {
		assert.Equal(t, stats(ref, f), stats(s, f))
	}
	// Tile (0, 0) down to row 200 (the second field's last row is 199);
	// tile (1, 0) to row 60; SCL (20 m) tile (0, 0) to row 100.
	assert.Equal(t, 200, decodedRows(s, "B04", 0, 0))
	assert.Equal(t, 200, decodedRows(s, "B08", 0, 0))
	assert.Equal(t, 60, decodedRows(s, "B04", 1, 0))
	assert.Equal(t, 100, decodedRows(s, "SCL", 0, 0))
	assert.Equal(t, 512, decodedRows(ref, "B04", 0, 0), "without a plan a tile decodes whole")

	assert.Equal(t, stats(ref, deeper), stats(s, deeper))
	assert.Equal(t, 450, decodedRows(s, "B04", 0, 0), "decoded again, as deep as the unplanned read needs")
	for _, f := range planned { // and the planned fields still read the same
		assert.Equal(t, stats(ref, f), stats(s, f))
	}
}

// TestTileCacheDecodesDeeperOnDemand: an entry holding fewer rows than a
// read needs is decoded again, deeper, also while other readers wait for
// or hold the shallow one (run with -race).
func TestTileCacheDecodesDeeperOnDemand(t *testing.T) {
	c := newTileCache(1 << 20)
	k := blockKey{&band{name: "B04"}, 0, 0}
	var mu sync.Mutex
	var loads []int
	load := func(reuse *geotiff.Raster, rows int) (*geotiff.Raster, error) {
		rows = min(rows, 64)
		mu.Lock()
		loads = append(loads, rows)
		mu.Unlock()
		r := geotiff.NewRaster(geo.Window{Cols: 64, Rows: rows}, geotiff.Uint16)
		for i := range r.U16 {
			r.U16[i] = uint16(i / 64) // the row number
		}
		return r, nil
	}
	get := func(need int) {
		e, err := c.get(context.Background(), k, geotiff.Uint16, need, load)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, e.rows, need)
		assert.Equal(t, uint16(need-1), e.r.U16[(need-1)*64])
		c.release(e)
	}
	get(10)
	get(5) // held already
	get(30)
	assert.Equal(t, []int{64}, loads, "no plan: the whole block, once")

	// With a plan (set directly: no band file here) reads decode to need.
	c2 := newTileCache(1 << 20)
	c2.plan.windows = []geo.Window{{}}
	c2.plan.rows = map[*band]map[[2]int]int{k.b: {{0, 0}: 12}}
	c, loads = c2, nil
	get(3)
	get(12)
	assert.Equal(t, []int{12}, loads, "decoded to the planned 12 rows once")
	get(40)
	assert.Equal(t, []int{12, 40}, loads)
	assert.Equal(t, int64(64*40*2), c.used, "the shallow entry's memory is given back")

	// Concurrent readers needing different depths all get enough rows.
	c3 := newTileCache(1 << 20)
	c3.plan = c2.plan
	c, loads = c3, nil
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() { get(1 + i*2) })
	}
	wg.Wait()
	sort.Ints(loads)
	assert.LessOrEqual(t, len(loads), 32)
	assert.Equal(t, 63, loads[len(loads)-1])
}

// TestProductPixelStates: pixels outside the field are NaN and not
// counted; masked pixels and pixels where one of the index's bands has no
// data count as masked (cloud cover); a non-finite index value is dropped
// without counting — the same whether the band has a state bit (the first
// six bands of a read) or is tested by value (beyond them).
func TestProductPixelStates(t *testing.T) {
	bands := []string{"B01", "B02", "B03", "B04", "B05", "B06", "B07"}
	nan := math.NaN()
	fr := &FieldRaster{
		Grid:        geo.Grid{Cols: 5, Rows: 1, DX: 10, DY: 10},
		InField:     []bool{false, true, true, true, true},
		Clear:       []bool{true, false, true, true, true},
		FieldPixels: 4,
		Bands:       map[string][]float64{},
	}
	for _, b := range bands {
		fr.Bands[b] = []float64{0.1, 0.1, 0.1, 0.1, 0.2}
	}
	fr.Bands["B07"][2] = nan // no data in the seventh band (no state bit)
	fr.Bands["B02"][3] = nan // no data in the second band
	sum := func(b [][]float64, out []float64) {
		for i := range out {
			out[i] = b[0][i] + b[1][i]
		}
	}
	ratio := func(b [][]float64, out []float64) {
		for i := range out {
			out[i] = b[0][i] / (b[1][i] - 0.1) // +Inf where b[1] = 0.1
		}
	}
	for _, tt := range []struct {
		name      string
		bands     []string
		compute   func(b [][]float64, out []float64)
		wantNum   int
		wantCloud float64 // percent of the 4 field pixels
		wantVals  []float64
	}{
		// pixel 1 masked, 2 no data in B07, 3 no data in B02, 4 fine
		{"seventh band", []string{"B07", "B05"}, sum, 2, 50, []float64{nan, nan, nan, 0.2, 0.4}},
		{"second band", []string{"B02", "B05"}, sum, 2, 50, []float64{nan, nan, 0.2, nan, 0.4}},
		{"infinite dropped, not masked", []string{"B05", "B03"}, ratio, 1, 25, []float64{nan, nan, nan, nan, 2}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ix := Index{Name: "x", Bands: tt.bands, Compute: tt.compute}
			for _, ps := range []pixelStates{fr.pixelStates(bands), fr.pixelStates(tt.bands)} {
				p, err := fr.product(ix, ps)
				require.NoError(t, err)
				assert.Equal(t, tt.wantNum, p.Stats.Num)
				assert.InDelta(t, tt.wantCloud, p.Stats.CloudCover, 1e-9)
				require.Len(t, p.Values, 5)
				for i, w := range tt.wantVals {
					if math.IsNaN(w) {
						assert.True(t, math.IsNaN(p.Values[i]), "pixel %d: %v", i, p.Values[i])
					} else {
						assert.InDelta(t, w, p.Values[i], 1e-12, "pixel %d", i)
					}
				}
			}
		})
	}
	// A raster whose flags do not match its grid is refused, not read past.
	bad := *fr
	bad.Clear = bad.Clear[:3]
	_, err := bad.Product(Index{Name: "x", Bands: []string{"B05", "B03"}, Compute: sum})
	require.Error(t, err)
}

// BenchmarkPlannedFields reads 40 small fields scattered over a 10980²
// COG, each in the upper part of its tiles, through a fresh scene per
// iteration (so every tile decodes): with a plan the tiles decode down to
// the fields' last rows only.
func BenchmarkPlannedFields(b *testing.B) {
	dir := writeTileScene(b)
	var fields []orb.MultiPolygon
	for i := range 40 {
		fields = append(fields, squareField(b, 100+(i%8)*1300, 60+(i/8)*2000, 40))
	}
	for _, planned := range []bool{false, true} {
		name := "unplanned"
		if planned {
			name = "planned"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				s, err := OpenScene(context.Background(), dir, SceneOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if planned {
					s.PlanFields(fields)
				}
				for _, f := range fields {
					if _, err := s.FieldProducts(context.Background(), f, []string{"ndvi"}, nil); err != nil {
						b.Fatal(err)
					}
				}
				s.Close()
			}
		})
	}
}
