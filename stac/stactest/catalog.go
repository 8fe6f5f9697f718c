// Package stactest runs a local STAC API for tests: an httptest server on
// loopback with a landing page declaring its conformance, item search (POST
// and GET) with collections, intersects/bbox, datetime, limit, the query
// extension and CQL2 JSON filters, paging through rel "next" links, single
// items, and band files served with HTTP Range support. Items are published
// while a test runs; the catalogue can be taken down, assets made to 404,
// and every request is counted so tests can assert that a band was never
// requested, or requested only by Range.
//
// It depends only on library packages and internal/testenv, so tests of any
// package (server, cmd) can use it:
//
//	cat := stactest.New(t, stactest.Options{PageSize: 1, Ascending: true})
//	cat.Publish(stactest.Chips(t, "flanders-31UES", "2019-06-20", "2019-07-05")...)
//	// … register fields, run one poll against cat.URL() with allowPrivate …
//	cat.Publish(stactest.Chips(t, "flanders-31UES", "2019-07-30")...) // published mid-run
//	cat.FailAsset("S2A_31UES_20190730_0_L2A")                         // its bands 404
//	assert.Zero(t, cat.ItemStats("S2A_31UES_20190620_0_L2A").Requests) // no band request
//	assert.Zero(t, cat.Stats().WholeFileGETs)                          // Range only
//
// Chip items are named S2A_<tile>_<YYYYMMDD>_0_L2A after the place's tile code.
package stactest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paulmach/orb"
)

// Conformance classes the catalogue declares by default.
const (
	ConformanceCore   = "https://api.stacspec.org/v1.0.0/core"
	ConformanceSearch = "https://api.stacspec.org/v1.0.0/item-search"
	ConformanceQuery  = "https://api.stacspec.org/v1.0.0/item-search#query"
	ConformanceFilter = "https://api.stacspec.org/v1.0.0-rc.2/item-search#filter"
	ConformanceCQL2   = "http://www.opengis.net/spec/cql2/1.0/conf/cql2-json"
)

// Options shape the catalogue. The zero value declares core, item-search,
// query and filter (CQL2 JSON), pages of at most 10 items newest first,
// next links that POST the whole body again.
type Options struct {
	// Conformance replaces the declared conformance classes. Without the
	// query class a "query" member is answered 400; without the filter class
	// a "filter" member is answered 400.
	Conformance []string
	// PageSize caps the items per page (1: one item per page); 0 means 10.
	PageSize int
	// Ascending orders results oldest first (default newest first).
	Ascending bool
	// GETOnly answers POST /search with 405, as a GET-only API does.
	GETOnly bool
	// NextMerge makes next links of POST searches carry only the page token
	// with "merge": true; otherwise they carry the whole body.
	NextMerge bool
	// NextGET makes next links of POST searches GET links.
	NextGET bool
	// AllowWholeFile accepts band GETs without a Range header; by default
	// each one fails the test.
	AllowWholeFile bool
	// AssetToken, when set, makes the band files behave like Planetary
	// Computer's blob storage: a request without sig=AssetToken in its query
	// is answered 403 (counted in Stats.Unsigned), and the catalogue serves
	// a SAS token service at URL()+"/sas" (GET /sas/token/{collection}).
	AssetToken string

	// ValidateGeometry checks an "intersects" geometry the way a catalogue
	// on PostGIS/GEOS does (stac-fastapi-pgstac): a MultiPolygon whose
	// members overlap or share an edge, or a self-intersecting ring, is
	// answered 500 with a TopologyException body (Stats.InvalidGeometries
	// counts them).
	ValidateGeometry bool
}

// Stats counts the requests the catalogue answered.
type Stats struct {
	Landing, Search, SearchPOST, SearchGET, ItemGets int
	// AssetRequests counts band file requests (GET and HEAD), AssetBytes the
	// body bytes sent for them, WholeFileGETs the GETs without a Range header.
	AssetRequests int
	AssetBytes    int64
	WholeFileGETs int
	// Failed counts answers of SetDown, FailNext and FailAsset.
	Failed int
	// Unsigned counts band requests refused for lacking Options.AssetToken;
	// Tokens the token service's answers.
	Unsigned, Tokens int
	// InvalidGeometries counts searches refused by Options.ValidateGeometry.
	InvalidGeometries int
}

