package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/paulmach/orb"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/webhook/sqlstore"
)

// dialect is what the archive's SQL spells differently on SQLite and
// PostgreSQL. The queries and transaction flows are written once, in
// rowStore, with ? placeholders; schemas and migrations stay with each
// database (sqlite.go, postgres.go).
type dialect struct {
	// rebind turns ? placeholders into the driver's.
	rebind func(query string) string
	// wrap adds what to a driver error, mapping transient failures to ErrBusy.
	wrap func(what string, err error) error
	// stamp is the stored form of a time to the second (RFC 3339 text on
	// SQLite, TIMESTAMPTZ on PostgreSQL); stampNano keeps the fraction
	// (item acquisitions are ordered and compared by it).
	stamp, stampNano func(t time.Time) any
	// forUpdate locks the rows a transaction reads before it writes:
	// several PostgreSQL processes may share the database, while every
	// SQLite transaction begins IMMEDIATE and so already holds the only
	// write lock.
	forUpdate string
	// collateC orders text by bytes, as SQLite does by default.
	collateC string
	// tokenID is the column identifying a token (SQLite's tokens table
	// predates its own id column and uses the rowid).
	tokenID string
}

func sqliteDialect() dialect {
	return dialect{
		rebind:    sqlstore.SQLite.Rebind,
		wrap:      dbError,
		stamp:     func(t time.Time) any { return rfc3339(t) },
		stampNano: func(t time.Time) any { return timeNano(t) },
		tokenID:   "rowid",
	}
}

func postgresDialect() dialect {
	return dialect{
		rebind:    sqlstore.Postgres.Rebind,
		wrap:      pgError,
		stamp:     func(t time.Time) any { return t.UTC().Truncate(time.Second) },
		stampNano: func(t time.Time) any { return t.UTC() },
		forUpdate: ` FOR UPDATE`,
		collateC:  ` COLLATE "C"`,
		tokenID:   "id",
	}
}

// wrapOrNil is d.wrap, nil for a nil err.
func (d dialect) wrapOrNil(what string, err error) error {
	if err == nil {
		return nil
	}
	return d.wrap(what, err)
}

// dbTime scans a stored time into *t: RFC 3339 text (SQLite), a timestamp
// (PostgreSQL), or NULL as the zero time. Times are always read in UTC.
// Text that is no RFC 3339 time (rows of early versions) reads as the zero
// time rather than failing: a field or token stays usable without its date.
type dbTime struct{ t *time.Time }

func (d dbTime) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*d.t = time.Time{}
	case time.Time:
		*d.t = v.UTC()
	case string:
		return d.parse(v)
	case []byte:
		return d.parse(string(v))
	default:
		return fmt.Errorf("scan time: unsupported type %T", src)
	}
	return nil
}

func (d dbTime) parse(s string) error {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		*d.t = time.Time{}
		return nil
	}
	*d.t = t.UTC()
	return nil
}

// rowStore is the Store methods both databases share: every query and
// transaction flow of accounts, fields, seasons, products, scenes and
// catalogue items, in the dialect d. sqliteStore and pgStore embed it and
// add opening, migrations and closing.
type rowStore struct {
	db *sql.DB // writes, and reads that must see them at once
	// rdb serves the other reads: SQLite's concurrent reader pool (WAL),
	// the same pool as db on PostgreSQL.
	rdb   *sql.DB
	hooks *sqlstore.Store
	d     dialect
	// prepared, when set, returns the cached prepared statement of a read
	// on rdb (SQLite: parsing costs more than running these small queries).
	prepared func(ctx context.Context, query string) (*sql.Stmt, error)
}

func (s *rowStore) Webhooks() archive.Outbox { return s.hooks }

// q is query in the store's dialect.
func (s *rowStore) q(query string) string { return s.d.rebind(query) }

// readRow runs the single-row read query on rdb, prepared when the store caches statements.
func (s *rowStore) readRow(ctx context.Context, query string, args ...any) (*sql.Row, error) {
	if s.prepared == nil {
		return s.rdb.QueryRowContext(ctx, s.q(query), args...), nil
	}
	st, err := s.prepared(ctx, s.q(query))
	if err != nil {
		return nil, err
	}
	return st.QueryRowContext(ctx, args...), nil
}

