package server

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/cropkit/cropkit/api"
)

// slots bound a kind of work (heavy operations, large bodies): at most n at
// once, and one account at most half of them (at least one), so one account
// cannot starve the others. A request that finds none waits up to a bound,
// then gets 503 with Retry-After.
type slots struct {
	n, perAccount int
	mu            sync.Mutex
	inUse         int
	byAccount     map[int64]int
	freed         chan struct{} // closed and replaced whenever a slot frees
}

func newSlots(n int) *slots {
	return &slots{n: n, perAccount: max(1, n/2), byAccount: map[int64]int{}, freed: make(chan struct{})}
}

func (s *slots) tryAcquire(account int64) (bool, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inUse < s.n && s.byAccount[account] < s.perAccount {
		s.inUse++
		s.byAccount[account]++
		return true, nil
	}
	return false, s.freed
}

func (s *slots) release(account int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inUse--
	if s.byAccount[account]--; s.byAccount[account] <= 0 {
		delete(s.byAccount, account)
	}
	close(s.freed)
	s.freed = make(chan struct{})
}

// acquire takes a slot for account, waiting up to wait.
func (s *slots) acquire(ctx context.Context, account int64, wait time.Duration) (func(), error) {
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		ok, freed := s.tryAcquire(account)
		if ok {
			return func() { s.release(account) }, nil
		}
		select {
		case <-freed:
		case <-t.C:
			return nil, &Error{Status: http.StatusServiceUnavailable, Code: api.CodeUnavailable,
				Message: "too many heavy requests running (at most half of them per account); retry shortly", RetryAfter: 2}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// rateLimiter counts events per key in fixed windows (failed logins per
// account and per client address).
type rateLimiter struct {
	limit  int
	window time.Duration
	mu     sync.Mutex
	counts map[string]*rateWindow
}

type rateWindow struct {
	start time.Time
	n     int
}

func newRateLimiter(limit int, window time.Duration) *rateLimiter {
	return &rateLimiter{limit: limit, window: window, counts: map[string]*rateWindow{}}
}

// blocked reports whether key reached max events in its window, and when it may retry.
func (l *rateLimiter) blocked(key string, max int, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w, ok := l.counts[key]
	if !ok || now.Sub(w.start) >= l.window {
		return false, 0
	}
	if w.n >= max {
		return true, w.start.Add(l.window).Sub(now)
	}
	return false, 0
}

// add counts one event for key.
func (l *rateLimiter) add(key string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.counts) > 100000 { // bound memory: drop expired windows
		for k, w := range l.counts {
			if now.Sub(w.start) >= l.window {
				delete(l.counts, k)
			}
		}
	}
	w, ok := l.counts[key]
	if !ok || now.Sub(w.start) >= l.window {
		l.counts[key] = &rateWindow{start: now, n: 1}
		return
	}
	w.n++
}
