package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"time"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/internal/demodata"
	"github.com/cropkit/cropkit/server"
)

// runServe runs the HTTP API until ctx ends (SIGINT/SIGTERM), then shuts down
// gracefully:
//
//	cropkit serve [--addr 127.0.0.1:8080] [--data ./cropkit-data] [--demo] [--min-clear 0.6]
//	              [--webhook-retry-base 5s] [--webhook-timeout 15s] [--webhook-allow-private] [--webhook-concurrency 8]
//	              [--ingest-allow-private] [--shutdown-grace 15s]
//	              [--catalog URL [--collection sentinel-2-l2a] [--poll 1h] [--backfill 90d] [--max-cloud 80]]
//	              [--db URL --blobs URL] [--jobs=false] [--pprof 127.0.0.1:6060]
//
// The first start creates the account "admin" and prints its token once.
// --demo registers the bundled sample's fields for admin, ingests its scenes
// and prints a curl command that downloads a PNG.
// It also delivers the webhook outbox (server.RunWebhooks) until shutdown,
// and with --catalog runs the monitoring watcher (see runWatch); with
// --jobs=false it does neither and only serves (see runWorker).
func runServe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	stdout, stderr = serialized(stdout), serialized(stderr)
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address HOST:PORT")
	dataDir := fs.String("data", "./cropkit-data", "data directory (SQLite database and product files)")
	storage := addStorageFlags(fs)
	demo := fs.Bool("demo", false, "register the bundled sample fields for admin and ingest its scenes")
	minClear := fs.Float64("min-clear", archive.DefaultMinClear, "fraction of a field's pixels that must be clear for a usable image")
	maxBody := fs.Int64("max-body", 1<<20, "request body limit in bytes")
	var hooks archive.WebhookOptions
	fs.DurationVar(&hooks.RetryBase, "webhook-retry-base", 5*time.Second, "first webhook retry delay; the schedule (5s, 5m, 30m, 2h, 5h, 10h, 10h) scales with it")
	fs.DurationVar(&hooks.Timeout, "webhook-timeout", 15*time.Second, "time limit of one webhook delivery attempt")
	fs.BoolVar(&hooks.AllowPrivate, "webhook-allow-private", false, "let webhooks reach loopback, private, link-local and metadata addresses (tests, private networks)")
	fs.IntVar(&hooks.Concurrency, "webhook-concurrency", 8, "webhook delivery attempts in flight")
	ingestAllowPrivate := fs.Bool("ingest-allow-private", false, "let the URL given to /scenes/ingest and the catalogue named by --catalog (their host and port) be on loopback, private, link-local and metadata addresses; other hosts they point to need --ingest-allow-host")
	mon := addWatchFlags(fs)
	jobs := fs.Bool("jobs", true, "run the job queue in this process: the --catalog watcher and webhook delivery\n"+
		"(false: serve only; cropkit worker processes on the same --db/--blobs do the jobs)")
	grace := fs.Duration("shutdown-grace", 15*time.Second, "on SIGTERM, how long requests in flight may finish before they are cancelled")
	tokenTTL := fs.Duration("token-ttl", 0, "lifetime of new tokens, e.g. 720h (0: tokens do not expire)")
	weatherFlags := addWeatherFlags(fs)
	pprofAddr := fs.String("pprof", "", "serve Go profiles (net/http/pprof, /debug/pprof/) on this loopback HOST:PORT (off when empty)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *grace <= 0 {
		return errors.New("--shutdown-grace must be positive")
	}
	if hooks.RetryBase <= 0 || hooks.Timeout <= 0 || hooks.Concurrency <= 0 {
		return errors.New("--webhook-retry-base, --webhook-timeout and --webhook-concurrency must be positive")
	}
	if err := mon.check(); err != nil {
		return err
	}
	if !*jobs && mon.catalog != "" {
		return errors.New("--catalog needs --jobs: with --jobs=false run the watcher in cropkit worker")
	}
	// The garbage collector works harder near 900 MiB so the process stays
	// under 1 GB with field reads bounded by the archive's memory budget.
	if debug.SetMemoryLimit(-1) == math.MaxInt64 {
		debug.SetMemoryLimit(900 << 20)
	}
	// Listen first, so a taken address fails before anything is written.
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	// Log lines (one per request) are written in batches: see bufferedLog.
	logOut := newBufferedLog(stderr, 100*time.Millisecond)
	defer logOut.Close()
	logger := slog.New(slog.NewTextHandler(logOut, nil))
	if *tokenTTL < 0 {
		return errors.New("--token-ttl must not be negative")
	}
	weatherCfg, err := weatherFlags.config()
	if err != nil {
		return err
	}
	if *pprofAddr != "" {
		pctx, stopPprof := context.WithCancel(ctx)
		defer stopPprof()
		at, err := startPprof(pctx, *pprofAddr, logger)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "profiles on http://%s/debug/pprof/\n", at)
	}
	reg, metrics := newRegistry()
	hooks.Observe = metrics.ObserveDelivery
	core, err := storage.open(ctx, *dataDir, true, archive.Config{MinClear: *minClear, Logger: logger, Webhooks: hooks,
		IngestAllowPrivate: *ingestAllowPrivate, IngestAllowHosts: mon.allowHosts, TokenTTL: *tokenTTL, SignURL: mon.signURL, Weather: weatherCfg})
	if err != nil {
		return err
	}
	defer core.Close()
	adminToken, created, err := core.EnsureAdmin(ctx)
	if err != nil {
		return err
	}
	if created {
		fmt.Fprintf(stdout, "created account admin; its token (shown only once, keep it):\nADMIN TOKEN: %s\n", adminToken)
	}
	srv, err := server.New(server.Config{Archive: core, MaxBodyBytes: *maxBody, Logger: logger, Metrics: reg})
	if err != nil {
		return err
	}
	if mon.catalog != "" {
		// Stopped after the HTTP server (deferred later, run earlier than
		// core.Close), letting its jobs in flight finish.
		watchCfg := mon.config(core, *ingestAllowPrivate, metrics, logger)
		watchCfg.WeatherRefresh = weatherFlags.refresh
		stopWatch, err := startWatcher(ctx, core, watchCfg)
		if err != nil {
			return err
		}
		defer func() {
			if err := stopWatch(); err != nil {
				logger.Error("stop watcher", "err", err)
			}
		}()
	}
	var demoField string
	if *demo {
		if !created {
			// The admin token was shown at the first start; issue one for the demo line.
			if adminToken, err = core.CreateToken(ctx, "admin"); err != nil {
				return fmt.Errorf("demo: %w", err)
			}
			fmt.Fprintf(stdout, "demo: new admin token: %s\n", adminToken)
		}
		demoDir := *dataDir
		if storage.external() { // nothing in the working directory
			if demoDir, err = os.MkdirTemp("", "cropkit-demo-"); err != nil {
				return fmt.Errorf("demo: %w", err)
			}
			defer os.RemoveAll(demoDir)
		}
		if demoField, err = setupDemo(ctx, core, demoDir, stdout); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
	}
	base := "http://" + ln.Addr().String()
	hs, cancelRequests, inFlight := newHTTPServer(srv, logger)
	defer cancelRequests()
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()
	// Webhook deliveries (pending ones resume after a restart) stop after
	// the HTTP server, letting their attempts in flight finish.
	// With --jobs=false the workers deliver them.
	hookCtx, stopHooks := context.WithCancel(context.Background())
	hooksDone := make(chan error, 1)
	if *jobs {
		go func() { hooksDone <- core.RunWebhooks(hookCtx) }()
		if mon.catalog == "" { // else the watcher refreshes
			core.RunWeatherRefresh(hookCtx, weatherFlags.refresh)
		}
	} else {
		hooksDone <- nil
	}
	defer func() { stopHooks(); <-hooksDone }()
	// What a crash left (temporary and unreferenced files), now and hourly.
	if err := core.RunSweeps(hookCtx, time.Hour); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "cropkit listening on %s (data %s)\n", base, *dataDir)
	if *demo {
		fmt.Fprintf(stdout, "try:\n  curl -o %s.png -X POST '%s/download/ndvi/image?field_name=%s&token=%s'\n",
			demoField, base, demoField, adminToken)
	}
	select {
	case err := <-serveErr:
		return err
	case <-ctx.Done():
	}
	fmt.Fprintln(stderr, "shutting down")
	return shutdown(hs, serveErr, cancelRequests, inFlight, *grace, logger)
}

