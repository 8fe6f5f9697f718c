package geotiff

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// ErrRangeUnsupported is returned when a server answers a Range request with
// the whole file (200) instead of the range (206).
var ErrRangeUnsupported = errors.New("geotiff: server does not support HTTP Range requests")

// ErrFileChanged is wrapped by the error of a read that found the remote
// file changed since the first request (another ETag, Last-Modified or
// size, or a 412 answer to If-Match): the bytes read so far belong to
// another version, so the reader must be opened again from the start.
var ErrFileChanged = errors.New("geotiff: remote file changed while it was read")

// HTTPError is a non-success HTTP status.
type HTTPError struct {
	URL        string
	StatusCode int
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("geotiff: GET %s: HTTP %d %s", e.URL, e.StatusCode, http.StatusText(e.StatusCode))
}

// Sizes of the header prefix an HTTPReaderAt keeps in memory.
const (
	httpPrefixSize    = 64 << 10 // fetched by the first request
	httpMaxPrefixSize = 16 << 20 // the prefix grows on demand up to this size
)

// HTTPReaderAt is an io.ReaderAt over an HTTP(S) URL whose server honours
// Range requests. The first request fetches a 64 KiB prefix, which holds the
// header and IFDs of a Cloud-Optimized GeoTIFF, so opening one costs a single
// request; reads that straddle the end of the prefix grow it (doubling, up to
// 16 MiB), and reads beyond it are one Range request each. It is safe for
// concurrent use. All requests use the context given to NewHTTPReaderAt.
//
// Every request after the first names the version the first one read:
// If-Match with its strong ETag, else If-Unmodified-Since with its
// Last-Modified; an answer of another version (412, or another ETag or size
// from a server that ignores the condition) fails with ErrFileChanged
// rather than mixing the bytes of two versions.
type HTTPReaderAt struct {
	ctx    context.Context
	client *http.Client
	url    string
	size   int64
	// etag and lastModified are the first answer's validators ("" when absent).
	etag, lastModified string

	mu     sync.Mutex
	prefix []byte
}

// NewHTTPReaderAt fetches the first 64 KiB of url with a Range request and
// learns the file size from Content-Range. client nil means http.DefaultClient.
func NewHTTPReaderAt(ctx context.Context, client *http.Client, url string) (*HTTPReaderAt, error) {
	if client == nil {
		client = http.DefaultClient
	}
	h := &HTTPReaderAt{ctx: ctx, client: client, url: url}
	body, total, err := h.fetch(0, httpPrefixSize, -1)
	if err != nil {
		return nil, err
	}
	h.size, h.prefix = total, body
	return h, nil
}

// ETag is the entity tag of the version read ("" when the server gave none).
func (h *HTTPReaderAt) ETag() string { return h.etag }

// Size is the length of the remote file.
func (h *HTTPReaderAt) Size() int64 { return h.size }

// PrefersLargeReads is true: a GeoTIFF read through HTTP merges the requests
// of tiles stored back to back.
func (h *HTTPReaderAt) PrefersLargeReads() bool { return true }

// ReadAt reads len(p) bytes at off, from the cached prefix when it can.
func (h *HTTPReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("geotiff: read %s at negative offset %d", h.url, off)
	}
	if off >= h.size {
		return 0, io.EOF
	}
	end := min(off+int64(len(p)), h.size)
	var eof error
	if end < off+int64(len(p)) {
		eof = io.EOF
	}
	h.mu.Lock()
	if end <= int64(len(h.prefix)) {
		n := copy(p, h.prefix[off:end])
		h.mu.Unlock()
		return n, eof
	}
	if off < int64(len(h.prefix)) && end <= httpMaxPrefixSize {
		// The read straddles the prefix: grow it, it is still header.
		newLen := min(max(2*int64(len(h.prefix)), end), h.size, httpMaxPrefixSize)
		more, _, err := h.fetch(int64(len(h.prefix)), newLen-int64(len(h.prefix)), h.size)
		if err != nil {
			h.mu.Unlock()
			return 0, err
		}
		h.prefix = append(h.prefix, more...)
		n := copy(p, h.prefix[off:end])
		h.mu.Unlock()
		return n, eof
	}
	h.mu.Unlock()
	body, _, err := h.fetchInto(p[:end-off], off, h.size)
	if err != nil {
		return 0, err
	}
	return len(body), eof
}

