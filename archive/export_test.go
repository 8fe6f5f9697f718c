package archive

import (
	"context"
	"crypto/sha256"

	"github.com/cropkit/cropkit/imagery"
)

// What the external tests (package archive_test, which open real stores
// from archive/store) reach inside the core.

// IngestedCounts is an ingestion outcome of one field: usable and unusable products.
type IngestedCounts struct{ Usable, Unusable int }

// IngestFieldSafe is ingestFieldSafe.
func (a *Archive) IngestFieldSafe(ctx context.Context, scene *imagery.Scene, bands []string, f Field) (IngestedCounts, error) {
	out, err := a.ingestFieldSafe(ctx, scene, bands, f)
	return IngestedCounts{Usable: out.usable, Unusable: out.unusable}, err
}

// SameGeometry is sameGeometry.
var SameGeometry = sameGeometry

// CachesReads reports whether the archive keeps its read caches.
func (a *Archive) CachesReads() bool { return a.cache != nil }

// TokenCached reports whether token's account is in the token cache.
func (a *Archive) TokenCached(token string) bool {
	_, ok := a.cache.tokens.get(sha256.Sum256([]byte(token)))
	return ok
}
