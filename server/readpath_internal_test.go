package server

import (
	"encoding/json"
	"log/slog"
	"mime"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/api"
)

// The parameters' plain-ASCII shortcuts give what encoding/json gives.
func TestParamShortcutsMatchJSON(t *testing.T) {
	for _, s := range []string{
		"", "UES-03", "2019-06-20", "a b", "field 1/2", "~!@#$%^*()_+{}|:?[];',./`",
		`quote"inside`, `back\slash`, "tab\there", "new\nline", "<b>&amp;", "\x7f", "é", "Zürich", "\u2028", "\xff\xfe", "日本",
	} {
		want, err := json.Marshal(s)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(quote(s)), "quote(%q)", s)
		got, ok, err := params{"p": quote(s)}.str("p")
		require.NoError(t, err)
		assert.True(t, ok)
		var back string
		require.NoError(t, json.Unmarshal(want, &back))
		assert.Equal(t, back, got, "str of %q", s)
	}
	// Raw JSON values as bodies send them, escapes included.
	for _, raw := range []string{`"plain"`, `"esc\"aped"`, `"\u00e9t\u00e9"`, `"a\/b"`, `""`, `"a\u0000b"`} {
		var want string
		require.NoError(t, json.Unmarshal([]byte(raw), &want))
		got, ok, err := params{"p": json.RawMessage(raw)}.str("p")
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, want, got, "str of %s", raw)
	}
	// Invalid JSON strings stay refused.
	for _, raw := range []string{"\"ctrl\x01\"", `"unterminated\"`} {
		_, _, err := params{"p": json.RawMessage(raw)}.str("p")
		assert.Error(t, err, "str of %q", raw)
	}
}

// A file name that is a MIME token is sent as mime.FormatMediaType writes it.
func TestContentDispositionShortcut(t *testing.T) {
	for _, name := range []string{"UES-03_ndvi_20190620.json", "a.png", "x_y-z.zip", "f~1!#$%&'*+^`|.tif"} {
		require.True(t, mimeToken(name), name)
		assert.Equal(t, mime.FormatMediaType("attachment", map[string]string{"filename": name}), contentDisposition(name))
	}
	for _, name := range []string{"", "a b.json", "a;b.json", `q"uote.json`, "é.json", "a/b.json", "a=b.json", "(x).json"} {
		assert.False(t, mimeToken(name), name)
	}
	assert.Equal(t, `attachment; filename="a b.json"`, contentDisposition("a b.json"))
}

// Requests no operation matches, routed once by the mux's fallback, get
// the API's error shape: 404, or 405 with Allow; their latency is
// recorded under the route "unmatched". Every request logs one line
// (method, path, status, bytes, duration; no source: it would name the
// middleware, not the caller).
func TestUnroutedRequestsAndRequestLog(t *testing.T) {
	var logs strings.Builder
	reg := prometheus.NewRegistry()
	srv, tok := newTestServer(t, Config{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{AddSource: true})), Metrics: reg})
	tests := []struct {
		method, target string
		status         int
		code, allow    string
	}{
		{"POST", "/no/such/operation", 404, api.CodeNotFound, ""},
		{"DELETE", "/fields/list", 405, api.CodeMethodNotAllowed, "GET, HEAD, POST"},
		{"POST", "/", 405, api.CodeMethodNotAllowed, "GET, HEAD"},
		{"OPTIONS", "*", 404, api.CodeNotFound, ""},
		{"GET", "/fields//list", 404, api.CodeNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.target, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, tt.target, nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, req)
			require.Equal(t, tt.status, rec.Code, rec.Body.String())
			var body api.ErrorBody
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body), rec.Body.String())
			assert.Equal(t, tt.code, body.Error.Code)
			assert.Equal(t, tt.allow, rec.Header().Get("Allow"))
			assert.Empty(t, rec.Header().Get("Location"))
		})
	}

	req := httptest.NewRequest("POST", "/fields/list", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	require.Equal(t, 200, rec.Code, rec.Body.String())

	series := map[string]uint64{}
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			series[labels["route"]+" "+labels["code"]] += m.GetHistogram().GetSampleCount()
		}
	}
	assert.Equal(t, map[string]uint64{"unmatched 404": 3, "unmatched 405": 2, "POST /fields/list 200": 1}, series)

	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	require.Len(t, lines, len(tests)+1, logs.String())
	last := lines[len(lines)-1]
	assert.Regexp(t, `^time=\S+ level=INFO msg=request method=POST path=/fields/list status=200 bytes=\d+ duration=\S+$`, last)
	assert.Regexp(t, `msg=request method=DELETE path=/fields/list status=405 bytes=\d+ duration=`, lines[1])
	assert.NotContains(t, logs.String(), "source=")
}

// The query's parameters are what url.ParseQuery gives (first values,
// escapes decoded, pairs with a semicolon or a bad escape skipped), and a
// name repeated with another value is a 400.
func TestQueryParamsAsURLQuery(t *testing.T) {
	for _, raw := range []string{
		"", "field_name=UES-03&date=2019-06-20", "a=1&a=1", "a=1&a=2", "a=1&b=2&a=3",
		"x=%41%42&y=a+b&z=%E2%82%AC", "bad=%zz&ok=1", "semi=1;2&ok=2", "&&k=v&", "k", "k=", "=v",
		"a=%3Cb%3E%26&q=%22", "t=abc%2Fdef%3D",
	} {
		t.Run(raw, func(t *testing.T) {
			values, _ := url.ParseQuery(raw)
			want := params{}
			var wantConflict bool
			for k, v := range values {
				want[k] = quote(v[0])
				wantConflict = wantConflict || sameValues(k, v) != nil
			}
			got := params{}
			err := queryParams(got, raw)
			assert.Equal(t, want, got)
			if wantConflict {
				var e *Error
				require.ErrorAs(t, err, &e)
				assert.Equal(t, 400, e.Status)
			} else {
				assert.NoError(t, err)
			}
		})
	}
	err := queryParams(params{}, strings.Repeat("a=1&", maxQueryParams))
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, 400, e.Status)
}