// ItemStats counts the band file requests of one item.
type ItemStats struct {
	Requests int
	Bytes    int64
}

// SearchRequest is one search the catalogue received.
type SearchRequest struct {
	Method string
	Query  string // raw query string of a GET
	Body   []byte // body of a POST
}

// Catalog is a running local STAC API. Its methods are safe for concurrent use.
type Catalog struct {
	t    testing.TB
	opts Options
	srv  *httptest.Server

	mu       sync.Mutex
	items    []*published
	down     bool
	failNext []failure
	failed   map[string]bool
	stats    Stats
	perItem  map[string]*ItemStats
	searches []SearchRequest
	refuse   *searchRefusal
	stalled  map[string]bool
	raw      []string
}

// searchRefusal is a FailSearches setting.
type searchRefusal struct {
	match  func(area orb.Bound) bool
	status int
	body   string
}

type published struct {
	Item
	at    time.Time
	files map[string][]byte // asset key → contents
}

type failure struct {
	status     int
	retryAfter string
}

// New starts a catalogue on loopback, closed when the test ends.
func New(t testing.TB, opts Options) *Catalog {
	c := &Catalog{t: t, opts: opts, failed: map[string]bool{}, perItem: map[string]*ItemStats{}}
	if c.opts.Conformance == nil {
		c.opts.Conformance = []string{ConformanceCore, ConformanceSearch, ConformanceQuery, ConformanceFilter, ConformanceCQL2}
	}
	c.srv = httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(c.srv.Close)
	return c
}

// URL is the API root (landing page).
func (c *Catalog) URL() string { return c.srv.URL }

// ItemURL is the URL of an item's own document.
func (c *Catalog) ItemURL(it Item) string {
	return c.srv.URL + "/collections/" + collection(it) + "/items/" + it.ID
}

// Client is an http.Client for the catalogue (plain, no SSRF guard).
func (c *Catalog) Client() *http.Client { return c.srv.Client() }

// Close stops the server (a catalogue that went away); New's cleanup does it otherwise.
func (c *Catalog) Close() { c.srv.Close() }

// Publish makes items searchable from now on, reading their files into
// memory. An item published again under the same id replaces the old one.
func (c *Catalog) Publish(items ...Item) {
	c.t.Helper()
	now := time.Now().UTC()
	for _, it := range items {
		p := &published{Item: it, at: now, files: map[string][]byte{}}
		for key, path := range it.Files {
			data, err := os.ReadFile(path)
			if err != nil {
				c.t.Fatalf("stactest: publish %s: %v", it.ID, err)
			}
			p.files[key] = data
		}
		for key, data := range it.Data {
			p.files[key] = data
		}
		c.mu.Lock()
		c.items = slices.DeleteFunc(c.items, func(q *published) bool { return q.ID == it.ID })
		c.items = append(c.items, p)
		c.mu.Unlock()
	}
}

// SetDown makes every request answer 503 (true) or work again (false).
func (c *Catalog) SetDown(down bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.down = down
}

// FailNext makes the next n API requests (landing, search, item; not band
// files) answer status, with a Retry-After header when retryAfter is not empty.
func (c *Catalog) FailNext(n, status int, retryAfter string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for range n {
		c.failNext = append(c.failNext, failure{status, retryAfter})
	}
}

// FailSearches makes every search whose area (intersects or bbox; the
// whole world without either) match accepts answer status with body, as a
// catalogue that fails on one region or one kind of request; nil match
// lets every search through again.
func (c *Catalog) FailSearches(match func(area orb.Bound) bool, status int, body string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refuse = nil
	if match != nil {
		c.refuse = &searchRefusal{match: match, status: status, body: body}
	}
}

// PublishRaw adds item documents served as written, not necessarily valid
// JSON (a NaN, a numeric id), at the start of the first page of every
// search, for tests of catalogues that serve malformed items.
func (c *Catalog) PublishRaw(docs ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.raw = append(c.raw, docs...)
}

// StallAsset makes every band file request of item id hang, sending
// nothing, until the client gives up (or 30 s pass): a band host that
// accepts connections but never answers.
func (c *Catalog) StallAsset(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stalled == nil {
		c.stalled = map[string]bool{}
	}
	c.stalled[id] = true
}

// FailAsset makes every band file of item id answer 404.
func (c *Catalog) FailAsset(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failed[id] = true
}