// read runs the read query on rdb, prepared when the store caches statements.
func (s *rowStore) read(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if s.prepared == nil {
		return s.rdb.QueryContext(ctx, s.q(query), args...)
	}
	st, err := s.prepared(ctx, s.q(query))
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

func (s *rowStore) CreateUser(ctx context.Context, u archive.NewUser, passwordHash string) (archive.User, error) {
	admin := 0
	if u.Admin {
		admin = 1
	}
	var id int64
	err := s.db.QueryRowContext(ctx, s.q(
		`INSERT INTO users (name, password_hash, is_admin, indices, created_at) VALUES (?, ?, ?, ?, ?)
		 ON CONFLICT (name) DO NOTHING RETURNING id`),
		u.Name, passwordHash, admin, joinList(u.Indices), s.d.stamp(time.Now())).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return archive.User{}, fmt.Errorf("create user %s: %w", u.Name, archive.ErrExists)
	}
	if err != nil {
		return archive.User{}, s.d.wrap("create user "+u.Name, err)
	}
	return archive.User{ID: id, Name: u.Name, Admin: u.Admin, Indices: u.Indices}, nil
}

const userColumns = `u.id, u.name, u.is_admin, u.indices`

func scanUser(row interface{ Scan(...any) error }, extra ...any) (archive.User, error) {
	var (
		u       archive.User
		admin   int
		indices string
	)
	if err := row.Scan(append([]any{&u.ID, &u.Name, &admin, &indices}, extra...)...); err != nil {
		return archive.User{}, err
	}
	u.Admin = admin != 0
	u.Indices = splitList(indices)
	return u, nil
}

func (s *rowStore) UserByName(ctx context.Context, name string) (archive.User, error) {
	u, err := scanUser(s.rdb.QueryRowContext(ctx, s.q(`SELECT `+userColumns+` FROM users u WHERE u.name = ?`), name))
	if errors.Is(err, sql.ErrNoRows) {
		return archive.User{}, fmt.Errorf("user %q: %w", name, archive.ErrNotFound)
	}
	if err != nil {
		return archive.User{}, s.d.wrap(fmt.Sprintf("user %q", name), err)
	}
	return u, nil
}

func (s *rowStore) CountUsers(ctx context.Context) (int, error) {
	var n int
	if err := s.rdb.QueryRowContext(ctx, `SELECT count(*) FROM users`).Scan(&n); err != nil {
		return 0, s.d.wrap("count users", err)
	}
	return n, nil
}

func (s *rowStore) PasswordHash(ctx context.Context, name string) (archive.User, string, error) {
	var hash string
	u, err := scanUser(s.rdb.QueryRowContext(ctx, s.q(`SELECT `+userColumns+`, u.password_hash FROM users u WHERE u.name = ?`), name), &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return archive.User{}, "", fmt.Errorf("user %q: %w", name, archive.ErrNotFound)
	}
	if err != nil {
		return archive.User{}, "", s.d.wrap(fmt.Sprintf("user %q", name), err)
	}
	return u, hash, nil
}

func (s *rowStore) InsertToken(ctx context.Context, userID int64, hash string, created, expires time.Time) (int64, error) {
	var exp any // NULL: never expires
	if !expires.IsZero() {
		exp = s.d.stamp(expires)
	}
	var id int64
	err := s.db.QueryRowContext(ctx, s.q(`INSERT INTO tokens (hash, user_id, created_at, expires_at) VALUES (?, ?, ?, ?) RETURNING `+s.d.tokenID),
		hash, userID, s.d.stamp(created), exp).Scan(&id)
	if err != nil {
		return 0, s.d.wrap("store token", err)
	}
	return id, nil
}

func (s *rowStore) UserByToken(ctx context.Context, hash string, at time.Time) (archive.User, archive.Token, error) {
	row, err := s.readRow(ctx, `SELECT `+userColumns+`, t.`+s.d.tokenID+`, t.created_at, t.expires_at
		FROM tokens t JOIN users u ON u.id = t.user_id WHERE t.hash = ?`, hash)
	if err != nil {
		return archive.User{}, archive.Token{}, s.d.wrap("token", err)
	}
	var tok archive.Token
	u, err := scanUser(row, &tok.ID, dbTime{&tok.Created}, dbTime{&tok.Expires})
	if errors.Is(err, sql.ErrNoRows) {
		return archive.User{}, archive.Token{}, fmt.Errorf("token: %w", archive.ErrNotFound)
	}
	if err != nil {
		return archive.User{}, archive.Token{}, s.d.wrap("token", err)
	}
	if !tok.Expires.IsZero() && !at.Before(tok.Expires) {
		return archive.User{}, archive.Token{}, fmt.Errorf("token expired at %s: %w", rfc3339(tok.Expires), archive.ErrNotFound)
	}
	return u, tok, nil
}

