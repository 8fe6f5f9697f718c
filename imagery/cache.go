package imagery

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/imagery/geotiff"
	"github.com/cropkit/cropkit/internal/panicgroup"
)

// defaultBlock is the cache's block size when the file does not tell its
// tile size: the COG default.
const defaultBlock = 512

// readDN returns the samples of window w (inside b's grid) as float64,
// row-major, through cv when not nil (each row converted as it is copied,
// while it is in cache). Through the scene's cache it reads whole
// tile-aligned blocks, so fields sharing a tile decode it once; without the
// cache it reads w directly.
func (s *Scene) readDN(ctx context.Context, b *band, w geo.Window, cv *dnConverter) ([]float64, error) {
	// A band finer than the scene (a crafted SCL of centimetre pixels under
	// 10 m bands) has more pixels under the field than the scene grid says.
	if err := checkWindow(b.name, w, b.grid, s.maxPix); err != nil {
		return nil, err
	}
	out := s.floats.get(w.Len()) // every sample is written below
	if s.cache == nil {
		r, err := b.file.ReadWindow(ctx, w)
		if err != nil {
			return nil, fmt.Errorf("read %s window %s: %w", b.name, w, err)
		}
		if err := copyRaster(out, w, r, cv); err != nil {
			return nil, fmt.Errorf("read %s window %s: %w", b.name, w, err)
		}
		return out, nil
	}
	bw, bh := blockSize(b.file)
	full := b.grid.Full()
	var blocks []blockKey
	for by := w.Row / bh; by*bh < w.Row+w.Rows; by++ {
		for bx := w.Col / bw; bx*bw < w.Col+w.Cols; bx++ {
			blocks = append(blocks, blockKey{b, bx, by})
		}
	}
	// A large field spans many blocks: they decode on all cores, each
	// into its own part of out; the first failure in block order is
	// reported.
	typ := geotiff.Uint16
	if im := b.file.Image(); im != nil {
		typ = im.Type()
	}
	errs := make([]error, len(blocks))
	var g panicgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, k := range blocks {
		g.Go(func() {
			blockWin := geo.Window{Col: k.bx * bw, Row: k.by * bh, Cols: bw, Rows: bh}.Intersect(full)
			// The rows of the block, from its top, that this read needs.
			need := min(w.Row+w.Rows, blockWin.Row+blockWin.Rows) - blockWin.Row
			e, err := s.cache.get(ctx, k, typ, need, func(reuse *geotiff.Raster, rows int) (*geotiff.Raster, error) {
				if reuse == nil {
					// Room for the whole block, so that the raster can be
					// recycled for any other block.
					reuse = geotiff.NewRaster(blockWin, typ)
				}
				top := blockWin
				top.Rows = min(rows, blockWin.Rows)
				return b.file.ReadWindowInto(ctx, top, reuse)
			})
			if err == nil {
				err = copyRaster(out, w, e.r, cv)
				s.cache.release(e)
			}
			if err != nil {
				errs[i] = fmt.Errorf("read %s block %s: %w", b.name, blockWin, err)
			}
		})
	}
	g.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// blockSize is the file's tile (or strip) size: caching whole tiles means a
// field reads exactly the tiles under it.
func blockSize(f *geotiff.File) (int, int) {
	if im := f.Image(); im != nil {
		if w, h := im.BlockSize(); w > 0 && h > 0 {
			return w, h
		}
	}
	return defaultBlock, defaultBlock
}

// copyRaster copies the part of r that lies in window dstWin into dst
// (row-major over dstWin), through cv when not nil.
func copyRaster(dst []float64, dstWin geo.Window, r *geotiff.Raster, cv *dnConverter) error {
	if r == nil {
		return fmt.Errorf("nil raster")
	}
	in := dstWin.Intersect(r.Window)
	if in.Empty() {
		return nil
	}
	n := r.Window.Len()
	if r.Type.Size() == 0 {
		return fmt.Errorf("unsupported sample type %v", r.Type)
	}
	have, _ := r.Held()
	if have < n {
		return fmt.Errorf("raster holds %d samples for window %s", have, r.Window)
	}
	for row := in.Row; row < in.Row+in.Rows; row++ {
		d := dst[(row-dstWin.Row)*dstWin.Cols+(in.Col-dstWin.Col):][:in.Cols]
		off := (row-r.Window.Row)*r.Window.Cols + (in.Col - r.Window.Col)
		switch r.Type {
		case geotiff.Uint8:
			for i, v := range r.U8[off : off+in.Cols] {
				d[i] = float64(v)
			}
		case geotiff.Uint16:
			for i, v := range r.U16[off : off+in.Cols] {
				d[i] = float64(v)
			}
		case geotiff.Int16:
			for i, v := range r.I16[off : off+in.Cols] {
				d[i] = float64(v)
			}
		case geotiff.Float32:
			for i, v := range r.F32[off : off+in.Cols] {
				d[i] = float64(v)
			}
		default:
			for i := range d {
				d[i] = r.At(off + i)
			}
		}
		if cv != nil {
			cv.convert(d, d)
		}
	}
	return nil
}

// rasterBytes is the memory a decoded raster holds: its capacity, which a
// block decoded only down to its planned rows does not use up.
func rasterBytes(r *geotiff.Raster) int64 {
	if r == nil {
		return 0
	}
	_, c := r.Held()
	return int64(max(c, r.Len()) * r.Type.Size())
}

type blockKey struct {
	b      *band
	bx, by int
}

// tileCache keeps recently decoded blocks up to a byte budget (least recently
// used first out). Concurrent requests for the same block decode it once.
// The rasters of evicted blocks nobody reads any more are decoded into
// again (up to maxFreeRasters of them): a scene read then allocates and
// zeroes its cache's worth of tiles, not every tile it decodes.
//
// A block is decoded from its first row down to the last row a read needs
// (DEFLATE and LZW decode a tile from its start; the rows below are not
// decoded at all): as deep as the planned reads reach (setPlan), else
// whole. A read reaching deeper than an entry holds decodes the block
// again, deeper.
type tileCache struct {
	mu      sync.Mutex
	budget  int64
	used    int64
	entries map[blockKey]*cacheEntry
	lru     *list.List // of *cacheEntry, front = most recent
	free    []*geotiff.Raster
	plan    readPlan
}

// readPlan is what the cache knows of the reads to come (Scene.PlanFields):
// their windows on the scene's grid and, per band, built on the band's
// first decode, the rows of each block they reach.
type readPlan struct {
	grid    geo.Grid
	windows []geo.Window // nil: no plan
	rows    map[*band]map[[2]int]int
}

// maxFreeRasters bounds the evicted rasters kept for reuse (8 × 512 KiB
// for 512² uint16 tiles).
const maxFreeRasters = 8

type cacheEntry struct {
	key   blockKey
	ready chan struct{}
	r     *geotiff.Raster
	err   error
	elem  *list.Element
	size  int64
	// rows is how many rows of the block r holds, from its top; settled
	// is set (c.mu held) when the load has finished.
	rows    int
	settled bool
	// refs counts the callers between get and release; evicted marks an
	// entry gone from the cache whose raster is recycled at the last release.
	refs    int
	evicted bool
}

func newTileCache(budget int64) *tileCache {
	return &tileCache{budget: budget, entries: make(map[blockKey]*cacheEntry), lru: list.New()}
}

// errShortEntry tells get that the entry it waited for holds fewer rows
// than the caller needs: it looks again and decodes the block deeper.
var errShortEntry = errors.New("cached block holds too few rows")

// get returns block k's entry holding at least the block's first need rows,
// decoding it with load on a miss; load gets a recycled raster of type t to
// decode into, or nil, and the rows to decode from the block's top (at
// least need; it may decode fewer only when the block has fewer). The
// caller reads e.r, then calls release(e).
func (c *tileCache) get(ctx context.Context, k blockKey, t geotiff.DataType, need int, load func(reuse *geotiff.Raster, rows int) (*geotiff.Raster, error)) (*cacheEntry, error) {
	for {
		e, err := c.getOnce(ctx, k, t, need, load)
		// Another caller's load may have failed because its context ended:
		// that is no reason to fail this caller, whose context is alive.
		if err != nil && ctx.Err() == nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errShortEntry)) {
			continue
		}
		return e, err
	}
}

