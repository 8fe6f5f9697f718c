// Package servertest builds cropkit servers for tests: a fresh data
// directory with an admin account, and a handler wrapper that validates
// every response against the server's OpenAPI document. Only tests import it.
package servertest

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/archive/backend"
	"github.com/cropkit/cropkit/archive/store"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/server"
	"github.com/cropkit/cropkit/webhook/sqlstore"
)

// Env is a server over a temporary data directory.
type Env struct {
	Archive *archive.Archive
	// Dir is the data directory.
	Dir        string
	Server     *server.Server
	AdminToken string
	// Handler is Server wrapped by Validate: use it for every request.
	Handler http.Handler
	// Responses counts the responses validated so far.
	Responses *Counter
	dsn       string // the PostgreSQL database (BackendPostgres)
}

// Counter counts validated responses (safe for concurrent use).
type Counter struct {
	mu sync.Mutex
	n  int
}

// N is the count.
func (c *Counter) N() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func (c *Counter) add() {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
}

// BackendEnv names the environment variable choosing the archive's
// backends: unset or "sqlite" is the embedded default (SQLite and files in
// the data directory); BackendPostgres is a throwaway PostgreSQL database
// and S3 bucket (testenv.Postgres, testenv.S3), so CI runs the server suite
// a second time with CROPKIT_TEST_BACKEND=postgres.
const BackendEnv = "CROPKIT_TEST_BACKEND"

// BackendPostgres is the PostgreSQL and S3 backend of BackendEnv.
const BackendPostgres = "postgres"

// Backend is the backend the tests run against ("sqlite" or BackendPostgres).
func Backend() string {
	if os.Getenv(BackendEnv) == BackendPostgres {
		return BackendPostgres
	}
	return "sqlite"
}

// BlobKeys lists the archive's blob keys under prefix (a folder), sorted,
// whatever the backend.
func (e *Env) BlobKeys(t testing.TB, prefix string) []string {
	t.Helper()
	var keys []string
	err := e.Archive.Blobs().List(context.Background(), prefix, func(b archive.BlobInfo) error {
		keys = append(keys, b.Key)
		return nil
	})
	if err != nil {
		t.Fatalf("list blobs %s: %v", prefix, err)
	}
	sort.Strings(keys)
	return keys
}

// New returns a server with cfg over an archive in t.TempDir() (Archive is
// filled in), an admin account and its token.
func New(t testing.TB, cfg server.Config) *Env {
	return NewWith(t, archive.Config{}, cfg)
}

// NewWith is New with the archive's configuration too.
func NewWith(t testing.TB, acfg archive.Config, cfg server.Config) *Env {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	if acfg.SweepGrace == 0 {
		acfg.SweepGrace = -1 // tests reopen right after a simulated crash
	}
	var (
		core *archive.Archive
		err  error
	)
	dsn := ""
	if Backend() == BackendPostgres {
		dsn = testenv.Postgres(t)
		acfg.TempDir = filepath.Join(dir, "tmp")
		core, err = backend.OpenURL(ctx, dsn, testenv.S3(t), acfg)
	} else {
		core, err = backend.Open(ctx, dir, true, acfg)
	}
	if err != nil {
		t.Fatalf("open archive: %v", err)
	}
	t.Cleanup(func() { core.Close() })
	tok, created, err := core.EnsureAdmin(ctx)
	if err != nil || !created {
		t.Fatalf("create admin: created=%v err=%v", created, err)
	}
	cfg.Archive = core
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatalf("new server: %v", err)
	}
	env := &Env{Archive: core, Dir: dir, Server: srv, AdminToken: tok, Responses: &Counter{}, dsn: dsn}
	env.Handler = Validate(t, srv, env.Responses)
	return env
}

// AddUser creates an account (indices nil: every index) and returns its token.
func (e *Env) AddUser(t testing.TB, name string, indices []string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := e.Archive.CreateUser(ctx, archive.NewUser{Name: name, Indices: indices}); err != nil {
		t.Fatalf("create user %s: %v", name, err)
	}
	tok, err := e.Archive.CreateToken(ctx, name)
	if err != nil {
		t.Fatalf("token for %s: %v", name, err)
	}
	return tok
}

