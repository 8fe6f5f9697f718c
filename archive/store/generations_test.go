package store

import (
	"context"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

// bumpEnv names the database a helper process (TestBumpHelperProcess)
// bumps the change counters of.
const bumpEnv = "CROPKIT_TEST_BUMP_DB"

// TestBumpHelperProcess is another process for the tests below: it opens
// the database named by bumpEnv, adds 1 to both counters and exits.
func TestBumpHelperProcess(t *testing.T) {
	path := os.Getenv(bumpEnv)
	if path == "" {
		t.Skip("a helper process of TestSQLiteUnchangedGenerations")
	}
	st, err := OpenSQLite(context.Background(), path, false)
	require.NoError(t, err)
	defer st.Close()
	require.NoError(t, st.(*sqliteStore).BumpGenerations(context.Background(), 1, 1))
}

// The SQLite store answers "unchanged" without a query only while no
// commit happened since its last read, whoever committed: its own writer,
// another store on the file, a plain connection, another process. Right
// after any of them it says it cannot tell, and the next read answers the
// new counters.
func TestSQLiteUnchangedGenerations(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the WAL index is mapped on unix systems only")
	}
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, DBFile)
	a := openTest(t, dir).(*sqliteStore)
	b := openTest(t, dir).(*sqliteStore)
	raw, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer raw.Close()

	_, ok := a.UnchangedGenerations()
	assert.False(t, ok, "nothing read yet")
	want := archive.Generations{}
	settle := func(step string) {
		t.Helper()
		// The first read after a change answers and takes the new header.
		g, err := a.Generations(ctx)
		require.NoError(t, err, step)
		require.Equal(t, want, g, step)
		for range 100 {
			g, ok := a.UnchangedGenerations()
			require.True(t, ok, "%s: nothing committed since the read", step)
			require.Equal(t, want, g, step)
		}
	}
	changed := func(step string) {
		t.Helper()
		_, ok := a.UnchangedGenerations()
		assert.False(t, ok, "%s: a commit since the last read", step)
	}
	g, err := a.Generations(ctx) // maps the index, for the next reads
	require.NoError(t, err)
	require.Equal(t, want, g)
	settle("mapped")

	require.NoError(t, a.BumpGenerations(ctx, 1, 0))
	want.Auth++
	changed("own writer's bump")
	settle("own writer's bump")

	require.NoError(t, b.BumpGenerations(ctx, 0, 1))
	want.Data++
	changed("other store's bump")
	settle("other store's bump")

	_, err = raw.ExecContext(ctx, `UPDATE change_generations SET data = data + 3 WHERE id = 1`)
	require.NoError(t, err)
	want.Data += 3
	changed("plain connection's commit")
	settle("plain connection's commit")

	helper := exec.Command(os.Args[0], "-test.run=^TestBumpHelperProcess$", "-test.count=1")
	helper.Env = append(os.Environ(), bumpEnv+"="+path)
	out, err := helper.CombinedOutput()
	require.NoError(t, err, "%s", out)
	want.Auth++
	want.Data++
	changed("another process's bump")
	settle("another process's bump")

	_, err = b.CreateUser(ctx, archive.NewUser{Name: "u"}, "")
	require.NoError(t, err)
	changed("unrelated commit")
	settle("unrelated commit")

	// A lost connection unmaps the index until the next read.
	a.watch.mu.Lock()
	a.watch.drop()
	a.watch.mu.Unlock()
	_, ok = a.UnchangedGenerations()
	assert.False(t, ok, "dropped connection")
	_, err = a.Generations(ctx)
	require.NoError(t, err)
	_, ok = a.UnchangedGenerations()
	assert.False(t, ok, "reconnected, not mapped before the read")
	settle("remapped")
}

// Under a stream of commits from another store on the file, no check —
// from memory or read — answers counters older than a bump that returned
// before the check began.
func TestSQLiteGenerationsNeverOlderThanACommit(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a := openTest(t, dir).(*sqliteStore)
	b := openTest(t, dir).(*sqliteStore)
	var committed atomic.Int64
	stop := make(chan struct{})
	writerDone := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				writerDone <- nil
				return
			default:
			}
			if err := b.BumpGenerations(ctx, 0, 1); err != nil {
				writerDone <- err
				return
			}
			committed.Add(1)
		}
	}()
	var stale, fromMemory, checks atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(400 * time.Millisecond)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				runtime.Gosched() // the writer gets its turns
				before := committed.Load()
				g, ok := a.UnchangedGenerations()
				if ok {
					fromMemory.Add(1)
				} else {
					var err error
					if g, err = a.Generations(ctx); err != nil {
						t.Error(err)
						return
					}
				}
				checks.Add(1)
				if g.Data < before {
					stale.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	require.NoError(t, <-writerDone)
	assert.Zero(t, stale.Load(), "a check answered counters older than a committed bump")
	assert.Positive(t, committed.Load())
	assert.Positive(t, fromMemory.Load(), "some checks fell between commits and were answered from memory")
	t.Logf("%d commits, %d checks, %d from memory", committed.Load(), checks.Load(), fromMemory.Load())
}