// newHTTPServer serves h. Requests run under a context cancelled by the
// returned function (when the shutdown grace period is over); the WaitGroup
// counts the handlers running, so shutdown can wait for every one (an
// ingestion stops between fields) before the store is closed.
func newHTTPServer(h http.Handler, logger *slog.Logger) (*http.Server, context.CancelFunc, *sync.WaitGroup) {
	reqCtx, cancelRequests := context.WithCancel(context.Background())
	inFlight := &sync.WaitGroup{}
	hs := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			inFlight.Add(1)
			defer inFlight.Done()
			h.ServeHTTP(w, r)
		}),
		BaseContext:       func(net.Listener) context.Context { return reqCtx },
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    server.HTTPMaxHeaderBytes, // above server.MaxHeaderBytes: a JSON 431 first
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	return hs, cancelRequests, inFlight
}

// shutdown stops hs: no new connections, requests in flight get grace to
// finish, then their contexts are cancelled and shutdown waits (up to
// handlerWait) for the handlers to return, so the store outlives them. A
// grace period running out is expected (a long ingestion): it is logged,
// not an error.
func shutdown(hs *http.Server, serveErr <-chan error, cancelRequests context.CancelFunc, inFlight *sync.WaitGroup, grace time.Duration, logger *slog.Logger) error {
	const handlerWait = time.Minute
	shutCtx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := hs.Shutdown(shutCtx)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err != nil {
		logger.Warn("shutdown grace period over: cancelling the requests in flight", "grace", grace)
	}
	cancelRequests()
	handlersDone := make(chan struct{})
	go func() { inFlight.Wait(); close(handlersDone) }()
	select {
	case <-handlersDone:
	case <-time.After(handlerWait):
		hs.Close()
		return fmt.Errorf("shutdown: requests still running %v after they were cancelled", handlerWait)
	}
	hs.Close() // connections of cancelled requests
	if err := <-serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// setupDemo registers the bundled sample's fields for admin (keeping any
// already there) and ingests its scenes; it returns a field name to try.
func setupDemo(ctx context.Context, core *archive.Archive, dataDir string, stdout io.Writer) (string, error) {
	admin, err := core.UserByName(ctx, "admin")
	if err != nil {
		return "", err
	}
	features, err := geo.ReadFeatures(demodata.Fields())
	if err != nil {
		return "", fmt.Errorf("sample fields: %w", err)
	}
	indices := []string{"ndvi", "ndre", "ndwi", "evi", "savi", "chi", "lai", "nirv"}
	first := ""
	for _, f := range features {
		if f.Name == "" {
			continue
		}
		if first == "" {
			first = f.Name
		}
		geom, err := archive.EncodeGeometry(f.Geometry)
		if err != nil {
			return "", err
		}
		group := "demo"
		_, err = core.RegisterField(ctx, admin, archive.FieldInput{Name: f.Name, Group: &group, Indices: indices, Geometry: []byte(geom)})
		if err != nil && !errors.Is(err, archive.ErrExists) {
			return "", fmt.Errorf("register %s: %w", f.Name, err)
		}
	}
	scenes, err := demodata.Extract(filepath.Join(dataDir, "demo-scenes"))
	if err != nil {
		return "", fmt.Errorf("extract sample: %w", err)
	}
	for _, dir := range scenes {
		res, err := core.Ingest(ctx, dir, archive.IngestOptions{})
		if err != nil {
			return "", fmt.Errorf("ingest %s: %w", dir, err)
		}
		fmt.Fprintf(stdout, "demo: ingested %s: %d fields, %d usable, %d unusable images\n", res.Date, res.Fields, res.Usable, res.Unusable)
	}
	return first, nil
}