// registerDecoders registers kin-openapi's (global) binary body decoders once.
var registerDecoders sync.Once

// Validate wraps h so that every response is checked against the OpenAPI
// document: documented path, method and status, headers and body schema.
// Responses to unknown paths or methods must be the JSON error shape.
// Failures are reported with t.Errorf; counter (may be nil) counts responses.
func Validate(t testing.TB, h http.Handler, counter *Counter) http.Handler {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(server.OpenAPI())
	if err != nil {
		t.Fatalf("load openapi.json: %v", err)
	}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	registerDecoders.Do(func() {
		for _, ct := range []string{"image/png", "image/tiff", "application/zip", "text/csv"} {
			openapi3filter.RegisterBodyDecoder(ct, openapi3filter.FileBodyDecoder)
		}
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		res := rec.Result()
		body := rec.Body.Bytes()
		if err := check(router, r, res, body); err != nil {
			t.Errorf("%s %s → %d: response does not match openapi.json: %v\nbody: %.300s", r.Method, r.URL.Path, res.StatusCode, err, body)
		}
		if counter != nil {
			counter.add()
		}
		for k, v := range res.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(res.StatusCode)
		w.Write(body)
	})
}

// segmented is r as the router must see it: a path segment holding an
// escaped "/" (a field name such as "North 1/2" in /fields/check/{name})
// stays one segment, as it does for net/http's ServeMux, where the
// OpenAPI router would split the unescaped path.
func segmented(r *http.Request) *http.Request {
	if !strings.Contains(r.URL.RawPath, "%2F") && !strings.Contains(r.URL.RawPath, "%2f") {
		return r
	}
	c := r.Clone(r.Context())
	esc := strings.NewReplacer("%2F", "_", "%2f", "_").Replace(r.URL.RawPath)
	if p, err := url.PathUnescape(esc); err == nil {
		c.URL.Path, c.URL.RawPath = p, ""
	}
	return c
}

func check(router routers.Router, r *http.Request, res *http.Response, body []byte) error {
	route, pathParams, err := router.FindRoute(segmented(r))
	if err != nil {
		// Unknown path or method: only the error shape is required.
		if res.StatusCode != http.StatusNotFound && res.StatusCode != http.StatusMethodNotAllowed {
			return err
		}
		return checkErrorShape(res, body)
	}
	input := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request:    r,
			PathParams: pathParams,
			Route:      route,
			Options:    &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
		},
		Status:  res.StatusCode,
		Header:  res.Header,
		Body:    io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), input); err != nil {
		return err
	}
	if res.StatusCode >= 400 {
		return checkErrorShape(res, body)
	}
	return nil
}

func checkErrorShape(res *http.Response, body []byte) error {
	if !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		return &shapeError{"error content type " + res.Header.Get("Content-Type")}
	}
	var eb struct {
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &eb); err != nil || eb.Error == nil || eb.Error.Code == "" || eb.Error.Message == "" {
		return &shapeError{"error body is not {\"error\":{\"code\",\"message\"}}"}
	}
	return nil
}

type shapeError struct{ msg string }

func (e *shapeError) Error() string { return e.msg }

// DB opens the archive's SQLite database read-only, for tests that inspect
// rows directly (closed with the test).
// With BackendPostgres it is the PostgreSQL database (write queries' ?
// placeholders through SQL).
func (e *Env) DB(t testing.TB) *sql.DB {
	t.Helper()
	if e.dsn != "" {
		db, err := sql.Open("pgx", e.dsn)
		if err != nil {
			t.Fatalf("open database: %v", err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(e.Dir, store.DBFile)+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatalf("open database: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// SQL is query for DB's database: ? placeholders become $1, $2… on PostgreSQL.
func (e *Env) SQL(query string) string {
	if e.dsn == "" {
		return query
	}
	return sqlstore.Postgres.Rebind(query)
}
