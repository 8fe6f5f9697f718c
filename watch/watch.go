package watch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/internal/netguard"
	"github.com/cropkit/cropkit/stac"
)

// Config configures a Watcher. Archive and Catalog are required.
type Config struct {
	Archive *archive.Archive
	// Catalog is the STAC API root (landing page URL).
	Catalog string
	// Collection is searched; "" means DefaultCollection.
	Collection string
	// Collections, when set, are all searched (polled and backfilled each
	// on its own, e.g. sentinel-2-l2a, landsat-c2-l2 and sentinel-1-rtc);
	// Collection is then their first. MaxCloud does not apply to radar
	// collections (RadarCollection).
	Collections []string
	// Poll is the catalogue poll interval; 0 means DefaultPoll, negative
	// turns polling off (backfills still run).
	Poll time.Duration
	// Backfill is the history a newly registered field gets.
	Backfill Backfill
	// MaxCloud is the scene-level eo:cloud_cover (percent) above which an
	// item is never read; 0 means DefaultMaxCloud.
	MaxCloud float64
	// AllowPrivate lets the catalogue's origin (Catalog's host and port)
	// be on loopback, private and other special addresses (tests,
	// on-premises catalogues). It does not extend to other hosts the
	// catalogue points to (next links, assets): list those in AllowHosts.
	AllowPrivate bool
	// AllowHosts are further origins ("host:port", or URLs) that may be on
	// special addresses, such as a band file server beside an on-premises
	// catalogue.
	AllowHosts []string
	// Margin is how far before the newest ingested acquisition a poll
	// searches; 0 means DefaultMargin.
	Margin time.Duration
	// FieldCheck is how often registered fields are compared with the
	// fields already backfilled; 0 means DefaultFieldCheck.
	FieldCheck time.Duration
	// Workers bounds the jobs running at once; 0 means DefaultWorkers.
	Workers int
	// MaxAttempts bounds the attempts of an ingestion or backfill; 0 means DefaultMaxAttempts.
	MaxAttempts int
	// RetryBase is the first retry delay, doubled each attempt (with
	// jitter) up to RetryMax; 0 means DefaultRetryBase and DefaultRetryMax.
	RetryBase, RetryMax time.Duration
	// JobPoll is how often the queue looks for new jobs (SQLite has no
	// LISTEN/NOTIFY: jobs the watcher inserts itself wait for it too); 0
	// means a tenth of Poll, between 100ms and 1s.
	JobPoll time.Duration
	// JobTimeout bounds one job's run (it is cancelled and retried after);
	// 0 means DefaultJobTimeout. A job whose process died is rescued
	// (retried by another) JobTimeout+RescueMargin after it started, plus
	// up to river's rescuer interval (30 s).
	JobTimeout time.Duration
	// StopGrace is how long Run, once its context ends, lets running jobs
	// finish before cancelling them (they run again at the next start); 0
	// means DefaultStopGrace.
	StopGrace time.Duration
	// Client talks to the catalogue; nil means a stac.NewGuardedClient whose
	// guard allows what AllowPrivate and AllowHosts name.
	Client *stac.Client
	// SignURL names a SAS token service (URL/token/{collection}) whose tokens
	// sign every asset request (cropkit's --sign-url); "" signs only Planetary
	// Computer's blob storage, with its public token service. It applies to
	// the watcher's own client (Client nil).
	SignURL string
	// Metrics records the watcher's metrics; nil records none.
	Metrics *Metrics
	// Logger receives the watcher's logs; nil discards them.
	Logger *slog.Logger
	// WeatherRefresh is how often Run fetches again the provisional recent
	// days of the archive's cached weather cells (Archive.RefreshWeather);
	// 0 means daily, negative never.
	WeatherRefresh time.Duration
}

