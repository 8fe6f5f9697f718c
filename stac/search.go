package stac

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/paulmach/orb"
)

// DefaultMaxPages bounds the pages one search follows when SearchParams.MaxPages is 0.
const DefaultMaxPages = 10000

// SearchParams select items. Zero fields do not constrain the search.
type SearchParams struct {
	Collections []string
	// Intersects is an EPSG:4326 geometry the items must intersect.
	Intersects orb.Geometry
	// Bbox is an EPSG:4326 box, used when Intersects is nil (the API takes one of them).
	Bbox *orb.Bound
	// Start and End bound the acquisition datetime (inclusive); zero is an open end.
	// Items outside them are dropped even if the catalogue returns them.
	Start, End time.Time
	// Limit is the page size asked of the catalogue (STAC "limit"); 0 lets it choose.
	Limit int
	// MaxItems stops the search after that many items; 0 means all.
	MaxItems int
	// MaxPages bounds the pages followed; 0 means DefaultMaxPages.
	MaxPages int
	// MaxCloud keeps items with eo:cloud_cover ≤ *MaxCloud (percent), through
	// CQL2 filter when the catalogue declares it, else the query extension
	// when declared; items above it or without a cloud cover are dropped
	// client-side in every case.
	MaxCloud *float64
	// UpdatedSince keeps items whose "updated" time is at or after it. The
	// catalogue filters on it only with CQL2; otherwise it is applied to the
	// answers (items without "updated" are kept).
	UpdatedSince time.Time
	// OnBadItem is told of each item skipped as malformed (an *ItemError:
	// an id that is not a string, a bbox that is not finite, no datetime or
	// one beyond now + MaxFutureSkew); the rest of the page is still read.
	// nil skips them silently.
	OnBadItem func(error)
}

// MaxFutureSkew is how far past the present an item's datetime may be:
// acquisitions are not dated in the future, and an item that is would stand
// as the newest acquisition of every field it covers.
const MaxFutureSkew = 24 * time.Hour

// ItemError is an item of a search page skipped as malformed.
type ItemError struct {
	Page, Index int    // 1-based page, 0-based position in its features
	ID          string // "" when the id could not be read
	Err         error
}

func (e *ItemError) Error() string {
	id := e.ID
	if id == "" {
		id = "?"
	}
	return fmt.Sprintf("stac: item %q (page %d, feature %d) skipped: %v", id, e.Page, e.Index, e.Err)
}

func (e *ItemError) Unwrap() error { return e.Err }

// Search runs an item search against the STAC API at root (its landing
// page URL) and yields the items page by page, following rel "next" links.
// It reads the landing page to choose CQL2 filter or the query extension and
// the search endpoint, POSTs the search and falls back to GET when POST is
// refused (404, 405, 501). An error is yielded once, as the last value.
// Items are yielded once per search even if pages repeat them.
func (c *Client) Search(ctx context.Context, root string, p SearchParams) iter.Seq2[Item, error] {
	return func(yield func(Item, error) bool) {
		err := c.search(ctx, root, p, yield)
		if err != nil {
			yield(Item{}, err)
		}
	}
}

// errStop ends a search the consumer stopped.
var errStop = errors.New("stop")

