package sqlstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/webhook"
	"github.com/cropkit/cropkit/webhook/sqlstore"
)

func TestDialectRebind(t *testing.T) {
	for _, c := range []struct {
		d    sqlstore.Dialect
		q    string
		want string
	}{
		{sqlstore.SQLite, `SELECT a FROM t WHERE b = ? AND c IN (?, ?)`, `SELECT a FROM t WHERE b = ? AND c IN (?, ?)`},
		{sqlstore.Postgres, `SELECT a FROM t WHERE b = ? AND c IN (?, ?)`, `SELECT a FROM t WHERE b = $1 AND c IN ($2, $3)`},
		{sqlstore.Postgres, `SELECT 'é' || ?`, `SELECT 'é' || $1`},
		{sqlstore.Postgres, `SELECT 1`, `SELECT 1`},
	} {
		t.Run(c.d.String()+" "+c.q, func(t *testing.T) {
			assert.Equal(t, c.want, c.d.Rebind(c.q))
		})
	}
	assert.Equal(t, "Dialect(7)", sqlstore.Dialect(7).String())
}

// Concurrent registrations of one owner never exceed the limit together:
// SQLite's single writer serialises them, PostgreSQL needs the owner lock.
func TestRegisterLimitConcurrent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, bk backend) {
		s, _ := bk.newStore(t)
		ctx := context.Background()
		const max, tries = 3, 8
		errs := make([]error, tries)
		var wg sync.WaitGroup
		for i := range tries {
			wg.Go(func() {
				_, errs[i] = s.RegisterLimit(ctx, "alice", fmt.Sprintf("https://farm.example.com/%d", i), max)
			})
		}
		wg.Wait()
		ok, limited := 0, 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case assert.ErrorIs(t, err, sqlstore.ErrLimit):
				limited++
			}
		}
		assert.Equal(t, max, ok)
		assert.Equal(t, tries-max, limited)
		regs, err := s.List(ctx, "alice")
		require.NoError(t, err)
		assert.Len(t, regs, max)
		// A URL already registered is accepted again at the limit.
		again, err := s.RegisterLimit(ctx, "alice", regs[0].URL, max)
		require.NoError(t, err)
		assert.False(t, again.Created)
		assert.Equal(t, regs[0].ID, again.ID)
	})
}

// Dispatchers claiming at the same time never lease the same delivery
// (PostgreSQL: FOR UPDATE SKIP LOCKED; SQLite: one writer at a time).
func TestConcurrentClaimsAreDisjoint(t *testing.T) {
	forEachBackend(t, func(t *testing.T, bk backend) {
		s, _ := bk.newStore(t)
		ctx := context.Background()
		const regs, rounds, claimers = 12, 3, 6
		for i := range regs {
			_, err := s.Register(ctx, "alice", fmt.Sprintf("https://farm.example.com/%d", i))
			require.NoError(t, err)
		}
		enqueueN(t, s, "alice", rounds)
		now := time.Now()
		var (
			mu      sync.Mutex
			claimed = map[int64]int{}
			wg      sync.WaitGroup
		)
		for range claimers {
			wg.Go(func() {
				for range 2 * regs * rounds {
					res, err := s.Claim(ctx, webhook.ClaimRequest{Now: now, LeaseUntil: now.Add(time.Hour), Limit: 2})
					if !assert.NoError(t, err) {
						return
					}
					mu.Lock()
					for _, d := range res.Deliveries {
						claimed[d.ID]++
					}
					done := len(claimed) == regs*rounds
					mu.Unlock()
					if done {
						return
					}
				}
			})
		}
		wg.Wait()
		assert.Len(t, claimed, regs*rounds, "every delivery claimed")
		for id, n := range claimed {
			assert.Equal(t, 1, n, "delivery %d claimed once", id)
		}
	})
}
