package sqlstore_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/webhook"
	"github.com/cropkit/cropkit/webhook/sqlstore"
)

const wait = 10 * time.Second

func TestDispatcherDeliversSignedPayloadToEveryURL(t *testing.T) {
	forEachBackend(t, func(t *testing.T, bk backend) {
		s, _ := bk.newStore(t)
		ctx := context.Background()
		r1 := newReceiver(t, nil)
		r2 := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) })
		reg1 := register(t, s, "alice", r1)
		reg2 := register(t, s, "alice", r2)
		other := newReceiver(t, nil)
		register(t, s, "bob", other)

		d := fastDispatcher(s)
		start(t, d)
		p := samplePayload("field-7", 0.61)
		p.Data[0].Content.MeanVariation = 22
		n, err := s.Enqueue(ctx, "alice", p)
		require.NoError(t, err)
		require.Equal(t, 2, n)
		d.Notify()

		require.Eventually(t, allFinished(t, s, "alice"), wait, 10*time.Millisecond)
		want, err := p.Marshal()
		require.NoError(t, err)
		for _, c := range []struct {
			rc  *receiver
			reg sqlstore.Registration
		}{{r1, reg1}, {r2, reg2}} {
			hits := c.rc.Hits()
			require.Len(t, hits, 1)
			h := hits[0]
			require.NoError(t, h.VerifyErr)
			assert.Equal(t, string(want), string(h.Body))
			assert.Equal(t, "application/json", h.Header.Get("Content-Type"))
			assert.Equal(t, "cropkit-webhook/1", h.Header.Get("User-Agent"))
			ts, err := strconv.ParseInt(h.Header.Get(webhook.HeaderTimestamp), 10, 64)
			require.NoError(t, err)
			assert.InDelta(t, time.Now().Unix(), ts, 10)
			official, err := standardwebhooks.NewWebhook(c.reg.Secret)
			require.NoError(t, err)
			require.NoError(t, official.Verify(h.Body, h.Header), "the official library accepts our signature")

			var got webhook.Payload
			require.NoError(t, json.Unmarshal(h.Body, &got))
			assert.Equal(t, "field-7", got.Field)
			require.Len(t, got.Data, 1)
			assert.InDelta(t, 22.0, got.Data[0].Content.MeanVariation, 1e-9)
		}
		assert.NotEqual(t, r1.Hits()[0].ID, r2.Hits()[0].ID, "each registration has its own message id")
		assert.Equal(t, 0, other.Count(), "bob's hook gets nothing from alice's fields")

		ds := deliveries(t, s, "alice")
		require.Len(t, ds, 2)
		for _, dl := range ds {
			assert.Equal(t, webhook.StatusDelivered, dl.Status)
			require.Len(t, dl.Attempts, 1)
			assert.Contains(t, []int{200, 202}, dl.Attempts[0].StatusCode)
			assert.Empty(t, dl.Attempts[0].Error)
			assert.False(t, dl.FinishedAt.IsZero())
		}
	})
}

func TestFailTwiceThenSucceed(t *testing.T) {
	forEachBackend(t, func(t *testing.T, bk backend) {
		s, _ := bk.newStore(t)
		rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
			if n <= 2 {
				http.Error(w, "database is down", http.StatusInternalServerError)
			}
		})
		register(t, s, "alice", rc)
		d := fastDispatcher(s)
		start(t, d)
		_, err := s.Enqueue(context.Background(), "alice", samplePayload("f", 0.4))
		require.NoError(t, err)
		d.Notify()
		require.Eventually(t, allFinished(t, s, "alice"), wait, 10*time.Millisecond)
		time.Sleep(200 * time.Millisecond) // nothing more may arrive

		hits := rc.Hits()
		require.Len(t, hits, 3)
		for _, h := range hits {
			require.NoError(t, h.VerifyErr)
			assert.Equal(t, hits[0].ID, h.ID, "every retry carries the same webhook-id")
		}
		assert.GreaterOrEqual(t, hits[1].At.Sub(hits[0].At), 20*time.Millisecond, "backoff between attempts")

		ds := deliveries(t, s, "alice")
		require.Len(t, ds, 1)
		assert.Equal(t, webhook.StatusDelivered, ds[0].Status)
		require.Len(t, ds[0].Attempts, 3)
		codes := []int{ds[0].Attempts[0].StatusCode, ds[0].Attempts[1].StatusCode, ds[0].Attempts[2].StatusCode}
		assert.Equal(t, []int{500, 500, 200}, codes)
		assert.Equal(t, "HTTP 500 Internal Server Error", ds[0].Attempts[0].Error)
		assert.Equal(t, "database is down\n", ds[0].Attempts[0].Response)
		assert.Empty(t, ds[0].Attempts[2].Error)
	})
}