func (c *Client) search(ctx context.Context, root string, p SearchParams, yield func(Item, error) bool) error {
	if p.Intersects != nil && p.Bbox != nil {
		return fmt.Errorf("stac: search: Intersects and Bbox are exclusive")
	}
	landing, err := c.GetLanding(ctx, root)
	if err != nil {
		return fmt.Errorf("stac: search %s: landing page: %w", root, err)
	}
	body, err := p.body(landing.SupportsFilter(), landing.SupportsQuery())
	if err != nil {
		return fmt.Errorf("stac: search %s: %w", root, err)
	}
	req := request{method: http.MethodPost, url: landing.SearchURL(), body: body}
	maxPages := p.MaxPages
	if maxPages <= 0 {
		maxPages = DefaultMaxPages
	}
	seen := map[string]bool{}
	asked := map[string]bool{} // requests made, to detect next-link cycles
	usePOST := true
	n := 0
	for page := 0; page < maxPages; page++ {
		if !usePOST && req.method == http.MethodPost {
			if req, err = toGET(req); err != nil {
				return fmt.Errorf("stac: search %s: %w", root, err)
			}
		}
		key := req.key()
		if asked[key] {
			return fmt.Errorf("stac: search %s page %d: %w: %s %s was read before", root, page+1, ErrNextLinkCycle, req.method, req.url)
		}
		asked[key] = true
		data, err := c.do(ctx, req)
		var he *HTTPError
		if page == 0 && req.method == http.MethodPost && errors.As(err, &he) &&
			(he.Status == http.StatusNotFound || he.Status == http.StatusMethodNotAllowed || he.Status == http.StatusNotImplemented) {
			usePOST = false // this API searches with GET only
			page--
			continue
		}
		if err != nil {
			return fmt.Errorf("stac: search %s page %d: %w", root, page+1, err)
		}
		features, links, err := decodePage(data)
		if err != nil {
			return fmt.Errorf("stac: search %s page %d: decode: %w", root, page+1, err)
		}
		now := time.Now()
		for i, raw := range features {
			it, err := ParseItem(raw, req.url)
			if err == nil {
				err = checkItem(it, now)
			}
			if err != nil {
				if p.OnBadItem != nil {
					p.OnBadItem(&ItemError{Page: page + 1, Index: i, ID: it.ID, Err: err})
				}
				continue
			}
			if seen[it.ID] || !p.keep(it) {
				continue
			}
			seen[it.ID] = true
			if !yield(it, nil) {
				return nil
			}
			if n++; p.MaxItems > 0 && n >= p.MaxItems {
				return nil
			}
		}
		next, ok, err := nextRequest(req, links)
		if err != nil {
			return fmt.Errorf("stac: search %s page %d: %w", root, page+1, err)
		}
		if !ok || len(features) == 0 {
			return nil
		}
		req = next
	}
	return fmt.Errorf("stac: search %s: more than %d pages", root, maxPages)
}

// key identifies a request: method, URL and a digest of the body.
func (r request) key() string {
	h := sha256.Sum256(r.body)
	return r.method + " " + r.url + " " + hex.EncodeToString(h[:])
}

// checkItem refuses what the rest of cropkit must never see: a bbox that
// is not 4 or 6 finite numbers of a sane size, no acquisition
// datetime, or one beyond now + MaxFutureSkew.
func checkItem(it Item, now time.Time) error {
	if it.Bbox != nil {
		if len(it.Bbox) != 4 && len(it.Bbox) != 6 {
			return fmt.Errorf("bbox has %d numbers, want 4 or 6", len(it.Bbox))
		}
		for _, v := range it.Bbox {
			if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > 1e7 {
				return fmt.Errorf("bbox %v is not finite", it.Bbox)
			}
		}
	}
	if it.Datetime.IsZero() {
		return errors.New("no datetime or start_datetime")
	}
	if it.Datetime.After(now.Add(MaxFutureSkew)) {
		return fmt.Errorf("datetime %s is in the future (more than %v after now)", it.Datetime.Format(time.RFC3339), MaxFutureSkew)
	}
	return nil
}

// decodePage reads a search page's features and links. A page that is not
// valid JSON as a whole (a NaN or a number out of range in one item, as some
// servers write) is split leniently, so that its good items are still read
// and only the bad ones fail ParseItem.
func decodePage(data []byte) ([]json.RawMessage, []Link, error) {
	var fc struct {
		Features []json.RawMessage `json:"features"`
		Links    []Link            `json:"links"`
	}
	strictErr := json.Unmarshal(data, &fc)
	if strictErr == nil {
		return fc.Features, fc.Links, nil
	}
	features, links, ok := lenientPage(data)
	if !ok {
		return nil, nil, strictErr
	}
	return features, links, nil
}

