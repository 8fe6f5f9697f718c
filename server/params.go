package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/cropkit/cropkit/api"
)

// params are a request's parameters: the query string merged with a body that
// is a JSON object, a urlencoded form or a multipart form's values (body wins
// over query). Every value is kept as JSON: query and form values become JSON
// strings, so a getter accepts both `"lat": 50.7` and `?lat=50.7`.
type params map[string]json.RawMessage

// readParams reads the query and body of r. An empty body is fine; a body
// that is not a JSON object or a form is a 400; a body over the limit a 413.
// With an error the query parameters are still returned, so the caller can
// authenticate (a token in the query) before answering the error.
//
// Multipart forms are held in memory up to limit (the route's body bound):
// nothing is spooled to the system's temporary folder, and nothing is read
// before the caller is authenticated when its token is in the header or query.
func readParams(r *http.Request, limit int64) (params, error) {
	p := params{}
	if err := queryParams(p, r.URL.RawQuery); err != nil {
		return p, err
	}
	if r.Body == nil || r.Body == http.NoBody {
		return p, nil
	}
	ct := r.Header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ct)
	switch mt {
	case "application/x-www-form-urlencoded":
		if err := r.ParseForm(); err != nil {
			return p, bodyError("read form", err)
		}
		for k, v := range r.PostForm {
			if len(v) > 0 {
				p[k] = quote(v[0])
			}
			if err := sameValues(k, v); err != nil {
				return p, err
			}
		}
		return p, nil
	case "multipart/form-data":
		if err := r.ParseMultipartForm(limit + 1); err != nil {
			return p, bodyError("read multipart form", err)
		}
		for k, v := range r.MultipartForm.Value {
			if len(v) > 0 {
				p[k] = quote(v[0])
			}
			if err := sameValues(k, v); err != nil {
				return p, err
			}
		}
		return p, nil
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return p, bodyError("read body", err)
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return p, nil
	}
	if mt != "" && mt != "application/json" && !strings.HasSuffix(mt, "+json") && mt != "text/plain" {
		return p, &Error{Status: http.StatusUnsupportedMediaType, Code: api.CodeUnsupportedMedia,
			Message: fmt.Sprintf("content type %q not supported: send JSON, a urlencoded or a multipart form", mt)}
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil || obj == nil {
		return p, badRequest("request body is not a JSON object")
	}
	for k, v := range obj {
		p[k] = v
	}
	return p, nil
}

// maxQueryParams is net/url's default bound on a query's parameters
// (GODEBUG urlmaxqueryparams); beyond it, a 400.
const maxQueryParams = 10000

// queryParams adds the parameters of the raw query to p, parsed as
// url.ParseQuery does (a pair holding a semicolon or a bad escape is
// skipped) but without its map of slices: the first value of a name is
// kept, and a later different value is refused (sameValues). Every name
// is added even then, so that the caller can still authenticate.
func queryParams(p params, query string) error {
	if strings.Count(query, "&") >= maxQueryParams {
		return badRequest("more than %d query parameters", maxQueryParams)
	}
	var conflict error
	for query != "" {
		var pair string
		pair, query, _ = strings.Cut(query, "&")
		if pair == "" || strings.Contains(pair, ";") {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		k, err := url.QueryUnescape(k)
		if err != nil {
			continue
		}
		if v, err = url.QueryUnescape(v); err != nil {
			continue
		}
		q := quote(v)
		first, seen := p[k]
		if !seen {
			p[k] = q
			continue
		}
		if conflict == nil && string(first) != string(q) {
			was, _, _ := p.str(k)
			conflict = sameValues(k, []string{was, v})
		}
	}
	return conflict
}

// sameValues refuses a parameter repeated with different values (?id=6&id=7):
// taking the first silently answered a request the client did not make. A
// repeat of the same value is harmless.
func sameValues(name string, values []string) error {
	for _, v := range values[min(1, len(values)):] {
		if v != values[0] {
			return badRequest("parameter %s given more than once with different values (%q, %q)", name, values[0], v)
		}
	}
	return nil
}

func bodyError(what string, err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return err // answered as 413
	}
	return badRequest("%s: %v", what, err)
}

// quote is s as a JSON string, as json.Marshal writes it. Parameters are
// nearly always plain ASCII: those are wrapped in quotes without the
// encoder.
func quote(s string) json.RawMessage {
	if plainJSON(s) {
		b := make([]byte, 0, len(s)+2)
		return append(append(append(b, '"'), s...), '"')
	}
	b, _ := json.Marshal(s)
	return b
}

