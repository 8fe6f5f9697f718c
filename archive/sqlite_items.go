package archive

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riversqlite"
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

func (s *sqliteStore) RecordItem(ctx context.Context, it SceneItem) error {
	what := fmt.Sprintf("record item %s", it.ID)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return dbError(what, err)
	}
	defer tx.Rollback()
	_, err = tx.ExecContext(ctx, `INSERT INTO scene_items (collection, id, datetime, updated, source, state, error, ingested_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (collection, id) DO UPDATE SET datetime = excluded.datetime, updated = excluded.updated,
			source = excluded.source, state = excluded.state, error = excluded.error, ingested_at = excluded.ingested_at`,
		it.Collection, it.ID, timeNano(it.Datetime), it.Updated, it.Source, it.State, it.Error, timeNano(it.IngestedAt))
	if err != nil {
		return dbError(what, err)
	}
	for id, v := range it.Fields {
		// A field deleted since the ingestion is skipped (foreign key).
		_, err := tx.ExecContext(ctx, `INSERT INTO scene_item_fields (collection, item_id, field_id, version)
			SELECT ?, ?, id, ? FROM fields WHERE id = ?
			ON CONFLICT (collection, item_id, field_id) DO UPDATE SET version = excluded.version`,
			it.Collection, it.ID, v, id)
		if err != nil {
			return dbError(what, err)
		}
	}
	return dbErrorOrNil(what, tx.Commit())
}

const itemColumns = `i.collection, i.id, i.datetime, i.updated, i.source, i.state, i.error, i.ingested_at,
	(SELECT count(*) FROM products p WHERE p.scene_id = i.id AND p.usable = 1)`

func (s *sqliteStore) scanItems(ctx context.Context, what, q string, args ...any) ([]SceneItem, error) {
	rows, err := s.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, dbError(what, err)
	}
	var out []SceneItem
	for rows.Next() {
		var it SceneItem
		var dt, at string
		if err := rows.Scan(&it.Collection, &it.ID, &dt, &it.Updated, &it.Source, &it.State, &it.Error, &at, &it.Usable); err != nil {
			rows.Close()
			return nil, dbError(what, err)
		}
		it.Datetime, _ = time.Parse(time.RFC3339Nano, dt)
		it.IngestedAt, _ = time.Parse(time.RFC3339Nano, at)
		it.Fields = map[int64]int64{}
		out = append(out, it)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, dbError(what, err)
	}
	for i := range out {
		if err := s.itemFields(ctx, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *sqliteStore) itemFields(ctx context.Context, it *SceneItem) error {
	rows, err := s.rdb.QueryContext(ctx, `SELECT field_id, version FROM scene_item_fields WHERE collection = ? AND item_id = ?`,
		it.Collection, it.ID)
	if err != nil {
		return dbError("fields of item "+it.ID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, v int64
		if err := rows.Scan(&id, &v); err != nil {
			return dbError("fields of item "+it.ID, err)
		}
		it.Fields[id] = v
	}
	return dbErrorOrNil("fields of item "+it.ID, rows.Err())
}

func (s *sqliteStore) SceneItem(ctx context.Context, collection, id string) (SceneItem, error) {
	items, err := s.scanItems(ctx, "item "+id, `SELECT `+itemColumns+` FROM scene_items i WHERE i.collection = ? AND i.id = ?`, collection, id)
	if err != nil {
		return SceneItem{}, err
	}
	if len(items) == 0 {
		return SceneItem{}, fmt.Errorf("item %s of %s: %w", id, collection, ErrNotFound)
	}
	return items[0], nil
}

func (s *sqliteStore) SceneItems(ctx context.Context, q ItemQuery) ([]SceneItem, error) {
	query := `SELECT ` + itemColumns + ` FROM scene_items i WHERE (? = '' OR i.collection = ?) ORDER BY i.datetime DESC, i.id`
	args := []any{q.Collection, q.Collection}
	if q.Limit > 0 {
		query += ` LIMIT ?`
		args = append(args, q.Limit)
	}
	return s.scanItems(ctx, "list items", query, args...)
}

func (s *sqliteStore) NewestItem(ctx context.Context, collection string) (time.Time, error) {
	var v sql.NullString
	err := s.rdb.QueryRowContext(ctx, `SELECT max(datetime) FROM scene_items WHERE collection = ? AND state = ?`,
		collection, ItemIngested).Scan(&v)
	if err != nil {
		return time.Time{}, dbError("newest item", err)
	}
	if !v.Valid {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v.String)
	if err != nil {
		return time.Time{}, fmt.Errorf("newest item: %w", err)
	}
	return t, nil
}

func (s *sqliteStore) WatchedFields(ctx context.Context) (map[int64]int64, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT field_id, version FROM watched_fields`)
	if err != nil {
		return nil, dbError("watched fields", err)
	}
	defer rows.Close()
	out := map[int64]int64{}
	for rows.Next() {
		var id, v int64
		if err := rows.Scan(&id, &v); err != nil {
			return nil, dbError("watched fields", err)
		}
		out[id] = v
	}
	return out, dbErrorOrNil("watched fields", rows.Err())
}

func (s *sqliteStore) MarkWatched(ctx context.Context, id, version int64) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO watched_fields (field_id, version, at) SELECT id, ?, ? FROM fields WHERE id = ?
		ON CONFLICT (field_id) DO UPDATE SET version = excluded.version, at = excluded.at`, version, now(), id)
	if err != nil {
		return dbError(fmt.Sprintf("mark field %d watched", id), err)
	}
	return nil
}

// dbErrorOrNil is dbError, nil for a nil err.
func dbErrorOrNil(what string, err error) error {
	if err == nil {
		return nil
	}
	return dbError(what, err)
}

// ErrNoJobQueue is returned by JobsDriver for a store that hosts no job queue.
var ErrNoJobQueue = errors.New("archive: the store hosts no job queue")

// JobsDriver returns the river driver of the embedded database, for the
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
func (a *Archive) JobsDriver(ctx context.Context) (riverdriver.Driver[*sql.Tx], func() error, error) {
	if pg, ok := a.store.(*pgStore); ok {
		return pg.jobsDriver(ctx)
	}
	s, ok := a.store.(*sqliteStore)
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
