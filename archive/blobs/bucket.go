package blobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/fileblob" // file:// buckets
	_ "gocloud.dev/blob/s3blob"   // s3:// buckets (credentials from the usual AWS environment)
	"gocloud.dev/gcerrors"

	"github.com/cropkit/cropkit/archive"
)

// Bucket stores blobs as objects of a gocloud.dev bucket (S3 and
// S3-compatible servers, or a local directory through file://). An object
// PUT is atomic: readers see the old object or the new one, never part of
// one, so no temporary objects exist and List never sets Temp. The product
// protocol keeps its crash-consistency rules unchanged: a new bundle is
// written under a new key, the row pointing at it is committed, then the
// old object is deleted; Sweep removes objects a crash left unreferenced.
type Bucket struct {
	bucket *blob.Bucket
	url    string
}

// OpenBucket opens the bucket of url, e.g.
// s3://BUCKET?endpoint=http://127.0.0.1:7070&region=us-east-1&use_path_style=true
// or file:///var/lib/cropkit (see gocloud.dev/blob's URL openers). Close it
// with Close.
func OpenBucket(ctx context.Context, url string) (*Bucket, error) {
	b, err := blob.OpenBucket(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("open blobs %s: %w", redactURL(url), err)
	}
	return &Bucket{bucket: b, url: redactURL(url)}, nil
}

// redactURL drops a URL's query (which may carry credentials) for messages.
func redactURL(u string) string {
	if i := strings.IndexByte(u, '?'); i >= 0 {
		return u[:i]
	}
	return u
}

// Close closes the bucket.
func (b *Bucket) Close() error { return b.bucket.Close() }

func checkKey(key string) error {
	if key == "" || strings.Contains(key, "..") || strings.HasPrefix(key, "/") || strings.Contains(key, "\\") {
		return fmt.Errorf("blob key %q: %w", key, archive.ErrInvalid)
	}
	return nil
}

// Put writes the object in one request.
func (b *Bucket) Put(ctx context.Context, key string, data []byte) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := b.bucket.WriteAll(ctx, key, data, &blob.WriterOptions{ContentType: "application/octet-stream"}); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	return nil
}

// Get reads the object.
func (b *Bucket) Get(ctx context.Context, key string) ([]byte, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	data, err := b.bucket.ReadAll(ctx, key)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, fmt.Errorf("blob %s: %w", key, archive.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("blob %s: %w", key, err)
	}
	return data, nil
}

// Delete removes the object; a missing one is not an error.
func (b *Bucket) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := b.bucket.Delete(ctx, key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return nil
}

// List calls fn for every object under prefix (a folder: "products" and
// "products/" list the same keys).
func (b *Bucket) List(ctx context.Context, prefix string, fn func(archive.BlobInfo) error) error {
	if err := checkKey(prefix); err != nil {
		return err
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	it := b.bucket.List(&blob.ListOptions{Prefix: prefix})
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("list %s: %w", prefix, err)
		}
		if obj.IsDir {
			continue
		}
		if err := fn(archive.BlobInfo{Key: obj.Key, ModTime: obj.ModTime}); err != nil {
			return fmt.Errorf("list %s: %w", prefix, err)
		}
	}
}

var _ archive.Blobs = (*Bucket)(nil)
