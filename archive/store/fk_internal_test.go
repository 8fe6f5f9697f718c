package store

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/internal/testenv"
)

// QA: metadata registered while its field was deleted answered 500
// ("FOREIGN KEY constraint failed"). A row that refers to a field gone
// meanwhile is ErrNotFound on both databases, which the server answers 404.
func TestForeignKeyViolationIsNotFound(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		rows func(t *testing.T) *rowStore
	}{
		{"sqlite", func(t *testing.T) *rowStore { return &openTest(t, t.TempDir()).(*sqliteStore).rowStore }},
		{"postgres", func(t *testing.T) *rowStore { return &openPG(t, testenv.Postgres(t)).(*pgStore).rowStore }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := tc.rows(t)
			_, err := rs.db.ExecContext(ctx, rs.q(`INSERT INTO seasons (field_id, start_date, record) VALUES (?, ?, ?)`), 424242, "2018-01-01", "{}")
			require.Error(t, err)
			require.ErrorIs(t, rs.d.wrap("update seasons", err), archive.ErrNotFound)
			require.NotErrorIs(t, rs.d.wrap("update seasons", err), archive.ErrBusy)
		})
	}
}
