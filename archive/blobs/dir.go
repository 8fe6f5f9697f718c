package blobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/cropkit/cropkit/archive"
)

// Dir stores blobs as files under a directory.
type Dir struct {
	Root string
}

const tempMark = ".tmp-"

func (d Dir) path(key string) (string, error) {
	if key == "" || strings.Contains(key, "..") || strings.HasPrefix(key, "/") || strings.Contains(key, "\\") {
		return "", fmt.Errorf("blob key %q: %w", key, archive.ErrInvalid)
	}
	return filepath.Join(d.Root, filepath.FromSlash(key)), nil
}

// Put writes data to a synced temporary file beside the key's file and
// renames it over that file.
func (d Dir) Put(ctx context.Context, key string, data []byte) error {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	f, err := createTemp(filepath.Dir(p), tempMark+filepath.Base(p)+"*")
	if err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("put %s: %w", key, err)
	}
	return nil
}

// createTemp creates a temporary file in dir, creating dir first. A
// concurrent Delete removes the directories it leaves empty, so dir can
// vanish between MkdirAll and CreateTemp: that is retried (a few times; a
// directory that keeps vanishing is an error). Once the temporary file
// exists the directory is not empty and stays.
func createTemp(dir, pattern string) (*os.File, error) {
	var err error
	for range 10 {
		// MkdirAll itself fails so when a parent it just made is removed
		// before it makes the next level.
		if err = os.MkdirAll(dir, 0o755); err == nil {
			var f *os.File
			if f, err = os.CreateTemp(dir, pattern); err == nil {
				return f, nil
			}
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	return nil, err
}

// Get reads the key's file.
func (d Dir) Get(ctx context.Context, key string) ([]byte, error) {
	p, err := d.path(key)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("blob %s: %w", key, archive.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("blob %s: %w", key, err)
	}
	return data, nil
}

// Delete removes the key's file and the directories it leaves empty.
func (d Dir) Delete(ctx context.Context, key string) error {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	for dir := filepath.Dir(p); dir != d.Root && strings.HasPrefix(dir, d.Root); dir = filepath.Dir(dir) {
		if os.Remove(dir) != nil { // not empty (or gone): stop
			break
		}
	}
	return nil
}

// List walks the files under prefix.
func (d Dir) List(ctx context.Context, prefix string, fn func(archive.BlobInfo) error) error {
	root, err := d.path(prefix)
	if err != nil {
		return err
	}
	err = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if e.IsDir() {
			return nil
		}
		info, err := e.Info()
		if err != nil {
			return nil // removed meanwhile
		}
		rel, err := filepath.Rel(d.Root, p)
		if err != nil {
			return err
		}
		return fn(archive.BlobInfo{Key: filepath.ToSlash(rel), ModTime: info.ModTime(), Temp: strings.HasPrefix(e.Name(), ".")})
	})
	if err != nil {
		return fmt.Errorf("list %s: %w", prefix, err)
	}
	return nil
}

// Open opens the key's file for reading at offsets.
func (d Dir) Open(ctx context.Context, key string) (io.ReaderAt, int64, io.Closer, error) {
	p, err := d.path(key)
	if err != nil {
		return nil, 0, nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil, fmt.Errorf("blob %s: %w", key, archive.ErrNotFound)
	}
	if err != nil {
		return nil, 0, nil, fmt.Errorf("blob %s: %w", key, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, nil, fmt.Errorf("blob %s: %w", key, err)
	}
	return f, st.Size(), f, nil
}
