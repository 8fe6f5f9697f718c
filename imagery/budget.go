package imagery

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/cropkit/cropkit/geo"
)

// DefaultMaxFieldPixels caps the pixels of one field window when
// SceneOptions.MaxFieldPixels is 0: 12 M pixels is 120,000 ha at 10 m, so a
// field whose lon/lat bounding box is within the server's 100,000 ha extent
// cap still reads after projection (a box rotated by the UTM grid
// convergence grows by up to about 10 %), while one field's arrays (about
// 42 bytes a pixel for a two-band index, see fieldBytes) stay near 500 MB.
const DefaultMaxFieldPixels = 12_000_000

// DefaultBudgetBytes is the memory budget a scene shares between its
// concurrent field reads when SceneOptions.Budget is nil.
const DefaultBudgetBytes = 768 << 20

// ErrBudget is matched (errors.Is) by every *BudgetError.
var ErrBudget = errors.New("memory budget exceeded")

// BudgetError reports a read refused, before allocating, because it would
// exceed a limit: the pixels of a field window (in the pixels of the scene,
// or of one band when that band is finer), or a memory budget in bytes.
type BudgetError struct {
	// What is refused: "field window", "band SCL window" or "memory budget".
	What string
	// Window is the refused window in the grid of PixelSize (zero for a
	// memory budget).
	Window geo.Window
	// PixelSize is the pixel side of that grid, in CRS units (0 for a memory budget).
	PixelSize float64
	// Need is the pixels (or, for a memory budget, bytes) the read needs;
	// Limit what is allowed.
	Need, Limit int64
	// Option is the setting that holds Limit.
	Option string
}

func (e *BudgetError) Error() string {
	if e.PixelSize == 0 {
		return fmt.Sprintf("%s: a field read needs %d bytes, over the limit of %d (%s)", e.What, e.Need, e.Limit, e.Option)
	}
	return fmt.Sprintf("%s of %dx%d pixels of %g: %d pixels, over the limit of %d (%s)",
		e.What, e.Window.Cols, e.Window.Rows, e.PixelSize, e.Need, e.Limit, e.Option)
}

// Is matches ErrBudget.
func (e *BudgetError) Is(target error) bool { return target == ErrBudget }

// checkWindow refuses a window of more than limit pixels (limit ≤ 0: no
// limit): of the scene's grid when band is "", else of that band's. The
// message is built only on failure: this runs for every band of every field.
func checkWindow(band string, w geo.Window, g geo.Grid, limit int64) error {
	if limit <= 0 {
		return nil
	}
	if n := int64(w.Cols) * int64(w.Rows); n > limit {
		what := "field window"
		if band != "" {
			what = "band " + band + " window"
		}
		return &BudgetError{What: what, Window: w, PixelSize: g.DX, Need: n, Limit: limit, Option: "SceneOptions.MaxFieldPixels"}
	}
	return nil
}

// fieldBytes estimates the peak memory of one field read of pixels
// pixels: the in-field and clear masks (1 byte each), one float64 array per
// band, one float64 staging array for a resampled band or the mask, and per
// index its values plus the clear values its statistics select from.
func fieldBytes(pixels int64, bands, indices int) int64 {
	perPixel := int64(2 + 8*bands + 8 + 8*indices)
	if indices > 0 {
		perPixel += 8
	}
	return pixels * perPixel
}

// Budget is a memory budget in bytes shared by concurrent field reads: each
// read reserves its estimated peak before allocating and waits while the
// others hold too much, so N workers reading large fields together stay
// within it. A read needing more than the whole budget fails at once with a
// *BudgetError. Share one Budget between scenes (SceneOptions.Budget) to
// bound a whole process or one ingestion. A Budget is safe for concurrent use.
type Budget struct {
	total int64

	mu      sync.Mutex
	used    int64
	changed chan struct{} // closed and replaced on every release
}

// NewBudget returns a budget of total bytes.
func NewBudget(total int64) *Budget {
	return &Budget{total: total, changed: make(chan struct{})}
}

// Total is the budget's size in bytes.
func (b *Budget) Total() int64 { return b.total }

// Used is the bytes currently reserved.
func (b *Budget) Used() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Acquire reserves n bytes, waiting until they are free or ctx ends. The
// returned release gives them back; calling it more than once is harmless.
// Waiters are not served in order: a large reservation may wait while
// smaller ones pass, which keeps the budget busy.
func (b *Budget) Acquire(ctx context.Context, n int64) (release func(), err error) {
	if n > b.total {
		return nil, &BudgetError{What: "memory budget", Need: n, Limit: b.total, Option: "SceneOptions.Budget"}
	}
	for {
		b.mu.Lock()
		if b.used+n <= b.total {
			b.used += n
			b.mu.Unlock()
			var once sync.Once
			return func() { once.Do(func() { b.release(n) }) }, nil
		}
		ch := b.changed
		b.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for %d bytes of memory budget: %w", n, ctx.Err())
		}
	}
}

func (b *Budget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
}
