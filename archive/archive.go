package archive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/cropkit/cropkit/imagery"
	"github.com/cropkit/cropkit/render"
)

// DefaultMinClear is the clear fraction from which a field's image is usable.
const DefaultMinClear = 0.6

// Config configures an Archive. Store and Blobs are required.
type Config struct {
	Store Store
	Blobs Blobs
	// CloseBlobs makes Close close Blobs too when it is an io.Closer (the
	// archive then owns them, as it always owns Store).
	CloseBlobs bool
	// TempDir holds uploads being received (scene bands); it is emptied by
	// New. "" means a directory of the system's.
	TempDir string
	// Catalogue is the index catalogue; nil means imagery.NewCatalogue().
	Catalogue *imagery.Catalogue
	// MinClear is the fraction of a field's pixels that must be clear for an
	// image to be usable; 0 means DefaultMinClear.
	MinClear float64
	// Workers bounds the fields ingested concurrently; 0 means GOMAXPROCS.
	Workers int
	// Limits caps what one account may register (zero fields: DefaultLimits).
	Limits Limits
	// IngestAllowPrivate lets untrusted ingestion sources (the HTTP API) be
	// fetched from loopback, private, link-local and metadata addresses.
	IngestAllowPrivate bool
	// IngestAllowHosts are further origins ("host:port", or URLs) that the
	// assets of a remote item may be on when that is a loopback, private or
	// link-local address (a band file server beside a private catalogue):
	// cropkit's --ingest-allow-host. Without them only the item URL's own
	// origin (and the SignURL's) is allowed, never other hosts an item names.
	IngestAllowHosts []string
	// SignURL names a SAS token service (URL/token/{collection}) whose
	// tokens sign every asset request of remote STAC items read by URL
	// (cropkit's --sign-url); "" signs only Planetary Computer's blob
	// storage, with its public token service.
	SignURL string
	// FieldPixels bounds the decoded pixels of one field window
	// (imagery.SceneOptions.MaxFieldPixels); 0 means the library's default.
	FieldPixels int64
	// MemoryBudget bounds the bytes all concurrent field reads of this
	// archive may hold (one imagery.Budget shared by every ingestion);
	// 0 means 512 MiB.
	MemoryBudget int64
	// TokenTTL is the lifetime of new tokens; 0 means they do not expire.
	TokenTTL time.Duration
	// Webhooks configures notification delivery (RunWebhooks).
	Webhooks WebhookOptions
	// SweepGrace is how old an unreferenced blob must be before Sweep
	// removes it (an ingestion in another process may be about to commit
	// it); 0 means 10 minutes, negative means no grace.
	SweepGrace time.Duration
	// StepHook, when set, is called at each step of the file-installing
	// protocol (tests inject crashes there). Steps are named in blobs.go.
	StepHook func(step string)
	// Logger receives ingestion and delivery logs; nil discards them.
	Logger *slog.Logger
	// Weather is the weather source (FieldWeather, WeatherDays); a zero
	// value serves none.
	Weather WeatherConfig
}

// Archive is the field archive: accounts, fields, seasons, uploads,
// ingestion of scenes into per-field products, product queries and the
// notifications ingestion emits. The HTTP server, the CLI and workers share
// it; it knows nothing of HTTP.
type Archive struct {
	store     Store
	blobs     Blobs
	tempDir   string
	cat       *imagery.Catalogue
	minClear  float64
	workers   int
	limits    Limits
	log       *slog.Logger
	render    *render.Renderer
	allowPriv bool
	// allowHosts are Config.IngestAllowHosts.
	allowHosts []string
	signURL    string
	maxPixels  int64
	budget     *imagery.Budget
	tokenTTL   time.Duration
	grace      time.Duration
	hook       func(string)
	hooks      *webhooks
	logins     chan struct{} // bcrypt slots
	cache      *readCache    // hot reads in memory (readcache.go); nil: none
	// closeBlobs: Close closes blobs too (Config.CloseBlobs).
	closeBlobs bool
	// outlines orders, within this process, an upload's write and version
	// check against an outline change of the same field (striped by field
	// id): without it a field reshaped in a loop could starve an upload.
	// Other processes still meet the version check and retry of SaveUpload.
	outlines [64]sync.RWMutex
	// weather is the weather source and its cell locks (weather.go).
	weather *weatherState
}

