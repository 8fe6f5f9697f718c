package stactest_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/stac/stactest"
)

func TestChipItem(t *testing.T) {
	tests := []struct {
		date  string
		cloud float64 // dates.csv frac_scl_cloud_8_9_10 · 100
		when  time.Time
	}{
		{"2019-06-20", 0, time.Date(2019, 6, 20, 10, 57, 3, 0, time.UTC)},
		{"2019-04-26", 31.2, time.Date(2019, 4, 26, 10, 56, 59, 0, time.UTC)},
		{"2019-05-01", 98.7, time.Date(2019, 5, 1, 10, 57, 3, 0, time.UTC)},
	}
	for _, tt := range tests {
		t.Run(tt.date, func(t *testing.T) {
			it := stactest.Chips(t, "flanders-31UES", tt.date)[0]
			assert.Equal(t, "S2A_31UES_"+strings.ReplaceAll(tt.date, "-", "")+"_0_L2A", it.ID)
			assert.Equal(t, tt.when, it.Datetime)
			assert.InDelta(t, tt.cloud, it.CloudCover, 0.05)
			assert.Equal(t, 32631, it.EPSG)
			// 574680–575320 E, 5621800–5622440 N in UTM 31N: the README's
			// "about 4.06°E, 50.745°N", 640 m ≈ 0.0091° of longitude and 0.0058° of latitude.
			assert.InDelta(t, 4.06, (it.Bbox[0]+it.Bbox[2])/2, 0.005)
			assert.InDelta(t, 50.745, (it.Bbox[1]+it.Bbox[3])/2, 0.005)
			assert.InDelta(t, 0.0091, it.Bbox[2]-it.Bbox[0], 0.0003)
			assert.InDelta(t, 0.0058, it.Bbox[3]-it.Bbox[1], 0.0003)
			assert.Len(t, it.Files, 11)
			assert.Contains(t, it.Files["nir08"], "B8A.tif")
		})
	}
}

// recorder is a testing.TB that records Errorf instead of failing.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func get(t *testing.T, c *stactest.Catalog, method, u, rng string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	require.NoError(t, err)
	if rng != "" {
		req.Header.Set("Range", rng)
	}
	resp, err := c.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, body
}

