package blobs

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Delete removes the directories it leaves empty; a Put into the same
// directories at that moment failed with "no such file or directory" (QA's
// uploads during outline changes). Puts racing deletes of their siblings
// all succeed and leave their file.
func TestDirBlobsPutRacesDelete(t *testing.T) {
	ctx := context.Background()
	d := Dir{Root: t.TempDir()}
	for _, tc := range []struct {
		name      string
		putKey    func(i int) string
		deleteKey func(i int) string
	}{
		{"same directory", func(i int) string { return fmt.Sprintf("uploads/1/v1/put%d.zip", i) }, func(i int) string { return fmt.Sprintf("uploads/1/v1/del%d.zip", i) }},
		{"sibling directory", func(i int) string { return fmt.Sprintf("uploads/2/v%d/a.zip", i) }, func(i int) string { return fmt.Sprintf("uploads/2/w%d/a.zip", i) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := make([]error, 100)
			var wg sync.WaitGroup
			wg.Go(func() {
				for i := range 100 {
					errs[i] = d.Put(ctx, tc.putKey(i), []byte("x"))
					_ = d.Delete(ctx, tc.putKey(i))
				}
			})
			wg.Go(func() {
				for i := range 100 {
					_ = d.Put(ctx, tc.deleteKey(i), []byte("y"))
					_ = d.Delete(ctx, tc.deleteKey(i))
				}
			})
			wg.Wait()
			for i, err := range errs {
				require.NoError(t, err, "put %d", i)
			}
			require.NoError(t, d.Put(ctx, tc.putKey(0), []byte("z")))
			got, err := d.Get(ctx, tc.putKey(0))
			require.NoError(t, err)
			assert.Equal(t, "z", string(got))
		})
	}
}