func (s *rowStore) Tokens(ctx context.Context, userID int64) ([]archive.Token, error) {
	rows, err := s.rdb.QueryContext(ctx, s.q(`SELECT `+s.d.tokenID+`, created_at, expires_at FROM tokens WHERE user_id = ? ORDER BY `+s.d.tokenID), userID)
	if err != nil {
		return nil, s.d.wrap("tokens", err)
	}
	defer rows.Close()
	out := []archive.Token{}
	for rows.Next() {
		var t archive.Token
		if err := rows.Scan(&t.ID, dbTime{&t.Created}, dbTime{&t.Expires}); err != nil {
			return nil, s.d.wrap("tokens", err)
		}
		out = append(out, t)
	}
	return out, s.d.wrapOrNil("tokens", rows.Err())
}

func (s *rowStore) RevokeTokens(ctx context.Context, userID, id int64) (int, error) {
	q, args := `DELETE FROM tokens WHERE user_id = ?`, []any{userID}
	if id != 0 {
		q += ` AND ` + s.d.tokenID + ` = ?`
		args = append(args, id)
	}
	res, err := s.db.ExecContext(ctx, s.q(q), args...)
	if err != nil {
		return 0, s.d.wrap("revoke tokens", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

func nonNilLabels(l map[string]string) map[string]string {
	if l == nil {
		return map[string]string{}
	}
	return l
}

// InsertField locks the owner's row first (on PostgreSQL): concurrent
// insertions for one account (from any process) then count and insert one
// after the other, so the quota holds, and the unique (user_id, name) index
// refuses a second field of the same name.
func (s *rowStore) InsertField(ctx context.Context, f archive.Field, maxPerUser int) (archive.Field, error) {
	geom, err := archive.EncodeGeometry(f.Geometry)
	if err != nil {
		return archive.Field{}, err
	}
	labels, err := json.Marshal(nonNilLabels(f.Labels))
	if err != nil {
		return archive.Field{}, fmt.Errorf("encode labels: %w", err)
	}
	b := f.Geometry.Bound()
	ts := s.d.stamp(time.Now())
	what := fmt.Sprintf("insert field %q", f.Name)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return archive.Field{}, s.d.wrap(what, err)
	}
	defer tx.Rollback()
	var owner int64
	err = tx.QueryRowContext(ctx, s.q(`SELECT id FROM users WHERE id = ?`+s.d.forUpdate), f.OwnerID).Scan(&owner)
	if errors.Is(err, sql.ErrNoRows) {
		return archive.Field{}, fmt.Errorf("%s: user %d: %w", what, f.OwnerID, archive.ErrNotFound)
	}
	if err != nil {
		return archive.Field{}, s.d.wrap(what, err)
	}
	if maxPerUser > 0 {
		var n int
		if err := tx.QueryRowContext(ctx, s.q(`SELECT count(*) FROM fields WHERE user_id = ?`), f.OwnerID).Scan(&n); err != nil {
			return archive.Field{}, s.d.wrap(what, err)
		}
		if n >= maxPerUser {
			return archive.Field{}, fmt.Errorf("field %q: %d fields: %w", f.Name, n, archive.ErrQuota)
		}
	}
	var id int64
	err = tx.QueryRowContext(ctx, s.q(`INSERT INTO fields
		(user_id, name, grp, labels, indices, geometry, min_lon, min_lat, max_lon, max_lat, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (user_id, name) DO NOTHING RETURNING id`),
		f.OwnerID, f.Name, f.Group, string(labels), joinList(f.Indices), geom, b.Min[0], b.Min[1], b.Max[0], b.Max[1], ts, ts).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return archive.Field{}, fmt.Errorf("field %q: %w", f.Name, archive.ErrExists)
	}
	if err != nil {
		return archive.Field{}, s.d.wrap(what, err)
	}
	// Read the row back inside the transaction: read after the commit, a
	// concurrent delete could remove it first, and a registration that
	// committed answered 404 with the internal id.
	inserted, err := s.oneField(tx.QueryRowContext(ctx, s.q(
		`SELECT `+fieldColumns+` FROM fields f JOIN users u ON u.id = f.user_id WHERE f.id = ?`), id), strconv.Quote(f.Name))
	if err != nil {
		return archive.Field{}, fmt.Errorf("%s: read back: %w", what, err)
	}
	if err := tx.Commit(); err != nil {
		return archive.Field{}, s.d.wrap(what, err)
	}
	return inserted, nil
}

func (s *rowStore) UpdateField(ctx context.Context, f archive.Field, newOutline bool) (archive.Field, []string, error) {
	geom, err := archive.EncodeGeometry(f.Geometry)
	if err != nil {
		return archive.Field{}, nil, err
	}
	labels, err := json.Marshal(nonNilLabels(f.Labels))
	if err != nil {
		return archive.Field{}, nil, fmt.Errorf("encode labels: %w", err)
	}
	b := f.Geometry.Bound()
	what := fmt.Sprintf("update field %q", f.Name)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return archive.Field{}, nil, s.d.wrap(what, err)
	}
	defer tx.Rollback()
	bump := 0
	if newOutline {
		bump = 1
	}
	res, err := tx.ExecContext(ctx, s.q(`UPDATE fields SET grp = ?, labels = ?, indices = ?, geometry = ?,
		min_lon = ?, min_lat = ?, max_lon = ?, max_lat = ?, updated_at = ?, geom_version = geom_version + ? WHERE id = ?`),
		f.Group, string(labels), joinList(f.Indices), geom, b.Min[0], b.Min[1], b.Max[0], b.Max[1], s.d.stamp(time.Now()), bump, f.ID)
	if err != nil {
		return archive.Field{}, nil, s.d.wrap(what, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return archive.Field{}, nil, fmt.Errorf("field %q: %w", f.Name, archive.ErrNotFound)
	}
	var dropped []string
	if newOutline {
		rows, err := tx.QueryContext(ctx, s.q(`SELECT DISTINCT bundle FROM products WHERE field_id = ? AND bundle != ''`), f.ID)
		if err != nil {
			return archive.Field{}, nil, s.d.wrap(what, err)
		}
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				rows.Close()
				return archive.Field{}, nil, s.d.wrap(what, err)
			}
			dropped = append(dropped, k)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return archive.Field{}, nil, s.d.wrap(what, err)
		}
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM products WHERE field_id = ?`), f.ID); err != nil {
			return archive.Field{}, nil, s.d.wrap(what+": drop products", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return archive.Field{}, nil, s.d.wrap(what, err)
	}
	updated, err := s.FieldByID(ctx, f.ID)
	return updated, dropped, err
}

func (s *rowStore) DeleteField(ctx context.Context, id int64) error {
	res, err := s.db.ExecContext(ctx, s.q(`DELETE FROM fields WHERE id = ?`), id)
	if err != nil {
		return s.d.wrap(fmt.Sprintf("delete field %d", id), err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("field %d: %w", id, archive.ErrNotFound)
	}
	return nil
}

const fieldColumns = `f.id, f.user_id, u.name, f.name, f.grp, f.labels, f.indices, f.geometry, f.created_at, f.updated_at, f.geom_version`

func scanField(row interface{ Scan(...any) error }) (archive.Field, error) {
	var (
		f                     archive.Field
		labels, indices, geom string
	)
	if err := row.Scan(&f.ID, &f.OwnerID, &f.Owner, &f.Name, &f.Group, &labels, &indices, &geom,
		dbTime{&f.Created}, dbTime{&f.Updated}, &f.Version); err != nil {
		return archive.Field{}, err
	}
	if err := json.Unmarshal([]byte(labels), &f.Labels); err != nil {
		return archive.Field{}, fmt.Errorf("field %d labels: %w", f.ID, err)
	}
	f.Indices = splitList(indices)
	mp, err := geo.ParseGeometry([]byte(geom))
	if err != nil {
		return archive.Field{}, fmt.Errorf("field %d geometry: %w", f.ID, err)
	}
	f.Geometry = mp
	f.Bound = mp.Bound()
	return f, nil
}

// oneField scans the single field of row; what names it in errors, and a
// missing row is ErrNotFound.
func (s *rowStore) oneField(row *sql.Row, what string) (archive.Field, error) {
	f, err := scanField(row)
	if errors.Is(err, sql.ErrNoRows) {
		return archive.Field{}, fmt.Errorf("field %s: %w", what, archive.ErrNotFound)
	}
	if err != nil {
		return archive.Field{}, s.d.wrap("field "+what, err)
	}
	return f, nil
}

// FieldByID reads from the writer pool: it answers InsertField and
// UpdateField with the row they just wrote.
func (s *rowStore) FieldByID(ctx context.Context, id int64) (archive.Field, error) {
	return s.oneField(s.db.QueryRowContext(ctx, s.q(
		`SELECT `+fieldColumns+` FROM fields f JOIN users u ON u.id = f.user_id WHERE f.id = ?`), id), fmt.Sprint(id))
}

func (s *rowStore) FieldByName(ctx context.Context, userID int64, name string) (archive.Field, error) {
	row, err := s.readRow(ctx,
		`SELECT `+fieldColumns+` FROM fields f JOIN users u ON u.id = f.user_id WHERE f.user_id = ? AND f.name = ?`, userID, name)
	if err != nil {
		return archive.Field{}, s.d.wrap(fmt.Sprintf("field %q", name), err)
	}
	return s.oneField(row, strconv.Quote(name))
}

func (s *rowStore) FieldSummary(ctx context.Context, userID int64, name string) (archive.Field, error) {
	row, err := s.readRow(ctx, `SELECT f.id, f.user_id, u.name, f.name, f.grp, f.indices, f.min_lon, f.min_lat, f.max_lon, f.max_lat, f.geom_version
		FROM fields f JOIN users u ON u.id = f.user_id WHERE f.user_id = ? AND f.name = ?`, userID, name)
	if err != nil {
		return archive.Field{}, s.d.wrap(fmt.Sprintf("field %q", name), err)
	}
	var (
		f       archive.Field
		indices string
	)
	err = row.Scan(&f.ID, &f.OwnerID, &f.Owner, &f.Name, &f.Group, &indices, &f.Bound.Min[0], &f.Bound.Min[1], &f.Bound.Max[0], &f.Bound.Max[1], &f.Version)
	if errors.Is(err, sql.ErrNoRows) {
		return archive.Field{}, fmt.Errorf("field %q: %w", name, archive.ErrNotFound)
	}
	if err != nil {
		return archive.Field{}, s.d.wrap(fmt.Sprintf("field %q", name), err)
	}
	f.Indices = splitList(indices)
	return f, nil
}

func (s *rowStore) queryFields(ctx context.Context, what, q string, args ...any) ([]archive.Field, error) {
	rows, err := s.rdb.QueryContext(ctx, s.q(q), args...)
	if err != nil {
		return nil, s.d.wrap(what, err)
	}
	defer rows.Close()
	var out []archive.Field
	for rows.Next() {
		f, err := scanField(rows)
		if err != nil {
			return nil, s.d.wrap(what, err)
		}
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, s.d.wrap(what, err)
	}
	return out, nil
}

func (s *rowStore) Fields(ctx context.Context, userID int64) ([]archive.Field, error) {
	q := `SELECT ` + fieldColumns + ` FROM fields f JOIN users u ON u.id = f.user_id`
	var args []any
	if userID != 0 {
		q += ` WHERE f.user_id = ?`
		args = append(args, userID)
	}
	return s.queryFields(ctx, "list fields", q+` ORDER BY u.name`+s.d.collateC+`, f.name`+s.d.collateC, args...)
}

func (s *rowStore) FieldsIntersecting(ctx context.Context, b orb.Bound) ([]archive.Field, error) {
	return s.queryFields(ctx, fmt.Sprintf("fields in %v", b), `SELECT `+fieldColumns+` FROM fields f JOIN users u ON u.id = f.user_id
		WHERE f.max_lon >= ? AND f.min_lon <= ? AND f.max_lat >= ? AND f.min_lat <= ? ORDER BY f.id`,
		b.Min[0], b.Max[0], b.Min[1], b.Max[1])
}

func (s *rowStore) FieldVersions(ctx context.Context) (map[int64]int64, error) {
	return s.idVersions(ctx, s.db, "field versions", `SELECT id, geom_version FROM fields`)
}

// idVersions runs query, which selects (field id, version) rows, into a map.
func (s *rowStore) idVersions(ctx context.Context, q querier, what, query string) (map[int64]int64, error) {
	rows, err := q.QueryContext(ctx, query)
	if err != nil {
		return nil, s.d.wrap(what, err)
	}
	defer rows.Close()
	out := map[int64]int64{}
	for rows.Next() {
		var id, v int64
		if err := rows.Scan(&id, &v); err != nil {
			return nil, s.d.wrap(what, err)
		}
		out[id] = v
	}
	return out, s.d.wrapOrNil(what, rows.Err())
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func (s *rowStore) Seasons(ctx context.Context, fieldID int64) ([]archive.Season, error) {
	return s.seasons(ctx, s.rdb, fieldID)
}

func (s *rowStore) seasons(ctx context.Context, q querier, fieldID int64) ([]archive.Season, error) {
	what := fmt.Sprintf("seasons of field %d", fieldID)
	rows, err := q.QueryContext(ctx, s.q(`SELECT start_date, record FROM seasons WHERE field_id = ? ORDER BY start_date`), fieldID)
	if err != nil {
		return nil, s.d.wrap(what, err)
	}
	defer rows.Close()
	var out []archive.Season
	for rows.Next() {
		var se archive.Season
		var rec string
		if err := rows.Scan(&se.StartDate, &rec); err != nil {
			return nil, s.d.wrap(what, err)
		}
		se.Record = json.RawMessage(rec)
		out = append(out, se)
	}
	return out, s.d.wrapOrNil(what, rows.Err())
}

// UpdateSeasons locks the field's row (on PostgreSQL), so concurrent
// updates of one field's seasons (from any process) apply one after the
// other; a missing field is ErrNotFound.
func (s *rowStore) UpdateSeasons(ctx context.Context, fieldID int64, update func([]archive.Season) ([]archive.Season, error)) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.d.wrap("update seasons", err)
	}
	defer tx.Rollback()
	var id int64
	err = tx.QueryRowContext(ctx, s.q(`SELECT id FROM fields WHERE id = ?`+s.d.forUpdate), fieldID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("update seasons: field %d: %w", fieldID, archive.ErrNotFound)
	}
	if err != nil {
		return s.d.wrap("update seasons", err)
	}
	current, err := s.seasons(ctx, tx, fieldID)
	if err != nil {
		return err
	}
	next, err := update(current)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM seasons WHERE field_id = ?`), fieldID); err != nil {
		return s.d.wrap("update seasons", err)
	}
	for _, se := range next {
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO seasons (field_id, start_date, record) VALUES (?, ?, ?)`),
			fieldID, se.StartDate, string(se.Record)); err != nil {
			return s.d.wrap("update seasons", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return s.d.wrap("update seasons", err)
	}
	return nil
}

// RecordProducts upserts one field's products of one date in one
// transaction with the notification they cause. The field's version is
// checked first, with its row locked on PostgreSQL (SQLite's transactions
// begin IMMEDIATE, _txlock=immediate): an outline change or deletion waits
// for this transaction or makes it fail with ErrFieldChanged, two
// ingestions of the same field and date (from any process) record one after
// the other, the second comparing its digests with the first's rows, so each
// change is announced once; and the dispatcher's claim sees the new
// deliveries only with the products (or none, after a rollback).
func (s *rowStore) RecordProducts(ctx context.Context, rec archive.ProductRecord) (archive.RecordResult, error) {
	var out archive.RecordResult
	f := rec.Field
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return out, s.d.wrap("record products", err)
	}
	defer tx.Rollback()
	var version int64
	err = tx.QueryRowContext(ctx, s.q(`SELECT geom_version FROM fields WHERE id = ?`+s.d.forUpdate), f.ID).Scan(&version)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && version != f.Version) {
		return out, archive.ErrFieldChanged
	}
	if err != nil {
		return out, s.d.wrap("record products", err)
	}
	// What is stored now for this date: its bundles (replaced after
	// commit) and digests (unchanged content notifies nobody).
	family := cmp.Or(rec.Family, archive.DefaultFamily)
	rows, err := tx.QueryContext(ctx, s.q(`SELECT idx, usable, bundle, digest FROM products WHERE field_id = ? AND date = ? AND family = ?`), f.ID, rec.Date, family)
	if err != nil {
		return out, s.d.wrap("record products", err)
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
			return out, s.d.wrap("record products", err)
		}
		if usable {
			oldDigest[idx] = digest
		}
		if bundle != "" {
			oldBundles[bundle] = true
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return out, s.d.wrap("record products", err)
	}
	if err := s.upsertProducts(ctx, tx, family, rec.Products); err != nil {
		return out, err
	}
	var changed []archive.Product
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
			prev, err := s.previous(ctx, tx, f.ID, rec.Date, family)
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
	for k := range oldBundles {
		var still bool
		if err := tx.QueryRowContext(ctx, s.q(`SELECT EXISTS (SELECT 1 FROM products WHERE bundle = ?)`), k).Scan(&still); err != nil {
			return out, s.d.wrap("record products", err)
		}
		if !still {
			out.Replaced = append(out.Replaced, k)
		}
	}
	if err := tx.Commit(); err != nil {
		return archive.RecordResult{}, s.d.wrap("record products", err)
	}
	return out, nil
}

// previous is, per index, the field's latest usable product of the sensor
// family before date.
func (s *rowStore) previous(ctx context.Context, tx *sql.Tx, fieldID int64, date, family string) (map[string]archive.Product, error) {
	rows, err := tx.QueryContext(ctx, s.q(`SELECT p.idx, p.date, p.mean FROM products p
		WHERE p.field_id = ? AND p.usable AND p.family = ? AND p.date = (
			SELECT max(q.date) FROM products q WHERE q.field_id = p.field_id AND q.idx = p.idx AND q.usable
				AND q.family = p.family AND q.date < ?)`),
		fieldID, family, date)
	if err != nil {
		return nil, s.d.wrap("previous images", err)
	}
	defer rows.Close()
	prev := map[string]archive.Product{}
	for rows.Next() {
		p := archive.Product{FieldID: fieldID, Usable: true}
		var mean sql.NullFloat64
		if err := rows.Scan(&p.Index, &p.Date, &mean); err != nil {
			return nil, s.d.wrap("previous images", err)
		}
		p.Mean = mean.Float64
		prev[p.Index] = p
	}
	return prev, s.d.wrapOrNil("previous images", rows.Err())
}

// productColumns is how many values one product row binds.
const productColumns = 27

// upsertProducts records products in tx with one statement (one round
// trip), replacing any of the same field, index and date.
func (s *rowStore) upsertProducts(ctx context.Context, tx *sql.Tx, family string, products []archive.Product) error {
	if len(products) == 0 {
		return nil
	}
	row := "(?" + strings.Repeat(", ?", productColumns-1) + ")"
	var q strings.Builder
	q.WriteString(`INSERT INTO products
		(field_id, idx, date, scene_id, usable, cloud_cover, mean, median, std, min, max, p25, p75, num, field_pixels,
		 epsg, x0, y0, dx, dy, cols, rows, ingested_at, bundle, digest, family, sensor) VALUES `)
	args := make([]any, 0, productColumns*len(products))
	for i, p := range products {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString(row)
		g := p.Grid
		args = append(args, p.FieldID, p.Index, p.Date, p.SceneID, p.Usable, p.CloudCover,
			p.Mean, p.Median, p.Std, p.Min, p.Max, p.P25, p.P75, p.Num, p.FieldPixels,
			g.EPSG, g.X0, g.Y0, g.DX, g.DY, g.Cols, g.Rows, s.d.stamp(p.IngestedAt), p.Bundle, p.Digest,
			family, cmp.Or(p.Sensor, family))
	}
	q.WriteString(` ON CONFLICT (field_id, idx, date, family) DO UPDATE SET sensor = excluded.sensor,
		scene_id = excluded.scene_id, usable = excluded.usable, cloud_cover = excluded.cloud_cover,
		mean = excluded.mean, median = excluded.median, std = excluded.std, min = excluded.min, max = excluded.max,
		p25 = excluded.p25, p75 = excluded.p75, num = excluded.num, field_pixels = excluded.field_pixels,
		epsg = excluded.epsg, x0 = excluded.x0, y0 = excluded.y0, dx = excluded.dx, dy = excluded.dy,
		cols = excluded.cols, rows = excluded.rows, ingested_at = excluded.ingested_at,
		bundle = excluded.bundle, digest = excluded.digest`)
	if _, err := tx.ExecContext(ctx, s.q(q.String()), args...); err != nil {
		p := products[0]
		return s.d.wrap(fmt.Sprintf("record products %d/%s", p.FieldID, p.Date), err)
	}
	return nil
}

func (s *rowStore) Products(ctx context.Context, q archive.ProductQuery) ([]archive.Product, error) {
	sqlText := `SELECT field_id, idx, date, scene_id, usable, cloud_cover, mean, median, std, min, max, p25, p75,
		num, field_pixels, epsg, x0, y0, dx, dy, cols, rows, ingested_at, bundle, digest, family, sensor FROM products WHERE field_id = ?`
	args := []any{q.FieldID}
	if q.Family != "" {
		sqlText += ` AND family = ?`
		args = append(args, q.Family)
	}
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
		sqlText += ` AND usable`
	}
	sqlText += ` ORDER BY idx` + s.d.collateC + `, date, family`
	what := fmt.Sprintf("products of field %d", q.FieldID)
	rows, err := s.read(ctx, sqlText, args...)
	if err != nil {
		return nil, s.d.wrap(what, err)
	}
	defer rows.Close()
	var out []archive.Product
	for rows.Next() {
		var (
			p                                   archive.Product
			mean, median, std, mn, mx, p25, p75 sql.NullFloat64
		)
		if err := rows.Scan(&p.FieldID, &p.Index, &p.Date, &p.SceneID, &p.Usable, &p.CloudCover,
			&mean, &median, &std, &mn, &mx, &p25, &p75, &p.Num, &p.FieldPixels,
			&p.Grid.EPSG, &p.Grid.X0, &p.Grid.Y0, &p.Grid.DX, &p.Grid.DY, &p.Grid.Cols, &p.Grid.Rows, dbTime{&p.IngestedAt},
			&p.Bundle, &p.Digest, &p.Family, &p.Sensor); err != nil {
			return nil, s.d.wrap(what, err)
		}
		p.Mean, p.Median, p.Std, p.Min, p.Max, p.P25, p.P75 =
			mean.Float64, median.Float64, std.Float64, mn.Float64, mx.Float64, p25.Float64, p75.Float64
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, s.d.wrap(what, err)
	}
	return out, nil
}

func (s *rowStore) Bundles(ctx context.Context) (map[string]bool, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT bundle FROM products WHERE bundle != ''`)
	if err != nil {
		return nil, s.d.wrap("bundles", err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, s.d.wrap("bundles", err)
		}
		out[k] = true
	}
	return out, s.d.wrapOrNil("bundles", rows.Err())
}

