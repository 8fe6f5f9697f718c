package archive

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"runtime"
	"slices"
	"sync"
	"time"
)

// Read caches: the hot reads of the HTTP API (who a token is, a field's
// summary, its usable products, small documents) answered from memory.
//
// Correctness across processes rests on the change generations of the
// store (Generations, kept by archive/store): every archive process bumps them right after it
// commits a change the caches depend on, and a cached entry is used only
// when the generation it was read under is the current one. "Current" is
// read from the store, but once per batch of requests rather than once per
// request: a caller waits for a generation read that began after it asked
// (freshness.current), so a change committed before a request arrives, by
// any process, is always seen, while 50 concurrent requests share one
// small query. A store that can tell without a query that nothing was
// committed since its last read (GenerationPeeker: SQLite's WAL index)
// spares the request even that wait. Entries also expire after cacheTTL,
// which bounds what a process that crashed between a commit and its bump
// could leave stale.
//
// Documents are keyed by their bundle, whose name changes with every
// re-ingestion (versioned names), so they need no generation at all.

const (
	// cacheTTL bounds the age of a cached token, field or product list.
	cacheTTL = 30 * time.Second
	// cacheEntries bounds each of the token, field and product caches.
	cacheEntries = 4096
	// cacheDocBytes bounds the documents kept, and cacheDocMax one document.
	cacheDocBytes = 64 << 20
	cacheDocMax   = 1 << 20
	// generationGap is the least time between two reads of the generations
	// under a steady stream of requests (manyWaiters or more per read).
	generationGap = 500 * time.Microsecond
	manyWaiters   = 8
	// generationReadTimeout bounds one read of the generations.
	generationReadTimeout = 5 * time.Second
)

// readCache is an archive's read caches; nil when its store keeps no
// change generations.
type readCache struct {
	store  GenerationStore
	peek   GenerationPeeker // nil when the store has no query-free check
	fresh  freshness
	tokens boundedMap[tokenKey, tokenEntry]
	fields boundedMap[fieldKey, fieldEntry]
	prods  boundedMap[prodKey, prodEntry]
	docs   docCache
}

// tokenKey is a token's SHA-256: the hash the store keeps, before its hex
// encoding (needed only to ask the store).
type tokenKey [sha256.Size]byte

type tokenEntry struct {
	user  User
	token Token
	gen   int64
	at    time.Time
}

type fieldKey struct {
	userID int64
	name   string
}

type fieldEntry struct {
	field Field
	gen   int64
	at    time.Time
}

type prodKey struct {
	fieldID       int64
	index, family string
}

type prodEntry struct {
	products []Product
	gen      int64
	at       time.Time
}

func newReadCache(st Store) *readCache {
	gs, ok := st.(GenerationStore)
	if !ok {
		return nil
	}
	c := &readCache{store: gs}
	c.peek, _ = st.(GenerationPeeker)
	c.fresh.gap = generationGap
	c.fresh.read = func() (Generations, error) {
		ctx, cancel := context.WithTimeout(context.Background(), generationReadTimeout)
		defer cancel()
		return gs.Generations(ctx)
	}
	c.tokens.init(cacheEntries)
	c.fields.init(cacheEntries)
	c.prods.init(cacheEntries)
	c.docs.init(cacheDocBytes)
	return c
}

// genKey carries, in a request's context, the generations read for it (Fresh).
type genKey struct{}

// Fresh returns ctx carrying the store's change generations as of now
// (read once, shared with the requests arriving meanwhile), so the cached
// reads of one request (authentication, field, products) all check
// against them instead of each waiting for its own. The server calls it
// once per request; without it each cached read checks by itself. ctx is
// returned unchanged when the archive caches nothing or the read fails
// (the reads then go to the store).
func (a *Archive) Fresh(ctx context.Context) context.Context {
	if a.cache == nil {
		return ctx
	}
	if _, ok := ctx.Value(genKey{}).(Generations); ok {
		return ctx
	}
	g, err := a.cache.now(ctx)
	if err != nil {
		return ctx
	}
	return context.WithValue(ctx, genKey{}, g)
}

// now is the store's generations as of now: from the store's query-free
// check when it can tell nothing changed, else from a shared read that
// began after the call (freshness).
func (c *readCache) now(ctx context.Context) (Generations, error) {
	if c.peek != nil {
		if g, ok := c.peek.UnchangedGenerations(); ok {
			return g, nil
		}
	}
	return c.fresh.current(ctx)
}

