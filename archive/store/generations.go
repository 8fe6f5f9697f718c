package store

import (
	"context"

	"github.com/cropkit/cropkit/archive"
)

// migrationGenerations is the change generations' table (appended to the
// migrations of sqlite.go and postgres.go): one row of counters the
// archive's read caches check against (archive.Generations).
const migrationGenerations = `CREATE TABLE change_generations (
		id   INTEGER PRIMARY KEY CHECK (id = 1),
		auth BIGINT NOT NULL,
		data BIGINT NOT NULL
	);
	INSERT INTO change_generations (id, auth, data) VALUES (1, 0, 0);`

var _ archive.GenerationStore = (*rowStore)(nil)

// Generations reads the change counters (archive.GenerationStore).
func (s *rowStore) Generations(ctx context.Context) (archive.Generations, error) {
	row, err := s.readRow(ctx, `SELECT auth, data FROM change_generations WHERE id = 1`)
	if err != nil {
		return archive.Generations{}, s.d.wrap("change generations", err)
	}
	var g archive.Generations
	if err := row.Scan(&g.Auth, &g.Data); err != nil {
		return archive.Generations{}, s.d.wrap("change generations", err)
	}
	return g, nil
}

// BumpGenerations adds auth and data to the change counters (archive.GenerationStore).
func (s *rowStore) BumpGenerations(ctx context.Context, auth, data int64) error {
	_, err := s.db.ExecContext(ctx, s.q(`UPDATE change_generations SET auth = auth + ?, data = data + ? WHERE id = 1`), auth, data)
	return s.d.wrapOrNil("bump change generations", err)
}
