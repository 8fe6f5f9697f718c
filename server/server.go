package server

import (
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/cropkit/cropkit/colormap"
	"github.com/cropkit/cropkit/imagery"
	"github.com/cropkit/cropkit/web"
)

// Config configures a Server. Only Store is required.
type Config struct {
	// Store is the data directory the server serves and ingests into.
	Store *Store
	// Catalogue is the index catalogue; nil means imagery.NewCatalogue().
	Catalogue *imagery.Catalogue
	// MinClear is the fraction of a field's pixels that must be clear for an
	// image to be usable (downloads, lists); 0 means DefaultMinClear.
	MinClear float64
	// MaxBodyBytes bounds request bodies (413 beyond); 0 means 1 MiB.
	MaxBodyBytes int64
	// MaxUploadBytes bounds scene uploads to /scenes/ingest; 0 means 2 GiB.
	MaxUploadBytes int64
	// Workers bounds the fields ingested concurrently; 0 means GOMAXPROCS.
	Workers int
	// Logger receives request and ingestion logs; nil discards them.
	Logger *slog.Logger
	// Webhooks configures notification delivery (webhooks.go; Server.RunWebhooks delivers).
	Webhooks WebhookOptions
	// Limits caps what one account may register; zero fields take the
	// defaults of DefaultLimits.
	Limits Limits
	// HeavyRequests bounds the CPU- and memory-heavy operations (zones,
	// conversions, uploads, scene uploads) running at once; 0 means 2.
	// Beyond, a request waits up to HeavyWait, then gets 503 with Retry-After.
	HeavyRequests int
	// HeavyWait is how long a heavy request queues for a slot; 0 means 5s.
	HeavyWait time.Duration
	// IngestAllowPrivate lets /scenes/ingest fetch scenes from loopback,
	// private, link-local and metadata addresses (see IngestOptions.Untrusted).
	IngestAllowPrivate bool
}

// Limits are the per-account and per-field caps (400 beyond, with the reason).
type Limits struct {
	// FieldsPerUser is the number of fields one account may register.
	FieldsPerUser int
	// FieldExtentHa bounds the area of a field's lon/lat bounding box, in
	// hectares: ingestion reads the whole box.
	FieldExtentHa float64
	// FieldParts bounds the polygons of a field's MultiPolygon.
	FieldParts int
	// WebhooksPerUser is the number of webhook URLs one account may register.
	WebhooksPerUser int
}

// DefaultLimits are the limits used for zero Limits fields.
func DefaultLimits() Limits {
	return Limits{FieldsPerUser: 10000, FieldExtentHa: 100000, FieldParts: 100, WebhooksPerUser: 20}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.FieldsPerUser <= 0 {
		l.FieldsPerUser = d.FieldsPerUser
	}
	if l.FieldExtentHa <= 0 {
		l.FieldExtentHa = d.FieldExtentHa
	}
	if l.FieldParts <= 0 {
		l.FieldParts = d.FieldParts
	}
	if l.WebhooksPerUser <= 0 {
		l.WebhooksPerUser = d.WebhooksPerUser
	}
	return l
}

// DefaultMinClear is the clear fraction from which a field's image is usable.
const DefaultMinClear = 0.6

// Server is the cropkit HTTP API. Create it with New; it is an http.Handler.
type Server struct {
	store     *Store
	cat       *imagery.Catalogue
	minClear  float64
	maxBody   int64
	maxUpload int64
	workers   int
	log       *slog.Logger
	mux       *http.ServeMux
	handler   http.Handler
	png       *colormap.Encoder
	hooks     *webhooks
	limits    Limits
	// ingestAllowPrivate: see Config.IngestAllowPrivate.
	ingestAllowPrivate bool
	heavy              chan struct{} // slots of the heavy operations
	heavyWait          time.Duration
}