// current is the generations to check cached entries against for ctx
// (false: do not use the caches).
func (c *readCache) current(ctx context.Context) (Generations, bool) {
	if c == nil {
		return Generations{}, false
	}
	if g, ok := ctx.Value(genKey{}).(Generations); ok {
		return g, true
	}
	g, err := c.now(ctx)
	return g, err == nil
}

// changed records a committed change: the store's generations first (so
// every process's caches drop their entries at their next request), then
// this process's own entries. A failed bump is logged: the entries of
// other processes then expire within cacheTTL.
func (a *Archive) changed(ctx context.Context, auth, data bool) {
	c := a.cache
	if c == nil {
		return
	}
	var da, dd int64
	if auth {
		da = 1
		c.tokens.clear()
	}
	if data {
		dd = 1
		c.fields.clear()
		c.prods.clear()
	}
	// Not cancelled with the request: the change is committed.
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), generationReadTimeout)
	defer cancel()
	if err := c.store.BumpGenerations(bctx, da, dd); err != nil {
		a.log.ErrorContext(ctx, "read caches: bump change generations (other processes' caches expire within their TTL)",
			"err", err, "ttl", cacheTTL)
	}
}

// --- freshness: coalesced generation reads ---

// freshness reads the generations for many callers at once: a caller gets
// the result of a read that started after it asked, so nothing committed
// before the call is missed, and callers arriving while one read runs all
// share the next. Reads start at least gap apart: under a steady stream
// of requests, back-to-back reads would otherwise take a core's worth of
// queries (SQLite parses each one) for no gain; a request waits at most
// gap plus one read.
type freshness struct {
	read      func() (Generations, error)
	gap       time.Duration
	mu        sync.Mutex
	running   bool      // a read, or a wait for the gap, is under way
	lastStart time.Time // when the last read started
	queued    *genRound // the next read's waiters
}

type genRound struct {
	waiters int // callers waiting (guarded by freshness.mu)
	done    chan struct{}
	gen     Generations
	err     error
}

func (f *freshness) current(ctx context.Context) (Generations, error) {
	f.mu.Lock()
	if now := time.Now(); !f.running && now.Sub(f.lastStart) >= f.gap {
		// Nobody reads, nor did lately: read now, in this goroutine.
		// Otherwise the round below decides (runRounds), so that a stream
		// of requests arriving one by one does not read once for each.
		f.running, f.lastStart = true, now
		f.mu.Unlock()
		g, err := f.read()
		f.mu.Lock()
		r := f.queued // still open to newcomers until its read starts
		f.running = r != nil
		f.mu.Unlock()
		if r != nil {
			go f.runRounds(r)
		}
		return g, err
	}
	r := f.queued
	if r == nil {
		r = &genRound{done: make(chan struct{})}
		f.queued = r
	}
	r.waiters++
	if !f.running {
		f.running = true
		go f.runRounds(r)
	}
	f.mu.Unlock()
	select {
	case <-r.done:
		return r.gen, r.err
	case <-ctx.Done():
		return Generations{}, ctx.Err()
	}
}

// runRounds reads for round r's waiters, then for each round queued meanwhile.
func (f *freshness) runRounds(r *genRound) {
	for r != nil {
		// Let the goroutines ready to run (requests on their way here)
		// have their turn first. A round that many wait for means a steady
		// stream: it also keeps the gap since the last read. A few waiters
		// (a client or two) are served at once: a sleep's wake-up comes late
		// on a busy machine, and would cost each of their requests that.
		runtime.Gosched()
		f.mu.Lock()
		wait := f.gap - time.Since(f.lastStart)
		many := r.waiters >= manyWaiters
		f.mu.Unlock()
		if many && wait > 0 {
			time.Sleep(wait)
		}
		f.mu.Lock()
		if f.queued == r {
			f.queued = nil // from now on, newcomers wait for the next round
		}
		f.lastStart = time.Now()
		f.mu.Unlock()
		r.gen, r.err = f.read()
		close(r.done)
		f.mu.Lock()
		r = f.queued // still open to newcomers until its read starts
		f.running = r != nil
		f.mu.Unlock()
	}
}

// --- bounded maps ---

// boundedMap is a map of at most max entries, safe for concurrent use;
// when full it starts over (the entries are cheap to read again).
type boundedMap[K comparable, V any] struct {
	mu  sync.RWMutex
	m   map[K]V
	max int
}

func (b *boundedMap[K, V]) init(max int) { b.m, b.max = map[K]V{}, max }

