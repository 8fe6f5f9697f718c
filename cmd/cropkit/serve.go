package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/internal/demodata"
	"github.com/cropkit/cropkit/server"
)

// runServe runs the HTTP API until ctx ends (SIGINT/SIGTERM), then shuts down
// gracefully:
//
//	cropkit serve [--addr 127.0.0.1:8080] [--data ./cropkit-data] [--demo] [--min-clear 0.6]
//	              [--webhook-retry-base 5s] [--webhook-timeout 15s] [--webhook-allow-private] [--webhook-concurrency 8]
//
// The first start creates the account "admin" and prints its token once.
// --demo registers the bundled sample's fields for admin, ingests its scenes
// and prints a curl command that downloads a PNG.
// It also delivers the webhook outbox (server.RunWebhooks) until shutdown.
func runServe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address HOST:PORT")
	dataDir := fs.String("data", "./cropkit-data", "data directory (SQLite database and product files)")
	demo := fs.Bool("demo", false, "register the bundled sample fields for admin and ingest its scenes")
	minClear := fs.Float64("min-clear", server.DefaultMinClear, "fraction of a field's pixels that must be clear for a usable image")
	maxBody := fs.Int64("max-body", 1<<20, "request body limit in bytes")
	var hooks server.WebhookOptions
	fs.DurationVar(&hooks.RetryBase, "webhook-retry-base", 5*time.Second, "first webhook retry delay; the schedule (5s, 5m, 30m, 2h, 5h, 10h, 10h) scales with it")
	fs.DurationVar(&hooks.Timeout, "webhook-timeout", 15*time.Second, "time limit of one webhook delivery attempt")
	fs.BoolVar(&hooks.AllowPrivate, "webhook-allow-private", false, "let webhooks reach loopback, private, link-local and metadata addresses (tests, private networks)")
	fs.IntVar(&hooks.Concurrency, "webhook-concurrency", 8, "webhook delivery attempts in flight")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if hooks.RetryBase <= 0 || hooks.Timeout <= 0 || hooks.Concurrency <= 0 {
		return errors.New("--webhook-retry-base, --webhook-timeout and --webhook-concurrency must be positive")
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	store, err := server.OpenStore(ctx, *dataDir)
	if err != nil {
		return err
	}
	defer store.Close()
	adminToken, created, err := store.EnsureAdmin(ctx)
	if err != nil {
		return err
	}
	if created {
		fmt.Fprintf(stdout, "created account admin; its token (shown only once, keep it):\nADMIN TOKEN: %s\n", adminToken)
	}
	srv, err := server.New(server.Config{Store: store, MinClear: *minClear, MaxBodyBytes: *maxBody, Logger: logger, Webhooks: hooks})
	if err != nil {
		return err
	}
	var demoField string
	if *demo {
		if !created {
			// The admin token was shown at the first start; issue one for the demo line.
			if adminToken, err = store.CreateToken(ctx, "admin"); err != nil {
				return fmt.Errorf("demo: %w", err)
			}
			fmt.Fprintf(stdout, "demo: new admin token: %s\n", adminToken)
		}
		if demoField, err = setupDemo(ctx, srv, store, stdout); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	base := "http://" + ln.Addr().String()
	hs := &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()
	// Webhook deliveries (pending ones resume after a restart) stop after
	// the HTTP server, letting their attempts in flight finish.
	hookCtx, stopHooks := context.WithCancel(context.Background())
	hooksDone := make(chan error, 1)
	go func() { hooksDone <- srv.RunWebhooks(hookCtx) }()
	defer func() { stopHooks(); <-hooksDone }()
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
	shutCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// setupDemo registers the bundled sample's fields for admin (keeping any
// already there) and ingests its scenes; it returns a field name to try.
func setupDemo(ctx context.Context, srv *server.Server, store *server.Store, stdout io.Writer) (string, error) {
	admin, err := store.UserByName(ctx, "admin")
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
		_, err := store.InsertField(ctx, server.Field{OwnerID: admin.ID, Name: f.Name, Group: "demo", Indices: indices, Geometry: f.Geometry})
		if err != nil && !errors.Is(err, server.ErrExists) {
			return "", fmt.Errorf("register %s: %w", f.Name, err)
		}
	}
	scenes, err := demodata.Extract(filepath.Join(store.Dir(), "demo-scenes"))
	if err != nil {
		return "", fmt.Errorf("extract sample: %w", err)
	}
	for _, dir := range scenes {
		res, err := srv.Ingest(ctx, dir, server.IngestOptions{})
		if err != nil {
			return "", fmt.Errorf("ingest %s: %w", dir, err)
		}
		fmt.Fprintf(stdout, "demo: ingested %s: %d fields, %d usable, %d unusable images\n", res.Date, res.Fields, res.Usable, res.Unusable)
	}
	return first, nil
}
