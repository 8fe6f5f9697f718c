package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/archive/store"
	"github.com/cropkit/cropkit/stac"
	"github.com/cropkit/cropkit/watch"
)

// watchOptions are the monitoring flags shared by serve and watch.
type watchOptions struct {
	catalog, collection string
	poll                time.Duration
	backfill            watch.Backfill
	maxCloud            float64
	jobTimeout          time.Duration
	allowHosts          []string
	// signURL is --sign-url: the SAS token service signing the items' assets.
	signURL string
}

func addWatchFlags(fs *flag.FlagSet) *watchOptions {
	o := &watchOptions{backfill: watch.Backfill{Since: watch.DefaultBackfill}}
	fs.StringVar(&o.catalog, "catalog", "", "STAC API root to monitor for new imagery of the registered fields, e.g. https://earth-search.aws.element84.com/v1 (empty: no monitoring)")
	fs.StringVar(&o.collection, "collection", watch.DefaultCollection, "STAC collections monitored, comma-separated (e.g. sentinel-2-l2a,landsat-c2-l2,sentinel-1-rtc)")
	fs.DurationVar(&o.poll, "poll", watch.DefaultPoll, "catalogue poll interval (0: no polling, only backfills of new fields)")
	fs.Var(&o.backfill, "backfill", "history ingested for a newly registered field: days (90d), a duration (36h) or a date YYYY-MM-DD")
	fs.Float64Var(&o.maxCloud, "max-cloud", watch.DefaultMaxCloud, "scene-level cloud cover (percent) above which an optical item is never read (radar collections: not applied)")
	fs.Func("ingest-allow-host", "with --ingest-allow-private, a further host:port the catalogue may point to on a private address (band file server); repeatable",
		func(v string) error { o.allowHosts = append(o.allowHosts, strings.Split(v, ",")...); return nil })
	fs.StringVar(&o.signURL, "sign-url", "", signURLUsage)
	fs.DurationVar(&o.jobTimeout, "job-timeout", watch.DefaultJobTimeout, "time limit of one job (an item's ingestion); a dead worker's job runs again 5s after it (plus up to 30s)")
	return o
}

