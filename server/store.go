package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/paulmach/orb"
	"golang.org/x/crypto/bcrypt"
	"modernc.org/sqlite" // the pure-Go SQLite driver "sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/cropkit/cropkit/geo"
)

// Store errors callers branch on.
var (
	// ErrNotFound is returned when a user, token, field or product does not exist
	// (or belongs to another user: the two are indistinguishable on purpose).
	ErrNotFound = errors.New("not found")
	// ErrExists is returned when creating a user or field whose name is taken.
	ErrExists = errors.New("already exists")
	// ErrBadPassword is returned by CheckPassword for a wrong password.
	ErrBadPassword = errors.New("wrong username or password")
)

// Store is the persistence of a data directory: the SQLite database
// DIR/cropkit.db and the product files under DIR/products. It holds no
// algorithm; the server and the admin commands share it (SQLite WAL lets the
// commands write while a server runs).
type Store struct {
	// db is the writer pool: one connection, so this process's write
	// transactions queue in Go instead of contending for SQLite's lock
	// (busy_timeout then only arbitrates between processes, e.g. an admin
	// command beside a server). rdb serves reads concurrently (WAL).
	db  *sql.DB
	rdb *sql.DB
	dir string

	mu    sync.Mutex
	stmts map[string]*sql.Stmt // prepared read statements by SQL text
}

// DBFile is the database file name inside a data directory.
const DBFile = "cropkit.db"

// OpenStore opens (creating when needed) the data directory dir and migrates
// its database to the current schema.
func OpenStore(ctx context.Context, dir string) (*Store, error) {
	if dir == "" {
		return nil, errors.New("open store: empty data directory")
	}
	if err := os.MkdirAll(filepath.Join(dir, "products"), 0o755); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	dsn := "file:" + filepath.Join(dir, DBFile) +
		"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxIdleTime(0)
	s := &Store{db: db, dir: dir, stmts: map[string]*sql.Stmt{}}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	rdb, err := sql.Open("sqlite", dsn)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	rdb.SetMaxOpenConns(8)
	s.rdb = rdb
	return s, nil
}

// IsBusy reports whether err is SQLite's "database is locked" (SQLITE_BUSY,
// also its extended codes): another process held the write lock longer than
// the busy timeout. Callers may retry later.
func IsBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}

// Close closes the database.
func (s *Store) Close() error {
	s.mu.Lock()
	for _, st := range s.stmts {
		st.Close()
	}
	s.stmts = map[string]*sql.Stmt{}
	s.mu.Unlock()
	return errors.Join(s.rdb.Close(), s.db.Close())
}

// stmt returns the prepared statement of query, preparing it once: parsing
// SQL costs more than running these small queries.
func (s *Store) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
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

// queryRow runs a read query through the statement cache.
func (s *Store) queryRow(ctx context.Context, query string, args ...any) (*sql.Row, error) {
	st, err := s.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryRowContext(ctx, args...), nil
}

// DB is the underlying database (the single-connection writer pool), for
// packages that own tables of their own (the webhook outbox). Never hold one
// of its transactions while waiting on another use of it.
func (s *Store) DB() *sql.DB { return s.db }

// Dir is the data directory.
func (s *Store) Dir() string { return s.dir }

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
}

