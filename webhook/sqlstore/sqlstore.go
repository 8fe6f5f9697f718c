// Package sqlstore keeps webhook registrations and the delivery outbox in a
// SQL database through database/sql: SQLite (driver modernc.org/sqlite) or
// PostgreSQL (github.com/jackc/pgx/v5/stdlib), one implementation whose few
// differences are a Dialect. It owns the tables prefixed webhook_, created by
// Migrate (SQLite) or pgstore.Migrate (PostgreSQL), and knows users only as an
// opaque owner string.
//
// Notifications are enqueued with EnqueueTx inside the caller's transaction,
// so they are committed, or rolled back, together with the products they
// announce. A webhook.Dispatcher with this Store delivers them.
//
// Open a SQLite database with a busy timeout (DSN "file:…?_pragma=busy_timeout(5000)")
// so the dispatcher's short writes wait for the server's transactions instead
// of failing with SQLITE_BUSY. Several processes may share a PostgreSQL
// database: Claim leases rows with FOR UPDATE SKIP LOCKED, so two dispatchers
// never claim the same delivery.
package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cropkit/cropkit/webhook"
)

// ErrNotFound is returned when the owner has no such registration.
var ErrNotFound = webhook.ErrRegistrationNotFound

// Registration is one URL registered by an owner.
type Registration = webhook.Registration

// DeliveryState is one delivery as listed to its owner, with every attempt.
type DeliveryState = webhook.DeliveryState

// schemaVersion is stored in webhook_schema; bump it with a new migration step.
// Version 2: registration ids are never reused (AUTOINCREMENT), see
// rebuildRegistrations.
const schemaVersion = 2

var migrations = []string{
	`CREATE TABLE IF NOT EXISTS webhook_schema (version INTEGER NOT NULL)`,
	registrationsTable("webhook_registrations"),
	`CREATE TABLE IF NOT EXISTS webhook_deliveries (
		id              INTEGER PRIMARY KEY,
		message_id      TEXT    NOT NULL UNIQUE,
		registration_id INTEGER NOT NULL,
		owner           TEXT    NOT NULL,
		url             TEXT    NOT NULL,
		body            BLOB    NOT NULL,
		status          TEXT    NOT NULL,
		attempts        INTEGER NOT NULL DEFAULT 0,
		created_at      INTEGER NOT NULL,
		next_attempt_at INTEGER NOT NULL,
		finished_at     INTEGER,
		last_error      TEXT    NOT NULL DEFAULT ''
	)`,
	`CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at)`,
	`CREATE INDEX IF NOT EXISTS webhook_deliveries_owner ON webhook_deliveries (owner, id)`,
	`CREATE INDEX IF NOT EXISTS webhook_deliveries_registration ON webhook_deliveries (registration_id, status)`,
	`CREATE TABLE IF NOT EXISTS webhook_attempts (
		id           INTEGER PRIMARY KEY,
		delivery_id  INTEGER NOT NULL,
		attempted_at INTEGER NOT NULL,
		status_code  INTEGER NOT NULL,
		error        TEXT    NOT NULL,
		duration_ns  INTEGER NOT NULL,
		response     TEXT    NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS webhook_attempts_delivery ON webhook_attempts (delivery_id, id)`,
	subscriptionsTable,
}

// registrationsTable is the DDL of the registrations table named name.
// AUTOINCREMENT keeps ids from being reused: a deleted registration's id
// stays in its deliveries' history and must not name a new URL.
func registrationsTable(name string) string {
	return `CREATE TABLE IF NOT EXISTS ` + name + ` (
		id              INTEGER PRIMARY KEY AUTOINCREMENT,
		owner           TEXT    NOT NULL,
		url             TEXT    NOT NULL,
		secret          TEXT    NOT NULL,
		created_at      INTEGER NOT NULL,
		disabled_at     INTEGER,
		disabled_reason TEXT    NOT NULL DEFAULT '',
		UNIQUE (owner, url)
	)`
}