// lenientPage splits a JSON-like object's "features" array into its
// elements and decodes its "links", tolerating invalid values (NaN,
// Infinity) inside them; ok is false when the structure itself is broken.
func lenientPage(data []byte) (features []json.RawMessage, links []Link, ok bool) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, nil, false
	}
	i++
	for {
		i = skipSpace(data, i)
		if i < len(data) && data[i] == '}' {
			return features, links, true
		}
		if i >= len(data) || data[i] != '"' {
			return nil, nil, false
		}
		end := skipValue(data, i)
		if end < 0 {
			return nil, nil, false
		}
		var name string
		if json.Unmarshal(data[i:end], &name) != nil {
			return nil, nil, false
		}
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return nil, nil, false
		}
		i = skipSpace(data, i+1)
		end = skipValue(data, i)
		if end < 0 {
			return nil, nil, false
		}
		switch name {
		case "features":
			elems, good := splitArray(data[i:end])
			if !good {
				return nil, nil, false
			}
			features = elems
		case "links":
			_ = json.Unmarshal(data[i:end], &links) // a page with broken links has no next page
		}
		i = skipSpace(data, end)
		if i < len(data) && data[i] == ',' {
			i++
		}
	}
}

// splitArray returns the elements of the array a ("[…]").
func splitArray(a []byte) ([]json.RawMessage, bool) {
	if len(a) < 2 || a[0] != '[' {
		return nil, false
	}
	var out []json.RawMessage
	i := skipSpace(a, 1)
	for i < len(a) && a[i] != ']' {
		end := skipValue(a, i)
		if end < 0 {
			return nil, false
		}
		out = append(out, json.RawMessage(a[i:end]))
		i = skipSpace(a, end)
		if i < len(a) && a[i] == ',' {
			i = skipSpace(a, i+1)
		}
	}
	return out, i < len(a)
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the end of the value starting at b[i] (a string, an
// object or array with nesting, or a bare word up to a delimiter), -1 when
// it does not end.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		for j := i + 1; j < len(b); j++ {
			switch b[j] {
			case '\\':
				j++
			case '"':
				return j + 1
			}
		}
		return -1
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end := skipValue(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && !strings.ContainsRune(",}] \t\n\r", rune(b[j])) {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// keep applies the constraints to an answer, whatever the catalogue did.
func (p SearchParams) keep(it Item) bool {
	if !p.Start.IsZero() && it.Datetime.Before(p.Start) {
		return false
	}
	if !p.End.IsZero() && it.Datetime.After(p.End) {
		return false
	}
	if p.MaxCloud != nil && (it.CloudCover == nil || *it.CloudCover > *p.MaxCloud) {
		return false
	}
	if !p.UpdatedSince.IsZero() && !it.Updated.IsZero() && it.Updated.Before(p.UpdatedSince) {
		return false
	}
	if len(p.Collections) > 0 && it.Collection != "" {
		for _, c := range p.Collections {
			if c == it.Collection {
				return true
			}
		}
		return false
	}
	return true
}

// body is the POST search body. The cloud filter goes as CQL2 when the API
// declares it, else through the query extension when declared, else only
// client-side (an API may reject members it does not know).
func (p SearchParams) body(cql2, query bool) ([]byte, error) {
	b := map[string]any{}
	if len(p.Collections) > 0 {
		b["collections"] = p.Collections
	}
	if p.Intersects != nil {
		g, err := geometryJSON(p.Intersects)
		if err != nil {
			return nil, err
		}
		b["intersects"] = g
	} else if p.Bbox != nil {
		b["bbox"] = []float64{p.Bbox.Min[0], p.Bbox.Min[1], p.Bbox.Max[0], p.Bbox.Max[1]}
	}
	if !p.Start.IsZero() || !p.End.IsZero() {
		b["datetime"] = interval(p.Start, p.End)
	}
	if p.Limit > 0 {
		b["limit"] = p.Limit
	}
	var conds []any
	if p.MaxCloud != nil {
		if cql2 {
			conds = append(conds, map[string]any{"op": "<=", "args": []any{map[string]any{"property": "eo:cloud_cover"}, *p.MaxCloud}})
		} else if query {
			b["query"] = map[string]any{"eo:cloud_cover": map[string]any{"lte": *p.MaxCloud}}
		}
	}
	if !p.UpdatedSince.IsZero() && cql2 {
		conds = append(conds, map[string]any{"op": ">=", "args": []any{map[string]any{"property": "updated"}, map[string]any{"timestamp": formatTime(p.UpdatedSince)}}})
	}
	switch len(conds) {
	case 0:
	case 1:
		b["filter"], b["filter-lang"] = conds[0], "cql2-json"
	default:
		b["filter"], b["filter-lang"] = map[string]any{"op": "and", "args": conds}, "cql2-json"
	}
	return json.Marshal(b)
}

// geometryJSON is the GeoJSON object of g.
func geometryJSON(g orb.Geometry) (map[string]any, error) {
	switch g := g.(type) {
	case orb.Point:
		return map[string]any{"type": "Point", "coordinates": g}, nil
	case orb.Polygon:
		return map[string]any{"type": "Polygon", "coordinates": g}, nil
	case orb.MultiPolygon:
		return map[string]any{"type": "MultiPolygon", "coordinates": g}, nil
	case orb.Ring:
		return map[string]any{"type": "Polygon", "coordinates": orb.Polygon{g}}, nil
	case orb.Bound:
		return map[string]any{"type": "Polygon", "coordinates": g.ToPolygon()}, nil
	}
	return nil, fmt.Errorf("intersects: geometry %T not supported (want a point or (multi)polygon)", g)
}

// interval is a STAC datetime interval, ".." for an open end.
func interval(start, end time.Time) string {
	s, e := "..", ".."
	if !start.IsZero() {
		s = formatTime(start)
	}
	if !end.IsZero() {
		e = formatTime(end)
	}
	return s + "/" + e
}

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// nextRequest builds the request a rel "next" link asks for: a POST sends
// the link's body as given, merged into the previous body when the link says
// merge; otherwise a GET of href.
func nextRequest(prev request, links []Link) (request, bool, error) {
	for _, l := range links {
		if l.Rel != "next" || l.Href == "" {
			continue
		}
		u, err := resolve(prev.url, l.Href)
		if err != nil {
			return request{}, false, fmt.Errorf("next link %q: %w", l.Href, err)
		}
		next := request{method: http.MethodGet, url: u, headers: l.Headers}
		if strings.EqualFold(l.Method, http.MethodPost) {
			next.method = http.MethodPost
			next.body = []byte(l.Body)
			if l.Merge && prev.body != nil {
				merged, err := mergeBodies(prev.body, l.Body)
				if err != nil {
					return request{}, false, fmt.Errorf("next link: merge body: %w", err)
				}
				next.body = merged
			}
			if len(next.body) == 0 {
				next.body = []byte("{}")
			}
		}
		return next, true, nil
	}
	return request{}, false, nil
}

// mergeBodies overlays the top-level members of patch on base.
func mergeBodies(base, patch []byte) ([]byte, error) {
	var b map[string]json.RawMessage
	if err := json.Unmarshal(base, &b); err != nil {
		return nil, err
	}
	if len(patch) > 0 {
		var p map[string]json.RawMessage
		if err := json.Unmarshal(patch, &p); err != nil {
			return nil, err
		}
		for k, v := range p {
			b[k] = v
		}
	}
	return json.Marshal(b)
}

// toGET turns a POST search into the equivalent GET: arrays comma-separated,
// strings and numbers as they are, objects (intersects, query, filter) as JSON.
func toGET(req request) (request, error) {
	var b map[string]json.RawMessage
	if len(req.body) > 0 {
		if err := json.Unmarshal(req.body, &b); err != nil {
			return request{}, fmt.Errorf("GET search: %w", err)
		}
	}
	u, err := url.Parse(req.url)
	if err != nil {
		return request{}, err
	}
	q := u.Query()
	for k, raw := range b {
		var s string
		var f float64
		var arr []any
		switch {
		case json.Unmarshal(raw, &s) == nil:
			q.Set(k, s)
		case json.Unmarshal(raw, &f) == nil:
			q.Set(k, strconv.FormatFloat(f, 'f', -1, 64))
		case json.Unmarshal(raw, &arr) == nil && flat(arr):
			parts := make([]string, len(arr))
			for i, v := range arr {
				parts[i] = fmt.Sprint(v)
			}
			q.Set(k, strings.Join(parts, ","))
		default:
			q.Set(k, string(raw))
		}
	}
	u.RawQuery = q.Encode()
	return request{method: http.MethodGet, url: u.String(), headers: req.headers}, nil
}

// flat: every element is a string or a number.
func flat(arr []any) bool {
	for _, v := range arr {
		switch v.(type) {
		case string, float64:
		default:
			return false
		}
	}
	return true
}