func (s *Store) migrate(ctx context.Context) error {
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

func now() string { return time.Now().UTC().Format(time.RFC3339) }

// User is an account. Indices lists the indices it may use; nil means every
// index of the catalogue.
type User struct {
	ID      int64
	Name    string
	Admin   bool
	Indices []string
}

// May reports whether u may use index name.
func (u User) May(name string) bool {
	return u.Indices == nil || slices.Contains(u.Indices, name)
}

// NewUser describes an account to create.
type NewUser struct {
	Name     string
	Password string // empty: token-only account (no /login)
	Admin    bool
	Indices  []string // nil: every index
}

// validName reports whether a user or field name is acceptable: non-empty,
// at most 200 bytes, no control characters, not only spaces.
func validName(name string) bool {
	if strings.TrimSpace(name) == "" || len(name) > 200 {
		return false
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// CreateUser adds an account; ErrExists when the name is taken.
func (s *Store) CreateUser(ctx context.Context, u NewUser) (User, error) {
	if !validName(u.Name) {
		return User{}, fmt.Errorf("create user: invalid name %q", u.Name)
	}
	var hash string
	if u.Password != "" {
		if len(u.Password) > 72 {
			return User{}, errors.New("create user: password longer than 72 bytes")
		}
		h, err := bcrypt.GenerateFromPassword([]byte(u.Password), bcrypt.DefaultCost)
		if err != nil {
			return User{}, fmt.Errorf("create user %s: hash password: %w", u.Name, err)
		}
		hash = string(h)
	}
	admin := 0
	if u.Admin {
		admin = 1
	}
	res, err := s.db.ExecContext(ctx,
		`INSERT INTO users (name, password_hash, is_admin, indices, created_at) VALUES (?, ?, ?, ?, ?)
		 ON CONFLICT (name) DO NOTHING`,
		u.Name, hash, admin, joinList(u.Indices), now())
	if err != nil {
		return User{}, fmt.Errorf("create user %s: %w", u.Name, err)
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

const userColumns = `id, name, is_admin, indices`

func scanUser(row interface{ Scan(...any) error }) (User, error) {
	var (
		u       User
		admin   int
		indices string
	)
	if err := row.Scan(&u.ID, &u.Name, &admin, &indices); err != nil {
		return User{}, err
	}
	u.Admin = admin != 0
	u.Indices = splitList(indices)
	return u, nil
}

// UserByName returns the account called name, or ErrNotFound.
func (s *Store) UserByName(ctx context.Context, name string) (User, error) {
	u, err := scanUser(s.rdb.QueryRowContext(ctx, `SELECT `+userColumns+` FROM users WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return User{}, fmt.Errorf("user %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return User{}, fmt.Errorf("user %q: %w", name, err)
	}
	return u, nil
}

// CountUsers is the number of accounts.
func (s *Store) CountUsers(ctx context.Context) (int, error) {
	var n int
	if err := s.rdb.QueryRowContext(ctx, `SELECT count(*) FROM users`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count users: %w", err)
	}
	return n, nil
}

// CheckPassword returns the account when password is its password, else
// ErrBadPassword (also for unknown users and token-only accounts).
func (s *Store) CheckPassword(ctx context.Context, name, password string) (User, error) {
	var hash string
	var u User
	var admin int
	var indices string
	err := s.rdb.QueryRowContext(ctx, `SELECT id, name, is_admin, indices, password_hash FROM users WHERE name = ?`, name).
		Scan(&u.ID, &u.Name, &admin, &indices, &hash)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && hash == "") {
		// Spend the same time as a real check so user names cannot be probed by timing.
		bcrypt.CompareHashAndPassword([]byte(dummyHash), []byte(password))
		return User{}, ErrBadPassword
	}
	if err != nil {
		return User{}, fmt.Errorf("check password of %q: %w", name, err)
	}
	if bcrypt.CompareHashAndPassword([]byte(hash), []byte(password)) != nil {
		return User{}, ErrBadPassword
	}
	u.Admin = admin != 0
	u.Indices = splitList(indices)
	return u, nil
}

// dummyHash is a bcrypt hash of a random password, compared against when the
// user does not exist.
const dummyHash = "$2a$10$BhPxA30rvlkj51Eqe5KaSeoWCawS57gYeUtnZjoXU9XY3DqiNcNaO"

// tokenHash is how tokens are stored: SHA-256 hex (tokens carry 256 random
// bits, so a fast hash is enough; the database never holds a usable token).
func tokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// newToken is 32 random bytes, base64url without padding.
func newToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("new token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// CreateToken issues a new token for the account called name; the token is
// returned once and only its hash is stored.
func (s *Store) CreateToken(ctx context.Context, name string) (string, error) {
	u, err := s.UserByName(ctx, name)
	if err != nil {
		return "", fmt.Errorf("create token: %w", err)
	}
	return s.createToken(ctx, u.ID)
}

func (s *Store) createToken(ctx context.Context, userID int64) (string, error) {
	tok, err := newToken()
	if err != nil {
		return "", err
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO tokens (hash, user_id, created_at) VALUES (?, ?, ?)`,
		tokenHash(tok), userID, now()); err != nil {
		return "", fmt.Errorf("store token: %w", err)
	}
	return tok, nil
}

// UserByToken returns the account a token belongs to, or ErrNotFound.
func (s *Store) UserByToken(ctx context.Context, token string) (User, error) {
	row, err := s.queryRow(ctx,
		`SELECT u.id, u.name, u.is_admin, u.indices FROM tokens t JOIN users u ON u.id = t.user_id WHERE t.hash = ?`,
		tokenHash(token))
	if err != nil {
		return User{}, fmt.Errorf("token: %w", err)
	}
	u, err := scanUser(row)
	if errors.Is(err, sql.ErrNoRows) {
		return User{}, fmt.Errorf("token: %w", ErrNotFound)
	}
	if err != nil {
		return User{}, fmt.Errorf("token: %w", err)
	}
	return u, nil
}

// EnsureAdmin creates the account "admin" with a fresh token when the store
// has no account yet. created is false (and token empty) otherwise.
func (s *Store) EnsureAdmin(ctx context.Context) (token string, created bool, err error) {
	n, err := s.CountUsers(ctx)
	if err != nil || n > 0 {
		return "", false, err
	}
	u, err := s.CreateUser(ctx, NewUser{Name: "admin", Admin: true})
	if errors.Is(err, ErrExists) {
		return "", false, nil // another process won the race
	}
	if err != nil {
		return "", false, err
	}
	tok, err := s.createToken(ctx, u.ID)
	if err != nil {
		return "", false, err
	}
	return tok, true, nil
}

// Field is a registered field.
type Field struct {
	ID       int64
	OwnerID  int64
	Owner    string
	Name     string
	Group    string
	Labels   map[string]string
	Indices  []string
	Geometry orb.MultiPolygon // EPSG:4326
	Bound    orb.Bound        // of Geometry
	Created  time.Time
	Updated  time.Time
	// Version counts the outline's changes; ingestion records products only
	// for the version it read.
	Version int64
}

// geometryJSON is a GeoJSON MultiPolygon.
type geometryJSON struct {
	Type        string           `json:"type"`
	Coordinates orb.MultiPolygon `json:"coordinates"`
}

func newGeometryJSON(mp orb.MultiPolygon) geometryJSON {
	return geometryJSON{Type: "MultiPolygon", Coordinates: mp}
}

func encodeGeometry(mp orb.MultiPolygon) (string, error) {
	b, err := json.Marshal(newGeometryJSON(mp))
	if err != nil {
		return "", fmt.Errorf("encode geometry: %w", err)
	}
	return string(b), nil
}

// InsertField stores a new field of f.OwnerID; ErrExists when the owner already has a field of that name.
func (s *Store) InsertField(ctx context.Context, f Field) (Field, error) {
	return s.InsertFieldQuota(ctx, f, 0)
}

// ErrQuota is returned when an account already has as many fields (or
// webhook registrations) as it may.
var ErrQuota = errors.New("quota reached")

// InsertFieldQuota is InsertField refusing, with ErrQuota, a field beyond
// maxPerUser fields of the owner (0: no limit).
func (s *Store) InsertFieldQuota(ctx context.Context, f Field, maxPerUser int) (Field, error) {
	geom, err := encodeGeometry(f.Geometry)
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
		return Field{}, fmt.Errorf("insert field %q: %w", f.Name, err)
	}
	defer tx.Rollback()
	if maxPerUser > 0 {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM fields WHERE user_id = ?`, f.OwnerID).Scan(&n); err != nil {
			return Field{}, fmt.Errorf("insert field %q: %w", f.Name, err)
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
		return Field{}, fmt.Errorf("insert field %q: %w", f.Name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return Field{}, fmt.Errorf("field %q: %w", f.Name, ErrExists)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return Field{}, fmt.Errorf("insert field %q: %w", f.Name, err)
	}
	if err := tx.Commit(); err != nil {
		return Field{}, fmt.Errorf("insert field %q: %w", f.Name, err)
	}
	return s.fieldByID(ctx, id)
}

func nonNilLabels(l map[string]string) map[string]string {
	if l == nil {
		return map[string]string{}
	}
	return l
}

// UpdateField overwrites the group, labels, indices and geometry of field
// f.ID. With dropProducts (the outline changed) its products are deleted in
// the same transaction, then their files.
func (s *Store) UpdateField(ctx context.Context, f Field, dropProducts bool) (Field, error) {
	geom, err := encodeGeometry(f.Geometry)
	if err != nil {
		return Field{}, err
	}
	labels, err := json.Marshal(nonNilLabels(f.Labels))
	if err != nil {
		return Field{}, fmt.Errorf("encode labels: %w", err)
	}
	b := f.Geometry.Bound()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Field{}, fmt.Errorf("update field %q: %w", f.Name, err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `UPDATE fields SET grp = ?, labels = ?, indices = ?, geometry = ?,
		min_lon = ?, min_lat = ?, max_lon = ?, max_lat = ?, updated_at = ?, geom_version = geom_version + ? WHERE id = ?`,
		f.Group, string(labels), joinList(f.Indices), geom, b.Min[0], b.Min[1], b.Max[0], b.Max[1], now(), dropInt(dropProducts), f.ID)
	if err != nil {
		return Field{}, fmt.Errorf("update field %q: %w", f.Name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return Field{}, fmt.Errorf("field %q: %w", f.Name, ErrNotFound)
	}
	if dropProducts {
		if _, err := tx.ExecContext(ctx, `DELETE FROM products WHERE field_id = ?`, f.ID); err != nil {
			return Field{}, fmt.Errorf("update field %q: drop products: %w", f.Name, err)
		}
		// Under the write lock: an ingestion of the new outline cannot have
		// started writing yet (it reads the field after this commit).
		if err := os.RemoveAll(s.fieldDir(f.ID)); err != nil {
			return Field{}, fmt.Errorf("update field %q: drop product files: %w", f.Name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return Field{}, fmt.Errorf("update field %q: %w", f.Name, err)
	}
	return s.fieldByID(ctx, f.ID)
}

func dropInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// FieldExists reports whether the field of id fieldID is still registered
// (read on the writer, so it sees every commit of this process).
func (s *Store) FieldExists(ctx context.Context, fieldID int64) (bool, error) {
	var one int
	err := s.db.QueryRowContext(ctx, `SELECT 1 FROM fields WHERE id = ?`, fieldID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("field %d: %w", fieldID, err)
	}
	return true, nil
}

// RemoveFieldFilesIfGone removes the file directory of a deleted field: a
// writer that raced the delete (an ingestion, an upload) may have recreated it.
func (s *Store) RemoveFieldFilesIfGone(ctx context.Context, fieldID int64) error {
	ok, err := s.FieldExists(ctx, fieldID)
	if err != nil || ok {
		return err
	}
	return os.RemoveAll(s.fieldDir(fieldID))
}

// DeleteField removes a field, its seasons and product rows (cascade), then its product files.
func (s *Store) DeleteField(ctx context.Context, f Field) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM fields WHERE id = ?`, f.ID)
	if err != nil {
		return fmt.Errorf("delete field %q: %w", f.Name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("field %q: %w", f.Name, ErrNotFound)
	}
	// A writer racing this delete (an ingestion, an upload) removes what it
	// wrote when it finds the field gone; ids are never reused.
	if err := os.RemoveAll(s.fieldDir(f.ID)); err != nil {
		return fmt.Errorf("delete files of field %q: %w", f.Name, err)
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

func (s *Store) fieldByID(ctx context.Context, id int64) (Field, error) {
	return oneField(s.rdb.QueryRowContext(ctx,
		`SELECT `+fieldColumns+` FROM fields f JOIN users u ON u.id = f.user_id WHERE f.id = ?`, id), fmt.Sprint(id))
}

// oneField scans the single field of row; what names it in errors, and a
// missing row is ErrNotFound.
func oneField(row *sql.Row, what string) (Field, error) {
	f, err := scanField(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Field{}, fmt.Errorf("field %s: %w", what, ErrNotFound)
	}
	if err != nil {
		return Field{}, fmt.Errorf("field %s: %w", what, err)
	}
	return f, nil
}

// FieldByName returns the field name of user userID, or ErrNotFound (also when
// another user has a field of that name).
func (s *Store) FieldByName(ctx context.Context, userID int64, name string) (Field, error) {
	row, err := s.queryRow(ctx,
		`SELECT `+fieldColumns+` FROM fields f JOIN users u ON u.id = f.user_id WHERE f.user_id = ? AND f.name = ?`, userID, name)
	if err != nil {
		return Field{}, fmt.Errorf("field %q: %w", name, err)
	}
	return oneField(row, strconv.Quote(name))
}

// FieldSummary is FieldByName without the geometry (Geometry nil, Bound
// from the stored box): for the many requests that do not need it.
func (s *Store) FieldSummary(ctx context.Context, userID int64, name string) (Field, error) {
	row, err := s.queryRow(ctx, `SELECT f.id, f.user_id, u.name, f.name, f.grp, f.indices, f.min_lon, f.min_lat, f.max_lon, f.max_lat
		FROM fields f JOIN users u ON u.id = f.user_id WHERE f.user_id = ? AND f.name = ?`, userID, name)
	if err != nil {
		return Field{}, fmt.Errorf("field %q: %w", name, err)
	}
	var (
		f       Field
		indices string
	)
	err = row.Scan(&f.ID, &f.OwnerID, &f.Owner, &f.Name, &f.Group, &indices, &f.Bound.Min[0], &f.Bound.Min[1], &f.Bound.Max[0], &f.Bound.Max[1])
	if errors.Is(err, sql.ErrNoRows) {
		return Field{}, fmt.Errorf("field %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return Field{}, fmt.Errorf("field %q: %w", name, err)
	}
	f.Indices = splitList(indices)
	return f, nil
}

// Fields lists the fields of user userID by name; userID 0 lists every user's fields.
func (s *Store) Fields(ctx context.Context, userID int64) ([]Field, error) {
	q := `SELECT ` + fieldColumns + ` FROM fields f JOIN users u ON u.id = f.user_id`
	var args []any
	if userID != 0 {
		q += ` WHERE f.user_id = ?`
		args = append(args, userID)
	}
	q += ` ORDER BY u.name, f.name`
	rows, err := s.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list fields: %w", err)
	}
	defer rows.Close()
	var out []Field
	for rows.Next() {
		f, err := scanField(rows)
		if err != nil {
			return nil, fmt.Errorf("list fields: %w", err)
		}
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list fields: %w", err)
	}
	return out, nil
}

// FieldsIntersecting lists every user's fields whose lon/lat bounding box
// intersects b (the first, cheap filter of ingestion).
func (s *Store) FieldsIntersecting(ctx context.Context, b orb.Bound) ([]Field, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+fieldColumns+` FROM fields f JOIN users u ON u.id = f.user_id
		WHERE f.max_lon >= ? AND f.min_lon <= ? AND f.max_lat >= ? AND f.min_lat <= ? ORDER BY f.id`,
		b.Min[0], b.Max[0], b.Min[1], b.Max[1])
	if err != nil {
		return nil, fmt.Errorf("fields in %v: %w", b, err)
	}
	defer rows.Close()
	var out []Field
	for rows.Next() {
		f, err := scanField(rows)
		if err != nil {
			return nil, fmt.Errorf("fields in %v: %w", b, err)
		}
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("fields in %v: %w", b, err)
	}
	return out, nil
}

// Season is one stored metadata record keyed by its start date.
type Season struct {
	StartDate string
	Record    json.RawMessage
}

// Seasons returns the stored metadata records of a field, by start date.
func (s *Store) Seasons(ctx context.Context, fieldID int64) ([]Season, error) {
	return seasonsTx(ctx, s.rdb, fieldID)
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func seasonsTx(ctx context.Context, q querier, fieldID int64) ([]Season, error) {
	rows, err := q.QueryContext(ctx, `SELECT start_date, record FROM seasons WHERE field_id = ? ORDER BY start_date`, fieldID)
	if err != nil {
		return nil, fmt.Errorf("seasons of field %d: %w", fieldID, err)
	}
	defer rows.Close()
	var out []Season
	for rows.Next() {
		var se Season
		var rec string
		if err := rows.Scan(&se.StartDate, &rec); err != nil {
			return nil, fmt.Errorf("seasons of field %d: %w", fieldID, err)
		}
		se.Record = json.RawMessage(rec)
		out = append(out, se)
	}
	return out, rows.Err()
}

// UpdateSeasons replaces the seasons of a field by update(current seasons),
// in one transaction (so concurrent registrations cannot lose a season).
func (s *Store) UpdateSeasons(ctx context.Context, fieldID int64, update func([]Season) ([]Season, error)) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("update seasons: %w", err)
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
		return fmt.Errorf("update seasons: %w", err)
	}
	for _, se := range next {
		if _, err := tx.ExecContext(ctx, `INSERT INTO seasons (field_id, start_date, record) VALUES (?, ?, ?)`,
			fieldID, se.StartDate, string(se.Record)); err != nil {
			return fmt.Errorf("update seasons: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("update seasons: %w", err)
	}
	return nil
}

// StoredProduct is the record of one field × index × date after ingestion.
// Unusable products (too little clear sky) are recorded with their cloud
// cover but have no files and are never served.
type StoredProduct struct {
	FieldID     int64
	Index       string
	Date        string // YYYY-MM-DD (UTC acquisition date)
	SceneID     string
	Usable      bool
	CloudCover  float64 // percent of field pixels masked
	Mean        float64
	Median      float64
	Std         float64
	Min         float64
	Max         float64
	P25         float64
	P75         float64
	Num         int // clear pixels
	FieldPixels int
	Grid        geo.Grid // of the product's values (scene CRS)
	IngestedAt  time.Time
	// AcquiredAt is the scene's acquisition time (UTC), set by ingestion for
	// the webhook payload; it is not stored (rows keep the date only).
	AcquiredAt time.Time
}

// fieldDir is DIR/products/<field-id>.
func (s *Store) fieldDir(fieldID int64) string {
	return filepath.Join(s.dir, "products", fmt.Sprint(fieldID))
}

// BundlePath is the file holding a field's products of one date:
// DIR/products/<field-id>/<date>.zip with <index>.png and <index>.json for
// each usable index. One file per field and date (not per product) because
// creating files dominates ingestion on slow file systems, and it makes the
// date's products appear together.
func (s *Store) BundlePath(fieldID int64, date string) string {
	return filepath.Join(s.fieldDir(fieldID), date+".zip")
}

// upsertProductsTx records products in tx, replacing any of the same field, index and date.
func upsertProductsTx(ctx context.Context, tx *sql.Tx, products []StoredProduct) error {
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO products
		(field_id, idx, date, scene_id, usable, cloud_cover, mean, median, std, min, max, p25, p75, num, field_pixels,
		 epsg, x0, y0, dx, dy, cols, rows, ingested_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (field_id, idx, date) DO UPDATE SET
		scene_id = excluded.scene_id, usable = excluded.usable, cloud_cover = excluded.cloud_cover,
		mean = excluded.mean, median = excluded.median, std = excluded.std, min = excluded.min, max = excluded.max,
		p25 = excluded.p25, p75 = excluded.p75, num = excluded.num, field_pixels = excluded.field_pixels,
		epsg = excluded.epsg, x0 = excluded.x0, y0 = excluded.y0, dx = excluded.dx, dy = excluded.dy,
		cols = excluded.cols, rows = excluded.rows, ingested_at = excluded.ingested_at`)
	if err != nil {
		return fmt.Errorf("record products: %w", err)
	}
	defer stmt.Close()
	for _, p := range products {
		usable := 0
		if p.Usable {
			usable = 1
		}
		g := p.Grid
		if _, err := stmt.ExecContext(ctx, p.FieldID, p.Index, p.Date, p.SceneID, usable, p.CloudCover,
			p.Mean, p.Median, p.Std, p.Min, p.Max, p.P25, p.P75, p.Num, p.FieldPixels,
			g.EPSG, g.X0, g.Y0, g.DX, g.DY, g.Cols, g.Rows, p.IngestedAt.UTC().Format(time.RFC3339)); err != nil {
			return fmt.Errorf("record product %d/%s/%s: %w", p.FieldID, p.Index, p.Date, err)
		}
	}
	return nil
}

// ProductQuery selects the products of a field.
type ProductQuery struct {
	FieldID    int64
	Index      string // "" = every index
	From, To   string // inclusive YYYY-MM-DD bounds; "" = open
	UsableOnly bool
}

// Products lists the products matching q, by index then date.
func (s *Store) Products(ctx context.Context, q ProductQuery) ([]StoredProduct, error) {
	sqlText := `SELECT field_id, idx, date, scene_id, usable, cloud_cover, mean, median, std, min, max, p25, p75,
		num, field_pixels, epsg, x0, y0, dx, dy, cols, rows, ingested_at FROM products WHERE field_id = ?`
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
	st, err := s.stmt(ctx, sqlText)
	if err != nil {
		return nil, fmt.Errorf("products of field %d: %w", q.FieldID, err)
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, fmt.Errorf("products of field %d: %w", q.FieldID, err)
	}
	defer rows.Close()
	var out []StoredProduct
	for rows.Next() {
		var (
			p                                   StoredProduct
			usable                              int
			ingText                             string
			mean, median, std, mn, mx, p25, p75 sql.NullFloat64
		)
		if err := rows.Scan(&p.FieldID, &p.Index, &p.Date, &p.SceneID, &usable, &p.CloudCover,
			&mean, &median, &std, &mn, &mx, &p25, &p75, &p.Num, &p.FieldPixels,
			&p.Grid.EPSG, &p.Grid.X0, &p.Grid.Y0, &p.Grid.DX, &p.Grid.DY, &p.Grid.Cols, &p.Grid.Rows, &ingText); err != nil {
			return nil, fmt.Errorf("products of field %d: %w", q.FieldID, err)
		}
		p.Usable = usable != 0
		p.Mean, p.Median, p.Std, p.Min, p.Max, p.P25, p.P75 =
			mean.Float64, median.Float64, std.Float64, mn.Float64, mx.Float64, p25.Float64, p75.Float64
		p.IngestedAt, _ = time.Parse(time.RFC3339, ingText)
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("products of field %d: %w", q.FieldID, err)
	}
	return out, nil
}