func TestGiveUpAfterSchedule(t *testing.T) {
	forEachBackend(t, func(t *testing.T, bk backend) {
		s, _ := bk.newStore(t)
		rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusBadGateway) })
		register(t, s, "alice", rc)
		d := fastDispatcher(s) // 3 retries
		start(t, d)
		_, err := s.Enqueue(context.Background(), "alice", samplePayload("f", 0.4))
		require.NoError(t, err)
		d.Notify()
		require.Eventually(t, allFinished(t, s, "alice"), wait, 10*time.Millisecond)
		time.Sleep(100 * time.Millisecond)
		assert.Equal(t, 4, rc.Count())
		ds := deliveries(t, s, "alice")
		assert.Equal(t, webhook.StatusFailed, ds[0].Status)
		assert.Equal(t, "gave up after 4 attempts: HTTP 502 Bad Gateway", ds[0].LastError)
		assert.Len(t, ds[0].Attempts, 4)
	})
}

func TestGoneDisablesRegistration(t *testing.T) {
	forEachBackend(t, func(t *testing.T, bk backend) {
		s, _ := bk.newStore(t)
		ctx := context.Background()
		gone := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusGone) })
		ok := newReceiver(t, nil)
		regGone := register(t, s, "alice", gone)
		register(t, s, "alice", ok)
		// Two notifications queued before the dispatcher starts.
		for i := range 2 {
			_, err := s.Enqueue(ctx, "alice", samplePayload("f", float64(i)))
			require.NoError(t, err)
		}
		d := fastDispatcher(s)
		start(t, d)
		require.Eventually(t, allFinished(t, s, "alice"), wait, 10*time.Millisecond)
		assert.Equal(t, 1, gone.Count(), "the second notification is not sent after 410")
		assert.Equal(t, 2, ok.Count())

		regs, err := s.List(ctx, "alice")
		require.NoError(t, err)
		require.Len(t, regs, 2)
		assert.True(t, regs[0].Disabled)
		assert.Equal(t, "410 Gone: registration disabled", regs[0].DisabledReason)
		assert.False(t, regs[1].Disabled)

		var statuses []webhook.Status
		for _, dl := range deliveries(t, s, "alice") {
			if dl.RegistrationID == regGone.ID {
				statuses = append(statuses, dl.Status)
			}
		}
		assert.ElementsMatch(t, []webhook.Status{webhook.StatusFailed, webhook.StatusCancelled}, statuses)

		// New notifications skip the disabled registration...
		n, err := s.Enqueue(ctx, "alice", samplePayload("f", 0.9))
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		// ...until the user registers the URL again.
		again, err := s.Register(ctx, "alice", gone.URL())
		require.NoError(t, err)
		assert.False(t, again.Created)
		assert.False(t, again.Disabled)
		n, err = s.Enqueue(ctx, "alice", samplePayload("f", 0.9))
		require.NoError(t, err)
		assert.Equal(t, 2, n)
	})
}

