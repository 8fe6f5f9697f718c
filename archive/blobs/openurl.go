package blobs

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"github.com/cropkit/cropkit/archive"
)

// DefaultURL is the file store of the data directory dir.
func DefaultURL(dir string) string { return "file://" + filepath.ToSlash(dir) }

// Open opens the Blobs of a URL:
//
//	file://DIR        a Dir (temporary file and rename, as the embedded archive)
//	s3://BUCKET?endpoint=…&region=…&use_path_style=true
//	                  a Bucket; other gocloud.dev/blob schemes once a program
//	                  imports their driver (the cropkit binary imports
//	                  azblob:// and gs://)
func Open(ctx context.Context, blobsURL string) (archive.Blobs, error) {
	u, err := url.Parse(blobsURL)
	if err != nil || u.Scheme == "" {
		return nil, archive.Invalid("blobs URL %q: want file://DIR or s3://BUCKET?…", redactURL(blobsURL))
	}
	if u.Scheme == "file" {
		dir := u.Path
		if u.Host != "" && u.Host != "localhost" { // file://relative/dir
			dir = u.Host + u.Path
		}
		if dir == "" {
			return nil, archive.Invalid("blobs URL %q: no directory", blobsURL)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("open blobs %s: %w", dir, err)
		}
		return Dir{Root: filepath.Clean(dir)}, nil
	}
	return OpenBucket(ctx, blobsURL)
}
