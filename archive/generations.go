package archive

import "context"

// Generations are the store's change counters at one moment: every archive
// process bumps them right after it commits a change its read caches
// depend on (readcache.go), so each process's caches notice a change made
// by any other at the next request.
type Generations struct {
	// Auth counts changes of who a token is: revocations and refreshes.
	Auth int64
	// Data counts changes of what a field's products are: ingestions,
	// outline and index changes, deletions.
	Data int64
}

// GenerationStore is the optional part of a Store that the read caches
// need (archive/store implements it on both databases); an archive over a
// store without it caches nothing.
type GenerationStore interface {
	// Generations reads the counters.
	Generations(ctx context.Context) (Generations, error)
	// BumpGenerations adds auth and data to the counters.
	BumpGenerations(ctx context.Context, auth, data int64) error
}
