package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/geo/crs"
	"github.com/cropkit/cropkit/imagery/geotiff/geotifftest"
	"github.com/cropkit/cropkit/server"
	"github.com/cropkit/cropkit/server/servertest"
)

// countingBody is an endless request body that counts what the server reads.
type countingBody struct{ n atomic.Int64 }

func (c *countingBody) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	c.n.Add(int64(len(p)))
	return len(p), nil
}

// Issue: bodies were read before authentication (8 × 120 MiB with a wrong
// token took the server to 2.7 GB). A token in the header or query is
// checked first; a token only in the body lets at most the small limit in.
func TestBodyNotReadBeforeAuthentication(t *testing.T) {
	env := servertest.New(t, server.Config{MaxBodyBytes: 64 << 10})
	for _, tc := range []struct {
		name, target, auth string
		status             int
		maxRead            int64
	}{
		{"wrong bearer token", "/v1/variable-rate-zones", "Bearer wrong", 403, 0},
		{"wrong query token", "/v1/variable-rate-zones?token=wrong", "", 403, 0},
		{"malformed header", "/files/upload", "Basic abc", 403, 0},
		{"no token: small limit", "/v1/variable-rate-zones", "", 403, 64<<10 + 64<<10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := &countingBody{}
			req := httptest.NewRequest("POST", tc.target, io.NopCloser(body))
			req.ContentLength = -1 // chunked: the size is unknown up front
			req.Header.Set("Content-Type", "multipart/form-data; boundary=xyz")
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			rec := httptest.NewRecorder()
			env.Handler.ServeHTTP(rec, req)
			assert.Equal(t, tc.status, rec.Code, rec.Body.String())
			assert.LessOrEqual(t, body.n.Load(), tc.maxRead, "bytes read before authentication")
		})
	}
}

// Multipart bodies are held in memory within the route's limit: nothing is
// spooled to the system's temporary folder (left behind by a kill).
func TestMultipartNotSpooledToTmp(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	env := servertest.New(t, server.Config{})
	tok := env.AddUser(t, "alice", nil)
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	require.NoError(t, mw.WriteField("field_name", "nope"))
	fw, err := mw.CreateFormFile("files", "big.shp")
	require.NoError(t, err)
	_, err = fw.Write(bytes.Repeat([]byte{1}, 20<<20)) // beyond the standard library's 10 MB in memory
	require.NoError(t, err)
	require.NoError(t, mw.Close())
	req := httptest.NewRequest("POST", "/files/upload", &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+tok)
	rec := httptest.NewRecorder()
	env.Handler.ServeHTTP(rec, req)
	assert.Equal(t, 404, rec.Code, rec.Body.String()) // no such field
	entries, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing spooled to TMPDIR")
}

// Issue: two requests trickling their bodies held both heavy slots and
// starved every other user. Slots are taken once the body is read, and
// one account holds at most half of them.
func TestSlowBodiesDoNotStarveHeavyOperations(t *testing.T) {
	env := servertest.New(t, server.Config{HeavyRequests: 2, HeavyWait: 200 * time.Millisecond})
	mallory := env.AddUser(t, "mallory", nil)
	alice := env.AddUser(t, "alice", nil)
	srv := httptest.NewServer(env.Server)
	defer srv.Close()
	// Mallory trickles two conversions (the body never ends).
	var pipes []*io.PipeWriter
	done := make(chan struct{}, 2)
	for range 2 {
		pr, pw := io.Pipe()
		pipes = append(pipes, pw)
		req, err := http.NewRequest("POST", srv.URL+"/convert/geojson-to-shapefile", pr)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+mallory)
		go func() {
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			done <- struct{}{}
		}()
		_, err = pw.Write([]byte(`{"type":"Feature`))
		require.NoError(t, err)
	}
	time.Sleep(100 * time.Millisecond)
	// Alice's conversion runs at once.
	fc := `{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"DOSE":1},"geometry":{"type":"Polygon","coordinates":[[[4.06,50.74],[4.07,50.74],[4.07,50.75],[4.06,50.74]]]}}]}`
	req, err := http.NewRequest("POST", srv.URL+"/convert/geojson-to-shapefile", strings.NewReader(fc))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+alice)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	for _, pw := range pipes {
		pw.CloseWithError(io.ErrUnexpectedEOF)
	}
	<-done
	<-done
}

// Issue: /login had no rate limit and bcrypt ran unbounded. Failed logins
// are limited per account (429 + Retry-After), and a correct password does
// not pass while the account is blocked.
func TestLoginRateLimit(t *testing.T) {
	env := servertest.New(t, server.Config{LoginLimit: 3, LoginWindow: time.Minute})
	_, err := env.Archive.CreateUser(context.Background(), archive.NewUser{Name: "dave", Password: "correct horse"})
	require.NoError(t, err)
	for i := range 3 {
		r := do(t, env.Handler, "POST", "/login", "", map[string]string{"username": "dave", "password": "wrong"})
		require.Equal(t, 403, r.Status, "attempt %d", i)
	}
	r := do(t, env.Handler, "POST", "/login", "", map[string]string{"username": "dave", "password": "correct horse"})
	assert.Equal(t, 429, r.Status, "%s", r.Body)
	assert.Equal(t, "rate_limited", r.ErrorCode(t))
	assert.NotEmpty(t, r.Header.Get("Retry-After"))
	// Another account is not blocked.
	_, err = env.Archive.CreateUser(context.Background(), archive.NewUser{Name: "erin", Password: "pw"})
	require.NoError(t, err)
	r = do(t, env.Handler, "POST", "/login", "", map[string]string{"username": "erin", "password": "pw"})
	assert.Equal(t, 200, r.Status, "%s", r.Body)
}

