package main

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/internal/testenv"
)

// With --db and --blobs, user add, token and ingest work on PostgreSQL and
// S3 and write nothing to the working directory.
func TestStorageFlagsWriteNothingLocally(t *testing.T) {
	dsn, bucket := testenv.Postgres(t), testenv.S3(t)
	t.Chdir(t.TempDir())
	code, out, errOut := runCmd(t, "", "user", "add", "alice", "--db", dsn, "--blobs", bucket, "--indices", "ndvi")
	require.Equal(t, 0, code, errOut)
	tok := lastLine(out)
	code, out, errOut = runCmd(t, "", "token", "list", "alice", "--db", dsn, "--blobs", bucket)
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	assert.Regexp(t, `^1 +\d{4}-\d\d-\d\dT`, lines[1])

	core, err := archive.OpenURL(context.Background(), dsn, bucket, archive.Config{})
	require.NoError(t, err)
	defer core.Close()
	u, _, err := core.Authenticate(context.Background(), tok)
	require.NoError(t, err)
	assert.Equal(t, "alice", u.Name)

	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing written to the working directory")
}

// -h lists --db and --blobs on every command that takes --data.
func TestStorageFlagsInHelp(t *testing.T) {
	for _, args := range [][]string{{"serve", "-h"}, {"ingest", "-h"}, {"user", "add", "-h"}, {"token", "list", "-h"}} {
		_, out, errOut := runCmd(t, "", args...)
		assert.Contains(t, out+errOut, "-db", args)
		assert.Contains(t, out+errOut, "-blobs", args)
	}
}
