package stac_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/stac"
	"github.com/cropkit/cropkit/stac/stactest"
	"github.com/cropkit/cropkit/webhook"
)

// The five chips the tests publish: eo:cloud_cover 0, 31.2, 98.7, 0, 0.
var chipDates = []string{"2019-04-21", "2019-04-26", "2019-05-01", "2019-05-16", "2019-06-20"}

// testClient talks to the loopback catalogue (allowPrivate) with short backoffs.
func testClient() *stac.Client {
	c := stac.NewClient(true, 5*time.Second)
	c.BaseBackoff, c.MaxBackoff = time.Millisecond, 20*time.Millisecond
	return c
}

func ids(t *testing.T, seq func(func(stac.Item, error) bool)) []string {
	t.Helper()
	var out []string
	for it, err := range seq {
		require.NoError(t, err)
		out = append(out, it.ID)
	}
	return out
}

func ptr(f float64) *float64 { return &f }

func TestSearchPaging(t *testing.T) {
	items := stactest.Chips(t, "flanders-31UES", chipDates...)
	all := []string{"S2A_31UES_20190620_0_L2A", "S2A_31UES_20190516_0_L2A", "S2A_31UES_20190501_0_L2A", "S2A_31UES_20190426_0_L2A", "S2A_31UES_20190421_0_L2A"}
	clear := []string{"S2A_31UES_20190620_0_L2A", "S2A_31UES_20190516_0_L2A", "S2A_31UES_20190421_0_L2A"}
	asc := func(s []string) []string {
		out := make([]string, len(s))
		for i, v := range s {
			out[len(s)-1-i] = v
		}
		return out
	}
	tests := []struct {
		name      string
		opts      stactest.Options
		params    stac.SearchParams
		want      []string
		post, get int // searches made
	}{
		{"one page", stactest.Options{}, stac.SearchParams{}, all, 1, 0},
		{"one per page, next POST with the whole body", stactest.Options{PageSize: 1}, stac.SearchParams{}, all, 5, 0},
		{"one per page ascending, next POST merging a token", stactest.Options{PageSize: 1, Ascending: true, NextMerge: true}, stac.SearchParams{Collections: []string{"sentinel-2-l2a"}}, asc(all), 5, 0},
		{"next GET links", stactest.Options{PageSize: 2, NextGET: true}, stac.SearchParams{}, all, 1, 2},
		{"GET-only API", stactest.Options{PageSize: 2, GETOnly: true}, stac.SearchParams{}, all, 1, 3},
		{"limit 2", stactest.Options{}, stac.SearchParams{Limit: 2}, all, 3, 0},
		{"max cloud 20 by CQL2", stactest.Options{PageSize: 1}, stac.SearchParams{MaxCloud: ptr(20)}, clear, 3, 0},
		{"max cloud 20 by query", stactest.Options{PageSize: 1, Conformance: []string{stactest.ConformanceCore, stactest.ConformanceSearch, stactest.ConformanceQuery}}, stac.SearchParams{MaxCloud: ptr(20)}, clear, 3, 0},
		{"max cloud 20, no filter extension: client-side", stactest.Options{PageSize: 2, Conformance: []string{stactest.ConformanceCore, stactest.ConformanceSearch}}, stac.SearchParams{MaxCloud: ptr(20)}, clear, 3, 0},
		{"max cloud 40, GET", stactest.Options{GETOnly: true}, stac.SearchParams{MaxCloud: ptr(40)}, asc(asc([]string{all[0], all[1], all[3], all[4]})), 1, 1},
		{"datetime range", stactest.Options{PageSize: 1}, stac.SearchParams{Start: time.Date(2019, 4, 26, 0, 0, 0, 0, time.UTC), End: time.Date(2019, 5, 16, 23, 0, 0, 0, time.UTC)}, all[1:4], 3, 0},
		{"open start", stactest.Options{}, stac.SearchParams{End: time.Date(2019, 4, 30, 0, 0, 0, 0, time.UTC)}, all[3:], 1, 0},
		{"intersects the chip", stactest.Options{}, stac.SearchParams{Intersects: orb.Point{4.065, 50.745}}, all, 1, 0},
		{"intersects elsewhere", stactest.Options{}, stac.SearchParams{Intersects: orb.Bound{Min: orb.Point{3.0, 50.8}, Max: orb.Point{3.1, 50.9}}}, nil, 1, 0},
		{"bbox", stactest.Options{}, stac.SearchParams{Bbox: &orb.Bound{Min: orb.Point{4.0, 50.7}, Max: orb.Point{4.1, 50.8}}}, all, 1, 0},
		{"other collection", stactest.Options{}, stac.SearchParams{Collections: []string{"landsat-c2-l2"}}, nil, 1, 0},
		{"max items", stactest.Options{PageSize: 1}, stac.SearchParams{MaxItems: 2}, all[:2], 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cat := stactest.New(t, tt.opts)
			cat.Publish(items...)
			got := ids(t, testClient().Search(context.Background(), cat.URL(), tt.params))
			assert.Equal(t, tt.want, got)
			st := cat.Stats()
			assert.Equal(t, tt.post, st.SearchPOST, "POST searches")
			assert.Equal(t, tt.get, st.SearchGET, "GET searches")
			assert.Equal(t, 1, st.Landing)
			assert.Zero(t, st.AssetRequests, "a search reads no band")
		})
	}
}