// Watcher runs the catalogue jobs. Create it with New, run it with Run.
type Watcher struct {
	core    *archive.Archive
	cfg     Config
	client  *stac.Client
	log     *slog.Logger
	metrics *Metrics
	queue   queue

	// backfilling remembers when this process queued each field version's
	// backfill, so that a field registered while a backfill runs gets a
	// backfill of its own instead of joining a new, overlapping field set
	// (whose items would be read twice). Entries expire, so a backfill that
	// failed for good is queued again.
	mu          sync.Mutex
	backfilling map[FieldRef]time.Time
	// lastPoll is when this process's last successful poll of each
	// collection started.
	lastPoll map[string]time.Time
	// running are the ingestions this process runs (collection, item,
	// updated), so that a rescued copy of one does not run beside it.
	running map[string]bool
}

// backfillRequeue is how long a queued backfill holds its fields.
const backfillRequeue = time.Hour

// queue is the part of a river client the watcher uses, so that Watcher
// does not depend on the driver's transaction type.
type queue interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
	StopAndCancel(ctx context.Context) error
	Insert(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
	Subscribe(kinds ...river.EventKind) (<-chan *river.Event, func())
	JobList(ctx context.Context, params *river.JobListParams) (*river.JobListResult, error)
}

// New migrates the job tables of driver's database and returns a watcher
// whose jobs run on it. driver is the archive store's (store.JobsDriver for
// the embedded database); another database passes its own river driver.
func New[TTx any](ctx context.Context, cfg Config, driver riverdriver.Driver[TTx]) (*Watcher, error) {
	if cfg.Archive == nil || cfg.Catalog == "" {
		return nil, fmt.Errorf("%w: Archive and Catalog are required", ErrConfig)
	}
	if cfg.MaxCloud < 0 || cfg.MaxCloud > 100 {
		return nil, fmt.Errorf("%w: max cloud %v is not a percentage", ErrConfig, cfg.MaxCloud)
	}
	guard, err := cfg.guard()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	// Refused before any request, as the client would refuse it later.
	if err := guard.CheckURL(cfg.Catalog); err != nil {
		return nil, fmt.Errorf("%w: catalog: %w", ErrConfig, err)
	}
	cfg.Collections = slices.DeleteFunc(slices.Clone(cfg.Collections), func(c string) bool { return strings.TrimSpace(c) == "" })
	if len(cfg.Collections) == 0 {
		cfg.Collections = []string{cmp.Or(cfg.Collection, DefaultCollection)}
	}
	cfg.Collection = cfg.Collections[0]
	setDefault(&cfg.Poll, DefaultPoll)
	setDefault(&cfg.MaxCloud, DefaultMaxCloud)
	setDefault(&cfg.Margin, DefaultMargin)
	setDefault(&cfg.FieldCheck, DefaultFieldCheck)
	setDefault(&cfg.Workers, DefaultWorkers)
	setDefault(&cfg.MaxAttempts, DefaultMaxAttempts)
	setDefault(&cfg.RetryBase, DefaultRetryBase)
	setDefault(&cfg.RetryMax, DefaultRetryMax)
	setDefault(&cfg.JobTimeout, DefaultJobTimeout)
	setDefault(&cfg.StopGrace, DefaultStopGrace)
	if cfg.JobPoll <= 0 {
		cfg.JobPoll = time.Second
		if cfg.Poll > 0 {
			cfg.JobPoll = min(max(cfg.Poll/10, 100*time.Millisecond), time.Second)
		}
	}
	w := &Watcher{core: cfg.Archive, cfg: cfg, client: cfg.Client, log: cfg.Logger, metrics: cfg.Metrics,
		backfilling: map[FieldRef]time.Time{}, lastPoll: map[string]time.Time{}, running: map[string]bool{}}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	if w.client == nil {
		w.client = stac.NewGuardedClient(guard, 0)
		w.client.UserAgent = "cropkit-watch"
		// Retried answers (429 with its Retry-After, 5xx) are logged as such.
		w.client.Logger = w.log.With("component", "catalogue")
		if cfg.SignURL != "" {
			// The operator named the token service: its origin may be private.
			tokens, err := netguard.New("token service").Allow(cfg.SignURL)
			if err != nil {
				return nil, fmt.Errorf("%w: sign URL: %w", ErrConfig, err)
			}
			if err := w.client.UseTokenService(cfg.SignURL, tokens.Client(stac.DefaultTimeout)); err != nil {
				return nil, fmt.Errorf("watch: %w", err)
			}
		}
		// Only a client of our own is instrumented: a caller's may be in use.
		if w.metrics != nil {
			hc := w.client.HTTPClient
			base := hc.Transport
			if base == nil {
				base = http.DefaultTransport
			}
			hc.Transport = countingTransport{base: base, add: func(n int) { w.metrics.Bytes.Add(float64(n)) }}
		}
	}
	mig, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: w.log})
	if err != nil {
		return nil, fmt.Errorf("watch: job queue migrations: %w", err)
	}
	if err := retryBusy(ctx, w.log, startPatience, "migrate job queue", func() error {
		_, err := mig.Migrate(ctx, rivermigrate.DirectionUp, nil)
		return err
	}); err != nil {
		return nil, err
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, &pollWorker{w: w})
	river.AddWorker(workers, &backfillWorker{w: w})
	river.AddWorker(workers, &ingestWorker{w: w})
	rc := &river.Config{
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: cfg.Workers}},
		Workers:           workers,
		MaxAttempts:       cfg.MaxAttempts,
		RetryPolicy:       retryPolicy{base: cfg.RetryBase, max: cfg.RetryMax, rescueAfter: cfg.JobTimeout + RescueMargin},
		Logger:            w.log.With("component", "jobs"),
		FetchPollInterval: cfg.JobPoll,
		// Ingestions are field windows of one item. A job whose worker
		// died (SIGKILL, lost host) stays "running" until the leader's
		// rescuer retries it: soon after its timeout, so another worker
		// picks it up within a minute.
		JobTimeout:           cfg.JobTimeout,
		RescueStuckJobsAfter: cfg.JobTimeout + RescueMargin,
	}
	rc.FetchCooldown = min(cfg.JobPoll, 100*time.Millisecond)
	// The client ID (in a job's attempted_by) names the worker process,
	// for operators of several workers (and the scale-out test).
	host, _ := os.Hostname()
	// Unique also between the watchers of one process (tests).
	rc.ID = fmt.Sprintf("%s_pid%d_%s_%08x", cmp.Or(host, "cropkit"), os.Getpid(),
		strings.ReplaceAll(time.Now().UTC().Format("2006_01_02T15_04_05.000000"), ".", "_"), rand.Uint32())
	if cfg.Poll > 0 {
		for i, c := range cfg.Collections {
			id := "cropkit-poll" // the first collection's keeps the single-collection name
			if i > 0 {
				id += "-" + c
			}
			rc.PeriodicJobs = append(rc.PeriodicJobs, river.NewPeriodicJob(river.PeriodicInterval(cfg.Poll),
				func() (river.JobArgs, *river.InsertOpts) { return PollArgs{Collection: c}, nil },
				&river.PeriodicJobOpts{RunOnStart: true, ID: id}))
		}
	}
	client, err := river.NewClient(driver, rc)
	if err != nil {
		return nil, fmt.Errorf("watch: job queue: %w", err)
	}
	w.queue = client
	return w, nil
}