// Migrate creates the webhook_ tables when they are missing and upgrades
// older ones (version 1 registrations without AUTOINCREMENT are rebuilt,
// keeping their ids, so their deliveries still point at them). It is
// idempotent and safe to call on every start.
//
// A rebuild follows SQLite's table-rebuild procedure: foreign keys are
// switched off (on one pinned connection, outside the transaction, as SQLite
// requires), the table is rebuilt and checked in one transaction, and foreign
// keys are switched back on when they were on.
func Migrate(ctx context.Context, db *sql.DB) (err error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("migrate webhook tables: %w", err)
	}
	defer conn.Close()
	var fk bool
	if err := conn.QueryRowContext(ctx, `PRAGMA foreign_keys`).Scan(&fk); err != nil {
		return fmt.Errorf("migrate webhook tables: read foreign_keys: %w", err)
	}
	if fk {
		if _, err := conn.ExecContext(ctx, `PRAGMA foreign_keys = OFF`); err != nil {
			return fmt.Errorf("migrate webhook tables: %w", err)
		}
		defer func() {
			if _, rerr := conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA foreign_keys = ON`); rerr != nil {
				// Never hand a connection without foreign keys back to the pool.
				_ = conn.Raw(func(any) error { return driver.ErrBadConn })
				err = errors.Join(err, fmt.Errorf("migrate webhook tables: restore foreign_keys: %w", rerr))
			}
		}()
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate webhook tables: %w", err)
	}
	defer tx.Rollback()
	for _, stmt := range migrations {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("migrate webhook tables: %w", err)
		}
	}
	var v int
	switch err := tx.QueryRowContext(ctx, `SELECT version FROM webhook_schema`).Scan(&v); {
	case errors.Is(err, sql.ErrNoRows):
		if _, err := tx.ExecContext(ctx, `INSERT INTO webhook_schema (version) VALUES (?)`, schemaVersion); err != nil {
			return fmt.Errorf("migrate webhook tables: %w", err)
		}
	case err != nil:
		return fmt.Errorf("migrate webhook tables: read version: %w", err)
	case v > schemaVersion:
		return fmt.Errorf("migrate webhook tables: schema version %d is newer than this binary's %d", v, schemaVersion)
	case v < schemaVersion:
		if _, err := tx.ExecContext(ctx, `UPDATE webhook_schema SET version = ?`, schemaVersion); err != nil {
			return fmt.Errorf("migrate webhook tables: write version: %w", err)
		}
	}
	if err := rebuildRegistrations(ctx, tx, fk); err != nil {
		return fmt.Errorf("migrate webhook tables: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate webhook tables: %w", err)
	}
	return nil
}

// rebuildRegistrations rebuilds webhook_registrations with AUTOINCREMENT when
// its schema lacks it (databases created by version 1), keeping every row and
// its id. SQLite cannot alter a primary key: the rows are copied into a new
// table, the old one dropped and the new one renamed (steps 4-7 of SQLite's
// procedure; the table has no separate indexes, triggers or views). The id
// sequence starts above every id still named by a delivery, so a deleted
// registration's id is not handed out again either. checkFK runs the foreign
// key check (step 10) when the caller had foreign keys on.
func rebuildRegistrations(ctx context.Context, tx *sql.Tx, checkFK bool) error {
	var ddl string
	if err := tx.QueryRowContext(ctx,
		`SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'webhook_registrations'`).Scan(&ddl); err != nil {
		return fmt.Errorf("read webhook_registrations schema: %w", err)
	}
	if strings.Contains(strings.ToUpper(ddl), "AUTOINCREMENT") {
		return nil
	}
	for _, stmt := range []string{
		`DROP TABLE IF EXISTS webhook_registrations_v2`,
		registrationsTable("webhook_registrations_v2"),
		`INSERT INTO webhook_registrations_v2 (id, owner, url, secret, created_at, disabled_at, disabled_reason)
			SELECT id, owner, url, secret, created_at, disabled_at, disabled_reason FROM webhook_registrations ORDER BY id`,
		`DROP TABLE webhook_registrations`,
		`ALTER TABLE webhook_registrations_v2 RENAME TO webhook_registrations`,
		`DELETE FROM sqlite_sequence WHERE name = 'webhook_registrations'`,
		`INSERT INTO sqlite_sequence (name, seq) SELECT 'webhook_registrations', max(
			coalesce((SELECT max(id) FROM webhook_registrations), 0),
			coalesce((SELECT max(registration_id) FROM webhook_deliveries), 0))`,
	} {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("rebuild webhook_registrations: %w", err)
		}
	}
	if checkFK {
		rows, err := tx.QueryContext(ctx, `PRAGMA foreign_key_check`)
		if err != nil {
			return fmt.Errorf("rebuild webhook_registrations: foreign key check: %w", err)
		}
		broken := rows.Next()
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return fmt.Errorf("rebuild webhook_registrations: foreign key check: %w", err)
		}
		if broken {
			return errors.New("rebuild webhook_registrations: foreign key check failed")
		}
	}
	return nil
}

// Store implements webhook.Store and the registration and listing queries
// the server needs, on SQLite or PostgreSQL (Dialect). Call Migrate (SQLite)
// or pgstore.Migrate (PostgreSQL) first.
type Store struct {
	DB *sql.DB
	// Dialect is the database's SQL dialect; the zero value is SQLite.
	Dialect Dialect
	// Now replaces time.Now for created/finished times.
	Now func() time.Time
}

// New returns a Store on the SQLite database db.
func New(db *sql.DB) *Store { return &Store{DB: db} }

var _ webhook.Store = (*Store)(nil)

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// q is query in the store's dialect.
func (s *Store) q(query string) string { return s.Dialect.Rebind(query) }

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

func fromNullMS(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return fromMS(v.Int64)
}

// placeholders is "?, ?, …" for n values (n ≥ 1).
func placeholders(n int) string { return "?" + strings.Repeat(", ?", n-1) }

// Register stores rawURL for owner with a fresh secret. rawURL must already
// be validated (webhook.ValidateURL). Registering the same owner and URL again
// creates nothing: it returns the existing registration with Created false
// and no Secret (shown once; delete and register again to get a new one),
// and re-enables it if a 410 had disabled it.
func (s *Store) Register(ctx context.Context, owner, rawURL string) (Registration, error) {
	return s.RegisterLimit(ctx, owner, rawURL, 0)
}

// ErrLimit is returned by RegisterLimit when the owner already has the
// maximum number of registrations.
var ErrLimit = webhook.ErrRegistrationLimit

// RegisterLimit is Register refusing, with ErrLimit, a new URL beyond max
// registrations of owner (0: no limit). Registering a URL again always works.
// The owner's registrations are counted with the owner's registrations
// serialised (see Dialect), so concurrent registrations from several
// processes cannot exceed max together.
func (s *Store) RegisterLimit(ctx context.Context, owner, rawURL string, max int) (Registration, error) {
	if owner == "" || rawURL == "" {
		return Registration{}, fmt.Errorf("register webhook: empty owner or URL")
	}
	secret, err := webhook.NewSecret()
	if err != nil {
		return Registration{}, err
	}
	now := s.now()
	tx, err := s.DB.BeginTx(ctx, nil)
	if err != nil {
		return Registration{}, fmt.Errorf("register webhook: %w", err)
	}
	defer tx.Rollback()
	if max > 0 {
		if err := s.Dialect.lockOwner(ctx, tx, owner); err != nil {
			return Registration{}, fmt.Errorf("register webhook %s: %w", rawURL, err)
		}
	}
	res, err := tx.ExecContext(ctx, s.q(
		`INSERT INTO webhook_registrations (owner, url, secret, created_at) VALUES (?, ?, ?, ?)
		 ON CONFLICT (owner, url) DO NOTHING`), owner, rawURL, secret, ms(now))
	if err != nil {
		return Registration{}, fmt.Errorf("register webhook %s: %w", rawURL, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return Registration{}, fmt.Errorf("register webhook %s: %w", rawURL, err)
	}
	if n == 1 && max > 0 {
		var count int
		if err := tx.QueryRowContext(ctx, s.q(`SELECT count(*) FROM webhook_registrations WHERE owner = ?`), owner).Scan(&count); err != nil {
			return Registration{}, fmt.Errorf("register webhook %s: %w", rawURL, err)
		}
		if count > max {
			return Registration{}, fmt.Errorf("register webhook %s: %d registrations: %w", rawURL, max, ErrLimit)
		}
	}
	if n == 0 {
		if _, err := tx.ExecContext(ctx, s.q(
			`UPDATE webhook_registrations SET disabled_at = NULL, disabled_reason = '' WHERE owner = ? AND url = ?`),
			owner, rawURL); err != nil {
			return Registration{}, fmt.Errorf("register webhook %s: re-enable: %w", rawURL, err)
		}
	}
	reg, err := scanRegistration(tx.QueryRowContext(ctx, s.q(
		`SELECT id, owner, url, created_at, disabled_at, disabled_reason FROM webhook_registrations WHERE owner = ? AND url = ?`),
		owner, rawURL))
	if err != nil {
		return Registration{}, fmt.Errorf("register webhook %s: %w", rawURL, err)
	}
	if err := tx.Commit(); err != nil {
		return Registration{}, fmt.Errorf("register webhook %s: %w", rawURL, err)
	}
	if n == 1 {
		reg.Created = true
		reg.Secret = secret
	}
	return reg, nil
}

type rowScanner interface{ Scan(...any) error }

func scanRegistration(r rowScanner) (Registration, error) {
	var reg Registration
	var created int64
	var disabled sql.NullInt64
	if err := r.Scan(&reg.ID, &reg.Owner, &reg.URL, &created, &disabled, &reg.DisabledReason); err != nil {
		return Registration{}, err
	}
	reg.CreatedAt = fromMS(created)
	reg.Disabled = disabled.Valid
	reg.DisabledAt = fromNullMS(disabled)
	return reg, nil
}

// List returns the owner's registrations, oldest first, without secrets.
func (s *Store) List(ctx context.Context, owner string) ([]Registration, error) {
	rows, err := s.DB.QueryContext(ctx, s.q(
		`SELECT id, owner, url, created_at, disabled_at, disabled_reason FROM webhook_registrations WHERE owner = ? ORDER BY id`), owner)
	if err != nil {
		return nil, fmt.Errorf("list webhooks of %q: %w", owner, err)
	}
	defer rows.Close()
	var regs []Registration
	for rows.Next() {
		reg, err := scanRegistration(rows)
		if err != nil {
			return nil, fmt.Errorf("list webhooks of %q: %w", owner, err)
		}
		regs = append(regs, reg)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list webhooks of %q: %w", owner, err)
	}
	if err := s.fillTopics(ctx, owner, regs); err != nil {
		return nil, err
	}
	return regs, nil
}

// Delete removes the owner's registration with this id and cancels its
// pending deliveries (their history stays listed). It returns ErrNotFound
// when the owner has no such registration.
func (s *Store) Delete(ctx context.Context, owner string, id int64) error {
	return s.delete(ctx, owner, `id = ?`, id)
}

// DeleteURL is Delete by registered URL.
func (s *Store) DeleteURL(ctx context.Context, owner, rawURL string) error {
	return s.delete(ctx, owner, `url = ?`, rawURL)
}

func (s *Store) delete(ctx context.Context, owner, cond string, key any) error {
	tx, err := s.DB.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("delete webhook %v: %w", key, err)
	}
	defer tx.Rollback()
	var id int64
	err = tx.QueryRowContext(ctx, s.q(`DELETE FROM webhook_registrations WHERE owner = ? AND `+cond+` RETURNING id`), owner, key).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("delete webhook %v: %w", key, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("delete webhook %v: %w", key, err)
	}
	if err := s.cancelPending(ctx, tx, id, "registration deleted"); err != nil {
		return fmt.Errorf("delete webhook %v: %w", key, err)
	}
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM webhook_subscriptions WHERE registration_id = ?`), id); err != nil {
		return fmt.Errorf("delete webhook %v: subscriptions: %w", key, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("delete webhook %v: %w", key, err)
	}
	return nil
}

