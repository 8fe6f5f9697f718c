package main

import (
	"context"
	"flag"
	"path/filepath"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/archive/backend"
	"github.com/cropkit/cropkit/archive/blobs"
	"github.com/cropkit/cropkit/archive/store"
)

// storageFlags are --db and --blobs, the backends of every command that
// takes --data. Given both, --data is not used at all (nothing is written
// to the working directory); given one, the other is the data directory's.
type storageFlags struct {
	db, blobs *string
}

func addStorageFlags(fs *flag.FlagSet) storageFlags {
	return storageFlags{
		db: fs.String("db", "", "database URL: sqlite:PATH (default sqlite:DATA/cropkit.db) or\n"+
			"postgres://USER:PASS@HOST:PORT/DB?sslmode=disable"),
		blobs: fs.String("blobs", "", "product file store URL: file://DIR (default file://DATA) or\n"+
			"s3://BUCKET?endpoint=URL&region=REGION&use_path_style=true (credentials from the AWS_* environment)"),
	}
}

// external reports whether both backends are given (no data directory).
func (s storageFlags) external() bool { return *s.db != "" && *s.blobs != "" }

// open opens the archive: the data directory's embedded one, exactly as
// before, when neither flag is given (create as archive.Open), else the
// given backends, the missing one taken from dataDir.
func (s storageFlags) open(ctx context.Context, dataDir string, create bool, cfg archive.Config) (*archive.Archive, error) {
	if *s.db == "" && *s.blobs == "" {
		return backend.Open(ctx, dataDir, create, cfg)
	}
	dbURL, blobsURL := *s.db, *s.blobs
	if dbURL == "" {
		dbURL = store.DefaultURL(dataDir)
	}
	if blobsURL == "" {
		blobsURL = blobs.DefaultURL(dataDir)
	}
	if !s.external() {
		cfg.TempDir = filepath.Join(dataDir, "tmp")
	}
	return backend.OpenURL(ctx, dbURL, blobsURL, cfg)
}
