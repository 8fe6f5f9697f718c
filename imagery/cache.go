package imagery

import (
	"container/list"
	"context"
	"errors"
	"fmt"
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
// row-major. Through the scene's cache it reads whole tile-aligned blocks, so
// fields sharing a tile decode it once; without the cache it reads w directly.
func (s *Scene) readDN(ctx context.Context, b *band, w geo.Window) ([]float64, error) {
	// A band finer than the scene (a crafted SCL of centimetre pixels under
	// 10 m bands) has more pixels under the field than the scene grid says.
	if err := checkWindow(b.name, w, b.grid, s.maxPix); err != nil {
		return nil, err
	}
	out := make([]float64, w.Len())
	if s.cache == nil {
		r, err := b.file.ReadWindow(ctx, w)
		if err != nil {
			return nil, fmt.Errorf("read %s window %s: %w", b.name, w, err)
		}
		if err := copyRaster(out, w, r); err != nil {
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
			e, err := s.cache.get(ctx, k, typ, func(reuse *geotiff.Raster) (*geotiff.Raster, error) {
				return b.file.ReadWindowInto(ctx, blockWin, reuse)
			})
			if err == nil {
				err = copyRaster(out, w, e.r)
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
// (row-major over dstWin).
func copyRaster(dst []float64, dstWin geo.Window, r *geotiff.Raster) error {
	if r == nil {
		return fmt.Errorf("nil raster")
	}
	in := dstWin.Intersect(r.Window)
	if in.Empty() {
		return nil
	}
	n := r.Window.Len()
	var have int
	switch r.Type {
	case geotiff.Uint8:
		have = len(r.U8)
	case geotiff.Uint16:
		have = len(r.U16)
	case geotiff.Int16:
		have = len(r.I16)
	case geotiff.Float32:
		have = len(r.F32)
	case geotiff.Uint32:
		have = len(r.U32)
	case geotiff.Int32:
		have = len(r.I32)
	case geotiff.Float64:
		have = len(r.F64)
	default:
		return fmt.Errorf("unsupported sample type %v", r.Type)
	}
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
	}
	return nil
}

// rasterBytes is the memory a decoded raster holds.
func rasterBytes(r *geotiff.Raster) int64 {
	if r == nil {
		return 0
	}
	return int64(r.Len() * r.Type.Size())
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
type tileCache struct {
	mu      sync.Mutex
	budget  int64
	used    int64
	entries map[blockKey]*cacheEntry
	lru     *list.List // of *cacheEntry, front = most recent
	free    []*geotiff.Raster
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
	// refs counts the callers between get and release; evicted marks an
	// entry gone from the cache whose raster is recycled at the last release.
	refs    int
	evicted bool
}

func newTileCache(budget int64) *tileCache {
	return &tileCache{budget: budget, entries: make(map[blockKey]*cacheEntry), lru: list.New()}
}

// get returns block k's entry, decoding it with load on a miss; load gets
// a recycled raster of type t to decode into, or nil. The caller reads
// e.r, then calls release(e).
func (c *tileCache) get(ctx context.Context, k blockKey, t geotiff.DataType, load func(reuse *geotiff.Raster) (*geotiff.Raster, error)) (*cacheEntry, error) {
	for {
		e, err := c.getOnce(ctx, k, t, load)
		// Another caller's load may have failed because its context ended:
		// that is no reason to fail this caller, whose context is alive.
		if err != nil && ctx.Err() == nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
			continue
		}
		return e, err
	}
}

func (c *tileCache) getOnce(ctx context.Context, k blockKey, t geotiff.DataType, load func(reuse *geotiff.Raster) (*geotiff.Raster, error)) (*cacheEntry, error) {
	c.mu.Lock()
	if e, ok := c.entries[k]; ok {
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
		return e, nil
	}
	e := &cacheEntry{key: k, ready: make(chan struct{}), refs: 1}
	c.entries[k] = e
	reuse := c.takeFree(t)
	c.mu.Unlock()

	r, err := load(reuse)

	// Settle the entry before waking waiters, so a waiter that retries after
	// a failure never finds the failed entry again.
	c.mu.Lock()
	e.r, e.err = r, err
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
			old := c.lru.Back().Value.(*cacheEntry)
			c.lru.Remove(old.elem)
			delete(c.entries, old.key)
			c.used -= old.size
			old.evicted = true
			if old.refs == 0 {
				c.recycle(old.r)
				old.r = nil
			}
		}
	}
	c.mu.Unlock()
	close(e.ready)
	if err != nil {
		return nil, err
	}
	return e, nil
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