// fetch returns n bytes at off (fewer at the end of the file) and the total size.
func (h *HTTPReaderAt) fetch(off, n, size int64) ([]byte, int64, error) {
	return h.fetchInto(make([]byte, n), off, size)
}

// fetchInto reads the range [off, off+len(p)) into p; size is the known file
// size, or -1 for the first request, which may return fewer bytes.
func (h *HTTPReaderAt) fetchInto(p []byte, off, size int64) ([]byte, int64, error) {
	req, err := http.NewRequestWithContext(h.ctx, http.MethodGet, h.url, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("geotiff: %w", err)
	}
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", off, off+int64(len(p))-1))
	first := size < 0
	if !first {
		switch {
		case h.etag != "" && !strings.HasPrefix(h.etag, "W/"):
			req.Header.Set("If-Match", h.etag) // a weak ETag cannot be matched: compared below
		case h.lastModified != "":
			req.Header.Set("If-Unmodified-Since", h.lastModified)
		}
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("geotiff: %w", err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusPartialContent:
	case http.StatusOK:
		return nil, 0, fmt.Errorf("GET %s: %w", h.url, ErrRangeUnsupported)
	case http.StatusPreconditionFailed:
		return nil, 0, fmt.Errorf("GET %s: HTTP 412 to If-Match %s: %w", h.url, h.etag, ErrFileChanged)
	default:
		return nil, 0, &HTTPError{URL: h.url, StatusCode: resp.StatusCode}
	}
	etag, lastModified := resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")
	if first {
		h.etag, h.lastModified = etag, lastModified
	} else if (h.etag != "" && etag != "" && etag != h.etag) || (h.lastModified != "" && lastModified != "" && lastModified != h.lastModified) {
		// A server that ignores the condition still names the version it sent.
		return nil, 0, fmt.Errorf("GET %s: ETag %s, Last-Modified %s, was %s, %s: %w", h.url, etag, lastModified, h.etag, h.lastModified, ErrFileChanged)
	}
	start, last, total, err := parseContentRange(resp.Header.Get("Content-Range"))
	if err != nil {
		return nil, 0, fmt.Errorf("GET %s: %w", h.url, err)
	}
	if size >= 0 && total != size {
		return nil, 0, fmt.Errorf("GET %s: file size changed from %d to %d: %w", h.url, size, total, ErrFileChanged)
	}
	want := min(int64(len(p)), total-off)
	if start != off || last-start+1 != want {
		return nil, 0, fmt.Errorf("GET %s: asked bytes %d-%d, got %d-%d", h.url, off, off+want-1, start, last)
	}
	if _, err := io.ReadFull(resp.Body, p[:want]); err != nil {
		return nil, 0, fmt.Errorf("GET %s: range %d-%d: %w", h.url, start, last, err)
	}
	return p[:want], total, nil
}

// parseContentRange parses "bytes first-last/total".
func parseContentRange(s string) (first, last, total int64, err error) {
	bad := fmt.Errorf("bad Content-Range %q", s)
	rest, ok := strings.CutPrefix(s, "bytes ")
	if !ok {
		return 0, 0, 0, bad
	}
	rng, tot, ok := strings.Cut(rest, "/")
	if !ok {
		return 0, 0, 0, bad
	}
	a, b, ok := strings.Cut(rng, "-")
	if !ok {
		return 0, 0, 0, bad
	}
	if first, err = strconv.ParseInt(a, 10, 64); err != nil {
		return 0, 0, 0, bad
	}
	if last, err = strconv.ParseInt(b, 10, 64); err != nil {
		return 0, 0, 0, bad
	}
	if total, err = strconv.ParseInt(tot, 10, 64); err != nil {
		return 0, 0, 0, fmt.Errorf("Content-Range %q: the file size is needed: %w", s, bad)
	}
	if first < 0 || last < first || total <= last {
		return 0, 0, 0, bad
	}
	return first, last, total, nil
}
