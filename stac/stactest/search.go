package stactest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/paulmach/orb"

	"github.com/cropkit/cropkit/geo"
)

// searchParams is a search, from a POST body or GET query parameters.
type searchParams struct {
	Collections []string                  `json:"collections,omitempty"`
	Bbox        []float64                 `json:"bbox,omitempty"`
	Intersects  json.RawMessage           `json:"intersects,omitempty"`
	Datetime    string                    `json:"datetime,omitempty"`
	Limit       int                       `json:"limit,omitempty"`
	Query       map[string]map[string]any `json:"query,omitempty"`
	Filter      json.RawMessage           `json:"filter,omitempty"`
	FilterLang  string                    `json:"filter-lang,omitempty"`
	Token       string                    `json:"token,omitempty"`
}

func (c *Catalog) search(w http.ResponseWriter, r *http.Request) {
	var p searchParams
	rec := SearchRequest{Method: r.Method, Query: r.URL.RawQuery}
	switch r.Method {
	case http.MethodPost:
		if c.opts.GETOnly {
			c.count(func(s *Stats) { s.Search++; s.SearchPOST++ })
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rec.Body = body
		if err := json.Unmarshal(body, &p); err != nil {
			c.record(rec)
			http.Error(w, "bad body: "+err.Error(), http.StatusBadRequest)
			return
		}
	case http.MethodGet:
		var err error
		if p, err = fromQuery(r.URL.Query()); err != nil {
			c.record(rec)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	c.record(rec)
	if len(p.Query) > 0 && !c.declares(ConformanceQuery) {
		http.Error(w, "query extension not supported", http.StatusBadRequest)
		return
	}
	if len(p.Filter) > 0 && !c.declares(ConformanceFilter) {
		http.Error(w, "filter extension not supported", http.StatusBadRequest)
		return
	}
	if p.FilterLang != "" && p.FilterLang != "cql2-json" {
		http.Error(w, "only cql2-json filters", http.StatusBadRequest)
		return
	}
	if c.opts.ValidateGeometry && len(p.Intersects) > 0 {
		if reason := topologyError(p.Intersects); reason != "" {
			c.count(func(s *Stats) { s.InvalidGeometries++ })
			writeJSON(w, http.StatusInternalServerError, map[string]any{"code": "InternalError",
				"description": "TopologyException: Input geom 0 is invalid: " + reason})
			return
		}
	}
	m, err := newMatcher(p)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	area := orb.Bound{Min: orb.Point{-180, -90}, Max: orb.Point{180, 90}}
	if m.area != nil {
		area = *m.area
	}
	c.mu.Lock()
	refuse := c.refuse
	if refuse != nil && refuse.match(area) {
		c.stats.Failed++
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(refuse.status)
		io.WriteString(w, refuse.body)
		return
	}
	c.mu.Unlock()

	c.mu.Lock()
	var hits []*published
	for _, it := range c.items {
		ok, err := m.match(it)
		if err != nil {
			c.mu.Unlock()
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if ok {
			hits = append(hits, it)
		}
	}
	c.mu.Unlock()
	slices.SortFunc(hits, func(a, b *published) int {
		if c.opts.Ascending {
			return strings.Compare(sortKey(a), sortKey(b))
		}
		return strings.Compare(sortKey(b), sortKey(a))
	})
	if p.Token != "" {
		// The token is the sort key of the last item sent: items published
		// meanwhile do not shift the pages.
		hits = slices.DeleteFunc(hits, func(it *published) bool {
			k := sortKey(it)
			if c.opts.Ascending {
				return k <= p.Token
			}
			return k >= p.Token
		})
	}
	size := 10
	if p.Limit > 0 {
		size = p.Limit
	}
	if c.opts.PageSize > 0 {
		size = min(size, c.opts.PageSize)
	}
	page := hits[:min(size, len(hits))]
	features := make([]any, len(page))
	for i, it := range page {
		features[i] = c.itemJSON(it)
	}
	links := []map[string]any{{"rel": "root", "href": c.srv.URL}}
	if len(hits) > len(page) {
		links = append(links, c.nextLink(r.Method, p, sortKey(page[len(page)-1])))
	}
	c.mu.Lock()
	raw := slices.Clone(c.raw)
	c.mu.Unlock()
	if len(raw) == 0 || p.Token != "" {
		writeJSON(w, http.StatusOK, map[string]any{
			"type": "FeatureCollection", "features": features, "links": links,
			"numberReturned": len(features), "numberMatched": len(hits),
		})
		return
	}
	// Malformed documents cannot go through encoding/json: spliced in.
	data, err := json.Marshal(map[string]any{"type": "FeatureCollection", "features": features, "links": links})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	sep := ","
	if len(features) == 0 {
		sep = ""
	}
	data = bytes.Replace(data, []byte(`"features":[`), []byte(`"features":[`+strings.Join(raw, ",")+sep), 1)
	w.Header().Set("Content-Type", "application/geo+json")
	w.Write(data)
}

func (c *Catalog) record(r SearchRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stats.Search++
	if r.Method == http.MethodPost {
		c.stats.SearchPOST++
	} else {
		c.stats.SearchGET++
	}
	c.searches = append(c.searches, r)
}

func sortKey(p *published) string {
	return p.Datetime.UTC().Format("2006-01-02T15:04:05.000000000Z") + "|" + p.ID
}

// nextLink continues a search after token.
func (c *Catalog) nextLink(method string, p searchParams, token string) map[string]any {
	p.Token = token
	if method == http.MethodPost && !c.opts.NextGET {
		link := map[string]any{"rel": "next", "href": c.srv.URL + "/search", "method": "POST", "type": "application/geo+json"}
		if c.opts.NextMerge {
			link["body"], link["merge"] = map[string]any{"token": token}, true
		} else {
			link["body"] = p
		}
		return link
	}
	return map[string]any{"rel": "next", "href": c.srv.URL + "/search?" + toQuery(p).Encode(), "method": "GET", "type": "application/geo+json"}
}

func toQuery(p searchParams) url.Values {
	q := url.Values{}
	if len(p.Collections) > 0 {
		q.Set("collections", strings.Join(p.Collections, ","))
	}
	if len(p.Bbox) > 0 {
		parts := make([]string, len(p.Bbox))
		for i, v := range p.Bbox {
			parts[i] = strconv.FormatFloat(v, 'f', -1, 64)
		}
		q.Set("bbox", strings.Join(parts, ","))
	}
	if len(p.Intersects) > 0 {
		q.Set("intersects", string(p.Intersects))
	}
	if p.Datetime != "" {
		q.Set("datetime", p.Datetime)
	}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if len(p.Query) > 0 {
		data, _ := json.Marshal(p.Query)
		q.Set("query", string(data))
	}
	if len(p.Filter) > 0 {
		q.Set("filter", string(p.Filter))
		q.Set("filter-lang", "cql2-json")
	}
	if p.Token != "" {
		q.Set("token", p.Token)
	}
	return q
}

func fromQuery(q url.Values) (searchParams, error) {
	var p searchParams
	if v := q.Get("collections"); v != "" {
		p.Collections = strings.Split(v, ",")
	}
	if v := q.Get("bbox"); v != "" {
		for _, s := range strings.Split(v, ",") {
			f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil {
				return p, fmt.Errorf("bbox: %w", err)
			}
			p.Bbox = append(p.Bbox, f)
		}
	}
	if v := q.Get("intersects"); v != "" {
		p.Intersects = json.RawMessage(v)
	}
	p.Datetime = q.Get("datetime")
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return p, fmt.Errorf("limit: %w", err)
		}
		p.Limit = n
	}
	if v := q.Get("query"); v != "" {
		if err := json.Unmarshal([]byte(v), &p.Query); err != nil {
			return p, fmt.Errorf("query: %w", err)
		}
	}
	if v := q.Get("filter"); v != "" {
		p.Filter = json.RawMessage(v)
		p.FilterLang = q.Get("filter-lang")
		if p.FilterLang == "" {
			p.FilterLang = "cql2-text" // the GET default, which this catalogue refuses
		}
	}
	p.Token = q.Get("token")
	return p, nil
}

// matcher tests items against a search.
type matcher struct {
	p          searchParams
	area       *orb.Bound
	start, end time.Time
	filter     any
}

func newMatcher(p searchParams) (*matcher, error) {
	m := &matcher{p: p}
	switch {
	case len(p.Intersects) > 0:
		b, err := geometryBound(p.Intersects)
		if err != nil {
			return nil, fmt.Errorf("intersects: %w", err)
		}
		m.area = &b
	case len(p.Bbox) == 4:
		m.area = &orb.Bound{Min: orb.Point{p.Bbox[0], p.Bbox[1]}, Max: orb.Point{p.Bbox[2], p.Bbox[3]}}
	case len(p.Bbox) != 0:
		return nil, errors.New("bbox: want 4 numbers")
	}
	if p.Datetime != "" {
		s, e, ok := strings.Cut(p.Datetime, "/")
		if !ok {
			e = s
		}
		var err error
		if m.start, err = parseBound(s); err != nil {
			return nil, fmt.Errorf("datetime: %w", err)
		}
		if m.end, err = parseBound(e); err != nil {
			return nil, fmt.Errorf("datetime: %w", err)
		}
	}
	if len(p.Filter) > 0 {
		if err := json.Unmarshal(p.Filter, &m.filter); err != nil {
			return nil, fmt.Errorf("filter: %w", err)
		}
	}
	return m, nil
}

func parseBound(s string) (time.Time, error) {
	if s == ".." || s == "" {
		return time.Time{}, nil
	}
	return time.Parse(time.RFC3339Nano, s)
}

// topologyError is why GEOS would find a (multi)polygon invalid ("" when
// valid or not a polygon): geo.ValidateMultiPolygon applies the same OGC
// rules (members may touch at points only; rings simple).
func topologyError(raw json.RawMessage) string {
	mp, err := geo.ParseGeometry(raw)
	if err != nil {
		return ""
	}
	if err := geo.ValidateMultiPolygon(mp); err != nil {
		return err.Error()
	}
	return ""
}

// geometryBound is the bound of a GeoJSON point or (multi)polygon: items
// match intersects by bounding boxes, which is enough for tests.
func geometryBound(raw json.RawMessage) (orb.Bound, error) {
	var pt struct {
		Type        string     `json:"type"`
		Coordinates [2]float64 `json:"coordinates"`
	}
	if json.Unmarshal(raw, &pt) == nil && pt.Type == "Point" {
		return orb.Point(pt.Coordinates).Bound(), nil
	}
	mp, err := geo.ParseGeometry(raw)
	if err != nil {
		return orb.Bound{}, err
	}
	return mp.Bound(), nil
}

func (m *matcher) match(it *published) (bool, error) {
	if len(m.p.Collections) > 0 && !slices.Contains(m.p.Collections, collection(it.Item)) {
		return false, nil
	}
	if m.area != nil {
		b := orb.Bound{Min: orb.Point{it.Bbox[0], it.Bbox[1]}, Max: orb.Point{it.Bbox[2], it.Bbox[3]}}
		if !b.Intersects(*m.area) {
			return false, nil
		}
	}
	if !m.start.IsZero() && it.Datetime.Before(m.start) {
		return false, nil
	}
	if !m.end.IsZero() && it.Datetime.After(m.end) {
		return false, nil
	}
	for prop, ops := range m.p.Query {
		v, ok := property(it, prop)
		if !ok {
			return false, nil
		}
		for op, want := range ops {
			c, err := compare(v, want)
			if err != nil {
				return false, fmt.Errorf("query %s: %w", prop, err)
			}
			var pass bool
			switch op {
			case "lt":
				pass = c < 0
			case "lte":
				pass = c <= 0
			case "gt":
				pass = c > 0
			case "gte":
				pass = c >= 0
			case "eq":
				pass = c == 0
			case "neq":
				pass = c != 0
			default:
				return false, fmt.Errorf("query %s: operator %q", prop, op)
			}
			if !pass {
				return false, nil
			}
		}
	}
	if m.filter != nil {
		return evalCQL2(it, m.filter)
	}
	return true, nil
}

// property is an item property as a float64 (numbers) or time.Time (times) or string.
func property(it *published, name string) (any, bool) {
	at := func(t time.Time) time.Time {
		if t.IsZero() {
			return it.at
		}
		return t
	}
	switch name {
	case "eo:cloud_cover":
		return it.CloudCover, !it.NoCloudCover
	case "datetime":
		return it.Datetime, true
	case "created":
		return at(it.Created), true
	case "updated":
		return at(it.Updated), true
	case "id":
		return it.ID, true
	case "collection":
		return collection(it.Item), true
	}
	if v, ok := it.Properties[name]; ok {
		return v, true
	}
	return nil, false
}

// compare orders a property value and a JSON literal: -1, 0, 1.
func compare(v, lit any) (int, error) {
	switch v := v.(type) {
	case float64:
		f, ok := lit.(float64)
		if !ok {
			return 0, fmt.Errorf("compare number with %T", lit)
		}
		switch {
		case v < f:
			return -1, nil
		case v > f:
			return 1, nil
		}
		return 0, nil
	case time.Time:
		var s string
		switch l := lit.(type) {
		case string:
			s = l
		case map[string]any:
			s, _ = l["timestamp"].(string)
			if s == "" {
				s, _ = l["date"].(string)
			}
		}
		t, err := parseBound(s)
		if err != nil || s == "" {
			return 0, fmt.Errorf("compare time with %v", lit)
		}
		return v.Compare(t), nil
	case string:
		s, ok := lit.(string)
		if !ok {
			return 0, fmt.Errorf("compare string with %T", lit)
		}
		return strings.Compare(v, s), nil
	}
	return 0, fmt.Errorf("property of type %T", v)
}

// evalCQL2 evaluates the CQL2 JSON subset: and, or, not, =, <>, <, <=, >, >=
// of a property and a literal.
func evalCQL2(it *published, expr any) (bool, error) {
	e, ok := expr.(map[string]any)
	if !ok {
		return false, fmt.Errorf("filter: expression %v", expr)
	}
	op, _ := e["op"].(string)
	args, _ := e["args"].([]any)
	switch op {
	case "and", "or":
		for _, a := range args {
			v, err := evalCQL2(it, a)
			if err != nil {
				return false, err
			}
			if op == "and" && !v {
				return false, nil
			}
			if op == "or" && v {
				return true, nil
			}
		}
		return op == "and", nil
	case "not":
		if len(args) != 1 {
			return false, errors.New("filter: not takes one argument")
		}
		v, err := evalCQL2(it, args[0])
		return !v, err
	case "=", "<>", "<", "<=", ">", ">=":
		if len(args) != 2 {
			return false, fmt.Errorf("filter: %s takes two arguments", op)
		}
		pr, _ := args[0].(map[string]any)
		name, _ := pr["property"].(string)
		if name == "" {
			return false, fmt.Errorf("filter: %s: first argument is not a property", op)
		}
		v, ok := property(it, name)
		if !ok {
			return false, nil
		}
		c, err := compare(v, args[1])
		if err != nil {
			return false, fmt.Errorf("filter: %s: %w", name, err)
		}
		switch op {
		case "=":
			return c == 0, nil
		case "<>":
			return c != 0, nil
		case "<":
			return c < 0, nil
		case "<=":
			return c <= 0, nil
		case ">":
			return c > 0, nil
		}
		return c >= 0, nil
	}
	return false, fmt.Errorf("filter: operator %q not supported", op)
}
