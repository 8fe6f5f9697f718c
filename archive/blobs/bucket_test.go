package blobs

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/internal/testenv"
)

// Bucket on a real S3 server: atomic puts, listing with times,
// missing-ok deletes.
func TestBucketBlobsS3(t *testing.T) {
	ctx := context.Background()
	b, err := OpenBucket(ctx, testenv.S3(t))
	require.NoError(t, err)
	defer b.Close()
	require.NoError(t, b.Put(ctx, "products/1/a.zip", []byte("one")))
	require.NoError(t, b.Put(ctx, "products/1/a.zip", []byte("two")))
	require.NoError(t, b.Put(ctx, "products2/x", []byte("other")))
	data, err := b.Get(ctx, "products/1/a.zip")
	require.NoError(t, err)
	assert.Equal(t, "two", string(data))
	_, err = b.Get(ctx, "products/1/missing.zip")
	require.ErrorIs(t, err, archive.ErrNotFound)
	var keys []string
	require.NoError(t, b.List(ctx, "products", func(bi archive.BlobInfo) error {
		keys = append(keys, bi.Key)
		assert.WithinDuration(t, time.Now(), bi.ModTime, time.Minute)
		assert.False(t, bi.Temp)
		return nil
	}))
	assert.Equal(t, []string{"products/1/a.zip"}, keys)
	require.NoError(t, b.Delete(ctx, "products/1/a.zip"))
	require.NoError(t, b.Delete(ctx, "products/1/a.zip"), "missing is fine")
	require.ErrorIs(t, b.Put(ctx, "../x", nil), archive.ErrInvalid)
}
