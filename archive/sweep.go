package archive

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Blob keys:
//
//	products/<field-id>/<date>-<random>.zip   one bundle per field and date
//	uploads/<field-id>/v<version>/<name>.zip   uploads of one outline version
//
// Bundle names are new at every ingestion, so a file that committed rows
// point to is never overwritten: a new one is written, the rows are
// switched to it in one transaction, and the old one is deleted after the
// commit. A crash between the steps leaves at worst an unreferenced file,
// which Sweep removes; never a row without its file.

func newBundleKey(fieldID int64, date string) (string, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("bundle name: %w", err)
	}
	return fmt.Sprintf("products/%d/%s-%s.zip", fieldID, date, hex.EncodeToString(b[:])), nil
}

func uploadsPrefix(fieldID int64) string { return fmt.Sprintf("uploads/%d/", fieldID) }

func uploadsVersionPrefix(fieldID, version int64) string {
	return fmt.Sprintf("uploads/%d/v%d/", fieldID, version)
}

// deleteBlobs deletes keys after the commit that dropped their rows;
// failures are logged (Sweep retries them).
func (a *Archive) deleteBlobs(ctx context.Context, keys []string) {
	ctx = context.WithoutCancel(ctx)
	for _, k := range keys {
		if err := a.blobs.Delete(ctx, k); err != nil {
			a.log.WarnContext(ctx, "delete replaced file", "key", k, "err", err)
		}
	}
}

func (a *Archive) deletePrefix(ctx context.Context, prefix string, keep func(BlobInfo) bool) int {
	ctx = context.WithoutCancel(ctx)
	var keys []string
	err := a.blobs.List(ctx, prefix, func(b BlobInfo) error {
		if keep == nil || !keep(b) {
			keys = append(keys, b.Key)
		}
		return nil
	})
	if err != nil {
		a.log.WarnContext(ctx, "list files", "prefix", prefix, "err", err)
	}
	a.deleteBlobs(ctx, keys)
	return len(keys)
}

// deleteFieldBlobs and deleteUploadsBefore leave temporary files alone:
// they belong to writes in flight (an upload, an ingestion), and removing
// one made that write's rename fail (a 500). Such a writer finds the field
// gone or reshaped after its Put and removes what it wrote; Sweep collects
// the temporary files a crash leaves, once older than the grace period.
func (a *Archive) deleteFieldBlobs(ctx context.Context, fieldID int64) {
	keepTemp := func(b BlobInfo) bool { return b.Temp }
	a.deletePrefix(ctx, fmt.Sprintf("products/%d/", fieldID), keepTemp)
	a.deletePrefix(ctx, uploadsPrefix(fieldID), keepTemp)
}

func (a *Archive) deleteUploadsBefore(ctx context.Context, fieldID, version int64) {
	keep := uploadsVersionPrefix(fieldID, version)
	a.deletePrefix(ctx, uploadsPrefix(fieldID), func(b BlobInfo) bool { return b.Temp || strings.HasPrefix(b.Key, keep) })
}

// Sweep removes what a crash can leave behind: temporary files, bundles no
// row references and uploads of deleted fields or replaced outlines, when
// older than Config.SweepGrace (a writer in another process may be about
// to commit a newer one). Open runs it; long-running servers may run it
// periodically. It returns how many files it removed.
func (a *Archive) Sweep(ctx context.Context) (int, error) {
	referenced, err := a.store.Bundles(ctx)
	if err != nil {
		return 0, fmt.Errorf("sweep: %w", err)
	}
	versions, err := a.store.FieldVersions(ctx)
	if err != nil {
		return 0, fmt.Errorf("sweep: %w", err)
	}
	cutoff := time.Now().Add(-a.grace)
	if a.grace < 0 {
		cutoff = time.Now().Add(time.Hour)
	}
	old := func(b BlobInfo) bool { return b.ModTime.Before(cutoff) }
	n := a.deletePrefix(ctx, "products/", func(b BlobInfo) bool {
		if !old(b) {
			return true
		}
		if b.Temp {
			return false
		}
		parts := strings.Split(b.Key, "/")
		if len(parts) != 3 { // not a bundle (an older layout's uploads): leave it
			return true
		}
		return referenced[b.Key]
	})
	n += a.deletePrefix(ctx, "uploads/", func(b BlobInfo) bool {
		if !old(b) {
			return true
		}
		if b.Temp {
			return false
		}
		parts := strings.Split(b.Key, "/") // uploads/<id>/v<version>/<name>
		if len(parts) != 4 {
			return true
		}
		id, err1 := strconv.ParseInt(parts[1], 10, 64)
		v, err2 := strconv.ParseInt(strings.TrimPrefix(parts[2], "v"), 10, 64)
		if err1 != nil || err2 != nil {
			return true
		}
		cur, ok := versions[id]
		return ok && cur == v
	})
	if n > 0 {
		a.log.InfoContext(ctx, "sweep removed files", "count", n)
	}
	return n, nil
}