// cancelPending finishes, in tx, the registration's pending deliveries as
// cancelled for reason. Statuses are passed as plain strings: drivers need
// not know webhook.Status.
func (s *Store) cancelPending(ctx context.Context, tx *sql.Tx, registrationID int64, reason string) error {
	_, err := tx.ExecContext(ctx, s.q(
		`UPDATE webhook_deliveries SET status = ?, finished_at = ?, last_error = ?
		 WHERE registration_id = ? AND status = ?`),
		string(webhook.StatusCancelled), ms(s.now()), reason, registrationID, string(webhook.StatusPending))
	return err
}

// EnqueueTx adds, inside tx, one pending delivery of payload to each active
// registration of owner, each with its own webhook-id, and returns how many.
// The body is encoded once here and never changes, so retries send the same
// bytes. After tx commits, call Dispatcher.Notify.
//
// EnqueueTx is a single INSERT … SELECT. With SQLite, begin the caller's
// transaction as IMMEDIATE (DSN _txlock=immediate) when it reads before it
// writes, or a concurrent dispatcher write can fail it with SQLITE_BUSY.
func (s *Store) EnqueueTx(ctx context.Context, tx *sql.Tx, owner string, payload webhook.Payload) (int, error) {
	body, err := payload.Marshal()
	if err != nil {
		return 0, err
	}
	now := ms(s.now())
	res, err := tx.ExecContext(ctx, s.q(
		`INSERT INTO webhook_deliveries (message_id, registration_id, owner, url, body, status, created_at, next_attempt_at)
		 SELECT `+s.Dialect.messageID()+`, id, owner, url, ?, ?, ?, ?
		 FROM webhook_registrations WHERE owner = ? AND disabled_at IS NULL ORDER BY id`),
		body, string(webhook.StatusPending), now, now, owner)
	if err != nil {
		return 0, fmt.Errorf("enqueue webhooks of %q for field %q: %w", owner, payload.Field, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("enqueue webhooks of %q for field %q: %w", owner, payload.Field, err)
	}
	return int(n), nil
}

// Enqueue is EnqueueTx in a transaction of its own.
func (s *Store) Enqueue(ctx context.Context, owner string, payload webhook.Payload) (int, error) {
	tx, err := s.DB.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("enqueue webhooks of %q: %w", owner, err)
	}
	defer tx.Rollback()
	n, err := s.EnqueueTx(ctx, tx, owner, payload)
	if err != nil {
		return 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("enqueue webhooks of %q: %w", owner, err)
	}
	return n, nil
}

