package archive

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/paulmach/orb"
	"modernc.org/sqlite" // the pure-Go SQLite driver "sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/webhook"
	"github.com/cropkit/cropkit/webhook/sqlstore"
)

// sqliteStore is the embedded Store: one SQLite file (modernc.org/sqlite, pure Go).
type sqliteStore struct {
	// db is the writer pool: one connection, so this process's write
	// transactions queue in Go instead of contending for SQLite's lock
	// (busy_timeout then only arbitrates between processes, e.g. an admin
	// command beside a server). rdb serves reads concurrently (WAL).
	db    *sql.DB
	rdb   *sql.DB
	hooks *sqlstore.Store

	mu    sync.Mutex
	stmts map[string]*sql.Stmt // prepared read statements by SQL text
}

// OpenSQLite opens (creating it when create is set) the SQLite database at
// path and migrates it to the current schema.
func OpenSQLite(ctx context.Context, path string, create bool) (Store, error) {
	if path == "" {
		return nil, errors.New("open database: empty path")
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) && !create {
		return nil, fmt.Errorf("open database %s: %w (no such database)", path, ErrNotFound)
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
	s := &sqliteStore{db: db, stmts: map[string]*sql.Stmt{}}
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
	s.rdb = rdb
	return s, nil
}

// dbError maps SQLite's "database is locked" (another process held the
// write lock past the busy timeout) to ErrBusy, keeping the cause.
func dbError(what string, err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY {
		return fmt.Errorf("%s: %w: %w", what, ErrBusy, err)
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
	return errors.Join(s.rdb.Close(), s.db.Close())
}

func (s *sqliteStore) Webhooks() Outbox { return s.hooks }

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

func (s *sqliteStore) queryRow(ctx context.Context, query string, args ...any) (*sql.Row, error) {
	st, err := s.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryRowContext(ctx, args...), nil
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
	// backfill is enqueued (see sqlite_items.go).
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

func now() string { return rfc3339(time.Now()) }

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

func (s *sqliteStore) CreateUser(ctx context.Context, u NewUser, passwordHash string) (User, error) {
	admin := 0
	if u.Admin {
		admin = 1
	}
	res, err := s.db.ExecContext(ctx,
		`INSERT INTO users (name, password_hash, is_admin, indices, created_at) VALUES (?, ?, ?, ?, ?)
		 ON CONFLICT (name) DO NOTHING`,
		u.Name, passwordHash, admin, joinList(u.Indices), now())
	if err != nil {
		return User{}, dbError("create user "+u.Name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return User{}, fmt.Errorf("create user %s: %w", u.Name, ErrExists)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return User{}, fmt.Errorf("create user %s: %w", u.Name, err)
	}
	return User{ID: id, Name: u.Name, Admin: u.Admin, Indices: u.Indices}, nil
}

const userColumns = `u.id, u.name, u.is_admin, u.indices`

func scanUser(row interface{ Scan(...any) error }, extra ...any) (User, error) {
	var (
		u       User
		admin   int
		indices string
	)
	if err := row.Scan(append([]any{&u.ID, &u.Name, &admin, &indices}, extra...)...); err != nil {
		return User{}, err
	}
	u.Admin = admin != 0
	u.Indices = splitList(indices)
	return u, nil
}

func (s *sqliteStore) UserByName(ctx context.Context, name string) (User, error) {
	u, err := scanUser(s.rdb.QueryRowContext(ctx, `SELECT `+userColumns+` FROM users u WHERE u.name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return User{}, fmt.Errorf("user %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return User{}, dbError(fmt.Sprintf("user %q", name), err)
	}
	return u, nil
}

func (s *sqliteStore) CountUsers(ctx context.Context) (int, error) {
	var n int
	if err := s.rdb.QueryRowContext(ctx, `SELECT count(*) FROM users`).Scan(&n); err != nil {
		return 0, dbError("count users", err)
	}
	return n, nil
}

func (s *sqliteStore) PasswordHash(ctx context.Context, name string) (User, string, error) {
	var hash string
	u, err := scanUser(s.rdb.QueryRowContext(ctx, `SELECT `+userColumns+`, u.password_hash FROM users u WHERE u.name = ?`, name), &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return User{}, "", fmt.Errorf("user %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return User{}, "", dbError(fmt.Sprintf("user %q", name), err)
	}
	return u, hash, nil
}

func (s *sqliteStore) InsertToken(ctx context.Context, userID int64, hash string, created, expires time.Time) (int64, error) {
	var exp any
	if !expires.IsZero() {
		exp = rfc3339(expires)
	}
	res, err := s.db.ExecContext(ctx, `INSERT INTO tokens (hash, user_id, created_at, expires_at) VALUES (?, ?, ?, ?)`,
		hash, userID, rfc3339(created), exp)
	if err != nil {
		return 0, dbError("store token", err)
	}
	return res.LastInsertId()
}

func (s *sqliteStore) UserByToken(ctx context.Context, hash string, at time.Time) (User, Token, error) {
	row, err := s.queryRow(ctx, `SELECT `+userColumns+`, t.rowid, t.created_at, t.expires_at
		FROM tokens t JOIN users u ON u.id = t.user_id WHERE t.hash = ?`, hash)
	if err != nil {
		return User{}, Token{}, dbError("token", err)
	}
	var (
		tok     Token
		created string
		expires sql.NullString
	)
	u, err := scanUser(row, &tok.ID, &created, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return User{}, Token{}, fmt.Errorf("token: %w", ErrNotFound)
	}
	if err != nil {
		return User{}, Token{}, dbError("token", err)
	}
	tok.Created, _ = time.Parse(time.RFC3339, created)
	if expires.Valid {
		tok.Expires, _ = time.Parse(time.RFC3339, expires.String)
		if !at.Before(tok.Expires) {
			return User{}, Token{}, fmt.Errorf("token expired at %s: %w", expires.String, ErrNotFound)
		}
	}
	return u, tok, nil
}

func (s *sqliteStore) Tokens(ctx context.Context, userID int64) ([]Token, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT rowid, created_at, expires_at FROM tokens WHERE user_id = ? ORDER BY rowid`, userID)
	if err != nil {
		return nil, dbError("tokens", err)
	}
	defer rows.Close()
	out := []Token{}
	for rows.Next() {
		var (
			t       Token
			created string
			expires sql.NullString
		)
		if err := rows.Scan(&t.ID, &created, &expires); err != nil {
			return nil, dbError("tokens", err)
		}
		t.Created, _ = time.Parse(time.RFC3339, created)
		if expires.Valid {
			t.Expires, _ = time.Parse(time.RFC3339, expires.String)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

func (s *sqliteStore) RevokeTokens(ctx context.Context, userID, id int64) (int, error) {
	q, args := `DELETE FROM tokens WHERE user_id = ?`, []any{userID}
	if id != 0 {
		q += ` AND rowid = ?`
		args = append(args, id)
	}
	res, err := s.db.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, dbError("revoke tokens", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// geometryJSON is a GeoJSON MultiPolygon.
type geometryJSON struct {
	Type        string           `json:"type"`
	Coordinates orb.MultiPolygon `json:"coordinates"`
}

// EncodeGeometry is the stored (and answered) GeoJSON of a field outline.
func EncodeGeometry(mp orb.MultiPolygon) (string, error) {
	b, err := json.Marshal(geometryJSON{Type: "MultiPolygon", Coordinates: mp})
	if err != nil {
		return "", fmt.Errorf("encode geometry: %w", err)
	}
	return string(b), nil
}

func nonNilLabels(l map[string]string) map[string]string {
	if l == nil {
		return map[string]string{}
	}
	return l
}

func (s *sqliteStore) InsertField(ctx context.Context, f Field, maxPerUser int) (Field, error) {
	geom, err := EncodeGeometry(f.Geometry)
	if err != nil {
		return Field{}, err
	}
	labels, err := json.Marshal(nonNilLabels(f.Labels))
	if err != nil {
		return Field{}, fmt.Errorf("encode labels: %w", err)
	}
	b := f.Geometry.Bound()
	ts := now()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Field{}, dbError(fmt.Sprintf("insert field %q", f.Name), err)
	}
	defer tx.Rollback()
	if maxPerUser > 0 {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM fields WHERE user_id = ?`, f.OwnerID).Scan(&n); err != nil {
			return Field{}, dbError(fmt.Sprintf("insert field %q", f.Name), err)
		}
		if n >= maxPerUser {
			return Field{}, fmt.Errorf("field %q: %d fields: %w", f.Name, n, ErrQuota)
		}
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO fields
		(user_id, name, grp, labels, indices, geometry, min_lon, min_lat, max_lon, max_lat, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (user_id, name) DO NOTHING`,
		f.OwnerID, f.Name, f.Group, string(labels), joinList(f.Indices), geom, b.Min[0], b.Min[1], b.Max[0], b.Max[1], ts, ts)
	if err != nil {
		return Field{}, dbError(fmt.Sprintf("insert field %q", f.Name), err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return Field{}, fmt.Errorf("field %q: %w", f.Name, ErrExists)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return Field{}, fmt.Errorf("insert field %q: %w", f.Name, err)
	}
	if err := tx.Commit(); err != nil {
		return Field{}, dbError(fmt.Sprintf("insert field %q", f.Name), err)
	}
	return s.FieldByID(ctx, id)
}

func (s *sqliteStore) UpdateField(ctx context.Context, f Field, newOutline bool) (Field, []string, error) {
	geom, err := EncodeGeometry(f.Geometry)
	if err != nil {
		return Field{}, nil, err
	}
	labels, err := json.Marshal(nonNilLabels(f.Labels))
	if err != nil {
		return Field{}, nil, fmt.Errorf("encode labels: %w", err)
	}
	b := f.Geometry.Bound()
	what := fmt.Sprintf("update field %q", f.Name)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Field{}, nil, dbError(what, err)
	}
	defer tx.Rollback()
	bump := 0
	if newOutline {
		bump = 1
	}
	res, err := tx.ExecContext(ctx, `UPDATE fields SET grp = ?, labels = ?, indices = ?, geometry = ?,
		min_lon = ?, min_lat = ?, max_lon = ?, max_lat = ?, updated_at = ?, geom_version = geom_version + ? WHERE id = ?`,
		f.Group, string(labels), joinList(f.Indices), geom, b.Min[0], b.Min[1], b.Max[0], b.Max[1], now(), bump, f.ID)
	if err != nil {
		return Field{}, nil, dbError(what, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return Field{}, nil, fmt.Errorf("field %q: %w", f.Name, ErrNotFound)
	}
	var dropped []string
	if newOutline {
		rows, err := tx.QueryContext(ctx, `SELECT DISTINCT bundle FROM products WHERE field_id = ? AND bundle != ''`, f.ID)
		if err != nil {
			return Field{}, nil, dbError(what, err)
		}
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				rows.Close()
				return Field{}, nil, dbError(what, err)
			}
			dropped = append(dropped, k)
		}
		rows.Close()
		if _, err := tx.ExecContext(ctx, `DELETE FROM products WHERE field_id = ?`, f.ID); err != nil {
			return Field{}, nil, dbError(what+": drop products", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return Field{}, nil, dbError(what, err)
	}
	updated, err := s.FieldByID(ctx, f.ID)
	return updated, dropped, err
}

func (s *sqliteStore) DeleteField(ctx context.Context, id int64) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM fields WHERE id = ?`, id)
	if err != nil {
		return dbError(fmt.Sprintf("delete field %d", id), err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("field %d: %w", id, ErrNotFound)
	}
	return nil
}

const fieldColumns = `f.id, f.user_id, u.name, f.name, f.grp, f.labels, f.indices, f.geometry, f.created_at, f.updated_at, f.geom_version`

func scanField(row interface{ Scan(...any) error }) (Field, error) {
	var (
		f                        Field
		labels, indices, geom    string
		createdText, updatedText string
	)
	if err := row.Scan(&f.ID, &f.OwnerID, &f.Owner, &f.Name, &f.Group, &labels, &indices, &geom, &createdText, &updatedText, &f.Version); err != nil {
		return Field{}, err
	}
	if err := json.Unmarshal([]byte(labels), &f.Labels); err != nil {
		return Field{}, fmt.Errorf("field %d labels: %w", f.ID, err)
	}
	f.Indices = splitList(indices)
	mp, err := geo.ParseGeometry([]byte(geom))
	if err != nil {
		return Field{}, fmt.Errorf("field %d geometry: %w", f.ID, err)
	}
	f.Geometry = mp
	f.Bound = mp.Bound()
	f.Created, _ = time.Parse(time.RFC3339, createdText)
	f.Updated, _ = time.Parse(time.RFC3339, updatedText)
	return f, nil
}

// oneField scans the single field of row; what names it in errors, and a
// missing row is ErrNotFound.
func oneField(row *sql.Row, what string) (Field, error) {
	f, err := scanField(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Field{}, fmt.Errorf("field %s: %w", what, ErrNotFound)
	}
	if err != nil {
		return Field{}, dbError("field "+what, err)
	}
	return f, nil
}

func (s *sqliteStore) FieldByID(ctx context.Context, id int64) (Field, error) {
	return oneField(s.db.QueryRowContext(ctx,
		`SELECT `+fieldColumns+` FROM fields f JOIN users u ON u.id = f.user_id WHERE f.id = ?`, id), fmt.Sprint(id))
}

func (s *sqliteStore) FieldByName(ctx context.Context, userID int64, name string) (Field, error) {
	row, err := s.queryRow(ctx,
		`SELECT `+fieldColumns+` FROM fields f JOIN users u ON u.id = f.user_id WHERE f.user_id = ? AND f.name = ?`, userID, name)
	if err != nil {
		return Field{}, dbError(fmt.Sprintf("field %q", name), err)
	}
	return oneField(row, strconv.Quote(name))
}

func (s *sqliteStore) FieldSummary(ctx context.Context, userID int64, name string) (Field, error) {
	row, err := s.queryRow(ctx, `SELECT f.id, f.user_id, u.name, f.name, f.grp, f.indices, f.min_lon, f.min_lat, f.max_lon, f.max_lat, f.geom_version
		FROM fields f JOIN users u ON u.id = f.user_id WHERE f.user_id = ? AND f.name = ?`, userID, name)
	if err != nil {
		return Field{}, dbError(fmt.Sprintf("field %q", name), err)
	}
	var (
		f       Field
		indices string
	)
	err = row.Scan(&f.ID, &f.OwnerID, &f.Owner, &f.Name, &f.Group, &indices, &f.Bound.Min[0], &f.Bound.Min[1], &f.Bound.Max[0], &f.Bound.Max[1], &f.Version)
	if errors.Is(err, sql.ErrNoRows) {
		return Field{}, fmt.Errorf("field %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return Field{}, dbError(fmt.Sprintf("field %q", name), err)
	}
	f.Indices = splitList(indices)
	return f, nil
}

func (s *sqliteStore) queryFields(ctx context.Context, what, q string, args ...any) ([]Field, error) {
	rows, err := s.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, dbError(what, err)
	}
	defer rows.Close()
	var out []Field
	for rows.Next() {
		f, err := scanField(rows)
		if err != nil {
			return nil, dbError(what, err)
		}
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, dbError(what, err)
	}
	return out, nil
}

func (s *sqliteStore) Fields(ctx context.Context, userID int64) ([]Field, error) {
	q := `SELECT ` + fieldColumns + ` FROM fields f JOIN users u ON u.id = f.user_id`
	var args []any
	if userID != 0 {
		q += ` WHERE f.user_id = ?`
		args = append(args, userID)
	}
	return s.queryFields(ctx, "list fields", q+` ORDER BY u.name, f.name`, args...)
}

func (s *sqliteStore) FieldsIntersecting(ctx context.Context, b orb.Bound) ([]Field, error) {
	return s.queryFields(ctx, fmt.Sprintf("fields in %v", b), `SELECT `+fieldColumns+` FROM fields f JOIN users u ON u.id = f.user_id
		WHERE f.max_lon >= ? AND f.min_lon <= ? AND f.max_lat >= ? AND f.min_lat <= ? ORDER BY f.id`,
		b.Min[0], b.Max[0], b.Min[1], b.Max[1])
}

func (s *sqliteStore) FieldVersions(ctx context.Context) (map[int64]int64, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, geom_version FROM fields`)
	if err != nil {
		return nil, dbError("field versions", err)
	}
	defer rows.Close()
	out := map[int64]int64{}
	for rows.Next() {
		var id, v int64
		if err := rows.Scan(&id, &v); err != nil {
			return nil, dbError("field versions", err)
		}
		out[id] = v
	}
	return out, rows.Err()
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func (s *sqliteStore) Seasons(ctx context.Context, fieldID int64) ([]Season, error) {
	return seasonsTx(ctx, s.rdb, fieldID)
}

func seasonsTx(ctx context.Context, q querier, fieldID int64) ([]Season, error) {
	rows, err := q.QueryContext(ctx, `SELECT start_date, record FROM seasons WHERE field_id = ? ORDER BY start_date`, fieldID)
	if err != nil {
		return nil, dbError(fmt.Sprintf("seasons of field %d", fieldID), err)
	}
	defer rows.Close()
	var out []Season
	for rows.Next() {
		var se Season
		var rec string
		if err := rows.Scan(&se.StartDate, &rec); err != nil {
			return nil, dbError(fmt.Sprintf("seasons of field %d", fieldID), err)
		}
		se.Record = json.RawMessage(rec)
		out = append(out, se)
	}
	return out, rows.Err()
}

func (s *sqliteStore) UpdateSeasons(ctx context.Context, fieldID int64, update func([]Season) ([]Season, error)) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return dbError("update seasons", err)
	}
	defer tx.Rollback()
	current, err := seasonsTx(ctx, tx, fieldID)
	if err != nil {
		return err
	}
	next, err := update(current)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM seasons WHERE field_id = ?`, fieldID); err != nil {
		return dbError("update seasons", err)
	}
	for _, se := range next {
		if _, err := tx.ExecContext(ctx, `INSERT INTO seasons (field_id, start_date, record) VALUES (?, ?, ?)`,
			fieldID, se.StartDate, string(se.Record)); err != nil {
			return dbError("update seasons", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return dbError("update seasons", err)
	}
	return nil
}

// RecordProducts upserts one field's products of one date in one
// transaction with the notification they cause. Every transaction of this
// store begins IMMEDIATE (_txlock=immediate), so the dispatcher's claim
// waits for it and then sees its rows (or none, after a rollback).
func (s *sqliteStore) RecordProducts(ctx context.Context, rec ProductRecord) (RecordResult, error) {
	var out RecordResult
	f := rec.Field
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return out, dbError("record products", err)
	}
	defer tx.Rollback()
	var version int64
	err = tx.QueryRowContext(ctx, `SELECT geom_version FROM fields WHERE id = ?`, f.ID).Scan(&version)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && version != f.Version) {
		return out, ErrFieldChanged
	}
	if err != nil {
		return out, dbError("record products", err)
	}
	// What is stored now for this date: its bundles (replaced after
	// commit) and digests (unchanged content notifies nobody).
	rows, err := tx.QueryContext(ctx, `SELECT idx, usable, bundle, digest FROM products WHERE field_id = ? AND date = ?`, f.ID, rec.Date)
	if err != nil {
		return out, dbError("record products", err)
	}
	oldDigest := map[string]string{}
	oldBundles := map[string]bool{}
	for rows.Next() {
		var (
			idx, bundle, digest string
			usable              bool
		)
		if err := rows.Scan(&idx, &usable, &bundle, &digest); err != nil {
			rows.Close()
			return out, dbError("record products", err)
		}
		if usable {
			oldDigest[idx] = digest
		}
		if bundle != "" {
			oldBundles[bundle] = true
		}
	}
	rows.Close()
	if err := upsertProductsTx(ctx, tx, rec.Products); err != nil {
		return out, err
	}
	var changed []Product
	for _, p := range rec.Products {
		if p.Usable && (p.Digest == "" || oldDigest[p.Index] != p.Digest) {
			changed = append(changed, p)
		}
	}
	if len(changed) > 0 && rec.Notify != nil {
		active, err := s.hooks.ActiveTx(ctx, tx, f.Owner)
		if err != nil {
			return out, err
		}
		if active {
			prev, err := previousTx(ctx, tx, f.ID, rec.Date)
			if err != nil {
				return out, err
			}
			if payload := rec.Notify(changed, prev); len(payload.Data) > 0 {
				if out.Notified, err = s.hooks.EnqueueTx(ctx, tx, f.Owner, payload); err != nil {
					return out, err
				}
			}
		}
	}
	// Bundles of this date no new row points to.
	for _, p := range rec.Products {
		delete(oldBundles, p.Bundle)
	}
	if len(oldBundles) > 0 {
		var still int
		for k := range oldBundles {
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM products WHERE bundle = ?`, k).Scan(&still); err != nil {
				return out, dbError("record products", err)
			}
			if still == 0 {
				out.Replaced = append(out.Replaced, k)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return RecordResult{}, dbError("record products", err)
	}
	return out, nil
}

// previousTx is, per index, the field's latest usable product before date.
func previousTx(ctx context.Context, tx *sql.Tx, fieldID int64, date string) (map[string]Product, error) {
	rows, err := tx.QueryContext(ctx, `SELECT p.idx, p.date, p.mean FROM products p
		WHERE p.field_id = ? AND p.usable = 1 AND p.date = (
			SELECT max(q.date) FROM products q WHERE q.field_id = p.field_id AND q.idx = p.idx AND q.usable = 1 AND q.date < ?)`,
		fieldID, date)
	if err != nil {
		return nil, dbError("previous images", err)
	}
	defer rows.Close()
	prev := map[string]Product{}
	for rows.Next() {
		p := Product{FieldID: fieldID, Usable: true}
		if err := rows.Scan(&p.Index, &p.Date, &p.Mean); err != nil {
			return nil, dbError("previous images", err)
		}
		prev[p.Index] = p
	}
	return prev, rows.Err()
}

// upsertProductsTx records products in tx, replacing any of the same field, index and date.
func upsertProductsTx(ctx context.Context, tx *sql.Tx, products []Product) error {
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO products
		(field_id, idx, date, scene_id, usable, cloud_cover, mean, median, std, min, max, p25, p75, num, field_pixels,
		 epsg, x0, y0, dx, dy, cols, rows, ingested_at, bundle, digest)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (field_id, idx, date) DO UPDATE SET
		scene_id = excluded.scene_id, usable = excluded.usable, cloud_cover = excluded.cloud_cover,
		mean = excluded.mean, median = excluded.median, std = excluded.std, min = excluded.min, max = excluded.max,
		p25 = excluded.p25, p75 = excluded.p75, num = excluded.num, field_pixels = excluded.field_pixels,
		epsg = excluded.epsg, x0 = excluded.x0, y0 = excluded.y0, dx = excluded.dx, dy = excluded.dy,
		cols = excluded.cols, rows = excluded.rows, ingested_at = excluded.ingested_at,
		bundle = excluded.bundle, digest = excluded.digest`)
	if err != nil {
		return dbError("record products", err)
	}
	defer stmt.Close()
	for _, p := range products {
		g := p.Grid
		if _, err := stmt.ExecContext(ctx, p.FieldID, p.Index, p.Date, p.SceneID, p.Usable, p.CloudCover,
			p.Mean, p.Median, p.Std, p.Min, p.Max, p.P25, p.P75, p.Num, p.FieldPixels,
			g.EPSG, g.X0, g.Y0, g.DX, g.DY, g.Cols, g.Rows, rfc3339(p.IngestedAt), p.Bundle, p.Digest); err != nil {
			return dbError(fmt.Sprintf("record product %d/%s/%s", p.FieldID, p.Index, p.Date), err)
		}
	}
	return nil
}

func (s *sqliteStore) Products(ctx context.Context, q ProductQuery) ([]Product, error) {
	sqlText := `SELECT field_id, idx, date, scene_id, usable, cloud_cover, mean, median, std, min, max, p25, p75,
		num, field_pixels, epsg, x0, y0, dx, dy, cols, rows, ingested_at, bundle, digest FROM products WHERE field_id = ?`
	args := []any{q.FieldID}
	if q.Index != "" {
		sqlText += ` AND idx = ?`
		args = append(args, q.Index)
	}
	if q.From != "" {
		sqlText += ` AND date >= ?`
		args = append(args, q.From)
	}
	if q.To != "" {
		sqlText += ` AND date <= ?`
		args = append(args, q.To)
	}
	if q.UsableOnly {
		sqlText += ` AND usable = 1`
	}
	sqlText += ` ORDER BY idx, date`
	what := fmt.Sprintf("products of field %d", q.FieldID)
	st, err := s.stmt(ctx, sqlText)
	if err != nil {
		return nil, dbError(what, err)
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, dbError(what, err)
	}
	defer rows.Close()
	var out []Product
	for rows.Next() {
		var (
			p                                   Product
			ingText                             string
			mean, median, std, mn, mx, p25, p75 sql.NullFloat64
		)
		if err := rows.Scan(&p.FieldID, &p.Index, &p.Date, &p.SceneID, &p.Usable, &p.CloudCover,
			&mean, &median, &std, &mn, &mx, &p25, &p75, &p.Num, &p.FieldPixels,
			&p.Grid.EPSG, &p.Grid.X0, &p.Grid.Y0, &p.Grid.DX, &p.Grid.DY, &p.Grid.Cols, &p.Grid.Rows, &ingText,
			&p.Bundle, &p.Digest); err != nil {
			return nil, dbError(what, err)
		}
		p.Mean, p.Median, p.Std, p.Min, p.Max, p.P25, p.P75 =
			mean.Float64, median.Float64, std.Float64, mn.Float64, mx.Float64, p25.Float64, p75.Float64
		p.IngestedAt, _ = time.Parse(time.RFC3339, ingText)
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, dbError(what, err)
	}
	return out, nil
}

func (s *sqliteStore) Bundles(ctx context.Context) (map[string]bool, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT bundle FROM products WHERE bundle != ''`)
	if err != nil {
		return nil, dbError("bundles", err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, dbError("bundles", err)
		}
		out[k] = true
	}
	return out, rows.Err()
}

var _ webhook.Store = (*sqlstore.Store)(nil)

func (s *sqliteStore) RecordScene(ctx context.Context, r SceneRecord) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO scene_sources (scene_id, source, date, min_lon, min_lat, max_lon, max_lat, ingested_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (scene_id) DO UPDATE SET source = excluded.source, date = excluded.date,
		min_lon = excluded.min_lon, min_lat = excluded.min_lat, max_lon = excluded.max_lon, max_lat = excluded.max_lat,
		ingested_at = excluded.ingested_at`,
		r.ID, r.Source, r.Date, r.Bound.Min[0], r.Bound.Min[1], r.Bound.Max[0], r.Bound.Max[1], now())
	if err != nil {
		return dbError("record scene "+r.ID, err)
	}
	return nil
}

func (s *sqliteStore) ScenesIntersecting(ctx context.Context, b orb.Bound, from, to string) ([]SceneRecord, error) {
	q := `SELECT scene_id, source, date, min_lon, min_lat, max_lon, max_lat FROM scene_sources
		WHERE max_lon >= ? AND min_lon <= ? AND max_lat >= ? AND min_lat <= ?`
	args := []any{b.Min[0], b.Max[0], b.Min[1], b.Max[1]}
	if from != "" {
		q += ` AND date >= ?`
		args = append(args, from)
	}
	if to != "" {
		q += ` AND date <= ?`
		args = append(args, to)
	}
	rows, err := s.rdb.QueryContext(ctx, q+` ORDER BY date, scene_id`, args...)
	if err != nil {
		return nil, dbError("scenes", err)
	}
	defer rows.Close()
	var out []SceneRecord
	for rows.Next() {
		var r SceneRecord
		if err := rows.Scan(&r.ID, &r.Source, &r.Date, &r.Bound.Min[0], &r.Bound.Min[1], &r.Bound.Max[0], &r.Bound.Max[1]); err != nil {
			return nil, dbError("scenes", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
