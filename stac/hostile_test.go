package stac_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/internal/netguard"
	"github.com/cropkit/cropkit/stac"
)

// hostile is a loopback catalogue whose search pages a test writes: page
// n is served at /search (n = 0, the first POST) and /page/n.
type hostile struct {
	srv      *httptest.Server
	pages    func(base string, n int) string // page n's JSON
	searches atomic.Int32
}

func newHostile(t *testing.T, pages func(base string, n int) string) *hostile {
	h := &hostile{pages: pages}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/" || r.URL.Path == "":
			fmt.Fprint(w, `{"conformsTo":["https://api.stacspec.org/v1.0.0/core","https://api.stacspec.org/v1.0.0/item-search"],"links":[]}`)
		case r.URL.Path == "/search":
			h.searches.Add(1)
			fmt.Fprint(w, h.pages(h.srv.URL, 0))
		case strings.HasPrefix(r.URL.Path, "/page/"):
			h.searches.Add(1)
			var n int
			fmt.Sscanf(r.URL.Path, "/page/%d", &n)
			fmt.Fprint(w, h.pages(h.srv.URL, n))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func item(id, extra string) string {
	return `{"type":"Feature","id":` + id + `,"bbox":[3.1,50.9,3.2,51.0],"geometry":null,` +
		`"properties":{"datetime":"2024-05-01T10:30:00Z"` + extra + `},"assets":{},"links":[]}`
}

func page(next string, items ...string) string {
	links := "[]"
	if next != "" {
		links = `[{"rel":"next","href":"` + next + `"}]`
	}
	return `{"type":"FeatureCollection","features":[` + strings.Join(items, ",") + `],"links":` + links + `}`
}

// scopedClient allows private addresses for the catalogue's origin only.
func scopedClient(t *testing.T, root string) *stac.Client {
	g, err := stac.NewGuard().Allow(root)
	require.NoError(t, err)
	c := stac.NewGuardedClient(g, 5*time.Second)
	c.BaseBackoff, c.MaxBackoff = time.Millisecond, 20*time.Millisecond
	return c
}

func collect(c *stac.Client, root string, p stac.SearchParams) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var ids []string
	for it, err := range c.Search(ctx, root, p) {
		if err != nil {
			return ids, err
		}
		ids = append(ids, it.ID)
	}
	return ids, nil
}

// Defect 9 and 10: malformed items (a numeric id, a bbox of 1e400 or NaN, a
// far-future datetime, no datetime) are skipped with a reason while the
// rest of the page, and the next page, are read.
func TestSearchSkipsBadItems(t *testing.T) {
	h := newHostile(t, func(base string, n int) string {
		if n == 0 {
			return page(base+"/page/1",
				item(`"good-1"`, ""),
				item(`123`, ""),
				strings.Replace(item(`"huge-bbox"`, ""), "3.2,51.0", "1e400,51.0", 1),
				strings.Replace(item(`"nan-bbox"`, ""), "3.2,51.0", "NaN,51.0", 1),
				strings.Replace(item(`"far-future"`, ""), "2024-05-01", "9999-12-31", 1),
				strings.Replace(item(`"no-date"`, ""), `"datetime":"2024-05-01T10:30:00Z"`, `"platform":"x"`, 1),
				item(`"good-2"`, ""))
		}
		return page("", item(`"good-3"`, ""))
	})
	var bad []*stac.ItemError
	got, err := collect(scopedClient(t, h.srv.URL), h.srv.URL, stac.SearchParams{OnBadItem: func(err error) {
		var ie *stac.ItemError
		require.ErrorAs(t, err, &ie)
		bad = append(bad, ie)
	}})
	require.NoError(t, err)
	assert.Equal(t, []string{"good-1", "good-2", "good-3"}, got)
	require.Len(t, bad, 5)
	assert.Equal(t, []int{1, 2, 3, 4, 5}, []int{bad[0].Index, bad[1].Index, bad[2].Index, bad[3].Index, bad[4].Index})
	assert.Contains(t, bad[0].Error(), "id")
	assert.Equal(t, "far-future", bad[3].ID)
	assert.Contains(t, bad[3].Error(), "in the future")
	assert.Contains(t, bad[4].Error(), "no datetime")
}

