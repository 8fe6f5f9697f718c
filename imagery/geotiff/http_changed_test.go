package geotiff_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/imagery/geotiff"
)

// A remote file that changes between the range reads of one reader is
// detected (ErrFileChanged), never read as a mix of two versions: by
// If-Match on a strong ETag, If-Unmodified-Since on Last-Modified, the
// ETag of an answer that ignored the condition, or the size.
func TestHTTPReaderAtDetectsChangedFile(t *testing.T) {
	v1 := bytes.Repeat([]byte{1}, 300<<10)
	v2 := bytes.Repeat([]byte{2}, 300<<10)
	longer := bytes.Repeat([]byte{2}, 400<<10)
	t1 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		next []byte
		// serve answers a range request for version v (0 or 1) of the file.
		serve func(w http.ResponseWriter, r *http.Request, v int, data []byte)
		// sent is the conditional header the second request must carry.
		sent string
	}{
		{"strong ETag, If-Match honoured", v2, func(w http.ResponseWriter, r *http.Request, v int, data []byte) {
			w.Header().Set("ETag", fmt.Sprintf(`"v%d"`, v))
			http.ServeContent(w, r, "b.tif", time.Time{}, bytes.NewReader(data))
		}, "If-Match"},
		{"Last-Modified only, If-Unmodified-Since honoured", v2, func(w http.ResponseWriter, r *http.Request, v int, data []byte) {
			http.ServeContent(w, r, "b.tif", t1.Add(time.Duration(v)*time.Hour), bytes.NewReader(data))
		}, "If-Unmodified-Since"},
		{"condition ignored, new ETag", v2, func(w http.ResponseWriter, r *http.Request, v int, data []byte) {
			r.Header.Del("If-Match")
			w.Header().Set("ETag", fmt.Sprintf(`"v%d"`, v))
			http.ServeContent(w, r, "b.tif", time.Time{}, bytes.NewReader(data))
		}, "If-Match"},
		{"weak ETag compared", v2, func(w http.ResponseWriter, r *http.Request, v int, data []byte) {
			w.Header().Set("ETag", fmt.Sprintf(`W/"v%d"`, v))
			http.ServeContent(w, r, "b.tif", time.Time{}, bytes.NewReader(data))
		}, ""},
		{"no validators, size changed", longer, func(w http.ResponseWriter, r *http.Request, v int, data []byte) {
			http.ServeContent(w, r, "b.tif", time.Time{}, bytes.NewReader(data))
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var version atomic.Int32
			var lastHeader atomic.Value
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				lastHeader.Store(r.Header.Clone())
				v := int(version.Load())
				data := v1
				if v == 1 {
					data = tt.next
				}
				tt.serve(w, r, v, data)
			}))
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			h, err := geotiff.NewHTTPReaderAt(ctx, srv.Client(), srv.URL+"/b.tif")
			require.NoError(t, err)

			// Unchanged: the read beyond the prefix works and is conditional.
			buf := make([]byte, 1000)
			n, err := h.ReadAt(buf, 200<<10)
			require.NoError(t, err)
			assert.Equal(t, 1000, n)
			assert.Equal(t, bytes.Repeat([]byte{1}, 1000), buf)
			if tt.sent != "" {
				assert.NotEmpty(t, lastHeader.Load().(http.Header).Get(tt.sent), "conditional header %s", tt.sent)
			}

			version.Store(1)
			_, err = h.ReadAt(buf, 250<<10)
			require.ErrorIs(t, err, geotiff.ErrFileChanged)
		})
	}
}
