package imagery

import (
	"context"
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
