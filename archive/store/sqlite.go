package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite" // the pure-Go SQLite driver "sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/webhook/sqlstore"
)

// sqliteStore is the embedded Store: one SQLite file (modernc.org/sqlite, pure Go).
//
// Its rowStore's db is the writer pool: one connection, so this process's
// write transactions queue in Go instead of contending for SQLite's lock
// (busy_timeout then only arbitrates between processes, e.g. an admin
// command beside a server). rdb serves reads concurrently (WAL).
type sqliteStore struct {
	rowStore

	mu    sync.Mutex
	stmts map[string]*sql.Stmt // prepared read statements by SQL text

	watch *changeWatch // the change generations, read cheaply (generations.go)
}

// OpenSQLite opens (creating it when create is set) the SQLite database at
// path and migrates it to the current schema.
func OpenSQLite(ctx context.Context, path string, create bool) (archive.Store, error) {
	if path == "" {
		return nil, errors.New("open database: empty path")
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) && !create {
		return nil, fmt.Errorf("open database %s: %w (no such database)", path, archive.ErrNotFound)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	dsn := "file:" + path +
		"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxIdleTime(0)
	s := &sqliteStore{rowStore: rowStore{db: db, d: sqliteDialect()}, stmts: map[string]*sql.Stmt{}}
	s.prepared = s.stmt
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	if err := sqlstore.Migrate(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	s.hooks = sqlstore.New(db)
	rdb, err := sql.Open("sqlite", dsn)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	rdb.SetMaxOpenConns(8)
	// Keep every reader: a connection closed as idle loses its prepared
	// statements, and re-parsing them was a quarter of a download's cost.
	rdb.SetMaxIdleConns(8)
	s.rdb = rdb
	wdb, err := sql.Open("sqlite", dsn)
	if err != nil {
		rdb.Close()
		db.Close()
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	s.watch = newChangeWatch(wdb, path)
	return s, nil
}

// dbError maps SQLite's "database is locked" (another process held the
// write lock past the busy timeout) to ErrBusy, keeping the cause.
func dbError(what string, err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY {
		return fmt.Errorf("%s: %w: %w", what, archive.ErrBusy, err)
	}
	if errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY {
		// A row referring to a field (season, product, upload) whose field
		// was deleted meanwhile: the field is not found, not a server fault.
		return fmt.Errorf("%s: %w: %w", what, archive.ErrNotFound, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func (s *sqliteStore) Close() error {
	s.mu.Lock()
	for _, st := range s.stmts {
		st.Close()
	}
	s.stmts = map[string]*sql.Stmt{}
	s.mu.Unlock()
	return errors.Join(s.watch.close(), s.rdb.Close(), s.db.Close())
}

// Generations reads the change counters (archive.GenerationStore), from
// memory while the database's data version says nothing was committed
// since the last read (changeWatch).
func (s *sqliteStore) Generations(ctx context.Context) (archive.Generations, error) {
	return s.watch.generations(ctx)
}

var _ archive.GenerationPeeker = (*sqliteStore)(nil)

// UnchangedGenerations answers the last Generations without a query while
// the WAL index shows no commit since (archive.GenerationPeeker, changeWatch).
func (s *sqliteStore) UnchangedGenerations() (archive.Generations, bool) {
	return s.watch.unchanged()
}

// stmt returns the prepared statement of query, preparing it once: parsing
// SQL costs more than running these small queries.
func (s *sqliteStore) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.stmts[query]; ok {
		return st, nil
	}
	st, err := s.rdb.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	s.stmts[query] = st
	return st, nil
}

// migrations are applied in order; PRAGMA user_version records how many ran.
var migrations = []string{
	`CREATE TABLE users (
		id            INTEGER PRIMARY KEY,
		name          TEXT NOT NULL UNIQUE,
		password_hash TEXT NOT NULL DEFAULT '',
		is_admin      INTEGER NOT NULL DEFAULT 0,
		indices       TEXT NOT NULL DEFAULT '',
		created_at    TEXT NOT NULL
	);
	CREATE TABLE tokens (
		hash       TEXT PRIMARY KEY,
		user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
		created_at TEXT NOT NULL
	);
	CREATE TABLE fields (
		id         INTEGER PRIMARY KEY,
		user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
		name       TEXT NOT NULL,
		grp        TEXT NOT NULL DEFAULT '',
		labels     TEXT NOT NULL DEFAULT '{}',
		indices    TEXT NOT NULL,
		geometry   TEXT NOT NULL,
		min_lon REAL NOT NULL, min_lat REAL NOT NULL, max_lon REAL NOT NULL, max_lat REAL NOT NULL,
		created_at TEXT NOT NULL,
		updated_at TEXT NOT NULL,
		UNIQUE (user_id, name)
	);
	CREATE TABLE seasons (
		field_id   INTEGER NOT NULL REFERENCES fields(id) ON DELETE CASCADE,
		start_date TEXT NOT NULL,
		record     TEXT NOT NULL,
		PRIMARY KEY (field_id, start_date)
	);
	CREATE TABLE products (
		field_id     INTEGER NOT NULL REFERENCES fields(id) ON DELETE CASCADE,
		idx          TEXT NOT NULL,
		date         TEXT NOT NULL,
		scene_id     TEXT NOT NULL,
		usable       INTEGER NOT NULL,
		cloud_cover  REAL NOT NULL,
		mean REAL, median REAL, std REAL, min REAL, max REAL, p25 REAL, p75 REAL,
		num          INTEGER NOT NULL,
		field_pixels INTEGER NOT NULL,
		epsg INTEGER NOT NULL, x0 REAL NOT NULL, y0 REAL NOT NULL, dx REAL NOT NULL, dy REAL NOT NULL,
		cols INTEGER NOT NULL, rows INTEGER NOT NULL,
		ingested_at  TEXT NOT NULL,
		PRIMARY KEY (field_id, idx, date)
	);`,
	// Version 2: field ids are never reused (AUTOINCREMENT), because product
	// and upload files live under DIR/products/<field-id> and a late writer
	// (an ingestion or upload racing a delete) must not hand them to a new
	// field; geom_version counts outline changes so an ingestion that read
	// an older outline does not record products for the new one. SQLite
	// cannot alter a primary key: the table is rebuilt (foreign keys are
	// off during migrations, see migrate).
	`CREATE TABLE fields_v2 (
		id           INTEGER PRIMARY KEY AUTOINCREMENT,
		user_id      INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
		name         TEXT NOT NULL,
		grp          TEXT NOT NULL DEFAULT '',
		labels       TEXT NOT NULL DEFAULT '{}',
		indices      TEXT NOT NULL,
		geometry     TEXT NOT NULL,
		min_lon REAL NOT NULL, min_lat REAL NOT NULL, max_lon REAL NOT NULL, max_lat REAL NOT NULL,
		created_at   TEXT NOT NULL,
		updated_at   TEXT NOT NULL,
		geom_version INTEGER NOT NULL DEFAULT 0,
		UNIQUE (user_id, name)
	);
	INSERT INTO fields_v2 (id, user_id, name, grp, labels, indices, geometry, min_lon, min_lat, max_lon, max_lat, created_at, updated_at)
		SELECT id, user_id, name, grp, labels, indices, geometry, min_lon, min_lat, max_lon, max_lat, created_at, updated_at FROM fields;
	DROP TABLE fields;
	ALTER TABLE fields_v2 RENAME TO fields;`,
	// Version 3: products point at their bundle blob (versioned names: a
	// re-ingestion writes a new blob, commits, then deletes the old one) and
	// carry a digest of their content (identical imagery notifies nobody);
	// tokens may expire. Bundles of older versions lived at
	// <field-id>/<date>.zip.
	`ALTER TABLE products ADD COLUMN bundle TEXT NOT NULL DEFAULT '';
	ALTER TABLE products ADD COLUMN digest TEXT NOT NULL DEFAULT '';
	UPDATE products SET bundle = 'products/' || field_id || '/' || date || '.zip' WHERE usable = 1;
	ALTER TABLE tokens ADD COLUMN expires_at TEXT;`,
	// Version 4: catalogue items the watcher ingested, the fields (and
	// outline versions) each was ingested for, and the fields whose
	// backfill is enqueued (the schema is in sqlite_items.go, the methods in rowstore_items.go).
	migrationItems,
	// Version 5: where each ingested scene came from, so later operations
	// (field boundary detection, backfills of new fields) can read it again.
	`CREATE TABLE scene_sources (
		scene_id    TEXT PRIMARY KEY,
		source      TEXT NOT NULL,
		date        TEXT NOT NULL,
		min_lon REAL NOT NULL, min_lat REAL NOT NULL, max_lon REAL NOT NULL, max_lat REAL NOT NULL,
		ingested_at TEXT NOT NULL
	);
	CREATE INDEX scene_sources_date ON scene_sources (date);`,
	// Version 6: products name their sensor (see migrationSensors).
	migrationSensors,
	// Version 7: the weather cache (rowstore_weather.go).
	migrationWeatherSQLite,
	// Version 8: change generations for the read caches (generations.go).
	migrationGenerations,
}

func (s *sqliteStore) migrate(ctx context.Context) error {
	// Table rebuilds need foreign keys off (dropping the old table would
	// cascade), which SQLite only allows outside a transaction: pin one
	// connection, switch them off, migrate, check, switch them back on.
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `PRAGMA foreign_keys = OFF`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA foreign_keys = ON`)
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer tx.Rollback()
	var version int
	if err := tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil {
		return fmt.Errorf("migrate: read version: %w", err)
	}
	for i := version; i < len(migrations); i++ {
		if _, err := tx.ExecContext(ctx, migrations[i]); err != nil {
			return fmt.Errorf("migrate to version %d: %w", i+1, err)
		}
	}
	if version < len(migrations) {
		rows, err := tx.QueryContext(ctx, `PRAGMA foreign_key_check`)
		if err != nil {
			return fmt.Errorf("migrate: foreign key check: %w", err)
		}
		broken := rows.Next()
		rows.Close()
		if broken {
			return errors.New("migrate: foreign key check failed")
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, len(migrations))); err != nil {
			return fmt.Errorf("migrate: write version: %w", err)
		}
	}
	return tx.Commit()
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// joinList stores an index list: "" for nil (everything), else "," + names
// joined by "," (so an explicit empty list stays distinguishable).
func joinList(names []string) string {
	if names == nil {
		return ""
	}
	return "," + strings.Join(names, ",")
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	s = strings.TrimPrefix(s, ",")
	if s == "" {
		return []string{}
	}
	return strings.Split(s, ",")
}