func TestAssets(t *testing.T) {
	rec := &recorder{TB: t}
	cat := stactest.New(rec, stactest.Options{})
	it := stactest.Chips(t, "flanders-31UES", "2019-06-20")[0]
	cat.Publish(it)
	red := cat.URL() + "/assets/" + it.ID + "/red.tif"

	resp, body := get(t, cat, "GET", red, "bytes=0-99")
	assert.Equal(t, http.StatusPartialContent, resp.StatusCode)
	assert.Len(t, body, 100)
	assert.Equal(t, "II*\x00", string(body[:4]), "a little-endian TIFF")
	resp, _ = get(t, cat, "HEAD", red, "")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Empty(t, rec.errs, "HEAD is allowed")

	_, whole := get(t, cat, "GET", red, "")
	require.Len(t, rec.errs, 1, "a whole-file GET fails the test")
	assert.Contains(t, rec.errs[0], "whole-file GET")
	st := cat.Stats()
	assert.Equal(t, 1, st.WholeFileGETs)
	assert.Equal(t, 3, st.AssetRequests)
	assert.Equal(t, int64(100+len(whole)), st.AssetBytes)
	assert.Equal(t, stactest.ItemStats{Requests: 3, Bytes: int64(100 + len(whole))}, cat.ItemStats(it.ID))

	cat.FailAsset(it.ID)
	resp, _ = get(t, cat, "GET", red, "bytes=0-9")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	cat.SetDown(true)
	resp, _ = get(t, cat, "GET", cat.URL(), "")
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	cat.SetDown(false)
	resp, _ = get(t, cat, "GET", cat.URL(), "")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

func TestSearchRequests(t *testing.T) {
	items := stactest.Chips(t, "flanders-31UES", "2019-04-21", "2019-05-01", "2019-06-20")
	tests := []struct {
		name   string
		opts   stactest.Options
		query  url.Values
		status int
		ids    []string
		next   bool
	}{
		{"all, newest first", stactest.Options{}, url.Values{}, 200, []string{items[2].ID, items[1].ID, items[0].ID}, false},
		{"one per page", stactest.Options{PageSize: 1, Ascending: true}, url.Values{}, 200, []string{items[0].ID}, true},
		{"query", stactest.Options{}, url.Values{"query": {`{"eo:cloud_cover":{"gt":50}}`}}, 200, []string{items[1].ID}, false},
		{"CQL2 JSON", stactest.Options{}, url.Values{"filter-lang": {"cql2-json"}, "filter": {`{"op":"and","args":[{"op":"<","args":[{"property":"eo:cloud_cover"},5]},{"op":">=","args":[{"property":"datetime"},{"timestamp":"2019-05-01T00:00:00Z"}]}]}`}}, 200, []string{items[2].ID}, false},
		{"CQL2 text refused", stactest.Options{}, url.Values{"filter": {"eo:cloud_cover < 5"}}, 400, nil, false},
		{"query not declared", stactest.Options{Conformance: []string{stactest.ConformanceCore, stactest.ConformanceSearch}}, url.Values{"query": {`{"eo:cloud_cover":{"gt":50}}`}}, 400, nil, false},
		{"datetime", stactest.Options{}, url.Values{"datetime": {"../2019-05-01T10:57:03Z"}}, 200, []string{items[1].ID, items[0].ID}, false},
		{"token", stactest.Options{}, url.Values{"token": {"2019-05-01T10:57:03.000000000Z|" + items[1].ID}}, 200, []string{items[0].ID}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cat := stactest.New(t, tt.opts)
			cat.Publish(items...)
			resp, body := get(t, cat, "GET", cat.URL()+"/search?"+tt.query.Encode(), "")
			require.Equal(t, tt.status, resp.StatusCode, "%s", body)
			if tt.status != 200 {
				return
			}
			var fc struct {
				Features []struct {
					ID string `json:"id"`
				} `json:"features"`
				Links []map[string]any `json:"links"`
			}
			require.NoError(t, json.Unmarshal(body, &fc))
			var got []string
			for _, f := range fc.Features {
				got = append(got, f.ID)
			}
			assert.Equal(t, tt.ids, got)
			hasNext := false
			for _, l := range fc.Links {
				hasNext = hasNext || l["rel"] == "next"
			}
			assert.Equal(t, tt.next, hasNext)
		})
	}
}

// An item without eo:cloud_cover (radar) is served without it, found by a
// search without a cloud filter and excluded by one (query or CQL2), as a
// real catalogue excludes it.
func TestItemWithoutCloudCover(t *testing.T) {
	s2 := stactest.Chips(t, "flanders-31UES", "2019-06-20")[0]
	radar := stactest.Item{ID: "S1A_radar", Collection: "sentinel-1-rtc", Datetime: s2.Datetime.Add(time.Hour), EPSG: s2.EPSG, Bbox: s2.Bbox,
		NoCloudCover: true, Files: map[string]string{"vv": s2.Files["red"]}}
	cat := stactest.New(t, stactest.Options{})
	cat.Publish(s2, radar)
	for _, tt := range []struct {
		name  string
		query url.Values
		ids   []string
	}{
		{"no filter", url.Values{}, []string{radar.ID, s2.ID}},
		{"query", url.Values{"query": {`{"eo:cloud_cover":{"lte":100}}`}}, []string{s2.ID}},
		{"CQL2 JSON", url.Values{"filter-lang": {"cql2-json"}, "filter": {`{"op":"<=","args":[{"property":"eo:cloud_cover"},100]}`}}, []string{s2.ID}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := get(t, cat, "GET", cat.URL()+"/search?"+tt.query.Encode(), "")
			require.Equal(t, 200, resp.StatusCode, "%s", body)
			var fc struct {
				Features []struct {
					ID         string         `json:"id"`
					Properties map[string]any `json:"properties"`
				} `json:"features"`
			}
			require.NoError(t, json.Unmarshal(body, &fc))
			var got []string
			for _, f := range fc.Features {
				got = append(got, f.ID)
				_, has := f.Properties["eo:cloud_cover"]
				assert.Equal(t, f.ID == s2.ID, has, f.ID)
			}
			assert.Equal(t, tt.ids, got)
		})
	}
}