// The cloud filter goes as CQL2 when the catalogue declares it, else as the
// query extension; UpdatedSince only as CQL2.
func TestSearchFilterLanguage(t *testing.T) {
	since := time.Date(2026, 1, 2, 3, 4, 5, 600000000, time.UTC)
	tests := []struct {
		name        string
		conformance []string
		want        string
	}{
		{"CQL2", nil, `{"filter":{"args":[{"args":[{"property":"eo:cloud_cover"},20],"op":"\u003c="},{"args":[{"property":"updated"},{"timestamp":"2026-01-02T03:04:05.6Z"}],"op":"\u003e="}],"op":"and"},"filter-lang":"cql2-json","limit":5}`},
		{"query", []string{stactest.ConformanceCore, stactest.ConformanceSearch, stactest.ConformanceQuery}, `{"limit":5,"query":{"eo:cloud_cover":{"lte":20}}}`},
		{"neither: client-side only", []string{stactest.ConformanceCore, stactest.ConformanceSearch}, `{"limit":5}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cat := stactest.New(t, stactest.Options{Conformance: tt.conformance})
			for _, err := range testClient().Search(context.Background(), cat.URL(), stac.SearchParams{Limit: 5, MaxCloud: ptr(20), UpdatedSince: since}) {
				require.NoError(t, err)
			}
			s := cat.Searches()
			require.Len(t, s, 1)
			assert.JSONEq(t, tt.want, string(s[0].Body))
		})
	}
}

// Items published while a poller runs are found by the next search;
// UpdatedSince (CQL2 on "updated") returns only what was published since.
func TestSearchPublishedMidRun(t *testing.T) {
	items := stactest.Chips(t, "flanders-31UES", chipDates...)
	cat := stactest.New(t, stactest.Options{PageSize: 1, Ascending: true})
	cat.Publish(items[0], items[3])
	c := testClient()
	first := ids(t, c.Search(context.Background(), cat.URL(), stac.SearchParams{}))
	assert.Equal(t, []string{items[0].ID, items[3].ID}, first)

	mark := time.Now()
	time.Sleep(2 * time.Millisecond)
	late := items[1] // acquired before the newest item, published after it
	cat.Publish(late)
	all := ids(t, c.Search(context.Background(), cat.URL(), stac.SearchParams{}))
	assert.Equal(t, []string{items[0].ID, late.ID, items[3].ID}, all)
	fresh := ids(t, c.Search(context.Background(), cat.URL(), stac.SearchParams{UpdatedSince: mark}))
	assert.Equal(t, []string{late.ID}, fresh)
}

func TestSearchItemFields(t *testing.T) {
	it := stactest.Chips(t, "flanders-31UES", "2019-06-20")[0]
	it.Datetime = time.Date(2019, 6, 20, 10, 57, 3, 24512000, time.UTC)
	it.Baseline = "02.12"
	cat := stactest.New(t, stactest.Options{})
	cat.Publish(it)
	var got []stac.Item
	for item, err := range testClient().Search(context.Background(), cat.URL(), stac.SearchParams{}) {
		require.NoError(t, err)
		got = append(got, item)
	}
	require.Len(t, got, 1)
	g := got[0]
	assert.Equal(t, "S2A_31UES_20190620_0_L2A", g.ID)
	assert.Equal(t, "sentinel-2-l2a", g.Collection)
	assert.Equal(t, it.Datetime, g.Datetime, "fractions of a second kept")
	require.NotNil(t, g.CloudCover)
	assert.Zero(t, *g.CloudCover)
	assert.WithinDuration(t, time.Now(), g.Updated, time.Minute)
	assert.Equal(t, g.Created, g.Updated)
	assert.Equal(t, cat.ItemURL(it), g.Self, "self link")
	assert.True(t, strings.HasPrefix(g.Base, cat.URL()+"/search"), "base: the page the item was read from, %s", g.Base)
	assert.Equal(t, g.Self, g.Source())
	require.Len(t, g.Bbox, 4)
	assert.InDelta(t, 4.06, g.Bbox[0], 0.01)
	assert.InDelta(t, 50.74, g.Bbox[1], 0.01)
	require.Len(t, g.Geometry, 1)
	assert.Len(t, g.Geometry[0][0], 5)
	assert.ElementsMatch(t, []string{"blue", "green", "red", "rededge1", "rededge2", "rededge3", "nir", "nir08", "swir16", "swir22", "scl"}, keys(g.Assets))
	assert.True(t, strings.HasPrefix(g.Assets["red"].Href, cat.URL()+"/assets/"))
	var code string
	require.NoError(t, json.Unmarshal(g.Properties["proj:code"], &code))
	assert.Equal(t, "EPSG:32631", code)

	byURL, err := testClient().GetItem(context.Background(), cat.ItemURL(it))
	require.NoError(t, err)
	assert.Equal(t, g.ID, byURL.ID)
	assert.Equal(t, g.Datetime, byURL.Datetime)
}

func keys[M ~map[string]V, V any](m M) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestSearchRetries(t *testing.T) {
	items := stactest.Chips(t, "flanders-31UES", chipDates[:2]...)
	tests := []struct {
		name       string
		failures   int
		status     int
		retryAfter string
		minElapsed time.Duration
		wantErr    bool
	}{
		{"503 twice", 2, http.StatusServiceUnavailable, "", 0, false},
		{"429 with Retry-After", 1, http.StatusTooManyRequests, "1", time.Second, false},
		{"502 beyond the retries", 3, http.StatusBadGateway, "", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cat := stactest.New(t, stactest.Options{PageSize: 1})
			cat.Publish(items...)
			c := testClient()
			c.MaxRetries = 2
			c.MaxBackoff = 2 * time.Second
			cat.FailNext(tt.failures, tt.status, tt.retryAfter)
			start := time.Now()
			var got []string
			var err error
			for it, e := range c.Search(context.Background(), cat.URL(), stac.SearchParams{}) {
				if e != nil {
					err = e
					break
				}
				got = append(got, it.ID)
			}
			assert.GreaterOrEqual(t, time.Since(start), tt.minElapsed)
			if tt.wantErr {
				require.ErrorIs(t, err, stac.ErrUnavailable)
				var he *stac.HTTPError
				require.ErrorAs(t, err, &he)
				assert.Equal(t, tt.status, he.Status)
				assert.Equal(t, 3, cat.Stats().Failed, "1 attempt + 2 retries")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, []string{items[1].ID, items[0].ID}, got)
			assert.Equal(t, tt.failures, cat.Stats().Failed)
		})
	}
}

func TestSearchCatalogueDown(t *testing.T) {
	cat := stactest.New(t, stactest.Options{})
	cat.SetDown(true)
	c := testClient()
	c.MaxRetries = 3
	var err error
	for _, e := range c.Search(context.Background(), cat.URL(), stac.SearchParams{}) {
		err = e
	}
	require.ErrorIs(t, err, stac.ErrUnavailable)
	var he *stac.HTTPError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, http.StatusServiceUnavailable, he.Status)
	assert.Equal(t, 4, cat.Stats().Failed)

	// A catalogue that is gone (connection refused) is unavailable as well.
	url := cat.URL()
	cat.Close()
	err = nil
	for _, e := range c.Search(context.Background(), url, stac.SearchParams{}) {
		err = e
	}
	require.ErrorIs(t, err, stac.ErrUnavailable)
	assert.False(t, errors.As(err, &he))
}

// Cancelling the context ends a search waiting between retries; a wait
// that would outlast the deadline is not begun: the answer's status is
// returned at once, not "deadline exceeded".
func TestSearchContextCancel(t *testing.T) {
	cat := stactest.New(t, stactest.Options{})
	cat.SetDown(true)
	c := testClient()
	c.BaseBackoff, c.MaxBackoff = time.Minute, time.Minute
	t.Run("cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		start := time.Now()
		var err error
		for _, e := range c.Search(ctx, cat.URL(), stac.SearchParams{}) {
			err = e
		}
		require.ErrorIs(t, err, context.Canceled)
		assert.Contains(t, err.Error(), "HTTP 503")
		assert.Less(t, time.Since(start), 5*time.Second)
	})
	t.Run("deadline", func(t *testing.T) {
		cat.SetDown(false)
		cat.FailNext(10, http.StatusTooManyRequests, "60")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		start := time.Now()
		var err error
		for _, e := range c.Search(ctx, cat.URL(), stac.SearchParams{}) {
			err = e
		}
		require.ErrorIs(t, err, stac.ErrUnavailable)
		var he *stac.HTTPError
		require.ErrorAs(t, err, &he)
		assert.Equal(t, http.StatusTooManyRequests, he.Status)
		assert.Equal(t, time.Minute, he.RetryAfter)
		assert.Contains(t, err.Error(), "HTTP 429 Too Many Requests (Retry-After 1m0s)")
		assert.Less(t, time.Since(start), 5*time.Second)
	})
}

// Without allowPrivate a loopback catalogue is refused before any request
// (literal address) or at connect time (a name resolving to loopback).
func TestSearchSSRFGuard(t *testing.T) {
	cat := stactest.New(t, stactest.Options{})
	cat.Publish(stactest.Chips(t, "flanders-31UES", "2019-06-20")...)
	c := stac.NewClient(false, 5*time.Second)
	for _, root := range []string{cat.URL(), strings.Replace(cat.URL(), "127.0.0.1", "localhost", 1)} {
		var err error
		for _, e := range c.Search(context.Background(), root, stac.SearchParams{}) {
			err = e
		}
		require.ErrorIs(t, err, webhook.ErrForbiddenAddress, root)
		assert.NotErrorIs(t, err, stac.ErrUnavailable, "a refused address is not retried")
	}
	assert.Zero(t, cat.Stats().Landing)

	// Items found through an allowed client still cannot send a guarded client to loopback assets.
	var item stac.Item
	for it, err := range testClient().Search(context.Background(), cat.URL(), stac.SearchParams{}) {
		require.NoError(t, err)
		item = it
	}
	_, err := c.OpenScene(context.Background(), item, imageryOptions())
	require.ErrorIs(t, err, webhook.ErrForbiddenAddress)
	assert.Zero(t, cat.Stats().AssetRequests)
}

// Timeout bounds each attempt: a catalogue that does not answer fails fast.
func TestSearchTimeout(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(release)
	c := testClient()
	c.Timeout = 100 * time.Millisecond
	c.MaxRetries = 1
	start := time.Now()
	var err error
	for _, e := range c.Search(context.Background(), slow.URL, stac.SearchParams{}) {
		err = e
	}
	require.ErrorIs(t, err, stac.ErrUnavailable)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 2*time.Second, "two attempts of 100 ms")
}
