package archive_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCoreImportsNoStorage holds the architecture rule of DEVELOPERS.md:
// the core reaches no database, driver, job queue, cloud SDK or server,
// not even through a library package it imports.
func TestCoreImportsNoStorage(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").CombinedOutput()
	require.NoError(t, err, string(out))
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"database/sql", "modernc.org/sqlite", "github.com/jackc/pgx", "github.com/riverqueue",
			"gocloud.dev", "github.com/cropkit/cropkit/server", "github.com/cropkit/cropkit/archive/"} {
			require.False(t, strings.HasPrefix(dep, banned), "archive depends on %s", dep)
		}
	}
}
