package archive

import (
	"context"
)

// migrationGenerations is the change generations' table (appended to the
// migrations of sqlite.go and postgres.go): one row of counters that every
// archive process increases after a change its read caches depend on, so
// that each process's caches (readcache.go) notice a change made by any
// other, at the next request.
//   - auth counts changes of who a token is: revocations (and refreshes).
//   - data counts changes of what a field's products are: ingestions,
//     outline and index changes, deletions.
const migrationGenerations = `CREATE TABLE change_generations (
		id   INTEGER PRIMARY KEY CHECK (id = 1),
		auth BIGINT NOT NULL,
		data BIGINT NOT NULL
	);
	INSERT INTO change_generations (id, auth, data) VALUES (1, 0, 0);`

// generations are the store's change counters at one moment.
type generations struct {
	auth, data int64
}

// generationStore is the optional part of a Store that read caches need;
// an archive over a store without it caches nothing.
type generationStore interface {
	// generations reads the counters.
	generations(ctx context.Context) (generations, error)
	// bumpGenerations adds auth and data to the counters.
	bumpGenerations(ctx context.Context, auth, data int64) error
}

func (s *rowStore) generations(ctx context.Context) (generations, error) {
	row, err := s.readRow(ctx, `SELECT auth, data FROM change_generations WHERE id = 1`)
	if err != nil {
		return generations{}, s.d.wrap("change generations", err)
	}
	var g generations
	if err := row.Scan(&g.auth, &g.data); err != nil {
		return generations{}, s.d.wrap("change generations", err)
	}
	return g, nil
}

func (s *rowStore) bumpGenerations(ctx context.Context, auth, data int64) error {
	_, err := s.db.ExecContext(ctx, s.q(`UPDATE change_generations SET auth = auth + ?, data = data + ? WHERE id = 1`), auth, data)
	return s.d.wrapOrNil("bump change generations", err)
}