// New returns a server over cfg.Store.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("server: Config.Store is nil")
	}
	s := &Server{
		store:     cfg.Store,
		cat:       cfg.Catalogue,
		minClear:  cfg.MinClear,
		maxBody:   cfg.MaxBodyBytes,
		maxUpload: cfg.MaxUploadBytes,
		workers:   cfg.Workers,
		log:       cfg.Logger,
		mux:       http.NewServeMux(),
		png:       colormap.NewEncoder(),
		limits:    cfg.Limits.withDefaults(),
		heavyWait: cfg.HeavyWait,

		ingestAllowPrivate: cfg.IngestAllowPrivate,
	}
	if cfg.HeavyRequests <= 0 {
		cfg.HeavyRequests = 2
	}
	s.heavy = make(chan struct{}, cfg.HeavyRequests)
	if s.heavyWait <= 0 {
		s.heavyWait = 5 * time.Second
	}
	if s.cat == nil {
		s.cat = imagery.NewCatalogue()
	}
	if s.minClear <= 0 {
		s.minClear = DefaultMinClear
	}
	if s.minClear > 1 {
		return nil, fmt.Errorf("server: MinClear %v is not a fraction in (0, 1]", s.minClear)
	}
	if s.maxBody <= 0 {
		s.maxBody = 1 << 20
	}
	if s.maxUpload <= 0 {
		s.maxUpload = 2 << 30
	}
	if s.workers <= 0 {
		s.workers = runtime.GOMAXPROCS(0)
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if err := s.initWebhooks(cfg.Webhooks); err != nil {
		return nil, err
	}
	s.routes()
	s.handler = s.recoverer(s.logRequests(http.HandlerFunc(s.dispatch)))
	return s, nil
}

// Store is the server's store.
func (s *Server) Store() *Store { return s.store }

// ServeHTTP answers one API request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// access is who may call a route.
type access int

const (
	public access = iota // no token (login, openapi)
	user                 // any valid token
	admin                // an admin's token
)

// route describes one operation.
type route struct {
	methods []string // "POST", "GET"
	paths   []string // ServeMux paths without method
	access  access
	// raw leaves the body unread (the handler reads it, e.g. a scene upload);
	// the token then comes from the header or query only.
	raw     bool
	maxBody int64 // 0: Config.MaxBodyBytes
	// heavy takes one of Config.HeavyRequests slots (after authentication).
	heavy  bool
	handle func(w http.ResponseWriter, r *http.Request, c *call) error
}

// call is what a handler gets besides the request: the authenticated user and the parameters.
type call struct {
	user   User
	params params
}

var (
	postOnly = []string{http.MethodPost}
	readable = []string{http.MethodPost, http.MethodGet}
)

// routes registers every operation, in this one place. Zones (a future
// zones.go) and webhooks (webhooks.go) add theirs by appending to all below.
func (s *Server) routes() {
	all := []route{
		{methods: readable, paths: []string{"/openapi.json"}, access: public, handle: s.handleOpenAPI},
		{methods: postOnly, paths: []string{"/login"}, access: public, handle: s.handleLogin},
		{methods: postOnly, paths: []string{"/fields/register"}, access: user, handle: s.handleFieldRegister},
		{methods: postOnly, paths: []string{"/fields/update"}, access: user, handle: s.handleFieldUpdate},
		{methods: postOnly, paths: []string{"/fields/delete"}, access: user, handle: s.handleFieldDelete},
		{methods: readable, paths: []string{"/fields/list"}, access: user, handle: s.handleFieldList},
		{methods: postOnly, paths: []string{"/fields/metadata/register"}, access: user, handle: s.handleMetadataRegister},
		{methods: readable, paths: []string{"/fields/metadata/list"}, access: user, handle: s.handleMetadataList},
		{methods: readable, paths: []string{
			"/download", "/download/{service}", "/download/{service}/{file_type}",
			"/files/get", "/files/get/{service}", "/files/get/{service}/{file_type}",
		}, access: user, handle: s.handleDownload},
		{methods: readable, paths: []string{"/files/list"}, access: user, handle: s.handleFilesList},
		{methods: readable, paths: []string{"/fields/value"}, access: user, handle: s.handleValue},
		{methods: readable, paths: []string{"/rasters/get"}, access: user, handle: s.handleRaster},
		{methods: readable, paths: []string{"/indices/list"}, access: user, handle: s.handleIndices},
		{methods: postOnly, paths: []string{"/scenes/ingest"}, access: admin, raw: true, maxBody: -1, heavy: true, handle: s.handleIngest},
	}
	all = append(all, s.zoneRoutes()...)    // §4.1, §4.3, /files/upload, /convert/… (zones.go)
	all = append(all, s.webhookRoutes()...) // §4.5, /notifications/… (webhooks.go)
	for _, rt := range all {
		h := s.operation(rt)
		for _, m := range rt.methods {
			for _, p := range rt.paths {
				s.mux.Handle(m+" "+p, h)
			}
		}
	}
	// The browser viewer (package web): the page at GET /, its assets under web.AssetPrefix.
	viewer := web.Handler()
	s.mux.Handle("GET /{$}", viewer)
	s.mux.Handle("GET "+web.AssetPrefix, viewer)
}

