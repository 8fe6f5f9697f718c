package server_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/server"
	"github.com/cropkit/cropkit/server/servertest"
)

// QA: /tokens/revoke read any all= other than "true" as false and revoked
// the caller's token. A value that is not a boolean is a 400 and revokes
// nothing; the booleans' spellings all mean what they say.
func TestRevokeAllBoolean(t *testing.T) {
	for _, tc := range []struct {
		all         string
		status      int
		revoked     float64
		callerAlive bool
		otherAlive  bool
	}{
		{"yes", 400, 0, true, true},
		{"maybe", 400, 0, true, true},
		{"2", 400, 0, true, true},
		{"TRUE", 200, 2, false, false},
		{"1", 200, 2, false, false},
		{"true", 200, 2, false, false},
		{"false", 200, 1, false, true},
		{"0", 200, 1, false, true},
	} {
		t.Run(tc.all, func(t *testing.T) {
			env := servertest.New(t, server.Config{})
			tok := env.AddUser(t, "alice", nil)
			other, err := env.Archive.CreateToken(context.Background(), "alice")
			require.NoError(t, err)
			r := do(t, env.Handler, "POST", "/tokens/revoke?all="+tc.all, tok, nil)
			require.Equal(t, tc.status, r.Status, "%s", r.Body)
			if tc.status == 400 {
				assert.Equal(t, "bad_request", r.ErrorCode(t))
				assert.Contains(t, string(r.Body), "parameter all must be true or false")
			} else {
				assert.Equal(t, tc.revoked, r.JSON(t)["revoked"])
			}
			alive := func(tok string) bool { return do(t, env.Handler, "GET", "/fields/list", tok, nil).Status == 200 }
			assert.Equal(t, tc.callerAlive, alive(tok), "caller's token")
			assert.Equal(t, tc.otherAlive, alive(other), "other token")
		})
	}
}

// QA: /fields/metadata/register refused a 100 KB body with 400 "body larger
// than 65536 bytes"; the README's body limit is 1 MiB, 413 beyond.
func TestMetadataBodyLimit(t *testing.T) {
	env := servertest.New(t, server.Config{})
	tok := env.AddUser(t, "alice", nil)
	r := do(t, env.Handler, "POST", "/fields/register", tok, map[string]any{"field_name": "f", "geometry": polygonJSON(4.06, 50.74, 4.07, 50.75)})
	require.Equal(t, 201, r.Status, "%s", r.Body)
	record := `{"field_name":"f","start_date":"2018-01-01","crop_type":"wheat"}`
	for _, tc := range []struct {
		name   string
		body   string
		status int
		code   string
	}{
		{"100 KB of padding", record + strings.Repeat(" ", 100<<10), 201, ""},
		{"900 KB of padding", strings.Repeat(" ", 900<<10) + record, 201, ""},
		{"100 KB value", `{"field_name":"f","start_date":"2018-01-01","crop_type":"` + strings.Repeat("w", 100<<10) + `"}`, 400, "bad_request"},
		{"over 1 MiB", record + strings.Repeat(" ", 1<<20), 413, "too_large"},
	} {
		r := do(t, env.Handler, "POST", "/fields/metadata/register", tok, tc.body)
		require.Equal(t, tc.status, r.Status, "%s: %.200s", tc.name, r.Body)
		if tc.code != "" {
			assert.Equal(t, tc.code, r.ErrorCode(t), tc.name)
			assert.NotContains(t, string(r.Body), "65536", tc.name)
		}
	}
}