func (c *tileCache) getOnce(ctx context.Context, k blockKey, t geotiff.DataType, need int, load func(reuse *geotiff.Raster, rows int) (*geotiff.Raster, error)) (*cacheEntry, error) {
	c.mu.Lock()
	e, ok := c.entries[k]
	if ok && e.settled && e.rows < need {
		// Decoded for shallower reads: out with it, and decode deeper.
		c.evict(e)
		ok = false
	}
	if ok {
		if e.elem != nil {
			c.lru.MoveToFront(e.elem)
		}
		e.refs++
		c.mu.Unlock()
		select {
		case <-e.ready:
		case <-ctx.Done():
			c.release(e)
			return nil, ctx.Err()
		}
		if e.err != nil {
			c.release(e)
			return nil, e.err
		}
		if e.rows < need {
			c.release(e)
			return nil, errShortEntry
		}
		return e, nil
	}
	e = &cacheEntry{key: k, ready: make(chan struct{}), refs: 1}
	c.entries[k] = e
	reuse := c.takeFree(t)
	rows := need
	if planned := c.plannedRows(k); planned == 0 {
		rows = math.MaxInt // no plan for this block: all of it
	} else {
		rows = max(rows, planned)
	}
	c.mu.Unlock()

	r, err := load(reuse, rows)

	// Settle the entry before waking waiters, so a waiter that retries after
	// a failure never finds the failed entry again.
	c.mu.Lock()
	e.r, e.err, e.settled = r, err, true
	if err == nil {
		e.rows = r.Window.Rows
	}
	if err != nil {
		// Do not keep failures (a cancelled context, a network error): the next caller retries.
		if c.entries[k] == e {
			delete(c.entries, k)
		}
		e.refs--
		if reuse != nil && r != reuse {
			c.recycle(reuse) // nobody else has seen it
		}
	} else {
		e.size = rasterBytes(r)
		e.elem = c.lru.PushFront(e)
		c.used += e.size
		for c.used > c.budget && c.lru.Len() > 1 {
			c.evict(c.lru.Back().Value.(*cacheEntry))
		}
	}
	c.mu.Unlock()
	close(e.ready)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// evict removes the settled entry e from the cache; its raster is recycled
// once nobody reads it (c.mu held).
func (c *tileCache) evict(e *cacheEntry) {
	if e.elem != nil {
		c.lru.Remove(e.elem)
		e.elem = nil
		c.used -= e.size
	}
	if c.entries[e.key] == e {
		delete(c.entries, e.key)
	}
	e.evicted = true
	if e.refs == 0 {
		c.recycle(e.r)
		e.r = nil
	}
}

// setPlan records the windows (on grid, the scene's) of the reads to come,
// replacing any earlier plan.
func (c *tileCache) setPlan(grid geo.Grid, windows []geo.Window) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.plan = readPlan{grid: grid, windows: windows, rows: map[*band]map[[2]int]int{}}
}