func TestRedirectIsFailureAndNotFollowed(t *testing.T) {
	forEachBackend(t, func(t *testing.T, bk backend) {
		s, _ := bk.newStore(t)
		var followed atomic.Int32
		target := newReceiver(t, func(int, http.ResponseWriter, *http.Request) { followed.Add(1) })
		rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target.URL(), http.StatusTemporaryRedirect)
		})
		register(t, s, "alice", rc)
		d := fastDispatcher(s)
		d.Schedule = []time.Duration{10 * time.Millisecond}
		start(t, d)
		_, err := s.Enqueue(context.Background(), "alice", samplePayload("f", 0.4))
		require.NoError(t, err)
		d.Notify()
		require.Eventually(t, allFinished(t, s, "alice"), wait, 10*time.Millisecond)
		assert.Equal(t, 2, rc.Count(), "a redirect is a failed attempt and is retried")
		assert.Equal(t, int32(0), followed.Load())
		ds := deliveries(t, s, "alice")
		assert.Equal(t, webhook.StatusFailed, ds[0].Status)
		require.Len(t, ds[0].Attempts, 2)
		assert.Equal(t, 307, ds[0].Attempts[0].StatusCode)
		assert.Contains(t, ds[0].Attempts[0].Error, "redirects are not followed")
		assert.Contains(t, ds[0].Attempts[0].Error, target.URL())
	})
}

func TestRetryAfterHonoured(t *testing.T) {
	forEachBackend(t, func(t *testing.T, bk backend) {
		s, _ := bk.newStore(t)
		rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
			if n == 1 {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
			}
		})
		register(t, s, "alice", rc)
		d := fastDispatcher(s) // backoff 20ms, Retry-After 1s wins
		start(t, d)
		_, err := s.Enqueue(context.Background(), "alice", samplePayload("f", 0.4))
		require.NoError(t, err)
		d.Notify()
		require.Eventually(t, allFinished(t, s, "alice"), wait, 10*time.Millisecond)
		hits := rc.Hits()
		require.Len(t, hits, 2)
		gap := hits[1].At.Sub(hits[0].At)
		assert.GreaterOrEqual(t, gap, 990*time.Millisecond)
		assert.Less(t, gap, 3*time.Second)
	})
}

// A receiver that never answers costs one worker for Timeout; the other
// receiver is served at once.
func TestHangingReceiverDoesNotDelayOthers(t *testing.T) {
	forEachBackend(t, func(t *testing.T, bk backend) {
		s, _ := bk.newStore(t)
		release := make(chan struct{})
		hang := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		})
		defer close(release)
		fast := newReceiver(t, nil)
		register(t, s, "alice", hang) // registered first, so claimed first
		register(t, s, "alice", fast)
		d := fastDispatcher(s)
		d.Timeout = 2 * time.Second
		d.Client = webhook.NewClient(true, d.Timeout)
		d.Concurrency = 2
		start(t, d)

		t0 := time.Now()
		for i := range 3 {
			_, err := s.Enqueue(context.Background(), "alice", samplePayload("f", float64(i)/10))
			require.NoError(t, err)
		}
		d.Notify()
		require.Eventually(t, func() bool { return fast.Count() == 3 }, wait, 5*time.Millisecond)
		elapsed := time.Since(t0)
		t.Logf("fast receiver got 3 notifications in %s while the other hangs", elapsed)
		assert.Less(t, elapsed, time.Second, "not delayed by the hanging receiver's 2 s timeout")
		assert.Equal(t, 1, hang.Count(), "one attempt at a time per registration")

		// The hanging attempt is recorded as a timeout and retried.
		require.Eventually(t, func() bool {
			for _, dl := range deliveries(t, s, "alice") {
				if len(dl.Attempts) > 0 && dl.Attempts[0].Error == "timeout after 2s" {
					return true
				}
			}
			return false
		}, wait, 20*time.Millisecond)
	})
}