// claimWindow is how many due rows Claim ranks to pick limit deliveries.
func claimWindow(limit int) int { return max(64*limit, 1024) }

// Claim implements webhook.Store: it leases the oldest due pending delivery
// of each active registration not in req.SkipRegistrations, up to
// req.Limit, by moving their next attempt to req.LeaseUntil. NextDue leaves
// out the registrations claimed now, which are in flight until recorded.
//
// What holds: one Claim returns at most one delivery per registration, so a
// dispatcher that passes its in-flight registrations as SkipRegistrations
// has at most one attempt in flight per URL. What does not: ordering. Only
// due rows are ranked, so a notification waiting out its retry backoff (or
// leased by another dispatcher sharing the database) does not hold back a
// newer one; two dispatchers may each have one attempt in flight for the
// same URL, and notifications can arrive out of order. Standard Webhooks
// promises no order either: receivers de-duplicate by webhook-id and order
// by the payload's own times.
func (s *Store) Claim(ctx context.Context, req webhook.ClaimRequest) (webhook.ClaimResult, error) {
	var res webhook.ClaimResult
	skip, skipArgs := "", []any{}
	if len(req.SkipRegistrations) > 0 {
		skip = ` AND d.registration_id NOT IN (` + placeholders(len(req.SkipRegistrations)) + `)`
		for _, id := range req.SkipRegistrations {
			skipArgs = append(skipArgs, id)
		}
	}
	active := `FROM webhook_deliveries d JOIN webhook_registrations r ON r.id = d.registration_id
		WHERE d.status = 'pending' AND r.disabled_at IS NULL` + skip

	tx, err := s.DB.BeginTx(ctx, nil)
	if err != nil {
		return res, fmt.Errorf("claim webhook deliveries: %w", err)
	}
	defer tx.Rollback()

	if req.Limit > 0 {
		if err := s.claim(ctx, tx, req, active, skipArgs, &res); err != nil {
			return res, fmt.Errorf("claim webhook deliveries: %w", err)
		}
	}

	var next sql.NullInt64
	claimedSkip := ""
	nextArgs := append([]any{}, skipArgs...)
	if len(res.Deliveries) > 0 {
		claimedSkip = ` AND d.registration_id NOT IN (` + placeholders(len(res.Deliveries)) + `)`
		for _, d := range res.Deliveries {
			nextArgs = append(nextArgs, d.RegistrationID)
		}
	}
	if err := tx.QueryRowContext(ctx, s.q(`SELECT MIN(d.next_attempt_at) `+active+claimedSkip), nextArgs...).Scan(&next); err != nil {
		return res, fmt.Errorf("claim webhook deliveries: next due: %w", err)
	}
	res.NextDue = fromNullMS(next)
	if err := tx.Commit(); err != nil {
		return res, fmt.Errorf("claim webhook deliveries: %w", err)
	}
	return res, nil
}

