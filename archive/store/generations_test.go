package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
)

// The SQLite store answers its change counters from memory while nothing
// was committed, and reads them again after any commit: its own writer's,
// another store's on the same file (another process), or a plain
// connection's. Every answer is the counters as committed.
func TestSQLiteGenerationsReadAgainOnlyAfterACommit(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a := openTest(t, dir).(*sqliteStore)
	b := openTest(t, dir).(*sqliteStore)
	raw, err := sql.Open("sqlite", filepath.Join(dir, DBFile))
	require.NoError(t, err)
	defer raw.Close()

	reads := func() int64 {
		a.watch.mu.Lock()
		defer a.watch.mu.Unlock()
		return a.watch.reads
	}
	want := archive.Generations{}
	check := func(step string, readAgain bool) {
		t.Helper()
		before := reads()
		for range 20 {
			g, err := a.Generations(ctx)
			require.NoError(t, err, step)
			require.Equal(t, want, g, step)
		}
		if readAgain {
			assert.Equal(t, before+1, reads(), "%s: one counter read, then answers from memory", step)
		} else {
			assert.Equal(t, before, reads(), "%s: nothing committed, no counter read", step)
		}
	}

	check("first", true)
	check("nothing committed", false)

	require.NoError(t, a.BumpGenerations(ctx, 1, 0))
	want.Auth++
	check("own writer's bump", true)

	require.NoError(t, b.BumpGenerations(ctx, 0, 2))
	want.Data += 2
	check("other store's bump", true)

	_, err = raw.ExecContext(ctx, `UPDATE change_generations SET auth = auth + 5 WHERE id = 1`)
	require.NoError(t, err)
	want.Auth += 5
	check("plain connection's commit", true)

	_, err = b.CreateUser(ctx, archive.NewUser{Name: "u"}, "")
	require.NoError(t, err)
	check("unrelated commit: read again, same counters", true)

	// A lost connection: the next call starts over on a fresh one.
	a.watch.mu.Lock()
	a.watch.drop()
	a.watch.mu.Unlock()
	require.NoError(t, b.BumpGenerations(ctx, 1, 1))
	want.Auth++
	want.Data++
	check("after reconnecting", true)
	check("reconnected, nothing committed", false)
}
