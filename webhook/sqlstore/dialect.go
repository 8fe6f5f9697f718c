package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
)

// Dialect is what differs between the SQL databases a Store runs on. The
// queries are written once, with ? placeholders; a Dialect supplies the few
// fragments that SQLite and PostgreSQL spell differently. Its zero value is
// SQLite.
type Dialect int

const (
	// SQLite (modernc.org/sqlite): one writer at a time, so claims and
	// registration limits need no row or advisory locks.
	SQLite Dialect = iota
	// Postgres (github.com/jackc/pgx/v5/stdlib): several processes may
	// share the database, so Claim skips rows another dispatcher has locked
	// and RegisterLimit serialises an owner's registrations.
	Postgres
)

// String names the dialect.
func (d Dialect) String() string {
	switch d {
	case SQLite:
		return "sqlite"
	case Postgres:
		return "postgres"
	}
	return "Dialect(" + strconv.Itoa(int(d)) + ")"
}

// Rebind turns the ? placeholders of q into the dialect's: unchanged for
// SQLite, $1, $2… for PostgreSQL. The queries of this module carry no
// literal question marks.
func (d Dialect) Rebind(q string) string {
	if d != Postgres {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// messageID is the SQL expression giving each enqueued row a fresh
// webhook-id ("msg_" and 32 hex digits). Both draw from an OS-seeded
// generator inside the INSERT … SELECT, so one statement makes every row.
func (d Dialect) messageID() string {
	if d == Postgres {
		return `'msg_' || replace(gen_random_uuid()::text, '-', '')`
	}
	return `'msg_' || lower(hex(randomblob(16)))`
}

// skipLocked is appended to Claim's selection of due rows: on PostgreSQL
// dispatchers of several processes then claim disjoint deliveries without
// waiting for each other; SQLite's single writer already serialises them.
func (d Dialect) skipLocked() string {
	if d == Postgres {
		return ` FOR UPDATE OF d SKIP LOCKED`
	}
	return ``
}

// lockOwner serialises, for the rest of tx, the registrations of owner, so
// that concurrent RegisterLimit calls cannot exceed the limit together. On
// SQLite the INSERT already holds the database's only write lock.
func (d Dialect) lockOwner(ctx context.Context, tx *sql.Tx, owner string) error {
	if d != Postgres {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('webhook:' || $1, 0))`, owner); err != nil {
		return fmt.Errorf("lock owner: %w", err)
	}
	return nil
}
