package server

import (
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"runtime/debug"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cropkit/cropkit/api"
	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/web"
)

// Config configures a Server. Only Archive is required.
type Config struct {
	// Archive is the field archive the server answers from and ingests into.
	Archive *archive.Archive
	// MaxBodyBytes bounds request bodies (413 beyond); 0 means 1 MiB. A
	// request whose token is only inside its body is read up to this bound
	// whatever its route allows.
	MaxBodyBytes int64
	// MaxUploadBytes bounds scene uploads to /scenes/ingest; 0 means 2 GiB.
	MaxUploadBytes int64
	// Logger receives request logs; nil discards them.
	Logger *slog.Logger
	// HeavyRequests bounds the CPU- and memory-heavy operations (zones,
	// conversions, uploads, scene uploads) running at once; 0 means 2. One
	// account holds at most half of them (at least one). Beyond, a request
	// waits up to HeavyWait, then gets 503 with Retry-After.
	HeavyRequests int
	// HeavyWait is how long a heavy request queues for a slot; 0 means 5s.
	HeavyWait time.Duration
	// ReadTimeout bounds reading a small request (JSON, forms); 0 means 30s.
	// Routes taking uploads get UploadReadTimeout (0: 10 minutes).
	ReadTimeout, UploadReadTimeout time.Duration
	// LoginLimit is how many failed logins one account, and four times as
	// many one client address, may make per LoginWindow before 429; 0 means
	// 10 per minute.
	LoginLimit  int
	LoginWindow time.Duration
	// Metrics, when set, gets the HTTP latency metrics and is served at
	// GET /metrics (monitoring.go).
	Metrics *prometheus.Registry
}

// Server is the cropkit HTTP API. Create it with New; it is an http.Handler.
type Server struct {
	core        *archive.Archive
	maxBody     int64
	maxUpload   int64
	log         *slog.Logger
	mux         *http.ServeMux // the operations and a fallback (unrouted)
	routesOnly  *http.ServeMux // the operations alone: why a request matched none
	handler     http.Handler
	heavy       *slots // heavy operations
	bodies      *slots // large bodies being received
	heavyWait   time.Duration
	readTimeout time.Duration
	upTimeout   time.Duration
	logins      *rateLimiter
	mon         *monitoring
}

// New returns a server over cfg.Archive.
func New(cfg Config) (*Server, error) {
	if cfg.Archive == nil {
		return nil, errors.New("server: Config.Archive is nil")
	}
	s := &Server{
		core:        cfg.Archive,
		maxBody:     cfg.MaxBodyBytes,
		maxUpload:   cfg.MaxUploadBytes,
		log:         cfg.Logger,
		mux:         http.NewServeMux(),
		routesOnly:  http.NewServeMux(),
		heavyWait:   cfg.HeavyWait,
		readTimeout: cfg.ReadTimeout,
		upTimeout:   cfg.UploadReadTimeout,
	}
	if cfg.HeavyRequests <= 0 {
		cfg.HeavyRequests = 2
	}
	s.heavy = newSlots(cfg.HeavyRequests)
	s.bodies = newSlots(2 * cfg.HeavyRequests)
	if s.heavyWait <= 0 {
		s.heavyWait = 5 * time.Second
	}
	if s.readTimeout <= 0 {
		s.readTimeout = 30 * time.Second
	}
	if s.upTimeout <= 0 {
		s.upTimeout = 10 * time.Minute
	}
	if s.maxBody <= 0 {
		s.maxBody = 1 << 20
	}
	if s.maxUpload <= 0 {
		s.maxUpload = 2 << 30
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if cfg.LoginLimit <= 0 {
		cfg.LoginLimit = 10
	}
	if cfg.LoginWindow <= 0 {
		cfg.LoginWindow = time.Minute
	}
	s.logins = newRateLimiter(cfg.LoginLimit, cfg.LoginWindow)
	s.mon = newMonitoring(cfg.Metrics)
	s.routes()
	s.handler = s.recoverer(s.logRequests(s.instrument(limitHeaders(http.HandlerFunc(s.dispatch)))))
	return s, nil
}

// Archive is the server's core.
func (s *Server) Archive() *archive.Archive { return s.core }

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
	// heavy takes one of Config.HeavyRequests slots once the body is read
	// (raw routes read their body themselves, then call Server.heavySlot).
	heavy  bool
	handle func(w http.ResponseWriter, r *http.Request, c *call) error
}

