package archive

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// DefaultDBURL is the database of the data directory dir (the embedded default).
func DefaultDBURL(dir string) string { return "sqlite:" + filepath.Join(dir, DBFile) }

// DefaultBlobsURL is the file store of the data directory dir.
func DefaultBlobsURL(dir string) string { return "file://" + filepath.ToSlash(dir) }

// OpenURL opens an archive whose store and blobs are chosen by URL:
//
//	dbURL:    sqlite:PATH (the embedded database, created when missing)
//	          postgres://USER:PASS@HOST:PORT/DB?sslmode=disable (or postgresql://)
//	blobsURL: file://DIR (files under DIR, written atomically by rename)
//	          s3://BUCKET?endpoint=…&region=…&use_path_style=true and the other
//	          gocloud.dev/blob URLs registered in this package
//
// Uploads being received are spooled in cfg.TempDir (a directory of the
// system's when empty), so with a server database and object storage
// nothing is written beside the process. Like Open it sweeps what a crash
// may have left. Closing the archive closes the store and the blobs.
func OpenURL(ctx context.Context, dbURL, blobsURL string, cfg Config) (*Archive, error) {
	st, err := OpenStoreURL(ctx, dbURL)
	if err != nil {
		return nil, err
	}
	blobs, err := OpenBlobsURL(ctx, blobsURL)
	if err != nil {
		st.Close()
		return nil, err
	}
	cfg.Store, cfg.Blobs = st, blobs
	a, err := New(cfg)
	if err != nil {
		closeBlobs(blobs)
		st.Close()
		return nil, err
	}
	a.closeBlobs = blobs
	if _, err := a.Sweep(ctx); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

func closeBlobs(b Blobs) error {
	if c, ok := b.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// OpenStoreURL opens the Store of a database URL (see OpenURL).
func OpenStoreURL(ctx context.Context, dbURL string) (Store, error) {
	switch {
	case strings.HasPrefix(dbURL, "postgres://"), strings.HasPrefix(dbURL, "postgresql://"):
		return OpenPostgres(ctx, dbURL)
	case strings.HasPrefix(dbURL, "sqlite:"):
		path := strings.TrimPrefix(strings.TrimPrefix(dbURL, "sqlite:"), "//")
		return OpenSQLite(ctx, path, true)
	default:
		return nil, Invalid("database URL %q: want sqlite:PATH or postgres://…", redactDSN(dbURL))
	}
}

// OpenBlobsURL opens the Blobs of a URL (see OpenURL): file://DIR is a
// DirBlobs (temporary file and rename, as the embedded archive), any other
// scheme a BucketBlobs.
func OpenBlobsURL(ctx context.Context, blobsURL string) (Blobs, error) {
	u, err := url.Parse(blobsURL)
	if err != nil || u.Scheme == "" {
		return nil, Invalid("blobs URL %q: want file://DIR or s3://BUCKET?…", redactURL(blobsURL))
	}
	if u.Scheme == "file" {
		dir := u.Path
		if u.Host != "" && u.Host != "localhost" { // file://relative/dir
			dir = u.Host + u.Path
		}
		if dir == "" {
			return nil, Invalid("blobs URL %q: no directory", blobsURL)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("open blobs %s: %w", dir, err)
		}
		return DirBlobs{Root: filepath.Clean(dir)}, nil
	}
	return OpenBucketBlobs(ctx, blobsURL)
}

// redactDSN hides a URL's password for messages.
func redactDSN(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}