// dispatch routes a request; unknown paths and wrong methods get the JSON error shape.
func (s *Server) dispatch(w http.ResponseWriter, r *http.Request) {
	if p := r.URL.Path; p == "" || path.Clean(p) != p {
		// An unclean path (//x, /a/../b, /a/./b, a trailing slash): the mux
		// would redirect, echoing the query (and a token in it) in
		// Location. Operations have exactly one spelling: answer 404,
		// echoing nothing of the request.
		writeError(w, notFound("no operation at this path: use the canonical path, without //, . or .. segments or a trailing /"))
		return
	}
	h, pattern := s.mux.Handler(r)
	if pattern != "" {
		s.mux.ServeHTTP(w, r) // (sets the path values Handler does not)
		return
	}
	// Let the mux decide between 404, 405 (with Allow) and a redirect, then
	// answer in the API's shape.
	rec := &headerRecorder{header: http.Header{}}
	h.ServeHTTP(rec, r)
	switch {
	case rec.status == http.StatusMethodNotAllowed:
		w.Header().Set("Allow", rec.header.Get("Allow"))
		writeError(w, &Error{Status: http.StatusMethodNotAllowed, Code: CodeMethodNotAllowed,
			Message: fmt.Sprintf("method %s not allowed on %s (allowed: %s)", r.Method, r.URL.Path, rec.header.Get("Allow"))})
	case rec.status >= 300 && rec.status < 400:
		// Another redirect of the mux (none expected after the check above).
		writeError(w, notFound("no operation at this path"))
	default:
		writeError(w, notFound("no operation %s %s", r.Method, r.URL.Path))
	}
}

// headerRecorder captures the status and headers a handler writes, discarding the body.
type headerRecorder struct {
	header http.Header
	status int
}

func (h *headerRecorder) Header() http.Header { return h.header }
func (h *headerRecorder) Write(b []byte) (int, error) {
	if h.status == 0 {
		h.status = http.StatusOK
	}
	return len(b), nil
}
func (h *headerRecorder) WriteHeader(code int) {
	if h.status == 0 {
		h.status = code
	}
}