// call is what a handler gets besides the request: the authenticated user and the parameters.
type call struct {
	user   archive.User
	token  archive.Token
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
		{methods: postOnly, paths: []string{"/login", "/user/login"}, access: public, handle: s.handleLogin},
		{methods: postOnly, paths: []string{"/user/refresh_token", "/tokens/refresh"}, access: user, handle: s.handleRefreshToken},
		{methods: readable, paths: []string{"/tokens/list"}, access: user, handle: s.handleTokensList},
		{methods: postOnly, paths: []string{"/tokens/revoke"}, access: user, handle: s.handleTokensRevoke},
		{methods: readable, paths: []string{"/fields/check/{field_name}"}, access: user, handle: s.handleFieldCheck},
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
		{methods: readable, paths: []string{"/fields/history"}, access: user, handle: s.handleHistory},
		{methods: readable, paths: []string{"/fields/weather"}, access: user, handle: s.handleWeather},
		{methods: postOnly, paths: []string{"/fields/boundaries/detect"}, access: user, heavy: true, handle: s.handleBoundaries},
		{methods: readable, paths: []string{"/fields/value"}, access: user, handle: s.handleValue},
		{methods: readable, paths: []string{"/rasters/get"}, access: user, handle: s.handleRaster},
		{methods: readable, paths: []string{"/indices/list"}, access: user, handle: s.handleIndices},
		{methods: postOnly, paths: []string{"/scenes/ingest"}, access: admin, raw: true, maxBody: -1, heavy: true, handle: s.handleIngest},
	}
	all = append(all, s.zoneRoutes()...)       // §4.1, §4.3, /files/upload, /convert/… (zones.go)
	all = append(all, s.webhookRoutes()...)    // §4.5, /notifications/… (webhooks.go)
	all = append(all, s.monitoringRoutes()...) // /scenes/list (monitoring.go)
	all = append(all, s.timeseriesRoutes()...) // /fields/timeseries, /fields/phenology, /fields/events (timeseries.go)
	for _, rt := range all {
		h := s.operation(rt)
		for _, m := range rt.methods {
			for _, p := range rt.paths {
				s.handle(m+" "+p, h)
			}
		}
	}
	// The browser viewer (package web): the page at GET /, its assets under web.AssetPrefix.
	viewer := web.Handler()
	s.handle("GET /{$}", viewer)
	s.handle("GET "+web.AssetPrefix, viewer)
	s.mux.HandleFunc(unroutedPattern, s.unrouted)
}

// handle registers an operation's pattern on both muxes.
func (s *Server) handle(pattern string, h http.Handler) {
	s.mux.Handle(pattern, h)
	s.routesOnly.Handle(pattern, h)
}

