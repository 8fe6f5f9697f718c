package archive

import (
	"bytes"
	"context"
	"io"
	"time"
)

// Blobs holds the archive's files (product bundles, uploads) by key, a
// slash-separated relative path. Put is atomic: readers see the old content
// or the new, never part. DirBlobs is the local implementation; object
// storage implements the same interface.
type Blobs interface {
	Put(ctx context.Context, key string, data []byte) error
	// Get returns ErrNotFound (wrapped) for a missing key.
	Get(ctx context.Context, key string) ([]byte, error)
	// Delete removes key; a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// List calls fn for every key under prefix (and for leftover temporary
	// files, whose Temp is set).
	List(ctx context.Context, prefix string, fn func(BlobInfo) error) error
}

// BlobInfo describes one listed blob.
type BlobInfo struct {
	Key     string
	ModTime time.Time
	// Temp marks an unfinished write (a crash between write and rename).
	Temp bool
}

// BlobOpener is implemented by Blobs that can read part of a blob (a file,
// an object with ranged reads): a download reads one member of a bundle
// without reading the rest.
type BlobOpener interface {
	// Open returns the blob as an io.ReaderAt of size bytes; close it after.
	Open(ctx context.Context, key string) (r io.ReaderAt, size int64, closer io.Closer, err error)
}

// openBlob opens key for reading at offsets: through BlobOpener when the
// blobs offer it (a zip member or directory is read without the rest),
// else from the whole blob in memory.
func (a *Archive) openBlob(ctx context.Context, key string) (io.ReaderAt, int64, io.Closer, error) {
	if o, ok := a.blobs.(BlobOpener); ok {
		return o.Open(ctx, key)
	}
	data, err := a.blobs.Get(ctx, key)
	if err != nil {
		return nil, 0, nil, err
	}
	return bytes.NewReader(data), int64(len(data)), io.NopCloser(nil), nil
}