// operation wraps a route's handler with the body limit, parameter parsing,
// authentication and error answering.
func (s *Server) operation(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit := rt.maxBody
		switch {
		case limit == 0:
			limit = s.maxBody
		case limit < 0:
			limit = s.maxUpload
		}
		if r.ContentLength > limit {
			writeError(w, &Error{Status: http.StatusRequestEntityTooLarge, Code: CodeTooLarge,
				Message: fmt.Sprintf("request body larger than %d bytes", limit)})
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		c := &call{}
		var perr error
		if rt.raw {
			c.params = params{}
			for k, v := range r.URL.Query() {
				if len(v) > 0 {
					c.params[k] = quote(v[0])
				}
			}
		} else {
			c.params, perr = readParams(r)
		}
		if rt.access != public {
			u, err := s.authenticate(r, c.params)
			if err != nil {
				s.fail(w, r, err)
				return
			}
			if rt.access == admin && !u.Admin {
				s.fail(w, r, forbidden("operation reserved to administrators"))
				return
			}
			c.user = u
		}
		if perr != nil {
			s.fail(w, r, perr)
			return
		}
		if rt.heavy {
			release, err := s.acquireHeavy(r)
			if err != nil {
				s.fail(w, r, err)
				return
			}
			defer release()
		}
		if err := rt.handle(w, r, c); err != nil {
			s.fail(w, r, err)
		}
	})
}

// acquireHeavy takes a heavy-operation slot, waiting up to Config.HeavyWait:
// a few zone computations or conversions can use gigabytes, so they queue
// instead of all running at once; past the wait the client is told to retry.
func (s *Server) acquireHeavy(r *http.Request) (release func(), err error) {
	select {
	case s.heavy <- struct{}{}:
		return func() { <-s.heavy }, nil
	default:
	}
	t := time.NewTimer(s.heavyWait)
	defer t.Stop()
	select {
	case s.heavy <- struct{}{}:
		return func() { <-s.heavy }, nil
	case <-t.C:
		return nil, &Error{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
			Message: "too many heavy requests running; retry shortly", RetryAfter: 2}
	case <-r.Context().Done():
		return nil, r.Context().Err()
	}
}

// fail answers err in the JSON error shape, logging internal errors.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	e, internal := asAPIError(err)
	if internal {
		s.log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeError(w, e)
}

// authenticate finds the caller from "Authorization: Bearer <t>" or the
// token parameter (query, form or JSON body).
func (s *Server) authenticate(r *http.Request, p params) (User, error) {
	tok := ""
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, rest, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(rest) == "" {
			return User{}, unauthorized("Authorization header must be \"Bearer <token>\"")
		}
		tok = strings.TrimSpace(rest)
	} else if t, ok, _ := p.str("token"); ok {
		tok = t
	}
	if tok == "" {
		return User{}, unauthorized("missing token: send Authorization: Bearer <token> or the token parameter")
	}
	u, err := s.store.UserByToken(r.Context(), tok)
	if errors.Is(err, ErrNotFound) {
		return User{}, unauthorized("invalid token")
	}
	if err != nil {
		return User{}, err
	}
	return u, nil
}

func unauthorized(msg string) *Error {
	return &Error{Status: http.StatusUnauthorized, Code: CodeUnauthorized, Message: msg}
}

// statusWriter records the status and size of a response for the log.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		s.log.InfoContext(r.Context(), "request", "method", r.Method, "path", r.URL.Path,
			"status", sw.status, "bytes", sw.bytes, "duration", time.Since(start))
	})
}

// recoverer turns a panic in a handler into a logged 500 (never a dropped connection).
func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			v := recover()
			if v == nil || v == http.ErrAbortHandler {
				if v != nil {
					panic(v)
				}
				return
			}
			s.log.ErrorContext(r.Context(), "panic serving request", "method", r.Method, "path", r.URL.Path,
				"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			if sw.status == 0 {
				writeError(sw, &Error{Status: http.StatusInternalServerError, Code: CodeInternal, Message: "internal error"})
			}
		}()
		next.ServeHTTP(sw, r)
	})
}

//go:embed openapi.json
var openapiDoc []byte

// OpenAPI returns the API's OpenAPI 3 document.
func OpenAPI() []byte { return append([]byte(nil), openapiDoc...) }

func (s *Server) handleOpenAPI(w http.ResponseWriter, r *http.Request, c *call) error {
	w.Header().Set("Content-Type", "application/json")
	_, err := w.Write(openapiDoc)
	return err
}