// unroutedPattern matches what no operation does (any method, any path):
// the mux then routes every request once, here for the errors.
const unroutedPattern = "/"

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
	if r.RequestURI == "*" {
		s.unrouted(w, r) // (the mux answers "OPTIONS *" a bare 400)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// unrouted answers a request no operation matched in the API's error
// shape: the mux without the fallback decides between 404, 405 (with
// Allow) and a redirect.
func (s *Server) unrouted(w http.ResponseWriter, r *http.Request) {
	h, _ := s.routesOnly.Handler(r)
	rec := &headerRecorder{header: http.Header{}}
	h.ServeHTTP(rec, r)
	switch {
	case rec.status == http.StatusMethodNotAllowed:
		w.Header().Set("Allow", rec.header.Get("Allow"))
		writeError(w, &Error{Status: http.StatusMethodNotAllowed, Code: api.CodeMethodNotAllowed,
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

// operation wraps a route's handler with the body limit and read deadline,
// authentication (before the body is read, when the token is in the header
// or the query), parameter parsing and error answering.
func (s *Server) operation(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit := rt.maxBody
		switch {
		case limit == 0:
			limit = s.maxBody
		case limit < 0:
			limit = s.maxUpload
		}
		tok, terr := requestToken(r)
		if rt.access != public && tok == "" && terr == nil {
			// A token only inside the body: read at most the small limit
			// before knowing who sends it.
			limit = min(limit, s.maxBody)
		}
		if r.ContentLength > limit {
			writeError(w, &Error{Status: http.StatusRequestEntityTooLarge, Code: api.CodeTooLarge,
				Message: fmt.Sprintf("request body larger than %d bytes", limit)})
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			// Slow senders cannot hold a connection (nor, below, a slot)
			// for long. (A request without a body has nothing to send:
			// setting a deadline moves a runtime timer for nothing.)
			timeout := s.readTimeout
			if limit > s.maxBody {
				timeout = s.upTimeout
			}
			http.NewResponseController(w).SetReadDeadline(time.Now().Add(timeout)) // unsupported by some test writers: fine
			r.Body = http.MaxBytesReader(w, r.Body, limit)
		}
		c := &call{}
		if rt.access != public {
			// One check of the archive's change generations for all of
			// this request's cached reads (token, field, products).
			if ctx := s.core.Fresh(r.Context()); ctx != r.Context() {
				r = r.WithContext(ctx)
			}
			if terr != nil {
				s.fail(w, r, terr)
				return
			}
			if tok != "" {
				u, t, err := s.core.Authenticate(r.Context(), tok)
				if err != nil {
					s.fail(w, r, err)
					return
				}
				c.user, c.token = u, t
			}
		}
		if limit > s.maxBody && bodyPresent(r) {
			// Large bodies are received a few at a time, fairly per account.
			release, err := s.bodies.acquire(r.Context(), c.user.ID, s.heavyWait)
			if err != nil {
				s.fail(w, r, err)
				return
			}
			defer release()
		}
		var perr error
		if rt.raw {
			c.params = params{}
			for k, v := range r.URL.Query() {
				if len(v) > 0 {
					c.params[k] = quote(v[0])
				}
			}
		} else {
			c.params, perr = readParams(r, limit)
			if r.MultipartForm != nil {
				defer r.MultipartForm.RemoveAll()
			}
		}
		if rt.access != public && tok == "" {
			bodyTok, _, _ := c.params.str("token")
			u, t, err := s.core.Authenticate(r.Context(), bodyTok)
			if err != nil {
				s.fail(w, r, err)
				return
			}
			c.user, c.token = u, t
		}
		if rt.access == admin && !c.user.Admin {
			s.fail(w, r, forbidden("operation reserved to administrators"))
			return
		}
		if perr != nil {
			s.fail(w, r, perr)
			return
		}
		if rt.heavy && !rt.raw {
			// Taken once the body is read: a slow sender holds no slot.
			release, err := s.heavy.acquire(r.Context(), c.user.ID, s.heavyWait)
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

// heavySlot takes a heavy-operation slot for the caller (raw routes, once
// their body is read).
func (s *Server) heavySlot(r *http.Request, c *call) (func(), error) {
	return s.heavy.acquire(r.Context(), c.user.ID, s.heavyWait)
}

func bodyPresent(r *http.Request) bool {
	return r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0
}

// requestToken is the token of "Authorization: Bearer <t>" or of the token
// query parameter ("" when neither); a malformed header is an error.
func requestToken(r *http.Request) (string, error) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, rest, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(rest) == "" {
			return "", &Error{Status: http.StatusForbidden, Code: api.CodeUnauthorized, Message: "Authorization header must be \"Bearer <token>\""}
		}
		return strings.TrimSpace(rest), nil
	}
	return r.URL.Query().Get("token"), nil
}

// fail answers err in the JSON error shape, logging internal errors.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	e, internal := asAPIError(err)
	if internal && r.Context().Err() != nil {
		// The client went away (or the server is shutting down) and the
		// storage layer reported it in its own words: not a fault.
		e, internal = &Error{Status: StatusClientClosed, Code: api.CodeCanceled, Message: "request canceled"}, false
	}
	if internal {
		s.log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	} else if e.Status == StatusClientClosed {
		s.log.InfoContext(r.Context(), "client went away", "method", r.Method, "path", r.URL.Path)
	}
	writeError(w, e)
}

// statusWriter records the status and size of a response, and when its
// request arrived, for the log and the metrics. The middlewares share one
// per request (track).
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
	start  time.Time
}

// track is the request's statusWriter: w itself when an outer middleware
// made it, else a new one, started now.
func track(w http.ResponseWriter) *statusWriter {
	if sw, ok := w.(*statusWriter); ok {
		return sw
	}
	return &statusWriter{ResponseWriter: w, start: time.Now()}
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

// logRequests logs a line per request. The record goes to the handler
// directly: slog.Logger's methods capture the caller's program counter
// for every record (runtime.Callers), which a request line never shows.
func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := track(w)
		next.ServeHTTP(sw, r)
		ctx, h := r.Context(), s.log.Handler()
		if !h.Enabled(ctx, slog.LevelInfo) {
			return
		}
		now := time.Now()
		rec := slog.NewRecord(now, slog.LevelInfo, "request", 0)
		rec.AddAttrs(slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.Int("status", sw.status), slog.Int64("bytes", sw.bytes), slog.Duration("duration", now.Sub(sw.start)))
		_ = h.Handle(ctx, rec) // a log that cannot be written does not fail the request
	})
}

// recoverer turns a panic in a handler into a logged 500 (never a dropped connection).
func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := track(w)
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
				writeError(sw, &Error{Status: http.StatusInternalServerError, Code: api.CodeInternal, Message: "internal error"})
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

// Header limits. net/http answers a header over its http.Server's
// MaxHeaderBytes itself, in plain text; the Server answers the JSON error
// shape for headers over MaxHeaderBytes, so an http.Server serving it
// should allow more (HTTPMaxHeaderBytes, as `cropkit serve` does): only a
// header beyond that gets net/http's plain-text 431.
const (
	// MaxHeaderBytes is the documented limit on a request's header: its
	// request line and every header line; 431 too_large beyond.
	MaxHeaderBytes = 64 << 10
	// HTTPMaxHeaderBytes is the MaxHeaderBytes to give an http.Server
	// serving a Server.
	HTTPMaxHeaderBytes = 1 << 20
)

// limitHeaders answers a JSON 431 for a request whose header is larger than
// MaxHeaderBytes (counted as on the wire: request line, "Name: value\r\n").
func limitHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := len(r.Method) + len(r.RequestURI) + len(r.Proto) + 4
		for k, vs := range r.Header {
			for _, v := range vs {
				n += len(k) + len(v) + 4
			}
		}
		n += len(r.Host) + len("Host: \r\n") // net/http moves Host out of Header
		if n > MaxHeaderBytes {
			writeError(w, &Error{Status: http.StatusRequestHeaderFieldsTooLarge, Code: api.CodeTooLarge,
				Message: fmt.Sprintf("request header larger than %d bytes", MaxHeaderBytes)})
			return
		}
		next.ServeHTTP(w, r)
	})
}