func TestConcurrencyBound(t *testing.T) {
	forEachBackend(t, func(t *testing.T, bk backend) {
		s, _ := bk.newStore(t)
		var inFlight, peak atomic.Int32
		slow := func(n int, w http.ResponseWriter, r *http.Request) {
			v := inFlight.Add(1)
			for {
				p := peak.Load()
				if v <= p || peak.CompareAndSwap(p, v) {
					break
				}
			}
			time.Sleep(100 * time.Millisecond)
			inFlight.Add(-1)
		}
		var rcs []*receiver
		for range 5 {
			rc := newReceiver(t, slow)
			register(t, s, "alice", rc)
			rcs = append(rcs, rc)
		}
		d := fastDispatcher(s)
		d.Concurrency = 2
		start(t, d)
		for i := range 2 {
			_, err := s.Enqueue(context.Background(), "alice", samplePayload("f", float64(i)/10))
			require.NoError(t, err)
		}
		d.Notify()
		require.Eventually(t, allFinished(t, s, "alice"), wait, 10*time.Millisecond)
		assert.Equal(t, int32(2), peak.Load())
		for _, rc := range rcs {
			assert.Equal(t, 2, rc.Count())
		}
	})
}

// A lost acknowledgement (the receiver got the request but the answer never
// came back) is the one case of a repeated delivery: same webhook-id.
func TestLostAckRepeatsSameID(t *testing.T) {
	forEachBackend(t, func(t *testing.T, bk backend) {
		s, _ := bk.newStore(t)
		rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
			if n == 1 {
				<-r.Context().Done() // processed, but the answer is lost
			}
		})
		register(t, s, "alice", rc)
		d := fastDispatcher(s)
		d.Timeout = 300 * time.Millisecond
		d.Client = webhook.NewClient(true, d.Timeout)
		start(t, d)
		_, err := s.Enqueue(context.Background(), "alice", samplePayload("f", 0.4))
		require.NoError(t, err)
		d.Notify()
		require.Eventually(t, allFinished(t, s, "alice"), wait, 10*time.Millisecond)
		hits := rc.Hits()
		require.Len(t, hits, 2)
		assert.Equal(t, hits[0].ID, hits[1].ID)
		ds := deliveries(t, s, "alice")
		assert.Equal(t, webhook.StatusDelivered, ds[0].Status)
		assert.Equal(t, "timeout after 300ms", ds[0].Attempts[0].Error)
	})
}

// Stop with deliveries pending (one retrying, some never tried, one claimed
// by a process that then crashed), reopen the same database: every
// notification arrives and nothing acknowledged is sent again.
func TestRestartResumesPending(t *testing.T) {
	forEachBackend(t, func(t *testing.T, bk backend) {
		path := bk.newDB(t)
		ctx := context.Background()
		var failFirst atomic.Bool
		failFirst.Store(true)
		a := newReceiver(t, nil)
		b := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
			if failFirst.CompareAndSwap(true, false) {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		})

		// Run 1: P1 reaches a, b answers 503 and its retry is 400ms away.
		db1 := bk.openDB(t, path)
		s1 := bk.store(db1)
		register(t, s1, "alice", a)
		register(t, s1, "alice", b)
		d1 := fastDispatcher(s1)
		d1.Schedule = []time.Duration{400 * time.Millisecond}
		stop1 := start(t, d1)
		_, err := s1.Enqueue(ctx, "alice", samplePayload("p1", 0.1))
		require.NoError(t, err)
		d1.Notify()
		require.Eventually(t, func() bool { return a.Count() == 1 && b.Count() == 1 }, wait, 5*time.Millisecond)
		require.Eventually(t, func() bool {
			n := 0
			for _, dl := range deliveries(t, s1, "alice") {
				n += len(dl.Attempts)
			}
			return n == 2
		}, wait, 5*time.Millisecond)
		stop1()

		// While stopped: P2 is committed with the products (outbox rows only).
		_, err = s1.Enqueue(ctx, "alice", samplePayload("p2", 0.2))
		require.NoError(t, err)
		// A process claims P2 for a and crashes before sending: only the lease remains.
		now := time.Now()
		res, err := s1.Claim(ctx, webhook.ClaimRequest{Now: now, LeaseUntil: now.Add(300 * time.Millisecond), Limit: 1})
		require.NoError(t, err)
		require.Len(t, res.Deliveries, 1)
		pending := 0
		for _, dl := range deliveries(t, s1, "alice") {
			if dl.Status == webhook.StatusPending {
				pending++
			}
		}
		require.Equal(t, 3, pending, "P1 to b, P2 to a and b")
		require.NoError(t, db1.Close())
		assert.Equal(t, 1, a.Count())

		// Run 2 on the same file.
		db2 := bk.openDB(t, path)
		defer db2.Close()
		s2 := bk.store(db2)
		d2 := fastDispatcher(s2)
		d2.Schedule = []time.Duration{400 * time.Millisecond}
		start(t, d2)
		require.Eventually(t, allFinished(t, s2, "alice"), wait, 10*time.Millisecond)
		time.Sleep(600 * time.Millisecond) // past every lease and retry: nothing more arrives

		count := func(rc *receiver) map[string]int {
			m := map[string]int{}
			for _, h := range rc.Hits() {
				require.NoError(t, h.VerifyErr)
				var p webhook.Payload
				require.NoError(t, json.Unmarshal(h.Body, &p))
				m[p.Field+" "+h.ID]++
			}
			return m
		}
		ca, cb := count(a), count(b)
		require.Len(t, ca, 2, "a got P1 and P2")
		for k, n := range ca {
			assert.Equal(t, 1, n, "a received %s once", k)
		}
		require.Len(t, cb, 2, "b got P1 and P2, each under one id")
		for k, n := range cb {
			if strings.HasPrefix(k, "p1 ") {
				assert.Equal(t, 2, n, "b got P1 twice: 503, then the retry after restart")
			} else {
				assert.Equal(t, 1, n)
			}
		}
		for _, dl := range deliveries(t, s2, "alice") {
			assert.Equal(t, webhook.StatusDelivered, dl.Status)
		}
	})
}

