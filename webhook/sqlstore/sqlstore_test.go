package sqlstore_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/webhook"
	"github.com/cropkit/cropkit/webhook/sqlstore"
)

// Migrate twice creates each backend's tables once and records its schema
// version (SQLite: webhook_schema; PostgreSQL: the shared cropkit_schema).
func TestMigrateIdempotent(t *testing.T) {
	want := map[string]struct {
		tables  string
		version string
		names   []string
		v       int
	}{
		"sqlite": {
			tables:  `SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`,
			version: `SELECT version FROM webhook_schema`,
			// sqlite_sequence holds the AUTOINCREMENT counter of webhook_registrations.
			names: []string{"sqlite_sequence", "webhook_attempts", "webhook_deliveries", "webhook_registrations", "webhook_schema", "webhook_subscriptions"},
			v:     2,
		},
		"postgres": {
			tables:  `SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`,
			version: `SELECT version FROM cropkit_schema WHERE component = 'webhook'`,
			names:   []string{"cropkit_schema", "webhook_attempts", "webhook_deliveries", "webhook_registrations", "webhook_subscriptions"},
			v:       2,
		},
	}
	forEachBackend(t, func(t *testing.T, bk backend) {
		w, ok := want[bk.name]
		require.True(t, ok, bk.name)
		s, _ := bk.newStore(t)
		ctx := context.Background()
		require.NoError(t, bk.migrate(ctx, s.DB))
		require.NoError(t, bk.migrate(ctx, s.DB))
		var tables []string
		rows, err := s.DB.Query(w.tables)
		require.NoError(t, err)
		defer rows.Close()
		for rows.Next() {
			var name string
			require.NoError(t, rows.Scan(&name))
			tables = append(tables, name)
		}
		require.NoError(t, rows.Err())
		assert.Equal(t, w.names, tables)
		var versions []int
		rows, err = s.DB.Query(w.version)
		require.NoError(t, err)
		defer rows.Close()
		for rows.Next() {
			var v int
			require.NoError(t, rows.Scan(&v))
			versions = append(versions, v)
		}
		require.NoError(t, rows.Err())
		assert.Equal(t, []int{w.v}, versions, "one version row")
	})
}

// A deleted registration's id is never handed out again, even for the same URL.
func TestRegistrationIDsNotReused(t *testing.T) {
	forEachBackend(t, func(t *testing.T, bk backend) {
		s, _ := bk.newStore(t)
		ctx := context.Background()
		a, err := s.Register(ctx, "alice", "https://farm.example.com/a")
		require.NoError(t, err)
		assert.Equal(t, int64(1), a.ID)
		require.NoError(t, s.Delete(ctx, "alice", a.ID))
		b, err := s.Register(ctx, "alice", "https://farm.example.com/a")
		require.NoError(t, err)
		assert.True(t, b.Created)
		assert.Equal(t, int64(2), b.ID)
		require.NoError(t, s.DeleteURL(ctx, "alice", "https://farm.example.com/a"))
		c, err := s.Register(ctx, "bob", "https://farm.example.com/b")
		require.NoError(t, err)
		assert.Equal(t, int64(3), c.ID)
	})
}

