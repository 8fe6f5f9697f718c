// Package testenv finds the shared real-data folder and external reference
// tools for tests. Outside CI a missing folder or tool skips the test with a
// clear message; under CI=true it fails it, so CI can never pass by skipping.
package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// InCI reports whether the tests run under CI (CI=true or CI=1).
func InCI() bool {
	v := os.Getenv("CI")
	return v == "true" || v == "1"
}

// SharedDir returns the absolute path of ../shared beside the repository root,
// found by walking up from the test's working directory to the folder holding go.mod.
func SharedDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("getwd: %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("no go.mod above the test directory")
		}
		dir = parent
	}
	shared := filepath.Join(filepath.Dir(dir), "shared")
	if env := os.Getenv("CROPKIT_SHARED"); env != "" {
		shared = env
	}
	if _, err := os.Stat(filepath.Join(shared, "data")); err != nil {
		missing(t, "real test data folder "+shared+"/data is absent")
	}
	return shared
}

// DataDir is SharedDir(t)/data joined with elem.
func DataDir(t testing.TB, elem ...string) string {
	t.Helper()
	return filepath.Join(append([]string{SharedDir(t), "data"}, elem...)...)
}

// RequireTool returns the path of an external reference tool (gdalinfo, ogrinfo, node…).
func RequireTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		missing(t, "reference tool "+name+" is not installed")
	}
	return p
}

func missing(t testing.TB, what string) {
	t.Helper()
	if InCI() {
		t.Fatalf("%s, and CI is set: .ci/run must provide it", what)
	}
	t.Skipf("%s (skipping outside CI)", what)
}