// A host name that resolves to 127.0.0.1 passes registration but the
// connect-time guard refuses it; the refusal is recorded and not retried.
func TestResolvedLoopbackRefusedAtDelivery(t *testing.T) {
	forEachBackend(t, func(t *testing.T, bk backend) {
		s, _ := bk.newStore(t)
		ctx := context.Background()
		rc := newReceiver(t, nil)
		u := strings.Replace(rc.URL(), "127.0.0.1", "localhost", 1)
		require.NoError(t, webhook.ValidateURL(u, false))
		_, err := s.Register(ctx, "alice", u)
		require.NoError(t, err)

		d := fastDispatcher(s)
		d.Client = nil // the default client: private addresses refused
		start(t, d)
		_, err = s.Enqueue(ctx, "alice", samplePayload("f", 0.4))
		require.NoError(t, err)
		d.Notify()
		require.Eventually(t, allFinished(t, s, "alice"), wait, 10*time.Millisecond)
		assert.Equal(t, 0, rc.Count())
		ds := deliveries(t, s, "alice")
		require.Len(t, ds, 1)
		assert.Equal(t, webhook.StatusFailed, ds[0].Status)
		require.Len(t, ds[0].Attempts, 1)
		assert.Contains(t, ds[0].Attempts[0].Error, "refused")
		assert.Contains(t, ds[0].Attempts[0].Error, "loopback address")
		assert.Equal(t, 0, ds[0].Attempts[0].StatusCode)
	})
}

// BenchmarkDispatch measures end-to-end delivery (claim, sign, POST to a
// loopback receiver, record) of batches of 16 notifications to 4 registrations.
func BenchmarkDispatch(b *testing.B) {
	for _, bk := range backends() {
		b.Run(bk.name, func(b *testing.B) {
			s, _ := bk.newStore(b)
			ctx := context.Background()
			var got atomic.Int64
			for range 4 {
				register(b, s, "alice", newReceiver(b, func(int, http.ResponseWriter, *http.Request) { got.Add(1) }))
			}
			d := fastDispatcher(s)
			start(b, d)
			p := samplePayload("f", 0.5)
			want := int64(0)
			for b.Loop() {
				for range 16 {
					if _, err := s.Enqueue(ctx, "alice", p); err != nil {
						b.Fatal(err)
					}
				}
				want += 64
				d.Notify()
				for got.Load() < want {
					time.Sleep(100 * time.Microsecond)
				}
			}
			b.ReportMetric(float64(b.Elapsed())/float64(64*b.N), "ns/delivery")
		})
	}
}
