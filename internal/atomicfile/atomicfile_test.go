package atomicfile

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	big := bytes.Repeat([]byte("0123456789"), 1<<20) // 10 MiB: several write calls on some systems
	for _, tt := range []struct {
		name string
		data []byte
	}{{"empty", nil}, {"small", []byte(`{"ndvi":[[0.5]]}`)}, {"big", big}, {"replaced", []byte("second")}} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, "out.json")
			require.NoError(t, Write(path, tt.data))
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, len(tt.data), len(got))
			assert.True(t, bytes.Equal(tt.data, got))
		})
	}
	// Mode 0666 less the umask, as os.WriteFile: readable by others when
	// the umask allows, never the 0600 of os.CreateTemp.
	ref := filepath.Join(dir, "ref")
	require.NoError(t, os.WriteFile(ref, nil, 0o666))
	want, err := os.Stat(ref)
	require.NoError(t, err)
	got, err := os.Stat(filepath.Join(dir, "out.json"))
	require.NoError(t, err)
	assert.Equal(t, want.Mode().Perm(), got.Mode().Perm())
	// No temporary file is left behind.
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 2)
}

// A failed write leaves neither the target changed nor a temporary file.
func TestWriteFailureLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.png")
	require.NoError(t, Write(path, []byte("old")))
	// The target is a non-empty directory: the rename fails.
	require.NoError(t, os.Remove(path))
	require.NoError(t, os.MkdirAll(filepath.Join(path, "x"), 0o755))
	err := Write(path, []byte("new"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), path)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "only the directory")
	// A folder that does not exist: a clear error wrapping fs.ErrNotExist.
	err = Write(filepath.Join(dir, "missing", "out.png"), []byte("x"))
	require.ErrorIs(t, err, fs.ErrNotExist)
}

// Concurrent writers of one path: every reader sees one whole version.
func TestWriteConcurrent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.json")
	versions := [][]byte{bytes.Repeat([]byte("a"), 1<<16), bytes.Repeat([]byte("b"), 1<<17)}
	require.NoError(t, Write(path, versions[0]))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 50 {
				if err := Write(path, versions[i%2]); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for range 200 {
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(got, versions[0]) || bytes.Equal(got, versions[1]), "a torn file of %d bytes", len(got))
	}
	wg.Wait()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1)
}
