package sqlstore_test

import (
	"context"
	"database/sql"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/webhook"
	"github.com/cropkit/cropkit/webhook/pgstore"
	"github.com/cropkit/cropkit/webhook/sqlstore"
)

// backend is one database the Store runs on. Every test of the store runs
// on each (forEachBackend): SQLite always, PostgreSQL where testenv can start
// a server (skipped locally without one, required under CI=true).
type backend struct {
	name string
	// newDB makes a new empty database and returns its name for openDB.
	newDB func(t testing.TB) string
	// driver and dsn open the database that newDB named.
	driver string
	dsn    func(name string) string
	// migrate creates the webhook tables; store is the outbox on a database.
	migrate func(ctx context.Context, db *sql.DB) error
	store   func(db *sql.DB) *sqlstore.Store
}

func backends() []backend {
	return []backend{{
		name:   "sqlite",
		newDB:  func(t testing.TB) string { return filepath.Join(t.TempDir(), "cropkit.db") },
		driver: "sqlite",
		dsn: func(path string) string {
			return "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
		},
		migrate: sqlstore.Migrate,
		store:   sqlstore.New,
	}, {
		name:    "postgres",
		newDB:   testenv.Postgres,
		driver:  "pgx",
		dsn:     func(dsn string) string { return dsn },
		migrate: pgstore.Migrate,
		store:   pgstore.New,
	}}
}

// forEachBackend runs test as a subtest on each backend.
func forEachBackend(t *testing.T, test func(t *testing.T, bk backend)) {
	for _, bk := range backends() {
		t.Run(bk.name, func(t *testing.T) { test(t, bk) })
	}
}

// openDB opens and migrates the database name made by newDB.
func (bk backend) openDB(t testing.TB, name string) *sql.DB {
	t.Helper()
	db, err := sql.Open(bk.driver, bk.dsn(name))
	require.NoError(t, err)
	require.NoError(t, bk.migrate(context.Background(), db))
	return db
}

// newStore returns a store on a new database and that database's name.
func (bk backend) newStore(t testing.TB) (*sqlstore.Store, string) {
	t.Helper()
	name := bk.newDB(t)
	db := bk.openDB(t, name)
	t.Cleanup(func() { db.Close() })
	return bk.store(db), name
}

// hit is one request seen by a receiver.
type hit struct {
	ID        string
	Header    http.Header
	Body      []byte
	At        time.Time
	VerifyErr error
}

// receiver is an httptest server on 127.0.0.1 that records every request,
// verifies its signature once the secret is known, and answers with respond
// (n counts requests from 1).
type receiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	secret  string
	hits    []hit
	respond func(n int, w http.ResponseWriter, r *http.Request)
}

func newReceiver(t testing.TB, respond func(n int, w http.ResponseWriter, r *http.Request)) *receiver {
	rc := &receiver{respond: respond}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		h := hit{ID: r.Header.Get(webhook.HeaderID), Header: r.Header.Clone(), Body: body, At: time.Now()}
		if rc.secret != "" {
			h.VerifyErr = webhook.Verify(rc.secret, r.Header, body, webhook.VerifyOptions{})
		}
		rc.hits = append(rc.hits, h)
		n := len(rc.hits)
		rc.mu.Unlock()
		if rc.respond != nil {
			rc.respond(n, w, r)
		}
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) URL() string { return rc.srv.URL + "/hook" }

func (rc *receiver) setSecret(s string) {
	rc.mu.Lock()
	rc.secret = s
	rc.mu.Unlock()
}

func (rc *receiver) Hits() []hit {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]hit(nil), rc.hits...)
}

func (rc *receiver) Count() int { return len(rc.Hits()) }

// register registers rc for owner and gives it the secret.
func register(t testing.TB, s *sqlstore.Store, owner string, rc *receiver) sqlstore.Registration {
	t.Helper()
	reg, err := s.Register(context.Background(), owner, rc.URL())
	require.NoError(t, err)
	require.True(t, reg.Created)
	rc.setSecret(reg.Secret)
	return reg
}

func fastDispatcher(s webhook.Store) *webhook.Dispatcher {
	return &webhook.Dispatcher{
		Store:        s,
		Client:       webhook.NewClient(true, 2*time.Second),
		Schedule:     []time.Duration{20 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond},
		Timeout:      2 * time.Second,
		Jitter:       -1,
		PollInterval: 50 * time.Millisecond,
	}
}

// start runs d until the test ends or stop is called; stop waits for Run to return.
func start(t testing.TB, d *webhook.Dispatcher) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				require.ErrorIs(t, err, context.Canceled)
			case <-time.After(10 * time.Second):
				t.Error("dispatcher did not stop")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func samplePayload(field string, mean float64) webhook.Payload {
	return webhook.Payload{
		Group: "flanders",
		Field: field,
		Data: []webhook.Update{{
			Index:   "ndvi",
			Date:    "2019-06-20 10:56:29 GMT",
			Content: webhook.Content{Mean: mean, Median: mean, Std: 0.05, Min: 0.1, Max: 0.9, P25: mean - 0.05, P75: mean + 0.05},
		}},
	}
}

// enqueueN enqueues n notifications for owner, means 0, 0.1, 0.2…
func enqueueN(t testing.TB, s *sqlstore.Store, owner string, n int) {
	t.Helper()
	for i := range n {
		_, err := s.Enqueue(context.Background(), owner, samplePayload("f", float64(i)/10))
		require.NoError(t, err)
	}
}

func deliveries(t testing.TB, s *sqlstore.Store, owner string) []sqlstore.DeliveryState {
	t.Helper()
	ds, err := s.Deliveries(context.Background(), owner, 0)
	require.NoError(t, err)
	return ds
}

func allFinished(t testing.TB, s *sqlstore.Store, owner string) func() bool {
	return func() bool {
		for _, d := range deliveries(t, s, owner) {
			if d.Status == webhook.StatusPending {
				return false
			}
		}
		return true
	}
}
