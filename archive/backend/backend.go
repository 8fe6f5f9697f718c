// Package backend opens an archive over storage it chooses: the embedded
// data directory (a SQLite file and product files beside it) or storage
// named by URL (SQLite or PostgreSQL; a directory or an object-storage
// bucket). It is the wiring between the core (package archive) and its
// storage implementations (archive/store, archive/blobs), for the binary,
// workers and tests.
package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/archive/blobs"
	"github.com/cropkit/cropkit/archive/store"
)

// Open opens (or, with create, creates) the embedded archive of a data
// directory: DIR/cropkit.db, product files under DIR, uploads received in
// DIR/tmp (emptied). Long-running processes (serve, watch) then call
// RunSweeps for what a crash may have left; short commands do not walk the
// files. Closing the archive closes the store.
func Open(ctx context.Context, dir string, create bool, cfg archive.Config) (*archive.Archive, error) {
	if dir == "" {
		return nil, archive.Invalid("empty data directory")
	}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) && !create {
		return nil, fmt.Errorf("data directory %s does not exist: %w", dir, archive.ErrNotFound)
	}
	st, err := store.OpenSQLite(ctx, filepath.Join(dir, store.DBFile), create)
	if err != nil {
		return nil, err
	}
	cfg.Store, cfg.Blobs, cfg.TempDir = st, blobs.Dir{Root: dir}, filepath.Join(dir, "tmp")
	a, err := archive.New(cfg)
	if err != nil {
		st.Close()
		return nil, err
	}
	return a, nil
}

// OpenURL opens an archive whose store and blobs are chosen by URL (see
// store.Open and blobs.Open). Uploads being received are spooled in
// cfg.TempDir (a directory of the system's when empty), so with a server
// database and object storage nothing is written beside the process. Like
// Open it sweeps what a crash may have left. Closing the archive closes the
// store and the blobs.
func OpenURL(ctx context.Context, dbURL, blobsURL string, cfg archive.Config) (*archive.Archive, error) {
	st, err := store.Open(ctx, dbURL)
	if err != nil {
		return nil, err
	}
	b, err := blobs.Open(ctx, blobsURL)
	if err != nil {
		st.Close()
		return nil, err
	}
	cfg.Store, cfg.Blobs, cfg.CloseBlobs = st, b, true
	a, err := archive.New(cfg)
	if err != nil {
		if c, ok := b.(io.Closer); ok {
			c.Close()
		}
		st.Close()
		return nil, err
	}
	if _, err := a.Sweep(ctx); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}
