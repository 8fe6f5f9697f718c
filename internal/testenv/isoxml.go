package testenv

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// RepoDir is the repository root (the folder holding go.mod) above the
// test's working directory.
func RepoDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("getwd: %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("no go.mod above the test directory")
		}
		dir = parent
	}
}

// ISOXMLCheck parses an ISOXML zip with the independent isoxml npm package
// (zoning/testdata/isoxml-check/check.js) and returns its JSON summary.
// The package is installed once: .ci/run installs it before the tests, and
// otherwise the first test to need it runs npm ci under an exclusive file
// lock, so packages tested in parallel never install it at the same time.
// check.js's stderr is shown when it fails.
func ISOXMLCheck(t testing.TB, zipData []byte) map[string]any {
	t.Helper()
	node := RequireTool(t, "node")
	dir := filepath.Join(RepoDir(t), "zoning", "testdata", "isoxml-check")
	installNodeModules(t, dir)
	path := filepath.Join(t.TempDir(), "taskdata.zip")
	if err := os.WriteFile(path, zipData, 0o600); err != nil {
		t.Fatalf("write zip: %v", err)
	}
	out, err := exec.Command(node, filepath.Join(dir, "check.js"), path).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("check.js: %v\nstdout: %s\nstderr: %s", err, out, ee.Stderr)
		}
		t.Fatalf("check.js: %v", err)
	}
	var res map[string]any
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("check.js output: %v: %s", err, out)
	}
	return res
}

// installNodeModules runs npm ci in dir unless its node_modules is
// complete, holding an exclusive lock on dir/.install.lock meanwhile.
func installNodeModules(t testing.TB, dir string) {
	t.Helper()
	done := filepath.Join(dir, "node_modules", ".package-lock.json")
	if _, err := os.Stat(done); err == nil {
		return
	}
	npm := RequireTool(t, "npm")
	lock, err := os.OpenFile(filepath.Join(dir, ".install.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatalf("install lock: %v", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatalf("install lock: %v", err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if _, err := os.Stat(done); err == nil {
		return // installed by another test process while we waited
	}
	cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
	}
}