// collections is --collection split at commas, each once, in order.
func (o *watchOptions) collections() []string {
	var out []string
	for _, c := range strings.Split(o.collection, ",") {
		if c = strings.TrimSpace(c); c != "" && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

func (o *watchOptions) check() error {
	if o.catalog != "" && len(o.collections()) == 0 {
		return errors.New("--collection: no collection given")
	}
	if o.poll < 0 {
		return errors.New("--poll must not be negative")
	}
	if o.jobTimeout <= 0 {
		return errors.New("--job-timeout must be positive")
	}
	if o.maxCloud < 0 || o.maxCloud > 100 {
		return fmt.Errorf("--max-cloud %v is not a percentage", o.maxCloud)
	}
	return configureSigning(&stac.Client{}, o.signURL)
}

func (o *watchOptions) config(core *archive.Archive, allowPrivate bool, m *watch.Metrics, logger *slog.Logger) watch.Config {
	cfg := watch.Config{Archive: core, Catalog: o.catalog, Collections: o.collections(), Poll: o.poll, Backfill: o.backfill,
		MaxCloud: o.maxCloud, JobTimeout: o.jobTimeout, AllowPrivate: allowPrivate, Metrics: m,
		AllowHosts: o.allowHosts, Logger: logger.With("component", "watch")}
	if o.poll == 0 {
		cfg.Poll = -1 // off (0 is the default in watch.Config)
	}
	cfg.SignURL = o.signURL
	if o.maxCloud == 0 {
		cfg.MaxCloud = math.SmallestNonzeroFloat64 // cloudless items only
	}
	return cfg
}

// newRegistry is the Prometheus registry of one process, with the Go and
// process collectors and the watcher's metrics.
func newRegistry() (*prometheus.Registry, *watch.Metrics) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg, watch.NewMetrics(reg)
}

// startWatcher runs the watcher of o over core in the background; the
// returned function stops it (letting jobs in flight finish) and releases
// its queue.
func startWatcher(ctx context.Context, core *archive.Archive, cfg watch.Config) (func() error, error) {
	drv, closeDrv, err := store.JobsDriver(ctx, core.Store())
	if err != nil {
		return nil, err
	}
	w, err := watch.New(ctx, cfg, drv)
	if err != nil {
		closeDrv()
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	return func() error {
		cancel()
		return errors.Join(<-done, closeDrv())
	}, nil
}

// runWatch runs the monitoring watcher without the HTTP API, until ctx ends
// (SIGINT/SIGTERM), delivering the notifications its ingestions cause:
//
//	cropkit watch --catalog URL --data DIR [--collection sentinel-2-l2a] [--poll 1h] [--backfill 90d]
//	              [--max-cloud 80] [--ingest-allow-private] [--webhook-allow-private] [--webhook-retry-base 5s]
//	              [--once [--once-grace 10s]]
//
// Fields are registered by another process (cropkit serve) on the same data
// directory; the watcher finds them by itself. With --once it runs one round
// (fields, one poll, the ingestions they queue) and exits, for cron.
func runWatch(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return runJobs(ctx, "watch", args, stdout, stderr)
}

// runWorker is one worker of a scaled-out deployment: the job queue
// (catalogue polls, backfills, ingestions) and the webhook outbox on a
// shared database and blob store, without the HTTP API, until ctx ends:
//
//	cropkit worker --db postgres://… --blobs s3://… --catalog URL [the flags of watch]
//
// Any number of workers and of `cropkit serve --jobs=false` replicas share
// one PostgreSQL database and one bucket: river hands each job to one
// worker, a job whose worker died runs again on another within a minute,
// and each notification is delivered by one dispatcher.
func runWorker(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return runJobs(ctx, "worker", args, stdout, stderr)
}

// runJobs is watch and worker: the same flags and work, worker requiring
// --db and --blobs.
func runJobs(ctx context.Context, name string, args []string, stdout, stderr io.Writer) error {
	stdout, stderr = serialized(stdout), serialized(stderr)
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data", "./cropkit-data", "data directory (SQLite database and product files)")
	storage := addStorageFlags(fs)
	minClear := fs.Float64("min-clear", archive.DefaultMinClear, "fraction of a field's pixels that must be clear for a usable image")
	o := addWatchFlags(fs)
	once := fs.Bool("once", false, "check the fields, poll once, ingest what is new, deliver notifications for --once-grace and exit (cron)")
	onceGrace := fs.Duration("once-grace", 10*time.Second, "with --once, how long notifications are delivered after the ingestions")
	allowPrivate := fs.Bool("ingest-allow-private", false, "let the catalogue named by --catalog (its host and port) be on a loopback, private, link-local or metadata address; other hosts it points to need --ingest-allow-host")
	var hooks archive.WebhookOptions
	fs.DurationVar(&hooks.RetryBase, "webhook-retry-base", 5*time.Second, "first webhook retry delay; the schedule (5s, 5m, 30m, 2h, 5h, 10h, 10h) scales with it")
	fs.DurationVar(&hooks.Timeout, "webhook-timeout", 15*time.Second, "time limit of one webhook delivery attempt")
	fs.BoolVar(&hooks.AllowPrivate, "webhook-allow-private", false, "let webhooks reach loopback, private, link-local and metadata addresses (tests, private networks)")
	fs.IntVar(&hooks.Concurrency, "webhook-concurrency", 8, "webhook delivery attempts in flight")
	weatherFlags := addWeatherFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	weatherCfg, err := weatherFlags.config()
	if err != nil {
		return err
	}
	if name == "worker" && !storage.external() {
		return errors.New("--db and --blobs are required (the database and blob store shared with the serve replicas)")
	}
	if o.catalog == "" {
		return errors.New("--catalog is required")
	}
	if err := o.check(); err != nil {
		return err
	}
	if hooks.RetryBase <= 0 || hooks.Timeout <= 0 || hooks.Concurrency <= 0 {
		return errors.New("--webhook-retry-base, --webhook-timeout and --webhook-concurrency must be positive")
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	_, metrics := newRegistry()
	hooks.Observe = metrics.ObserveDelivery
	core, err := storage.open(ctx, *dataDir, true, archive.Config{MinClear: *minClear, Logger: logger, Webhooks: hooks, Weather: weatherCfg, IngestAllowHosts: o.allowHosts})
	if err != nil {
		return err
	}
	defer core.Close()
	cfg := o.config(core, *allowPrivate, metrics, logger)
	cfg.WeatherRefresh = weatherFlags.refresh
	if *once {
		return watchOnce(ctx, core, cfg, *onceGrace, stdout)
	}
	stop, err := startWatcher(ctx, core, cfg)
	if err != nil {
		return err
	}
	hookCtx, stopHooks := context.WithCancel(context.WithoutCancel(ctx))
	hooksDone := make(chan error, 1)
	go func() { hooksDone <- core.RunWebhooks(hookCtx) }()
	if err := core.RunSweeps(hookCtx, time.Hour); err != nil {
		stopHooks()
		return err
	}
	who, where := "cropkit", *dataDir
	if name == "worker" {
		who = "cropkit worker"
	}
	if storage.external() {
		where = "shared database and blob store"
	}
	fmt.Fprintf(stdout, "%s watching %s (collection %s, data %s)\n", who, o.catalog, o.collection, where)
	<-ctx.Done()
	fmt.Fprintln(stderr, "shutting down")
	err = stop()
	stopHooks()
	if herr := <-hooksDone; herr != nil && !errors.Is(herr, context.Canceled) {
		err = errors.Join(err, herr)
	}
	return err
}

// watchOnce is `cropkit watch --once`: one round of the watcher while the
// webhook dispatcher runs, then grace for the notifications it caused
// (those still failing wait in the durable outbox for the next run or a
// server on the same data directory).
func watchOnce(ctx context.Context, core *archive.Archive, cfg watch.Config, grace time.Duration, stdout io.Writer) error {
	cfg.Poll = -1 // the one poll is RunOnce's
	drv, closeDrv, err := store.JobsDriver(ctx, core.Store())
	if err != nil {
		return err
	}
	defer closeDrv()
	w, err := watch.New(ctx, cfg, drv)
	if err != nil {
		return err
	}
	hookCtx, stopHooks := context.WithCancel(context.WithoutCancel(ctx))
	defer stopHooks()
	hooksDone := make(chan error, 1)
	go func() { hooksDone <- core.RunWebhooks(hookCtx) }()
	err = w.RunOnce(ctx)
	var items []archive.SceneItem
	var lerr error
	for _, c := range cfg.Collections {
		its, e := core.SceneItems(ctx, archive.ItemQuery{Collection: c})
		items, lerr = append(items, its...), errors.Join(lerr, e)
	}
	if err = errors.Join(err, lerr); err == nil {
		fmt.Fprintf(stdout, "%d items recorded from %s\n", len(items), cfg.Catalog)
		select {
		case <-time.After(grace):
		case <-ctx.Done():
		}
	}
	stopHooks()
	if herr := <-hooksDone; herr != nil && !errors.Is(herr, context.Canceled) {
		err = errors.Join(err, herr)
	}
	return err
}