func (b *boundedMap[K, V]) get(k K) (V, bool) {
	b.mu.RLock()
	v, ok := b.m[k]
	b.mu.RUnlock()
	return v, ok
}

func (b *boundedMap[K, V]) put(k K, v V) {
	b.mu.Lock()
	if len(b.m) >= b.max {
		clear(b.m)
	}
	b.m[k] = v
	b.mu.Unlock()
}

func (b *boundedMap[K, V]) clear() {
	b.mu.Lock()
	clear(b.m)
	b.mu.Unlock()
}

// docCache holds small documents by key within a byte budget; beyond it,
// arbitrary entries are dropped.
type docCache struct {
	mu     sync.RWMutex
	m      map[docKey][]byte
	bytes  int
	budget int
}

// docKey names a document: a bundle (whose name changes with its content),
// a file of it (an index and a kind: its png, json, or the json answer),
// and what the answer adds (mean variation and its date).
type docKey struct {
	bundle, index, kind, prev string
	variation                 float64
}

func (d *docCache) init(budget int) { d.m, d.budget = map[docKey][]byte{}, budget }

func (d *docCache) get(k docKey) ([]byte, bool) {
	d.mu.RLock()
	b, ok := d.m[k]
	d.mu.RUnlock()
	return b, ok
}

func (d *docCache) put(k docKey, b []byte) {
	if len(b) > cacheDocMax {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.m[k]; ok {
		return
	}
	for key, v := range d.m {
		if d.bytes+len(b) <= d.budget {
			break
		}
		delete(d.m, key)
		d.bytes -= len(v)
	}
	d.m[k] = b
	d.bytes += len(b)
}

// cloneProducts is a copy callers may change.
func cloneProducts(ps []Product) []Product { return slices.Clone(ps) }

// --- the cached reads ---

// userByToken is store.UserByToken through the token cache.
func (a *Archive) userByToken(ctx context.Context, key tokenKey, now time.Time) (User, Token, error) {
	g, cached := a.cache.current(ctx)
	if cached {
		e, hit := a.cache.tokens.get(key)
		if hit && e.gen == g.Auth && now.Sub(e.at) < cacheTTL && (e.token.Expires.IsZero() || now.Before(e.token.Expires)) {
			return e.user, e.token, nil
		}
	}
	u, t, err := a.store.UserByToken(ctx, hex.EncodeToString(key[:]), now)
	if err == nil && cached {
		a.cache.tokens.put(key, tokenEntry{user: u, token: t, gen: g.Auth, at: now})
	}
	return u, t, err
}

// fieldSummary is store.FieldSummary through the field cache.
func (a *Archive) fieldSummary(ctx context.Context, userID int64, name string) (Field, error) {
	g, cached := a.cache.current(ctx)
	k := fieldKey{userID, name}
	now := time.Now()
	if cached {
		if e, hit := a.cache.fields.get(k); hit && e.gen == g.Data && now.Sub(e.at) < cacheTTL {
			return e.field, nil
		}
	}
	f, err := a.store.FieldSummary(ctx, userID, name)
	if err == nil && cached {
		a.cache.fields.put(k, fieldEntry{field: f, gen: g.Data, at: now})
	}
	return f, err
}

// usableProducts is field f's usable products of index from sensor
// family ("" any), by date, through the product cache: the slice is
// shared, callers must not change it.
func (a *Archive) usableProducts(ctx context.Context, f Field, index, family string) ([]Product, error) {
	g, cached := a.cache.current(ctx)
	k := prodKey{f.ID, index, family}
	now := time.Now()
	if cached {
		if e, hit := a.cache.prods.get(k); hit && e.gen == g.Data && now.Sub(e.at) < cacheTTL {
			return e.products, nil
		}
	}
	ps, err := a.store.Products(ctx, ProductQuery{FieldID: f.ID, Index: index, UsableOnly: true, Family: family})
	if err == nil && cached {
		a.cache.prods.put(k, prodEntry{products: ps, gen: g.Data, at: now})
	}
	return ps, err
}

// cachedDoc answers a document from the document cache, else builds it
// and keeps it (when small).
func (a *Archive) cachedDoc(k docKey, build func() ([]byte, error)) ([]byte, error) {
	if a.cache == nil {
		return build()
	}
	if b, ok := a.cache.docs.get(k); ok {
		return b, nil
	}
	b, err := build()
	if err == nil {
		a.cache.docs.put(k, b)
	}
	return b, err
}