// guard is the SSRF guard of the watcher's requests: private addresses
// only for the catalogue's origin (AllowPrivate) and AllowHosts.
func (cfg Config) guard() (*netguard.Guard, error) {
	g := stac.NewGuard()
	var err error
	if cfg.AllowPrivate {
		if g, err = g.Allow(cfg.Catalog); err != nil {
			return nil, fmt.Errorf("catalog: %w", err)
		}
	}
	if g, err = g.AllowHosts(cfg.AllowHosts...); err != nil {
		return nil, fmt.Errorf("allowed hosts: %w", err)
	}
	return g, nil
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// Run works the jobs and checks the fields for backfills until ctx ends,
// then lets the jobs in flight finish for up to Config.StopGrace; then
// they are cancelled (their band reads end at once) and retried at the
// next start.
func (w *Watcher) Run(ctx context.Context) error {
	if err := w.startQueue(ctx, 0); err != nil {
		if ctx.Err() != nil {
			return nil // stopped before the queue could start
		}
		return err
	}
	events, unsubscribe := w.queue.Subscribe(river.EventKindJobCompleted, river.EventKindJobFailed,
		river.EventKindJobCancelled, river.EventKindJobSnoozed)
	defer unsubscribe()
	go func() {
		for ev := range events {
			if ev.Job != nil {
				w.metrics.job(ev.Job.Kind, string(ev.Kind))
			}
		}
	}()
	if w.cfg.WeatherRefresh >= 0 {
		w.core.RunWeatherRefresh(ctx, w.cfg.WeatherRefresh)
	}
	w.log.InfoContext(ctx, "watching catalogue", "catalog", w.cfg.Catalog, "collections", w.cfg.Collections,
		"poll", w.cfg.Poll, "backfill", w.cfg.Backfill.String(), "max_cloud", w.cfg.MaxCloud)
	t := time.NewTicker(w.cfg.FieldCheck)
	defer t.Stop()
	for {
		if err := w.CheckFields(ctx); err != nil && ctx.Err() == nil {
			w.log.WarnContext(ctx, "check fields", "err", err)
		}
		select {
		case <-ctx.Done():
			stopCtx, cancel := context.WithTimeout(context.Background(), w.cfg.StopGrace)
			defer cancel()
			err := w.queue.Stop(stopCtx)
			if err == nil {
				return nil
			}
			// Cancelled jobs still record their outcome (within
			// recordTimeout, on a database other processes write too):
			// give them that and a margin before giving up on them.
			hard, cancelHard := context.WithTimeout(context.Background(), recordTimeout+10*time.Second)
			defer cancelHard()
			if errors.Is(err, context.DeadlineExceeded) {
				// The grace is over: the jobs still running are cancelled
				// and run again at the next start.
				w.log.InfoContext(ctx, "stopping: cancelling the jobs still running", "grace", w.cfg.StopGrace)
				err = nil
			}
			if herr := w.queue.StopAndCancel(hard); herr != nil {
				err = errors.Join(err, herr)
			}
			if err != nil {
				return fmt.Errorf("watch: stop jobs: %w", err)
			}
			return nil
		case <-t.C:
		}
	}
}

// startPatience is how long New and RunOnce keep trying to migrate and
// start the queue.
const startPatience = 2 * time.Minute

// startQueue starts the job queue, trying again while ctx lasts (and, when
// patience is positive, for at most that long). The queue runs on its own
// context: cancelling ctx would stop it without letting running jobs
// finish.
func (w *Watcher) startQueue(ctx context.Context, patience time.Duration) error {
	return retryBusy(ctx, w.log, patience, "start jobs", func() error {
		return w.queue.Start(context.WithoutCancel(ctx))
	})
}

// retryBusy runs f until it succeeds, with backoff from 1 s to 30 s, while
// ctx lasts and (when patience is positive) for at most patience. Starting
// and migrating the queue write to the database, starting within a 10 s
// limit of river's own: on SQLite another process (or the archive) holding
// the write lock past it must delay the watcher, not end it.
func retryBusy(ctx context.Context, log *slog.Logger, patience time.Duration, what string, f func() error) error {
	var deadline time.Time
	if patience > 0 {
		deadline = time.Now().Add(patience)
	}
	wait := time.Second
	for {
		err := f()
		if err == nil {
			return nil
		}
		if !deadline.IsZero() && time.Now().Add(wait).After(deadline) {
			return fmt.Errorf("watch: %s: %w", what, err)
		}
		log.WarnContext(ctx, what+"; trying again", "err", err, "in", wait)
		select {
		case <-ctx.Done():
			return fmt.Errorf("watch: %s: %w", what, errors.Join(err, ctx.Err()))
		case <-time.After(wait):
		}
		wait = min(2*wait, 30*time.Second)
	}
}

// RunOnce checks the fields, polls the catalogue once and returns when no
// job is pending, available or running (cron-like deployments): jobs whose
// retry is scheduled later are left for the next run, which picks them up
// from the queue. Config.Poll should be negative (no periodic polls).
func (w *Watcher) RunOnce(ctx context.Context) error {
	if err := w.startQueue(ctx, startPatience); err != nil {
		return err
	}
	events, unsubscribe := w.queue.Subscribe(river.EventKindJobCompleted, river.EventKindJobFailed,
		river.EventKindJobCancelled, river.EventKindJobSnoozed)
	go func() {
		for ev := range events {
			if ev.Job != nil {
				w.metrics.job(ev.Job.Kind, string(ev.Kind))
			}
		}
	}()
	err := w.CheckFields(ctx)
	if err == nil {
		err = w.PollNow(ctx)
	}
	if err == nil {
		err = w.waitIdle(ctx)
	}
	unsubscribe()
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	return errors.Join(err, w.queue.Stop(stopCtx))
}

// waitIdle returns once no job is pending, available or running.
func (w *Watcher) waitIdle(ctx context.Context) error {
	t := time.NewTicker(w.cfg.JobPoll)
	defer t.Stop()
	for {
		res, err := w.queue.JobList(ctx, river.NewJobListParams().First(1).States(
			rivertype.JobStatePending, rivertype.JobStateAvailable, rivertype.JobStateRunning))
		if err != nil {
			return fmt.Errorf("watch: list jobs: %w", err)
		}
		if len(res.Jobs) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// CheckFields enqueues a backfill for every field registered or
// re-outlined since its last backfill. Fields are found by comparing the
// archive's outline versions with those backfilled, so fields registered
// by another process (a server beside `cropkit watch`) are found too.
func (w *Watcher) CheckFields(ctx context.Context) error {
	st := w.core.Store()
	versions, err := st.FieldVersions(ctx)
	if err != nil {
		return err
	}
	watched, err := st.WatchedFields(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	var refs []FieldRef
	for id, v := range versions {
		ref := FieldRef{ID: id, Version: v}
		if wv, ok := watched[id]; ok && wv == v {
			delete(w.backfilling, ref)
			continue
		}
		if at, ok := w.backfilling[ref]; ok && now.Sub(at) < backfillRequeue {
			continue
		}
		refs = append(refs, ref)
	}
	if len(refs) == 0 {
		return nil
	}
	slices.SortFunc(refs, func(a, b FieldRef) int { return cmp.Compare(a.ID, b.ID) })
	for _, c := range w.cfg.Collections {
		if _, err := w.queue.Insert(ctx, BackfillArgs{Collection: c, Fields: refs}, nil); err != nil {
			return fmt.Errorf("enqueue backfill of %d fields in %s: %w", len(refs), c, err)
		}
	}
	for _, ref := range refs {
		w.backfilling[ref] = now
	}
	return nil
}

// PollNow enqueues a catalogue poll now (besides the periodic ones).
func (w *Watcher) PollNow(ctx context.Context) error {
	for _, c := range w.cfg.Collections {
		if _, err := w.queue.Insert(ctx, PollArgs{Collection: c}, nil); err != nil {
			return err
		}
	}
	return nil
}

// retryPolicy doubles the delay each attempt from base up to max, with
// full jitter so that jobs failing together do not retry together.
type retryPolicy struct{ base, max, rescueAfter time.Duration }

func (p retryPolicy) NextRetry(job *rivertype.JobRow) time.Time {
	// A job rescued from a dead worker (still "running" well after its
	// timeout) did not fail: its first rescue runs again at once. A job
	// rescued again is stuck, not orphaned (a read that outlived its
	// deadline): it backs off like a failure, so it cannot loop.
	if p.rescueAfter > 0 && job.AttemptedAt != nil && time.Since(*job.AttemptedAt) >= p.rescueAfter && job.Attempt <= 1 {
		return time.Now()
	}
	d := p.base << min(max(job.Attempt-1, 0), 30)
	if d <= 0 || d > p.max {
		d = p.max
	}
	d = d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
	return time.Now().Add(d)
}