// Tokens expire (TokenTTL), are listed without secrets, and revoked by
// their holder; a refreshed token replaces the one used.
func TestTokenLifecycle(t *testing.T) {
	env := servertest.NewWith(t, archive.Config{TokenTTL: time.Hour}, server.Config{})
	tok := env.AddUser(t, "alice", nil)
	second, err := env.Archive.CreateToken(context.Background(), "alice")
	require.NoError(t, err)

	r := do(t, env.Handler, "GET", "/tokens/list", tok, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	assert.NotContains(t, string(r.Body), tok)
	toks := r.JSON(t)["tokens"].([]any)
	require.Len(t, toks, 2)
	assert.NotNil(t, toks[0].(map[string]any)["expires_at"])
	assert.Equal(t, true, toks[0].(map[string]any)["current"])

	// SpaceSense's refresh: a new token, the old one revoked.
	r = do(t, env.Handler, "POST", "/user/refresh_token", tok, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	fresh := r.JSON(t)["token"].(string)
	assert.Equal(t, 403, do(t, env.Handler, "GET", "/fields/list", tok, nil).Status, "old token revoked")
	assert.Equal(t, 200, do(t, env.Handler, "GET", "/fields/list", fresh, nil).Status)

	r = do(t, env.Handler, "POST", "/tokens/revoke", second, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	assert.Equal(t, 403, do(t, env.Handler, "GET", "/fields/list", second, nil).Status)
	r = do(t, env.Handler, "POST", "/tokens/revoke?all=true", fresh, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	assert.Equal(t, 403, do(t, env.Handler, "GET", "/fields/list", fresh, nil).Status)

	// An expired token is refused.
	expiring := servertest.NewWith(t, archive.Config{TokenTTL: time.Millisecond}, server.Config{})
	old := expiring.AddUser(t, "bob", nil)
	time.Sleep(1100 * time.Millisecond) // token times are stored to the second
	r = do(t, expiring.Handler, "GET", "/fields/list", old, nil)
	assert.Equal(t, 403, r.Status)
	assert.Contains(t, string(r.Body), "expired")
}

// Issue: group and labels had no size limit (1,000,000 characters were
// accepted and copied into every webhook payload).
func TestFreeTextLimits(t *testing.T) {
	env := servertest.New(t, server.Config{})
	tok := env.AddUser(t, "alice", nil)
	geom := polygonJSON(4.06, 50.74, 4.07, 50.75)
	huge := strings.Repeat("g", 1000)
	for name, body := range map[string]map[string]any{
		"group":      {"field_name": "f", "geometry": geom, "group": huge},
		"label":      {"field_name": "f", "geometry": geom, "labels": map[string]string{"k": huge}},
		"label key":  {"field_name": "f", "geometry": geom, "labels": map[string]string{huge: "v"}},
		"field name": {"field_name": strings.Repeat("n", 201), "geometry": geom},
	} {
		r := do(t, env.Handler, "POST", "/fields/register", tok, body)
		assert.Equal(t, 400, r.Status, "%s: %s", name, r.Body)
	}
	many := map[string]string{}
	for i := range 51 {
		many[fmt.Sprint("k", i)] = "v"
	}
	r := do(t, env.Handler, "POST", "/fields/register", tok, map[string]any{"field_name": "f", "geometry": geom, "labels": many})
	assert.Equal(t, 400, r.Status, "%s", r.Body)
	r = do(t, env.Handler, "POST", "/fields/register", tok, map[string]any{"field_name": "f", "geometry": geom, "group": strings.Repeat("g", 200)})
	assert.Equal(t, 201, r.Status, "%s", r.Body)
}

// Issue: a crafted 2²⁰×2²⁰ scene of 1 cm pixels given to POST /scenes/ingest
// allocated 7.7 GB and killed the process. The field's window is refused
// before anything is allocated, and the answer names the limit and the field.
func TestCraftedSceneIngestIsAFieldFailure(t *testing.T) {
	centimetre := geo.Grid{EPSG: 32631, X0: 500000, Y0: 5600000, DX: 0.01, DY: 0.01, Cols: 1 << 20, Rows: 1 << 20}
	dir := filepath.Join(t.TempDir(), "2024-06-01")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, name := range []string{"B04", "B08", "SCL"} {
		f, err := os.Create(filepath.Join(dir, name+".tif"))
		require.NoError(t, err)
		require.NoError(t, geotifftest.WriteUniform(f, centimetre, 2048, 3000))
		require.NoError(t, f.Close())
	}
	tr, err := crs.New(32631, 4326)
	require.NoError(t, err)
	x0, y0 := 503000.0, 5595000.0
	field, err := geo.Transform(orb.MultiPolygon{{{{x0, y0}, {x0 + 316, y0}, {x0 + 316, y0 + 316}, {x0, y0 + 316}, {x0, y0}}}}, tr)
	require.NoError(t, err)

	env := servertest.New(t, server.Config{})
	r := do(t, env.Handler, "POST", "/fields/register", env.AdminToken, map[string]any{"field_name": "ten-hectares", "indices": "ndvi",
		"geometry": map[string]any{"type": "MultiPolygon", "coordinates": field}})
	require.Equal(t, 201, r.Status, "%s", r.Body)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r = do(t, env.Handler, "POST", "/scenes/ingest", env.AdminToken, map[string]string{"source": dir})
	runtime.ReadMemStats(&after)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	var res archive.IngestResult
	require.NoError(t, json.Unmarshal(r.Body, &res))
	require.Equal(t, 1, res.Failed)
	assert.Equal(t, "ten-hectares", res.Failures[0].Field)
	assert.Contains(t, res.Failures[0].Error, "over the limit of 12000000")
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(256<<20), "bounded allocation")
}
