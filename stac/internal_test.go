package stac

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRetryAfter(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0}, {"3", 3 * time.Second}, {"0", 0}, {"-1", 0}, {"soon", 0},
		{time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat), 0},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, retryAfter(tt.in), tt.in)
	}
	future := retryAfter(time.Now().Add(10 * time.Second).UTC().Format(http.TimeFormat))
	assert.InDelta(t, 9.5, future.Seconds(), 1.5)
}

func TestBackoff(t *testing.T) {
	c := &Client{BaseBackoff: 100 * time.Millisecond, MaxBackoff: time.Second}
	for attempt, ceiling := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, time.Second, time.Second} {
		for range 50 {
			d := c.backoff(attempt, 0)
			assert.Positive(t, d)
			assert.LessOrEqual(t, d, ceiling, "attempt %d", attempt)
		}
	}
	assert.Equal(t, 700*time.Millisecond, c.backoff(0, 700*time.Millisecond), "Retry-After wins")
	assert.Equal(t, time.Second, c.backoff(0, time.Hour), "capped at MaxBackoff")
	huge := c.backoff(100, 0)
	assert.Positive(t, huge, "huge attempts do not overflow")
	assert.LessOrEqual(t, huge, time.Second)
}

func TestNextRequest(t *testing.T) {
	prev := request{method: "POST", url: "https://stac.example/v1/search", body: []byte(`{"collections":["s2"],"limit":1}`)}
	tests := []struct {
		name  string
		links []Link
		want  request
		ok    bool
	}{
		{"none", []Link{{Rel: "self", Href: "x"}}, request{}, false},
		{"POST body as given", []Link{{Rel: "next", Href: "search", Method: "POST", Body: []byte(`{"next":"abc"}`)}},
			request{method: "POST", url: "https://stac.example/v1/search", body: []byte(`{"next":"abc"}`)}, true},
		{"POST merged", []Link{{Rel: "next", Href: "/v1/search", Method: "POST", Body: []byte(`{"token":"t2","limit":5}`), Merge: true, Headers: map[string]string{"X-Page": "2"}}},
			request{method: "POST", url: "https://stac.example/v1/search", body: []byte(`{"collections":["s2"],"limit":5,"token":"t2"}`), headers: map[string]string{"X-Page": "2"}}, true},
		{"GET", []Link{{Rel: "next", Href: "https://stac.example/v1/search?page=2"}},
			request{method: "GET", url: "https://stac.example/v1/search?page=2"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := nextRequest(prev, tt.links)
			require.NoError(t, err)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want.method, got.method)
			assert.Equal(t, tt.want.url, got.url)
			assert.Equal(t, tt.want.headers, got.headers)
			if tt.want.body != nil {
				assert.JSONEq(t, string(tt.want.body), string(got.body))
			}
		})
	}
}

func TestToGET(t *testing.T) {
	got, err := toGET(request{method: "POST", url: "https://stac.example/v1/search", body: []byte(
		`{"collections":["a","b"],"bbox":[1,2,3.5,4],"datetime":"2024-01-01T00:00:00Z/..","limit":10,` +
			`"query":{"eo:cloud_cover":{"lte":20}},"filter-lang":"cql2-json","filter":{"op":"<=","args":[{"property":"eo:cloud_cover"},20]}}`)})
	require.NoError(t, err)
	assert.Equal(t, "GET", got.method)
	u, err := url.Parse(got.url)
	require.NoError(t, err)
	q := u.Query()
	assert.Equal(t, "a,b", q.Get("collections"))
	assert.Equal(t, "1,2,3.5,4", q.Get("bbox"))
	assert.Equal(t, "2024-01-01T00:00:00Z/..", q.Get("datetime"))
	assert.Equal(t, "10", q.Get("limit"))
	assert.JSONEq(t, `{"eo:cloud_cover":{"lte":20}}`, q.Get("query"))
	assert.Equal(t, "cql2-json", q.Get("filter-lang"))
	assert.JSONEq(t, `{"op":"<=","args":[{"property":"eo:cloud_cover"},20]}`, q.Get("filter"))
}

// Band reads fetch many tiles of one host concurrently: NewClient keeps
// enough idle connections that each tile does not open a new one.
func TestNewClientTransport(t *testing.T) {
	c := NewClient(false, 7*time.Second)
	tr, ok := c.HTTPClient.Transport.(*http.Transport)
	require.True(t, ok)
	assert.Equal(t, MaxIdleConnsPerHost, tr.MaxIdleConnsPerHost)
	assert.Nil(t, tr.Proxy, "a proxy would bypass the SSRF guard")
	assert.Equal(t, 7*time.Second, c.HTTPClient.Timeout)
	assert.Equal(t, 7*time.Second, c.Timeout)
	assert.False(t, c.AllowPrivate)
}

func TestMorton(t *testing.T) {
	tests := []struct {
		x, y uint32
		want uint64
	}{{0, 0, 0}, {1, 0, 1}, {0, 1, 2}, {1, 1, 3}, {2, 0, 4}, {3, 3, 15}, {0xffffffff, 0, 0x5555555555555555}}
	for _, tt := range tests {
		assert.Equal(t, tt.want, morton(tt.x, tt.y), "%d,%d", tt.x, tt.y)
	}
}

// A zero-value Client makes its guarded HTTP client once and reuses it.
func TestZeroClientReusesHTTPClient(t *testing.T) {
	c := &Client{AllowPrivate: true, Timeout: 3 * time.Second}
	first := c.httpClient()
	assert.Same(t, first, c.httpClient())
	assert.Equal(t, 3*time.Second, first.Timeout)
	withOwn := &Client{HTTPClient: http.DefaultClient}
	assert.Same(t, http.DefaultClient, withOwn.httpClient())
}