// QA: an oversized header got net/http's plain-text 431. Above
// server.MaxHeaderBytes (within the http.Server's HTTPMaxHeaderBytes) the
// answer is the JSON error shape.
func TestOversizedHeaderIsJSON(t *testing.T) {
	env := servertest.New(t, server.Config{})
	tok := env.AddUser(t, "alice", nil)
	ts := httptest.NewUnstartedServer(env.Handler)
	ts.Config.MaxHeaderBytes = server.HTTPMaxHeaderBytes
	ts.Start()
	t.Cleanup(ts.Close)
	for _, tc := range []struct {
		name   string
		size   int
		status int
	}{
		{"small", 1 << 10, 200},
		{"just under the limit", server.MaxHeaderBytes - 1<<10, 200},
		{"over the limit", server.MaxHeaderBytes + 1, 431},
		{"100 KB", 100 << 10, 431},
		{"900 KB", 900 << 10, 431},
	} {
		req, err := http.NewRequestWithContext(context.Background(), "GET", ts.URL+"/fields/list", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("X-Padding", strings.Repeat("p", tc.size))
		res, err := ts.Client().Do(req)
		require.NoError(t, err, tc.name)
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		require.NoError(t, err)
		require.Equal(t, tc.status, res.StatusCode, "%s: %.200s", tc.name, body)
		assert.Equal(t, "application/json", res.Header.Get("Content-Type"), tc.name)
		if tc.status == 431 {
			var e struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			require.NoError(t, json.Unmarshal(body, &e), "%s", body)
			assert.Equal(t, "too_large", e.Error.Code)
			assert.Equal(t, fmt.Sprintf("request header larger than %d bytes", server.MaxHeaderBytes), e.Error.Message)
		}
	}
}

// QA: /download/…?ext=png on /json served a PNG, history index=ndvi with
// indices=evi served evi, notification delete id=6 with another url deleted
// id 6. Disagreeing parameters are a 400 naming both; agreeing ones are fine.
func TestContradictoryParameters(t *testing.T) {
	env := servertest.New(t, server.Config{})
	tok := env.AddUser(t, "alice", nil)
	r := do(t, env.Handler, "POST", "/fields/register", tok, map[string]any{"field_name": "f", "geometry": polygonJSON(4.06, 50.74, 4.07, 50.75)})
	require.Equal(t, 201, r.Status, "%s", r.Body)
	for _, u := range []string{"https://farm.example.com/a", "https://farm.example.com/b"} {
		r = do(t, env.Handler, "POST", "/notifications/register_webhook", tok, map[string]any{"url": u})
		require.Equal(t, 200, r.Status, "%s", r.Body)
	}
	r = do(t, env.Handler, "GET", "/notifications/list", tok, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	hooks := r.JSON(t)["webhooks"].([]any)
	require.Len(t, hooks, 2)
	idOf := map[string]string{}
	for _, h := range hooks {
		m := h.(map[string]any)
		idOf[m["url"].(string)] = fmt.Sprint(m["id"])
	}
	a, b := url.QueryEscape("https://farm.example.com/a"), url.QueryEscape("https://farm.example.com/b")
	for _, tc := range []struct {
		name, method, target string
		status               int
		names                []string
	}{
		{"history index vs indices", "GET", "/fields/history?field_name=f&index=ndvi&indices=evi", 400, []string{"index", "indices"}},
		{"history index and indices agree", "GET", "/fields/history?field_name=f&index=ndvi&indices=NDVI", 200, nil},
		{"repeated parameter, different values", "GET", "/fields/history?field_name=f&index=ndvi&index=evi", 400, []string{"index"}},
		{"repeated parameter, same value", "GET", "/fields/history?field_name=f&index=ndvi&index=ndvi", 200, nil},
		{"notification id vs url", "POST", "/notifications/delete?id=" + idOf["https://farm.example.com/a"] + "&url=" + b, 400, []string{"id", "url"}},
		{"notification id and url agree", "POST", "/notifications/delete?id=" + idOf["https://farm.example.com/a"] + "&url=" + a, 200, nil},
	} {
		r := do(t, env.Handler, tc.method, tc.target, tok, nil)
		require.Equal(t, tc.status, r.Status, "%s: %s", tc.name, r.Body)
		for _, n := range tc.names {
			assert.Contains(t, string(r.Body), "parameter", tc.name)
			assert.Contains(t, string(r.Body), n, tc.name)
		}
	}
	// The contradictory delete deleted nothing: b is still registered, a is gone.
	r = do(t, env.Handler, "GET", "/notifications/list", tok, nil)
	require.Len(t, r.JSON(t)["webhooks"].([]any), 1)
	assert.Contains(t, string(r.Body), "farm.example.com/b")
}

// QA: "UDS-01", "UDS-01 " and " UDS-01" coexisted, NFC and NFD "é" too, and
// ".." registered but could not be addressed. Names are trimmed and NFC at
// every entry point; ".", ".." and names with "/" or control characters
// are a 400.
func TestFieldNamesOnTheWire(t *testing.T) {
	env := servertest.New(t, server.Config{})
	tok := env.AddUser(t, "alice", nil)
	geom := polygonJSON(4.06, 50.74, 4.07, 50.75)
	for _, tc := range []struct {
		name   string
		status int
		stored string
	}{
		{" UDS-01 ", 201, "UDS-01"},
		{"UDS-01", 409, ""},
		{"caf\u00e9", 201, "caf\u00e9"},
		{"cafe\u0301", 409, ""},
		{"..", 400, ""},
		{".", 400, ""},
		{"North 1/2", 201, "North 1/2"},
		{"a\u200bb", 201, "a\u200bb"}, // a format character, not a control one
		{"tab\tname", 400, ""},
	} {
		r := do(t, env.Handler, "POST", "/fields/register", tok, map[string]any{"field_name": tc.name, "geometry": geom})
		require.Equal(t, tc.status, r.Status, "%q: %s", tc.name, r.Body)
		if tc.status == 201 {
			assert.Equal(t, tc.stored, r.JSON(t)["field"].(map[string]any)["field_name"], "%q", tc.name)
		}
	}
	for _, tc := range []struct {
		method, target string
		body           any
		status         int
	}{
		{"GET", "/fields/check/%20UDS-01", nil, 200},
		{"POST", "/fields/update", map[string]any{"field_name": "UDS-01\t", "group": "g"}, 200},
		{"POST", "/fields/metadata/register", map[string]any{"field_name": " cafe\u0301", "start_date": "2018-01-01"}, 201},
		{"POST", "/fields/metadata/list", map[string]any{"field_name": "caf\u00e9"}, 200},
		{"POST", "/fields/delete", map[string]any{"field_name": "UDS-01 "}, 200},
	} {
		r := do(t, env.Handler, tc.method, tc.target, tok, tc.body)
		require.Equal(t, tc.status, r.Status, "%s %s: %s", tc.method, tc.target, r.Body)
	}
	r := do(t, env.Handler, "GET", "/fields/check/UDS-01", tok, nil)
	assert.Equal(t, true, r.JSON(t)["available"], "deleted through a spaced spelling")
	r = do(t, env.Handler, "GET", "/fields/check/caf%C3%A9", tok, nil)
	assert.Equal(t, false, r.JSON(t)["available"])
	r = do(t, env.Handler, "GET", "/fields/check/North%201%2F2", tok, nil)
	assert.Equal(t, false, r.JSON(t)["available"], "a / travels as %%2F: %s", r.Body)
}

// QA: a field named =HYPERLINK(…) appeared as is in the history CSV, a
// formula for any spreadsheet opening it. Text cells starting with = + - @
// tab or CR get a leading '; numbers (negative ones too) stay numbers. On
// real scenes, so mean_variation has values of both signs.
func TestHistoryCSVDefusesFormulas(t *testing.T) {
	sceneRoot := testenv.DataDir(t, "s2", "flanders-31UES")
	env := servertest.New(t, server.Config{})
	tok := env.AddUser(t, "farmer", nil)
	fields := flandersFields(t)
	const evil = `=HYPERLINK("evil.example","x")` // QA's had a URL, refused now for its /
	for _, name := range []string{evil, "+plus", "@at", "-minus", "plain"} {
		r := do(t, env.Handler, "POST", "/fields/register", tok, map[string]any{
			"field_name": name, "indices": []string{"ndvi"},
			"geometry": map[string]any{"type": "MultiPolygon", "coordinates": fields["UES-03"].Geometry},
		})
		require.Equal(t, 201, r.Status, "%s", r.Body)
	}
	for _, d := range []string{"2019-05-16", "2019-06-20", "2019-06-25", "2019-07-05"} {
		ingest(t, env, filepath.Join(sceneRoot, d))
	}
	negative := 0
	for _, tc := range []struct{ name, cell string }{
		{evil, `'` + evil}, {"+plus", "'+plus"}, {"@at", "'@at"}, {"-minus", "'-minus"}, {"plain", "plain"},
	} {
		r := do(t, env.Handler, "GET", "/fields/history?format=csv&field_name="+url.QueryEscape(tc.name), tok, nil)
		require.Equal(t, 200, r.Status, "%s", r.Body)
		rows, err := csv.NewReader(bytes.NewReader(r.Body)).ReadAll()
		require.NoError(t, err)
		require.Greater(t, len(rows), 2, tc.name)
		header := rows[0]
		for _, row := range rows[1:] {
			assert.Equal(t, tc.cell, row[0], tc.name)
			for i, col := range header {
				switch col {
				case "mean", "median", "std", "min", "max", "p25", "p75", "num", "field_pixels", "cloud_cover", "mean_variation":
					v, err := strconv.ParseFloat(row[i], 64)
					require.NoError(t, err, "%s %s=%q stays a number", tc.name, col, row[i])
					if col == "mean_variation" && v < 0 {
						negative++
						assert.Equal(t, "-", row[i][:1])
					}
				}
			}
		}
	}
	assert.Positive(t, negative, "some mean_variation is negative and written as a plain number")
}
