package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riversqlite"

	"github.com/cropkit/cropkit/archive"
)

// migrationItems is migration 4 (appended to migrations in sqlite.go).
const migrationItems = `CREATE TABLE scene_items (
		collection  TEXT NOT NULL,
		id          TEXT NOT NULL,
		datetime    TEXT NOT NULL,
		updated     TEXT NOT NULL DEFAULT '',
		source      TEXT NOT NULL DEFAULT '',
		state       TEXT NOT NULL,
		error       TEXT NOT NULL DEFAULT '',
		ingested_at TEXT NOT NULL,
		PRIMARY KEY (collection, id)
	);
	CREATE INDEX scene_items_datetime ON scene_items (collection, datetime);
	CREATE TABLE scene_item_fields (
		collection TEXT NOT NULL,
		item_id    TEXT NOT NULL,
		field_id   INTEGER NOT NULL REFERENCES fields(id) ON DELETE CASCADE,
		version    INTEGER NOT NULL,
		PRIMARY KEY (collection, item_id, field_id),
		FOREIGN KEY (collection, item_id) REFERENCES scene_items(collection, id) ON DELETE CASCADE
	);
	CREATE TABLE watched_fields (
		field_id INTEGER PRIMARY KEY REFERENCES fields(id) ON DELETE CASCADE,
		version  INTEGER NOT NULL,
		at       TEXT NOT NULL
	);
	CREATE INDEX products_scene ON products (scene_id);`

// timeNano keeps fractions of a second: acquisitions are ordered and
// compared by them.
func timeNano(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// ErrNoJobQueue is returned by JobsDriver for a store that hosts no job queue.
var ErrNoJobQueue = errors.New("store: the store hosts no job queue")

// JobsDriver returns the river driver of st's database (a Store this
// package opened), for the
// watcher's durable job queue, and the function that releases it (after the
// river client stopped). The driver has its own connection to the same
// file: river runs its own transactions, which must not queue behind (or
// hold) the store's writer connection; SQLite's busy timeout arbitrates
// between the two as it does between processes. The *sql.DB stays inside
// the driver.
//
// On PostgreSQL it is river's database/sql driver on a pool of its own
// (the store's stays free for requests), with river's tables migrated
// once under the cropkit migration lock, however many processes start
// together; any number of processes may then work the same queue.
func JobsDriver(ctx context.Context, st archive.Store) (riverdriver.Driver[*sql.Tx], func() error, error) {
	if pg, ok := st.(*pgStore); ok {
		return pg.jobsDriver(ctx)
	}
	s, ok := st.(*sqliteStore)
	if !ok {
		return nil, nil, ErrNoJobQueue
	}
	var seq int
	var name, file string
	if err := s.db.QueryRowContext(ctx, `PRAGMA database_list`).Scan(&seq, &name, &file); err != nil {
		return nil, nil, dbError("job queue: database file", err)
	}
	if file == "" {
		return nil, nil, fmt.Errorf("job queue: in-memory database: %w", ErrNoJobQueue)
	}
	db, err := sql.Open("sqlite", "file:"+file+
		"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate")
	if err != nil {
		return nil, nil, fmt.Errorf("job queue: %w", err)
	}
	// One connection, as the driver's documentation asks: river's
	// goroutines would otherwise contend for SQLite's single write lock.
	db.SetMaxOpenConns(1)
	return riversqlite.New(db), db.Close, nil
}
