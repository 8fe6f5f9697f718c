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

// GenerationPeeker is an optional part of a GenerationStore: a check that
// needs no query while nothing changes (archive/store implements it on
// SQLite by looking at the WAL index the database's processes share).
type GenerationPeeker interface {
	// UnchangedGenerations returns what the last Generations call
	// returned when the store can tell, without a query, that nothing was
	// committed since that call began: then the answer is current as of
	// this call, by any process. ok false means: call Generations.
	UnchangedGenerations() (g Generations, ok bool)
}