// Defect 13: next links that lead back to a page already read end the
// search with ErrNextLinkCycle after one round.
func TestSearchNextLinkCycle(t *testing.T) {
	h := newHostile(t, func(base string, n int) string {
		switch n {
		case 0:
			return page(base+"/page/1", item(`"a"`, ""))
		case 1:
			return page(base+"/page/2", item(`"b"`, ""))
		}
		return page(base+"/page/1", item(`"c"`, ""))
	})
	got, err := collect(scopedClient(t, h.srv.URL), h.srv.URL, stac.SearchParams{})
	require.ErrorIs(t, err, stac.ErrNextLinkCycle)
	assert.Equal(t, []string{"a", "b", "c"}, got)
	assert.Equal(t, int32(3), h.searches.Load())
}

// Defect 11: the permission for the catalogue's loopback origin does not
// extend to a next link on another loopback port or the metadata address,
// nor to asset URLs there.
func TestSearchScopedGuard(t *testing.T) {
	var otherHits atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		fmt.Fprint(w, page(""))
	}))
	defer other.Close()
	for _, target := range []string{other.URL + "/search", "http://169.254.169.254/latest/meta-data/"} {
		t.Run(target, func(t *testing.T) {
			h := newHostile(t, func(base string, n int) string { return page(target, item(`"a"`, "")) })
			got, err := collect(scopedClient(t, h.srv.URL), h.srv.URL, stac.SearchParams{})
			require.ErrorIs(t, err, netguard.ErrForbiddenAddress)
			assert.Contains(t, err.Error(), "catalogue address")
			assert.Equal(t, []string{"a"}, got)
		})
	}
	assert.Zero(t, otherHits.Load())

	// An asset on the other port is refused before any request.
	h := newHostile(t, func(string, int) string { return page("") })
	raw := []byte(`{"type":"Feature","id":"x","properties":{"datetime":"2024-05-01T10:30:00Z"},` +
		`"assets":{"red":{"href":"` + other.URL + `/B04.tif","type":"image/tiff; application=geotiff","eo:bands":[{"name":"B04"}]}},"links":[]}`)
	it, err := stac.ParseItem(raw, h.srv.URL+"/collections/c/items/x")
	require.NoError(t, err)
	_, err = scopedClient(t, h.srv.URL).OpenScene(context.Background(), it, imageryOptions())
	require.ErrorIs(t, err, netguard.ErrForbiddenAddress)
	assert.Zero(t, otherHits.Load())
}

// Defect 13: an answer over the size limit is read once, up to the limit,
// and not retried.
func TestSearchOversizedNotRetried(t *testing.T) {
	var searches atomic.Int32
	var sent atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/search" {
			fmt.Fprint(w, `{"conformsTo":[],"links":[]}`)
			return
		}
		searches.Add(1)
		// No Content-Length: the client finds out by reading.
		chunk := bytes.Repeat([]byte(" "), 1<<20)
		fmt.Fprint(w, `{"features":[`)
		for range 40 {
			n, err := w.Write(chunk)
			sent.Add(int64(n))
			if err != nil {
				return
			}
		}
		fmt.Fprint(w, `]}`)
	}))
	defer srv.Close()
	_, err := collect(scopedClient(t, srv.URL), srv.URL, stac.SearchParams{})
	require.ErrorIs(t, err, stac.ErrTooLarge)
	assert.Equal(t, int32(1), searches.Load())
}

// Defect 13: a 429 is retried after its Retry-After (capped at MaxBackoff)
// and logged with its status and Retry-After.
func TestSearchRateLimitLogged(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/search" {
			fmt.Fprint(w, `{"conformsTo":[],"links":[]}`)
			return
		}
		if calls.Add(1) <= 2 {
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"code":"TooManyRequests","description":"slow down"}`)
			return
		}
		fmt.Fprint(w, page("", item(`"a"`, "")))
	}))
	defer srv.Close()
	var logs bytes.Buffer
	c := scopedClient(t, srv.URL)
	c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	got, err := collect(c, srv.URL, stac.SearchParams{})
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, got)
	assert.Equal(t, int32(3), calls.Load())
	assert.Equal(t, 2, strings.Count(logs.String(), "level=WARN msg=\"catalogue request failed; retrying\""))
	assert.Contains(t, logs.String(), "status=429")
	assert.Contains(t, logs.String(), "retry_after=7s")
	assert.Contains(t, logs.String(), "wait=20ms") // MaxBackoff caps the Retry-After
	assert.Contains(t, logs.String(), "slow down")
	assert.False(t, errors.Is(err, context.DeadlineExceeded))
}
