package pgstore_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/webhook"
	"github.com/cropkit/cropkit/webhook/pgstore"
	"github.com/cropkit/cropkit/webhook/sqlstore"
)

func TestMigrateIdempotent(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	require.NoError(t, pgstore.Migrate(ctx, s.DB))
	require.NoError(t, pgstore.Migrate(ctx, s.DB))
	var tables []string
	rows, err := s.DB.Query(`SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`)
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var name string
		require.NoError(t, rows.Scan(&name))
		tables = append(tables, name)
	}
	assert.Equal(t, []string{"cropkit_schema", "webhook_attempts", "webhook_deliveries", "webhook_registrations"}, tables)
	var n int
	require.NoError(t, s.DB.QueryRow(`SELECT version FROM cropkit_schema WHERE component = 'webhook'`).Scan(&n))
	assert.Equal(t, 1, n)
}

// A deleted registration's id is never handed out again, even for the same URL.
func TestRegistrationIDsNotReused(t *testing.T) {
	s, _ := newStore(t)
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
}

func TestRegisterListDelete(t *testing.T) {
	s, _ := newStore(t)
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
}

func TestEnqueueTxFollowsTransaction(t *testing.T) {
	s, _ := newStore(t)
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
}

func TestClaimLeasesOnePerRegistration(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	a, err := s.Register(ctx, "alice", "https://a.example.com/h")
	require.NoError(t, err)
	b, err := s.Register(ctx, "alice", "https://b.example.com/h")
	require.NoError(t, err)
	for i := range 3 {
		_, err := s.Enqueue(ctx, "alice", samplePayload("f", float64(i)/10))
		require.NoError(t, err)
	}
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
	s, _ := newStore(t)
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
}

func BenchmarkEnqueueTx(b *testing.B) {
	s, _ := newStore(b)
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
}

func BenchmarkClaimRecord(b *testing.B) {
	s, _ := newStore(b)
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
}

// TestClaimNoOrderAcrossDispatchers pins what Claim's documentation
// promises and what it does not: one delivery per registration per claim,
// but a second dispatcher (not knowing the first's in-flight registrations)
// gets the next delivery of a registration whose oldest is leased, and a
// delivery in backoff does not hold back a newer one.
func TestClaimNoOrderAcrossDispatchers(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	a, err := s.Register(ctx, "alice", "https://a.example.com/h")
	require.NoError(t, err)
	for i := range 3 {
		_, err := s.Enqueue(ctx, "alice", samplePayload("f", float64(i)/10))
		require.NoError(t, err)
	}
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
}