// claim picks and leases, in tx, the deliveries of one Claim and appends
// them to res. One statement picks and leases, so two claimers never share
// a row. The ranking only looks at the claimWindow(limit) rows due first
// (webhook_deliveries_due gives them in order): this runs under the write
// lock (SQLite) or holds row locks (PostgreSQL), and a backlog of due rows
// must not be scanned whole.
func (s *Store) claim(ctx context.Context, tx *sql.Tx, req webhook.ClaimRequest, active string, skipArgs []any, res *webhook.ClaimResult) error {
	args := append([]any{ms(req.LeaseUntil)}, skipArgs...)
	args = append(args, ms(req.Now), claimWindow(req.Limit), req.Limit)
	rows, err := tx.QueryContext(ctx, s.q(`UPDATE webhook_deliveries SET next_attempt_at = ?
		WHERE id IN (
			SELECT id FROM (
				SELECT id, next_attempt_at,
					ROW_NUMBER() OVER (PARTITION BY registration_id ORDER BY id) AS rn
				FROM (SELECT d.id, d.registration_id, d.next_attempt_at
					`+active+` AND d.next_attempt_at <= ? ORDER BY d.next_attempt_at, d.id LIMIT ?`+s.Dialect.skipLocked()+`) due
			) ranked WHERE rn = 1 ORDER BY next_attempt_at, id LIMIT ?)
		RETURNING id`), args...)
	if err != nil {
		return err
	}
	var ids []any
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	rows, err = tx.QueryContext(ctx, s.q(`SELECT d.id, d.message_id, d.registration_id, d.owner, d.url, r.secret, d.body, d.attempts, d.created_at
		FROM webhook_deliveries d JOIN webhook_registrations r ON r.id = d.registration_id
		WHERE d.id IN (`+placeholders(len(ids))+`) ORDER BY d.next_attempt_at, d.id`), ids...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var d webhook.Delivery
		var created int64
		if err := rows.Scan(&d.ID, &d.MessageID, &d.RegistrationID, &d.Owner, &d.URL, &d.Secret, &d.Body, &d.Attempts, &created); err != nil {
			return err
		}
		d.CreatedAt = fromMS(created)
		res.Deliveries = append(res.Deliveries, d)
	}
	return rows.Err()
}