// plainJSON tells whether s is the same inside a JSON string as outside:
// printable ASCII that json.Marshal leaves as is (no quote, backslash, or
// the <, > and & it escapes).
func plainJSON[T ~string | ~[]byte](s T) bool {
	for i := range len(s) {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

func isNull(v json.RawMessage) bool { return len(v) == 0 || string(v) == "null" }

// str returns parameter name as a string (a JSON number is taken as its text).
func (p params) str(name string) (string, bool, error) {
	v, ok := p[name]
	if !ok || isNull(v) {
		return "", false, nil
	}
	if n := len(v); n >= 2 && v[0] == '"' && v[n-1] == '"' && plainJSON(v[1:n-1]) {
		return string(v[1 : n-1]), true, nil // what json.Unmarshal gives, without it
	}
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		return s, true, nil
	}
	var n json.Number
	if err := json.Unmarshal(v, &n); err == nil {
		return n.String(), true, nil
	}
	return "", false, badRequest("parameter %s must be a string", name)
}

// required returns a non-empty string parameter, else a 400 naming it.
func (p params) required(name string) (string, error) {
	s, ok, err := p.str(name)
	if err != nil {
		return "", err
	}
	if !ok || strings.TrimSpace(s) == "" {
		return "", badRequest("missing required parameter %s", name)
	}
	return s, nil
}

// format returns the format parameter of the answers that have a CSV form:
// "" (JSON), "json" or "csv", lower-cased; anything else is a 400.
func (p params) format() (string, error) {
	format, _, err := p.str("format")
	if err != nil {
		return "", err
	}
	format = strings.ToLower(format)
	if format != "" && format != "json" && format != "csv" {
		return "", badRequest("format must be json or csv, got %q", format)
	}
	return format, nil
}

// float returns a finite number parameter (JSON number or numeric string).
func (p params) float(name string) (float64, bool, error) {
	s, ok, err := p.str(name)
	if err != nil || !ok {
		return 0, ok, err
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false, badRequest("parameter %s must be a number, got %q", name, s)
	}
	return f, true, nil
}

// date returns a YYYY-MM-DD parameter, checked to be a real calendar date.
func (p params) date(name string) (string, bool, error) {
	s, ok, err := p.str(name)
	if err != nil || !ok {
		return "", ok, err
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return "", false, nil
	}
	t, err := time.Parse(time.DateOnly, s)
	var buf [len(time.DateOnly)]byte
	if err != nil || string(t.AppendFormat(buf[:0], time.DateOnly)) != s {
		return "", false, badRequest("parameter %s must be a date YYYY-MM-DD, got %q", name, s)
	}
	return s, true, nil
}

// list returns a list parameter given as a JSON array of strings or a
// comma-separated string; names are trimmed and lower-cased, empties dropped.
func (p params) list(name string) ([]string, bool, error) {
	items, ok, err := p.rawList(name)
	for i, it := range items {
		items[i] = strings.ToLower(it)
	}
	return items, ok, err
}

// object returns a JSON parameter given inline or as a string holding JSON
// (how forms and query strings carry GeoJSON).
func (p params) object(name string) (json.RawMessage, bool, error) {
	v, ok := p[name]
	if !ok || isNull(v) {
		return nil, false, nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		s = strings.TrimSpace(s)
		if s == "" {
			return nil, false, nil
		}
		if !json.Valid([]byte(s)) {
			return nil, false, badRequest("parameter %s is not valid JSON", name)
		}
		return json.RawMessage(s), true, nil
	}
	return v, true, nil
}

// labels returns an object of string values (inline or as a JSON string).
func (p params) labels(name string) (map[string]string, bool, error) {
	v, ok, err := p.object(name)
	if err != nil || !ok {
		return nil, ok, err
	}
	var m map[string]string
	if err := json.Unmarshal(v, &m); err != nil {
		return nil, false, badRequest("parameter %s must be an object of string values", name)
	}
	if len(m) > 100 {
		return nil, false, badRequest("parameter %s has more than 100 labels", name)
	}
	return m, true, nil
}

// rawList is list without lower-casing (free labels keep their case; index
// names among them are matched lower-cased by the caller).
func (p params) rawList(name string) ([]string, bool, error) {
	v, ok := p[name]
	if !ok || isNull(v) {
		return nil, false, nil
	}
	var items []string
	if err := json.Unmarshal(v, &items); err != nil {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, false, badRequest("parameter %s must be a list of names or a comma-separated string", name)
		}
		if t := strings.TrimSpace(s); strings.HasPrefix(t, "[") && json.Unmarshal([]byte(t), &items) == nil {
			// a JSON list sent as a form value
		} else {
			items = strings.Split(s, ",")
		}
	}
	out := []string{}
	for _, it := range items {
		if it = strings.TrimSpace(it); it != "" {
			out = append(out, it)
		}
	}
	return out, true, nil
}

// boolean returns a parameter given as JSON true/false or as a string that
// parseBool accepts (forms and query strings). Anything else is a 400: a
// lenient "not true means false" turned all=yes into the opposite request.
func (p params) boolean(name string) (bool, bool, error) {
	v, ok := p[name]
	if !ok || isNull(v) {
		return false, false, nil
	}
	var b bool
	if json.Unmarshal(v, &b) == nil {
		return b, true, nil
	}
	s, _, err := p.str(name)
	if err != nil {
		return false, false, badRequest("parameter %s must be true or false", name)
	}
	if strings.TrimSpace(s) == "" {
		return false, false, nil // all= is the same as no all
	}
	b, err = parseBool(s)
	if err != nil {
		return false, false, badRequest("parameter %s must be true or false, got %q", name, s)
	}
	return b, true, nil
}

// errNotBool is parseBool's error for a value that is not a boolean.
var errNotBool = errors.New("not a boolean")

// parseBool is the one reading of a boolean's text for every parameter:
// true/false or 1/0, case-insensitive, surrounding space ignored.
func parseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "1":
		return true, nil
	case "false", "0":
		return false, nil
	}
	return false, fmt.Errorf("%q: %w", s, errNotBool)
}