// webhookV1 is the version 1 schema: registrations without AUTOINCREMENT.
var webhookV1 = []string{
	`CREATE TABLE webhook_schema (version INTEGER NOT NULL)`,
	`INSERT INTO webhook_schema (version) VALUES (1)`,
	`CREATE TABLE webhook_registrations (
		id              INTEGER PRIMARY KEY,
		owner           TEXT    NOT NULL,
		url             TEXT    NOT NULL,
		secret          TEXT    NOT NULL,
		created_at      INTEGER NOT NULL,
		disabled_at     INTEGER,
		disabled_reason TEXT    NOT NULL DEFAULT '',
		UNIQUE (owner, url)
	)`,
	`CREATE TABLE webhook_deliveries (
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
	`CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at)`,
	`CREATE INDEX webhook_deliveries_owner ON webhook_deliveries (owner, id)`,
	`CREATE INDEX webhook_deliveries_registration ON webhook_deliveries (registration_id, status)`,
	`CREATE TABLE webhook_attempts (
		id           INTEGER PRIMARY KEY,
		delivery_id  INTEGER NOT NULL,
		attempted_at INTEGER NOT NULL,
		status_code  INTEGER NOT NULL,
		error        TEXT    NOT NULL,
		duration_ns  INTEGER NOT NULL,
		response     TEXT    NOT NULL
	)`,
	`CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, id)`,
}

// A version 1 database (registrations without AUTOINCREMENT) is rebuilt on
// Migrate: its registrations keep their ids, secrets and disabled state, their
// deliveries and attempts still join to them, a foreign key declared against
// the table survives the rebuild (foreign keys are off during it and on
// after), and no id, not even a deleted one a delivery still names, is reused.
func TestMigrateV1RebuildsRegistrations(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cropkit.db")
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(1)")
	require.NoError(t, err)
	for _, q := range append(webhookV1,
		`INSERT INTO webhook_registrations (id, owner, url, secret, created_at, disabled_at, disabled_reason) VALUES
			(1, 'alice', 'https://a.example.com/', 'whsec_a', 1000, NULL, ''),
			(2, 'alice', 'https://b.example.com/', 'whsec_b', 2000, 3000, 'HTTP 410 Gone'),
			(4, 'bob',   'https://c.example.com/', 'whsec_c', 4000, NULL, '')`,
		// Delivery 3 belongs to registration 5, deleted before the upgrade.
		`INSERT INTO webhook_deliveries (id, message_id, registration_id, owner, url, body, status, attempts, created_at, next_attempt_at, last_error) VALUES
			(1, 'msg_1', 1, 'alice', 'https://a.example.com/', '{}', 'pending', 1, 1000, 1000, 'HTTP 503'),
			(2, 'msg_2', 4, 'bob', 'https://c.example.com/', '{}', 'delivered', 1, 1000, 1000, ''),
			(3, 'msg_3', 5, 'bob', 'https://d.example.com/', '{}', 'cancelled', 0, 1000, 1000, 'registration deleted')`,
		`INSERT INTO webhook_attempts (id, delivery_id, attempted_at, status_code, error, duration_ns, response) VALUES
			(1, 1, 1000, 503, 'HTTP 503', 5, 'busy'), (2, 2, 1000, 200, '', 5, 'ok')`,
		// A table of the application referencing the registrations: dropping
		// the old table with foreign keys on would cascade into it.
		`CREATE TABLE app_hooks (registration_id INTEGER NOT NULL REFERENCES webhook_registrations(id) ON DELETE CASCADE, note TEXT)`,
		`INSERT INTO app_hooks VALUES (1, 'kept'), (4, 'kept')`,
	) {
		_, err := raw.ExecContext(ctx, q)
		require.NoError(t, err, q)
	}
	require.NoError(t, raw.Close())

	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(1)&_pragma=busy_timeout(10000)")
	require.NoError(t, err)
	defer db.Close()
	db.SetMaxOpenConns(1) // as the server: Migrate must pin and restore the only connection
	for range 2 {         // idempotent
		require.NoError(t, sqlstore.Migrate(ctx, db))
	}

	var ddl string
	require.NoError(t, db.QueryRow(`SELECT sql FROM sqlite_master WHERE name = 'webhook_registrations'`).Scan(&ddl))
	assert.Contains(t, ddl, "AUTOINCREMENT")
	var version, fk int
	require.NoError(t, db.QueryRow(`SELECT version FROM webhook_schema`).Scan(&version))
	assert.Equal(t, 2, version)
	require.NoError(t, db.QueryRow(`PRAGMA foreign_keys`).Scan(&fk))
	assert.Equal(t, 1, fk, "foreign keys are on again")
	var hooks int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM app_hooks`).Scan(&hooks))
	assert.Equal(t, 2, hooks, "the rebuild cascaded nothing")

	s := sqlstore.New(db)
	regs, err := s.List(ctx, "alice")
	require.NoError(t, err)
	require.Len(t, regs, 2)
	assert.Equal(t, int64(1), regs[0].ID)
	assert.Equal(t, "https://a.example.com/", regs[0].URL)
	assert.False(t, regs[0].Disabled)
	assert.Equal(t, int64(2), regs[1].ID)
	assert.True(t, regs[1].Disabled)
	assert.Equal(t, "HTTP 410 Gone", regs[1].DisabledReason)
	var secret string
	require.NoError(t, db.QueryRow(`SELECT secret FROM webhook_registrations WHERE id = 4`).Scan(&secret))
	assert.Equal(t, "whsec_c", secret)

	ds, err := s.Deliveries(ctx, "alice", 0)
	require.NoError(t, err)
	require.Len(t, ds, 1)
	assert.Equal(t, int64(1), ds[0].RegistrationID)
	require.Len(t, ds[0].Attempts, 1)
	assert.Equal(t, 503, ds[0].Attempts[0].StatusCode)
	// The pending delivery still joins to its registration and its secret.
	res, err := s.Claim(ctx, webhook.ClaimRequest{Now: time.UnixMilli(2000), LeaseUntil: time.UnixMilli(9000), Limit: 10})
	require.NoError(t, err)
	require.Len(t, res.Deliveries, 1)
	assert.Equal(t, "msg_1", res.Deliveries[0].MessageID)
	assert.Equal(t, "whsec_a", res.Deliveries[0].Secret)

	// New ids start above 5 (the deleted registration a delivery names).
	n, err := s.Register(ctx, "carol", "https://e.example.com/")
	require.NoError(t, err)
	assert.Equal(t, int64(6), n.ID)
	require.NoError(t, s.Delete(ctx, "carol", n.ID))
	n, err = s.Register(ctx, "carol", "https://e.example.com/")
	require.NoError(t, err)
	assert.Equal(t, int64(7), n.ID)
	// Foreign keys are enforced again: deleting registration 4 cascades.
	require.NoError(t, s.Delete(ctx, "bob", 4))
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM app_hooks`).Scan(&hooks))
	assert.Equal(t, 1, hooks)
}

func TestRegisterListDelete(t *testing.T) {
	forEachBackend(t, func(t *testing.T, bk backend) {
		s, _ := bk.newStore(t)
		ctx := context.Background()
		a, err := s.Register(ctx, "alice", "https://farm.example.com/a")
		require.NoError(t, err)
		assert.True(t, a.Created)
		assert.True(t, strings.HasPrefix(a.Secret, "whsec_"))
		assert.Equal(t, "alice", a.Owner)
		assert.Equal(t, "https://farm.example.com/a", a.URL)

		// Same URL again: no duplicate, secret not shown again.
		again, err := s.Register(ctx, "alice", "https://farm.example.com/a")
		require.NoError(t, err)
		assert.False(t, again.Created)
		assert.Empty(t, again.Secret)
		assert.Equal(t, a.ID, again.ID)

		b, err := s.Register(ctx, "alice", "https://farm.example.com/b")
		require.NoError(t, err)
		assert.True(t, b.Created)
		assert.NotEqual(t, a.Secret, b.Secret)
		bob, err := s.Register(ctx, "bob", "https://farm.example.com/a")
		require.NoError(t, err)
		assert.True(t, bob.Created, "same URL for another owner is another registration")

		list, err := s.List(ctx, "alice")
		require.NoError(t, err)
		require.Len(t, list, 2)
		assert.Equal(t, []string{"https://farm.example.com/a", "https://farm.example.com/b"}, []string{list[0].URL, list[1].URL})
		for _, r := range list {
			assert.Empty(t, r.Secret)
			assert.False(t, r.Disabled)
		}
		js, err := json.Marshal(list[0])
		require.NoError(t, err)
		assert.NotContains(t, string(js), "secret")
		assert.Contains(t, string(js), `"username":"alice"`)

		require.ErrorIs(t, s.Delete(ctx, "bob", a.ID), sqlstore.ErrNotFound, "bob cannot delete alice's hook")
		require.NoError(t, s.Delete(ctx, "alice", a.ID))
		require.ErrorIs(t, s.Delete(ctx, "alice", a.ID), sqlstore.ErrNotFound)
		require.NoError(t, s.DeleteURL(ctx, "alice", "https://farm.example.com/b"))
		require.ErrorIs(t, s.DeleteURL(ctx, "alice", "https://farm.example.com/b"), sqlstore.ErrNotFound)
		list, err = s.List(ctx, "alice")
		require.NoError(t, err)
		assert.Empty(t, list)
		list, err = s.List(ctx, "bob")
		require.NoError(t, err)
		assert.Len(t, list, 1)
	})
}

func TestEnqueueTxFollowsTransaction(t *testing.T) {
	forEachBackend(t, func(t *testing.T, bk backend) {
		s, _ := bk.newStore(t)
		ctx := context.Background()
		for _, u := range []string{"https://a.example.com/h", "https://b.example.com/h"} {
			_, err := s.Register(ctx, "alice", u)
			require.NoError(t, err)
		}
		_, err := s.Register(ctx, "bob", "https://c.example.com/h")
		require.NoError(t, err)

		// Rolled back with the products: nothing is sent.
		tx, err := s.DB.BeginTx(ctx, nil)
		require.NoError(t, err)
		n, err := s.EnqueueTx(ctx, tx, "alice", samplePayload("f1", 0.5))
		require.NoError(t, err)
		assert.Equal(t, 2, n)
		require.NoError(t, tx.Rollback())
		assert.Empty(t, deliveries(t, s, "alice"))

		// Committed: one delivery per registration of the owner, distinct ids, same body.
		tx, err = s.DB.BeginTx(ctx, nil)
		require.NoError(t, err)
		n, err = s.EnqueueTx(ctx, tx, "alice", samplePayload("f1", 0.5))
		require.NoError(t, err)
		require.NoError(t, tx.Commit())
		assert.Equal(t, 2, n)
		ds := deliveries(t, s, "alice")
		require.Len(t, ds, 2)
		want, err := samplePayload("f1", 0.5).Marshal()
		require.NoError(t, err)
		assert.NotEqual(t, ds[0].MessageID, ds[1].MessageID)
		assert.Regexp(t, `^msg_[0-9a-f]{32}$`, ds[0].MessageID)
		for _, d := range ds {
			assert.Equal(t, webhook.StatusPending, d.Status)
			assert.Equal(t, string(want), string(d.Payload))
			assert.Empty(t, d.Attempts)
		}
		assert.Empty(t, deliveries(t, s, "bob"))

		// Invalid payload: error, nothing stored.
		bad := samplePayload("", 0.5)
		_, err = s.Enqueue(ctx, "alice", bad)
		require.Error(t, err)
		assert.Len(t, deliveries(t, s, "alice"), 2)

		// Owner without registrations: nothing to do.
		n, err = s.Enqueue(ctx, "carol", samplePayload("f1", 0.5))
		require.NoError(t, err)
		assert.Equal(t, 0, n)
	})
}

func TestClaimLeasesOnePerRegistration(t *testing.T) {
	forEachBackend(t, func(t *testing.T, bk backend) {
		s, _ := bk.newStore(t)
		ctx := context.Background()
		a, err := s.Register(ctx, "alice", "https://a.example.com/h")
		require.NoError(t, err)
		b, err := s.Register(ctx, "alice", "https://b.example.com/h")
		require.NoError(t, err)
		enqueueN(t, s, "alice", 3)
		now := time.Now()
		lease := now.Add(time.Minute)
		res, err := s.Claim(ctx, webhook.ClaimRequest{Now: now, LeaseUntil: lease, Limit: 10})
		require.NoError(t, err)
		require.Len(t, res.Deliveries, 2, "one per registration")
		assert.ElementsMatch(t, []int64{a.ID, b.ID}, []int64{res.Deliveries[0].RegistrationID, res.Deliveries[1].RegistrationID})
		assert.Equal(t, a.Secret, secretOf(res.Deliveries, a.ID))
		assert.True(t, res.NextDue.IsZero(), "the rest belongs to registrations now in flight")

		// Skipping registrations in flight: the next one of b only.
		res2, err := s.Claim(ctx, webhook.ClaimRequest{Now: now, LeaseUntil: lease, Limit: 10, SkipRegistrations: []int64{a.ID}})
		require.NoError(t, err)
		require.Len(t, res2.Deliveries, 1)
		assert.Equal(t, b.ID, res2.Deliveries[0].RegistrationID)
		assert.NotEqual(t, res.Deliveries[0].ID, res2.Deliveries[0].ID)

		// Claimed rows are leased: invisible until the lease passes.
		res3, err := s.Claim(ctx, webhook.ClaimRequest{Now: now, LeaseUntil: lease, Limit: 10, SkipRegistrations: []int64{a.ID, b.ID}})
		require.NoError(t, err)
		assert.Empty(t, res3.Deliveries)
		assert.True(t, res3.NextDue.IsZero(), "everything left belongs to skipped registrations")
		res3, err = s.Claim(ctx, webhook.ClaimRequest{Now: now, LeaseUntil: lease, Limit: 10, SkipRegistrations: []int64{b.ID}})
		require.NoError(t, err)
		require.Len(t, res3.Deliveries, 1)
		assert.Equal(t, a.ID, res3.Deliveries[0].RegistrationID)
		assert.True(t, res3.NextDue.IsZero(), "a was just claimed and b is skipped")

		// After the lease (a crash mid-attempt), the oldest deliveries come back
		// first, with the same message ids.
		res4, err := s.Claim(ctx, webhook.ClaimRequest{Now: lease.Add(time.Second), LeaseUntil: lease.Add(time.Minute), Limit: 10})
		require.NoError(t, err)
		require.Len(t, res4.Deliveries, 2)
		assert.ElementsMatch(t, []string{res.Deliveries[0].MessageID, res.Deliveries[1].MessageID},
			[]string{res4.Deliveries[0].MessageID, res4.Deliveries[1].MessageID})
	})
}

func secretOf(ds []webhook.Delivery, reg int64) string {
	for _, d := range ds {
		if d.RegistrationID == reg {
			return d.Secret
		}
	}
	return ""
}

func TestDeleteCancelsPending(t *testing.T) {
	forEachBackend(t, func(t *testing.T, bk backend) {
		s, _ := bk.newStore(t)
		ctx := context.Background()
		a, err := s.Register(ctx, "alice", "https://a.example.com/h")
		require.NoError(t, err)
		_, err = s.Enqueue(ctx, "alice", samplePayload("f", 0.5))
		require.NoError(t, err)
		require.NoError(t, s.Delete(ctx, "alice", a.ID))
		ds := deliveries(t, s, "alice")
		require.Len(t, ds, 1)
		assert.Equal(t, webhook.StatusCancelled, ds[0].Status)
		assert.Equal(t, "registration deleted", ds[0].LastError)
		res, err := s.Claim(ctx, webhook.ClaimRequest{Now: time.Now(), LeaseUntil: time.Now().Add(time.Minute), Limit: 10})
		require.NoError(t, err)
		assert.Empty(t, res.Deliveries)
	})
}

func BenchmarkEnqueueTx(b *testing.B) {
	for _, bk := range backends() {
		b.Run(bk.name, func(b *testing.B) {
			s, _ := bk.newStore(b)
			ctx := context.Background()
			for _, u := range []string{"https://a.example.com/h", "https://b.example.com/h"} {
				_, err := s.Register(ctx, "alice", u)
				require.NoError(b, err)
			}
			p := samplePayload("f", 0.5)
			for b.Loop() {
				if _, err := s.Enqueue(ctx, "alice", p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkClaimRecord(b *testing.B) {
	for _, bk := range backends() {
		b.Run(bk.name, func(b *testing.B) {
			s, _ := bk.newStore(b)
			ctx := context.Background()
			_, err := s.Register(ctx, "alice", "https://a.example.com/h")
			require.NoError(b, err)
			p := samplePayload("f", 0.5)
			for range 1000 {
				_, err := s.Enqueue(ctx, "alice", p)
				require.NoError(b, err)
			}
			now := time.Now()
			b.ResetTimer()
			for b.Loop() {
				res, err := s.Claim(ctx, webhook.ClaimRequest{Now: now, LeaseUntil: now.Add(time.Minute), Limit: 8})
				if err != nil {
					b.Fatal(err)
				}
				for _, d := range res.Deliveries {
					// Retry far in the future keeps the table size constant.
					o := webhook.Outcome{Status: webhook.StatusPending, RetryAt: now.Add(time.Hour), Reason: "HTTP 503"}
					if err := s.Record(ctx, d, webhook.Attempt{At: now, StatusCode: 503}, o); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// TestClaimNoOrderAcrossDispatchers pins what Claim's documentation
// promises and what it does not: one delivery per registration per claim,
// but a second dispatcher (not knowing the first's in-flight registrations)
// gets the next delivery of a registration whose oldest is leased, and a
// delivery in backoff does not hold back a newer one.
func TestClaimNoOrderAcrossDispatchers(t *testing.T) {
	forEachBackend(t, func(t *testing.T, bk backend) {
		s, _ := bk.newStore(t)
		ctx := context.Background()
		a, err := s.Register(ctx, "alice", "https://a.example.com/h")
		require.NoError(t, err)
		enqueueN(t, s, "alice", 3)
		now := time.Now()
		lease := now.Add(time.Minute)
		first, err := s.Claim(ctx, webhook.ClaimRequest{Now: now, LeaseUntil: lease, Limit: 10})
		require.NoError(t, err)
		require.Len(t, first.Deliveries, 1, "one per registration per claim")
		second, err := s.Claim(ctx, webhook.ClaimRequest{Now: now, LeaseUntil: lease, Limit: 10})
		require.NoError(t, err)
		require.Len(t, second.Deliveries, 1, "another dispatcher: a second attempt in flight to the same URL")
		assert.Equal(t, a.ID, second.Deliveries[0].RegistrationID)
		assert.Greater(t, second.Deliveries[0].ID, first.Deliveries[0].ID, "the newer one, ahead of the leased older one")
	})
}