// Record implements webhook.Store: it appends the attempt and applies the
// outcome to the delivery (and, on 410, disables the registration and
// cancels its other pending deliveries) in one transaction. An outcome for a
// delivery that is no longer pending (deleted registration) only adds the attempt.
func (s *Store) Record(ctx context.Context, d webhook.Delivery, a webhook.Attempt, o webhook.Outcome) error {
	tx, err := s.DB.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("record webhook attempt of delivery %d: %w", d.ID, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, s.q(
		`INSERT INTO webhook_attempts (delivery_id, attempted_at, status_code, error, duration_ns, response) VALUES (?, ?, ?, ?, ?, ?)`),
		d.ID, ms(a.At), a.StatusCode, a.Error, int64(a.Duration), a.Response); err != nil {
		return fmt.Errorf("record webhook attempt of delivery %d: %w", d.ID, err)
	}
	now := ms(s.now())
	var q string
	var args []any
	switch o.Status {
	case webhook.StatusPending:
		q = `UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_at = ?, last_error = ? WHERE id = ? AND status = 'pending'`
		args = []any{ms(o.RetryAt), o.Reason, d.ID}
	case webhook.StatusDelivered, webhook.StatusFailed:
		q = `UPDATE webhook_deliveries SET attempts = attempts + 1, status = ?, finished_at = ?, last_error = ? WHERE id = ? AND status = 'pending'`
		args = []any{string(o.Status), now, o.Reason, d.ID}
	default:
		return fmt.Errorf("record webhook attempt of delivery %d: unknown outcome status %q", d.ID, o.Status)
	}
	if _, err := tx.ExecContext(ctx, s.q(q), args...); err != nil {
		return fmt.Errorf("record webhook attempt of delivery %d: %w", d.ID, err)
	}
	if o.DisableRegistration {
		if _, err := tx.ExecContext(ctx, s.q(
			`UPDATE webhook_registrations SET disabled_at = ?, disabled_reason = ? WHERE id = ? AND disabled_at IS NULL`),
			now, o.Reason, d.RegistrationID); err != nil {
			return fmt.Errorf("record webhook attempt of delivery %d: disable registration: %w", d.ID, err)
		}
		if err := s.cancelPending(ctx, tx, d.RegistrationID, "registration disabled: "+o.Reason); err != nil {
			return fmt.Errorf("record webhook attempt of delivery %d: %w", d.ID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("record webhook attempt of delivery %d: %w", d.ID, err)
	}
	return nil
}

// Deliveries returns the owner's most recent deliveries, newest first, at
// most limit (0 means 100), each with its attempts oldest first.
func (s *Store) Deliveries(ctx context.Context, owner string, limit int) ([]DeliveryState, error) {
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.DB.QueryContext(ctx, s.q(
		`SELECT id, message_id, registration_id, url, status, created_at, next_attempt_at, finished_at, last_error, body
		 FROM webhook_deliveries WHERE owner = ? ORDER BY id DESC LIMIT ?`), owner, limit)
	if err != nil {
		return nil, fmt.Errorf("list webhook deliveries of %q: %w", owner, err)
	}
	var out []DeliveryState
	index := map[int64]int{}
	for rows.Next() {
		var d DeliveryState
		var created, next int64
		var finished sql.NullInt64
		var status string
		if err := rows.Scan(&d.ID, &d.MessageID, &d.RegistrationID, &d.URL, &status, &created, &next, &finished, &d.LastError, &d.Payload); err != nil {
			rows.Close()
			return nil, fmt.Errorf("list webhook deliveries of %q: %w", owner, err)
		}
		d.Status = webhook.Status(status)
		d.CreatedAt = fromMS(created)
		if d.Status == webhook.StatusPending {
			d.NextAttemptAt = fromMS(next)
		}
		d.FinishedAt = fromNullMS(finished)
		d.Attempts = []webhook.Attempt{}
		index[d.ID] = len(out)
		out = append(out, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list webhook deliveries of %q: %w", owner, err)
	}
	if len(out) == 0 {
		return out, nil
	}
	ids := make([]any, len(out))
	for i, d := range out {
		ids[i] = d.ID
	}
	arows, err := s.DB.QueryContext(ctx, s.q(
		`SELECT delivery_id, attempted_at, status_code, error, duration_ns, response FROM webhook_attempts
		 WHERE delivery_id IN (`+placeholders(len(ids))+`) ORDER BY id`), ids...)
	if err != nil {
		return nil, fmt.Errorf("list webhook attempts of %q: %w", owner, err)
	}
	defer arows.Close()
	for arows.Next() {
		var id, at, dur int64
		var a webhook.Attempt
		if err := arows.Scan(&id, &at, &a.StatusCode, &a.Error, &dur, &a.Response); err != nil {
			return nil, fmt.Errorf("list webhook attempts of %q: %w", owner, err)
		}
		a.At = fromMS(at)
		a.Duration = time.Duration(dur)
		i := index[id]
		out[i].Attempts = append(out[i].Attempts, a)
	}
	if err := arows.Err(); err != nil {
		return nil, fmt.Errorf("list webhook attempts of %q: %w", owner, err)
	}
	return out, nil
}

// ActiveTx reports, in tx, whether owner has a registration that is not
// disabled (so callers build a payload only when someone will receive it).
func (s *Store) ActiveTx(ctx context.Context, tx *sql.Tx, owner string) (bool, error) {
	var active bool
	if err := tx.QueryRowContext(ctx, s.q(
		`SELECT EXISTS (SELECT 1 FROM webhook_registrations WHERE owner = ? AND disabled_at IS NULL)`), owner).Scan(&active); err != nil {
		return false, fmt.Errorf("webhooks of %q: %w", owner, err)
	}
	return active, nil
}