func (s *rowStore) RecordScene(ctx context.Context, r archive.SceneRecord) error {
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO scene_sources (scene_id, source, date, min_lon, min_lat, max_lon, max_lat, ingested_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (scene_id) DO UPDATE SET source = excluded.source, date = excluded.date,
		min_lon = excluded.min_lon, min_lat = excluded.min_lat, max_lon = excluded.max_lon, max_lat = excluded.max_lat,
		ingested_at = excluded.ingested_at`),
		r.ID, r.Source, r.Date, r.Bound.Min[0], r.Bound.Min[1], r.Bound.Max[0], r.Bound.Max[1], s.d.stamp(time.Now()))
	if err != nil {
		return s.d.wrap("record scene "+r.ID, err)
	}
	return nil
}

func (s *rowStore) ScenesIntersecting(ctx context.Context, b orb.Bound, from, to string) ([]archive.SceneRecord, error) {
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
	rows, err := s.rdb.QueryContext(ctx, s.q(q+` ORDER BY date, scene_id`+s.d.collateC), args...)
	if err != nil {
		return nil, s.d.wrap("scenes", err)
	}
	defer rows.Close()
	var out []archive.SceneRecord
	for rows.Next() {
		var r archive.SceneRecord
		if err := rows.Scan(&r.ID, &r.Source, &r.Date, &r.Bound.Min[0], &r.Bound.Min[1], &r.Bound.Max[0], &r.Bound.Max[1]); err != nil {
			return nil, s.d.wrap("scenes", err)
		}
		out = append(out, r)
	}
	return out, s.d.wrapOrNil("scenes", rows.Err())
}