// outlineLock is the stripe of outlines for field id.
func (a *Archive) outlineLock(id int64) *sync.RWMutex {
	return &a.outlines[uint64(id)%uint64(len(a.outlines))]
}

// New returns an archive over cfg.Store and cfg.Blobs.
func New(cfg Config) (*Archive, error) {
	if cfg.Store == nil || cfg.Blobs == nil {
		return nil, errors.New("archive: Config.Store and Config.Blobs are required")
	}
	a := &Archive{
		store: cfg.Store, blobs: cfg.Blobs, tempDir: cfg.TempDir, cat: cfg.Catalogue, minClear: cfg.MinClear,
		workers: cfg.Workers, limits: cfg.Limits.withDefaults(), log: cfg.Logger,
		allowPriv: cfg.IngestAllowPrivate, allowHosts: cfg.IngestAllowHosts, signURL: cfg.SignURL, maxPixels: cfg.FieldPixels, tokenTTL: cfg.TokenTTL, grace: cfg.SweepGrace,
		hook: cfg.StepHook, closeBlobs: cfg.CloseBlobs,
		// One bcrypt at a time per CPU at most: logins queue instead of
		// taking every core from downloads.
		logins: make(chan struct{}, max(1, runtime.GOMAXPROCS(0)/2)),
	}
	if a.cat == nil {
		a.cat = imagery.NewCatalogue()
	}
	a.render = render.New(a.cat)
	a.cache = newReadCache(cfg.Store)
	if a.minClear <= 0 {
		a.minClear = DefaultMinClear
	}
	if a.minClear > 1 {
		return nil, fmt.Errorf("archive: MinClear %v is not a fraction in (0, 1]", a.minClear)
	}
	if a.workers <= 0 {
		a.workers = runtime.GOMAXPROCS(0)
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if cfg.MemoryBudget <= 0 {
		cfg.MemoryBudget = 512 << 20
	}
	a.budget = imagery.NewBudget(cfg.MemoryBudget)
	if a.grace == 0 {
		a.grace = 10 * time.Minute
	}
	if a.tempDir == "" {
		a.tempDir = filepath.Join(os.TempDir(), "cropkit-uploads")
	} else if err := os.RemoveAll(a.tempDir); err != nil { // what a crash left behind
		return nil, fmt.Errorf("archive: clean %s: %w", a.tempDir, err)
	}
	a.weather = newWeatherState(cfg.Weather)
	if err := a.initWebhooks(cfg.Webhooks); err != nil {
		return nil, err
	}
	return a, nil
}

// Close closes the store (and the blobs, with Config.CloseBlobs).
func (a *Archive) Close() error {
	a.weather.close() // its background fills use the store
	err := a.store.Close()
	if c, ok := a.blobs.(io.Closer); ok && a.closeBlobs {
		err = errors.Join(err, c.Close())
	}
	return err
}

// Store is the archive's database (for administration and tests).
func (a *Archive) Store() Store { return a.store }

// Blobs is the archive's file store.
func (a *Archive) Blobs() Blobs { return a.blobs }

// Catalogue is the index catalogue.
func (a *Archive) Catalogue() *imagery.Catalogue { return a.cat }

// Limits are the limits in force.
func (a *Archive) Limits() Limits { return a.limits }

// MinClear is the clear fraction from which an image is usable.
func (a *Archive) MinClear() float64 { return a.minClear }

func (a *Archive) step(name string) {
	if a.hook != nil {
		a.hook(name)
	}
}

// wakeDispatcher wakes the webhook dispatcher (nil-safe).
func (a *Archive) wakeDispatcher() {
	if a.hooks != nil && a.hooks.dispatcher != nil {
		a.hooks.dispatcher.Notify()
	}
}

// TempDir is where uploads being received are spooled (emptied by New).
func (a *Archive) TempDir() string { return a.tempDir }

// RunSweeps sweeps at once (see Sweep), then every interval until ctx
// ends; it returns the first sweep's error (later ones are logged).
func (a *Archive) RunSweeps(ctx context.Context, interval time.Duration) error {
	if _, err := a.Sweep(ctx); err != nil {
		return err
	}
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if _, err := a.Sweep(ctx); err != nil && ctx.Err() == nil {
					a.log.WarnContext(ctx, "sweep", "err", err)
				}
			}
		}
	}()
	return nil
}