// Stats returns the counters so far.
func (c *Catalog) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// ItemStats returns the band file requests of item id so far.
func (c *Catalog) ItemStats(id string) ItemStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.perItem[id]; s != nil {
		return *s
	}
	return ItemStats{}
}

// Searches returns the searches received so far.
func (c *Catalog) Searches() []SearchRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.searches)
}

// ResetStats zeroes the counters and forgets the searches.
func (c *Catalog) ResetStats() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stats = Stats{}
	c.perItem = map[string]*ItemStats{}
	c.searches = nil
}

func (c *Catalog) declares(class string) bool { return slices.Contains(c.opts.Conformance, class) }

func collection(it Item) string {
	if it.Collection != "" {
		return it.Collection
	}
	return "sentinel-2-l2a"
}

func (c *Catalog) serve(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimSuffix(r.URL.Path, "/")
	isAsset := strings.HasPrefix(path, "/assets/")
	c.mu.Lock()
	if c.down {
		c.stats.Failed++
		c.mu.Unlock()
		http.Error(w, "catalogue down", http.StatusServiceUnavailable)
		return
	}
	if !isAsset && len(c.failNext) > 0 {
		f := c.failNext[0]
		c.failNext = c.failNext[1:]
		c.stats.Failed++
		c.mu.Unlock()
		if f.retryAfter != "" {
			w.Header().Set("Retry-After", f.retryAfter)
		}
		http.Error(w, http.StatusText(f.status), f.status)
		return
	}
	c.mu.Unlock()
	switch {
	case path == "":
		c.count(func(s *Stats) { s.Landing++ })
		c.landing(w)
	case path == "/conformance":
		writeJSON(w, http.StatusOK, map[string]any{"conformsTo": c.opts.Conformance})
	case path == "/search":
		c.search(w, r)
	case strings.HasPrefix(path, "/collections/"):
		c.count(func(s *Stats) { s.ItemGets++ })
		c.item(w, path)
	case isAsset && c.opts.AssetToken != "" && r.URL.Query().Get("sig") != c.opts.AssetToken:
		c.count(func(s *Stats) { s.Unsigned++ })
		http.Error(w, "AuthenticationFailed", http.StatusForbidden)
	case isAsset:
		c.asset(w, r, path)
	case c.opts.AssetToken != "" && strings.HasPrefix(path, "/sas/token/"):
		c.count(func(s *Stats) { s.Tokens++ })
		writeJSON(w, http.StatusOK, map[string]any{"token": "st=2024-01-01T00%3A00%3A00Z&sp=rl&sig=" + c.opts.AssetToken,
			"msft:expiry": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
	default:
		http.NotFound(w, r)
	}
}

func (c *Catalog) count(f func(*Stats)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(&c.stats)
}

func (c *Catalog) landing(w http.ResponseWriter) {
	root := c.srv.URL
	writeJSON(w, http.StatusOK, map[string]any{
		"type": "Catalog", "stac_version": "1.0.0", "id": "stactest", "description": "local STAC API for tests",
		"conformsTo": c.opts.Conformance,
		"links": []map[string]any{
			{"rel": "self", "href": root, "type": "application/json"},
			{"rel": "root", "href": root, "type": "application/json"},
			{"rel": "conformance", "href": root + "/conformance"},
			{"rel": "search", "href": root + "/search", "method": "GET", "type": "application/geo+json"},
			{"rel": "search", "href": root + "/search", "method": "POST", "type": "application/geo+json"},
		},
	})
}

func (c *Catalog) item(w http.ResponseWriter, path string) {
	parts := strings.Split(strings.TrimPrefix(path, "/collections/"), "/")
	if len(parts) != 3 || parts[1] != "items" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	c.mu.Lock()
	var found *published
	for _, p := range c.items {
		if p.ID == parts[2] && collection(p.Item) == parts[0] {
			found = p
		}
	}
	c.mu.Unlock()
	if found == nil {
		http.Error(w, "item not found", http.StatusNotFound)
		return
	}
	writeJSON(w, http.StatusOK, c.itemJSON(found))
}

// itemJSON renders an item in the Earth Search v1 shape.
func (c *Catalog) itemJSON(p *published) map[string]any {
	root := c.srv.URL
	ts := func(t time.Time) string {
		if t.IsZero() {
			t = p.at
		}
		return t.UTC().Format("2006-01-02T15:04:05.000000Z")
	}
	props := map[string]any{
		"datetime": ts(p.Datetime), "created": ts(p.Created), "updated": ts(p.Updated),
		"eo:cloud_cover": p.CloudCover, "platform": "sentinel-2a", "constellation": "sentinel-2",
		"earthsearch:boa_offset_applied": p.BOAOffsetApplied,
	}
	if p.Datetime.IsZero() {
		props["datetime"] = nil
	}
	if p.NoCloudCover {
		delete(props, "eo:cloud_cover")
	}
	if p.EPSG != 0 {
		props["proj:epsg"] = p.EPSG
		props["proj:code"] = "EPSG:" + strconv.Itoa(p.EPSG)
	}
	if p.Baseline != "" {
		props["s2:processing_baseline"] = p.Baseline
	}
	for k, v := range p.Properties {
		props[k] = v
	}
	assets := map[string]any{}
	for key := range p.files {
		a := map[string]any{
			"href":  root + "/assets/" + p.ID + "/" + key + ".tif",
			"type":  "image/tiff; application=geotiff; profile=cloud-optimized",
			"roles": []string{"data"},
		}
		// Masks and radar polarisations (vv, vh: the files say their unit) have no reflectance scaling.
		if key != "scl" && key != "cloud_mask" && key != "vv" && key != "vh" {
			a["raster:bands"] = []map[string]any{{"nodata": 0, "data_type": "uint16", "scale": 0.0001, "offset": p.RasterOffset}}
		}
		assets[key] = a
	}
	b := p.Bbox
	return map[string]any{
		"type": "Feature", "stac_version": "1.0.0", "id": p.ID, "collection": collection(p.Item),
		"stac_extensions": []string{
			"https://stac-extensions.github.io/eo/v1.1.0/schema.json",
			"https://stac-extensions.github.io/projection/v1.1.0/schema.json",
			"https://stac-extensions.github.io/raster/v1.1.0/schema.json",
		},
		"bbox": []float64{b[0], b[1], b[2], b[3]},
		"geometry": map[string]any{"type": "Polygon", "coordinates": [][][2]float64{{
			{b[0], b[1]}, {b[2], b[1]}, {b[2], b[3]}, {b[0], b[3]}, {b[0], b[1]},
		}}},
		"properties": props,
		"links": []map[string]any{
			{"rel": "self", "href": c.ItemURL(p.Item), "type": "application/geo+json"},
			{"rel": "collection", "href": root + "/collections/" + collection(p.Item)},
			{"rel": "root", "href": root},
		},
		"assets": assets,
	}
}

// asset serves a band file with Range support, counting requests and bytes.
func (c *Catalog) asset(w http.ResponseWriter, r *http.Request, path string) {
	parts := strings.Split(strings.TrimPrefix(path, "/assets/"), "/")
	if len(parts) != 2 {
		http.NotFound(w, r)
		return
	}
	id, key := parts[0], strings.TrimSuffix(parts[1], ".tif")
	whole := r.Method == http.MethodGet && r.Header.Get("Range") == ""
	c.mu.Lock()
	c.stats.AssetRequests++
	st := c.perItem[id]
	if st == nil {
		st = &ItemStats{}
		c.perItem[id] = st
	}
	st.Requests++
	if whole {
		c.stats.WholeFileGETs++
	}
	var data []byte
	var found bool
	for _, p := range c.items {
		if p.ID == id {
			data, found = p.files[key]
		}
	}
	failed := c.failed[id]
	if failed {
		c.stats.Failed++
	}
	stalled := c.stalled[id]
	c.mu.Unlock()
	if stalled {
		select {
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
		return
	}
	if whole && !c.opts.AllowWholeFile {
		c.t.Errorf("stactest: whole-file GET of %s (band files must be read with Range requests)", path)
	}
	if failed || !found {
		http.NotFound(w, r)
		return
	}
	cw := &countingWriter{ResponseWriter: w}
	http.ServeContent(cw, r, key+".tif", time.Time{}, bytes.NewReader(data))
	c.mu.Lock()
	c.stats.AssetBytes += cw.n
	st.Bytes += cw.n
	c.mu.Unlock()
}

type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (w *countingWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.n += int64(n)
	return n, err
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		http.Error(w, fmt.Sprintf("encode: %v", err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/geo+json")
	w.WriteHeader(status)
	w.Write(data)
}