// plannedRows is how many rows of block k, from its top, the planned reads
// reach: 0 when no planned read touches it (c.mu held). A band's blocks
// are worked out on its first decode: the band's file is open by then.
func (c *tileCache) plannedRows(k blockKey) int {
	if c.plan.windows == nil {
		return 0
	}
	byBlock, ok := c.plan.rows[k.b]
	if !ok {
		byBlock = map[[2]int]int{}
		bw, bh := blockSize(k.b.file)
		for _, w := range c.plan.windows {
			// The band pixels a read of w takes (readScaled, readMask).
			src := newResampling(c.plan.grid.Sub(w), k.b.grid).src
			if src.Empty() {
				continue
			}
			for by := src.Row / bh; by*bh < src.Row+src.Rows; by++ {
				reach := min(src.Row+src.Rows-by*bh, bh)
				for bx := src.Col / bw; bx*bw < src.Col+src.Cols; bx++ {
					byBlock[[2]int{bx, by}] = max(byBlock[[2]int{bx, by}], reach)
				}
			}
		}
		c.plan.rows[k.b] = byBlock
	}
	return byBlock[[2]int{k.bx, k.by}]
}

// release ends a get's use of e.r: the raster of an evicted entry is
// recycled once nobody reads it.
func (c *tileCache) release(e *cacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e.refs--
	if e.refs == 0 && e.evicted && e.r != nil {
		c.recycle(e.r)
		e.r = nil
	}
}

// recycle keeps r for a later load (c.mu held).
func (c *tileCache) recycle(r *geotiff.Raster) {
	if r != nil && len(c.free) < maxFreeRasters {
		c.free = append(c.free, r)
	}
}

// takeFree removes and returns a recycled raster of type t, or nil (c.mu held).
func (c *tileCache) takeFree(t geotiff.DataType) *geotiff.Raster {
	for i := len(c.free) - 1; i >= 0; i-- {
		if r := c.free[i]; r.Type == t {
			c.free = append(c.free[:i], c.free[i+1:]...)
			return r
		}
	}
	return nil
}

// floatPool hands out float64 arrays for the temporary arrays of field reads
// (a band's samples on its own grid and on the scene's) and takes them back
// once a read's products are computed (ProjectedFieldProducts): a field's
// bands are about 50 bytes per pixel that would otherwise be allocated and
// zeroed anew for every field. The zero value is ready to use.
type floatPool struct {
	p sync.Pool // of *[]float64
}

// get returns an array of n values, holding anything: the caller writes
// every one. A nil pool allocates.
func (fp *floatPool) get(n int) []float64 {
	if fp == nil {
		return make([]float64, n)
	}
	if v, ok := fp.p.Get().(*[]float64); ok {
		if cap(*v) >= n {
			return (*v)[:n]
		}
		fp.p.Put(v) // for a smaller read
	}
	return make([]float64, n)
}

// maxPooledFloats bounds the arrays a floatPool keeps (1 MiB): what a pooled
// array spares is its allocation and zeroing, which matters for the many
// small fields of an index run, not for a large field's read, whose pixels
// cost far more — and a kept array is memory held until two collections
// later (a 10,000 ha field's bands: 8 MB each).
const maxPooledFloats = 1 << 17

// put takes back an array nobody reads any more (a nil pool drops it).
func (fp *floatPool) put(v []float64) {
	if c := cap(v); fp != nil && c > 0 && c <= maxPooledFloats {
		fp.p.Put(&v)
	}
}
