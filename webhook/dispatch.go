package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/cropkit/cropkit/api"
	"github.com/cropkit/cropkit/internal/httpretry"
)

// Dispatcher defaults.
const (
	DefaultTimeout       = 15 * time.Second
	DefaultConcurrency   = 8
	DefaultJitter        = 0.2
	DefaultPollInterval  = 5 * time.Second
	DefaultMaxRetryAfter = 24 * time.Hour
	// responseSnippet is how much of a receiver's reply is kept on the attempt.
	responseSnippet = 512
)

// defaultSchedule is the delay before each retry (after attempt 1, 2, …),
// the Standard Webhooks example schedule cut at 10 h: 8 attempts over ~28 h.
var defaultSchedule = [...]time.Duration{
	5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour,
	5 * time.Hour, 10 * time.Hour, 10 * time.Hour,
}

// DefaultSchedule returns the default retry delays: 5 s, 5 min, 30 min, 2 h,
// 5 h, 10 h, 10 h; after the last one the delivery is given up.
func DefaultSchedule() []time.Duration { return ScaledSchedule(defaultSchedule[0]) }

// ScaledSchedule returns the default schedule with its 5 s first delay
// replaced by base and every later delay scaled alike (base 100ms gives
// 100ms, 6s, 36s, 2m24s, 6m, 12m, 12m). It backs `cropkit serve
// --webhook-retry-base`, so tests can run the real schedule fast.
func ScaledSchedule(base time.Duration) []time.Duration {
	s := make([]time.Duration, len(defaultSchedule))
	for i, d := range defaultSchedule {
		s[i] = time.Duration(float64(d) * float64(base) / float64(defaultSchedule[0]))
	}
	return s
}

// Status is the state of a delivery (api.WebhookStatus).
type Status = api.WebhookStatus

// Delivery states.
const (
	StatusPending   = api.WebhookPending   // waiting for its next attempt
	StatusDelivered = api.WebhookDelivered // a 2xx reply was received
	StatusFailed    = api.WebhookFailed    // given up: schedule exhausted, 410, or address refused
	StatusCancelled = api.WebhookCancelled // its registration was deleted or disabled first
)

// Delivery is one notification to one registered URL, as claimed from the
// store for an attempt.
type Delivery struct {
	ID             int64
	MessageID      string // webhook-id, fixed at enqueue time and repeated on every attempt
	RegistrationID int64
	Owner          string
	URL            string
	Secret         string
	Body           []byte // the exact JSON that is signed and sent
	Attempts       int    // attempts made before this one
	CreatedAt      time.Time
}

// Attempt records one HTTP attempt of a delivery.
type Attempt = api.WebhookAttempt

// Outcome is what an attempt means for its delivery.
type Outcome struct {
	Status  Status    // StatusDelivered, StatusFailed, or StatusPending with RetryAt
	RetryAt time.Time // next attempt when Status is StatusPending
	Reason  string    // why it is not delivered yet, shown to the user
	// DisableRegistration is set on 410 Gone: the receiver asked us to stop,
	// so the registration is disabled and its other pending deliveries cancelled.
	DisableRegistration bool
}

// ClaimRequest asks a Store for due deliveries.
type ClaimRequest struct {
	Now time.Time
	// LeaseUntil is written as the claimed deliveries' next attempt time, so
	// a crash during the attempt retries them once the lease has passed.
	LeaseUntil time.Time
	Limit      int
	// SkipRegistrations have an attempt in flight; at most one delivery per
	// registration is claimed, so one slow endpoint occupies one worker.
	SkipRegistrations []int64
}

// ClaimResult is the answer to a ClaimRequest.
type ClaimResult struct {
	Deliveries []Delivery
	// NextDue is the earliest next attempt of the pending deliveries left
	// (skipped registrations excluded); zero when there is none.
	NextDue time.Time
}

// Store is the durable outbox the Dispatcher works from (webhook/sqlstore).
type Store interface {
	// Claim leases up to Limit due pending deliveries of active registrations.
	Claim(ctx context.Context, req ClaimRequest) (ClaimResult, error)
	// Record stores an attempt and applies its outcome, atomically.
	Record(ctx context.Context, d Delivery, a Attempt, o Outcome) error
}

// Dispatcher delivers the outbox of a Store: a bounded pool of workers,
// one attempt at a time per registration, each attempt limited by Timeout,
// retries on the Schedule with jitter. Delivery is at least once: a crash
// after the receiver answered but before the answer was recorded repeats the
// delivery, with the same webhook-id.
//
// Zero fields take the defaults. A Dispatcher must not be copied after first
// use, and Run must not be called twice at the same time.
type Dispatcher struct {
	Store Store
	// Client sends the requests; nil means NewClient(false, Timeout), which
	// refuses private addresses at connect time.
	Client *http.Client
	// Schedule is the delay before each retry; nil means DefaultSchedule().
	// A delivery is given up after len(Schedule)+1 failed attempts.
	Schedule []time.Duration
	// Timeout bounds one attempt (connect, send, reply); 0 means DefaultTimeout.
	Timeout time.Duration
	// Concurrency is the number of attempts in flight; 0 means DefaultConcurrency.
	Concurrency int
	// Jitter is the fraction by which a retry delay is randomly lengthened or
	// shortened; 0 means DefaultJitter, negative means none.
	Jitter float64
	// Lease is how long a claimed delivery stays invisible to other claims,
	// and so how soon an attempt interrupted by a crash is retried. A value
	// not above Timeout (0 included) means Timeout + 30 s.
	Lease time.Duration
	// PollInterval is the longest wait between looks at the store when
	// nothing calls Notify (enqueues by another process); 0 means DefaultPollInterval.
	PollInterval time.Duration
	// MaxRetryAfter caps the receiver's Retry-After; 0 means DefaultMaxRetryAfter.
	MaxRetryAfter time.Duration
	// UserAgent is sent with every request; "" means "cropkit-webhook/1".
	UserAgent string
	// Now replaces time.Now for the recorded times.
	Now    func() time.Time
	Logger *slog.Logger

	once sync.Once
	wake chan struct{}
}

func (d *Dispatcher) init() { d.once.Do(func() { d.wake = make(chan struct{}, 1) }) }

// Notify wakes Run to look for due deliveries now; call it after committing
// a transaction that enqueued notifications. It never blocks.
func (d *Dispatcher) Notify() {
	d.init()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (d *Dispatcher) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

func (d *Dispatcher) timeout() time.Duration {
	if d.Timeout > 0 {
		return d.Timeout
	}
	return DefaultTimeout
}

func (d *Dispatcher) schedule() []time.Duration {
	if d.Schedule != nil {
		return d.Schedule
	}
	return DefaultSchedule()
}

func (d *Dispatcher) logger() *slog.Logger {
	if d.Logger != nil {
		return d.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// Run delivers until ctx is done. It then stops claiming, lets the attempts
// in flight finish (each is bounded by Timeout) and records them, and returns
// ctx's error. Deliveries still pending resume when Run is called again, in
// this process or after a restart.
func (d *Dispatcher) Run(ctx context.Context) error {
	if d.Store == nil {
		return errors.New("webhook dispatcher: nil Store")
	}
	d.init()
	client := d.Client
	if client == nil {
		client = NewClient(false, d.timeout())
	}
	conc := d.Concurrency
	if conc <= 0 {
		conc = DefaultConcurrency
	}
	lease := d.Lease
	if lease <= d.timeout() {
		// A lease shorter than an attempt would let a second worker claim it.
		lease = d.timeout() + 30*time.Second
	}
	poll := d.PollInterval
	if poll <= 0 {
		poll = DefaultPollInterval
	}
	log := d.logger()

	busy := make(map[int64]bool, conc) // registrations with an attempt in flight
	done := make(chan int64, conc)
	var wg sync.WaitGroup
	defer wg.Wait()

	for ctx.Err() == nil {
		wait := poll
		if free := conc - len(busy); free > 0 {
			now := d.now()
			skip := make([]int64, 0, len(busy))
			for id := range busy {
				skip = append(skip, id)
			}
			res, err := d.Store.Claim(ctx, ClaimRequest{Now: now, LeaseUntil: now.Add(lease), Limit: free, SkipRegistrations: skip})
			switch {
			case err != nil && ctx.Err() == nil:
				log.Error("webhook claim failed", "err", err)
				wait = min(poll, time.Second)
			case err == nil:
				for _, del := range res.Deliveries {
					busy[del.RegistrationID] = true
					wg.Add(1)
					go func() {
						defer wg.Done()
						d.attempt(ctx, client, del, log)
						done <- del.RegistrationID
					}()
				}
				if len(res.Deliveries) == free {
					continue // more may be due right now
				}
				if !res.NextDue.IsZero() {
					wait = min(poll, max(res.NextDue.Sub(now), time.Millisecond))
				}
			}
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-d.wake:
		case <-timer.C:
		case id := <-done:
			delete(busy, id)
		}
		timer.Stop()
	drain:
		for {
			select {
			case id := <-done:
				delete(busy, id)
			default:
				break drain
			}
		}
	}
	return ctx.Err()
}

// attempt sends one delivery and records the result. The request and the
// record outlive a cancelled ctx (bounded by Timeout) so that a shutdown
// does not lose the answer of an attempt already sent.
func (d *Dispatcher) attempt(ctx context.Context, client *http.Client, del Delivery, log *slog.Logger) {
	base := context.WithoutCancel(ctx)
	actx, cancel := context.WithTimeout(base, d.timeout())
	defer cancel()

	start := d.now()
	t0 := time.Now()
	status, header, snippet, err := d.send(actx, client, del, start)
	a := Attempt{At: start, StatusCode: status, Duration: time.Since(t0), Response: snippet}
	o := d.outcome(del.Attempts+1, status, header, err, d.now())
	if o.Status != StatusDelivered {
		a.Error = o.Reason
	}

	rctx, rcancel := context.WithTimeout(base, 30*time.Second)
	defer rcancel()
	if err := d.Store.Record(rctx, del, a, o); err != nil {
		// The lease expires and the delivery is attempted again.
		log.Error("webhook record attempt failed", "delivery", del.ID, "err", err)
		return
	}
	log.Info("webhook attempt", "delivery", del.ID, "message_id", del.MessageID, "url", del.URL,
		"attempt", del.Attempts+1, "status_code", status, "outcome", o.Status, "reason", o.Reason)
}

// send posts the delivery signed at ts and returns the reply's status,
// headers and the start of its body.
func (d *Dispatcher) send(ctx context.Context, client *http.Client, del Delivery, ts time.Time) (int, http.Header, string, error) {
	h, err := Headers(del.Secret, del.MessageID, ts, del.Body)
	if err != nil {
		return 0, nil, "", &permanentError{err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, del.URL, bytes.NewReader(del.Body))
	if err != nil {
		return 0, nil, "", &permanentError{err}
	}
	req.Header = h
	ua := d.UserAgent
	if ua == "" {
		ua = "cropkit-webhook/1"
	}
	req.Header.Set("User-Agent", ua)
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, responseSnippet))
	// Drain a little more so the connection can be reused.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, resp.Header, strings.ToValidUTF8(string(b), "\uFFFD"), nil
}

// permanentError marks a failure that retrying cannot fix.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// outcome applies the delivery rules to the n-th attempt's result:
// 2xx delivered; 410 failed and registration disabled; refused address or
// unusable request failed at once; anything else (3xx, other 4xx, 5xx,
// timeouts, connection errors) retried on the schedule, no sooner than a
// Retry-After, and failed once the schedule is exhausted.
func (d *Dispatcher) outcome(n, status int, h http.Header, err error, now time.Time) Outcome {
	var reason string
	var perm *permanentError
	switch {
	case err != nil && errors.Is(err, ErrForbiddenAddress):
		var ae *AddressError
		if errors.As(err, &ae) {
			return Outcome{Status: StatusFailed, Reason: "refused: " + ae.Error()}
		}
		return Outcome{Status: StatusFailed, Reason: "refused: " + err.Error()}
	case err != nil && errors.As(err, &perm):
		return Outcome{Status: StatusFailed, Reason: err.Error()}
	case err != nil && isTimeout(err):
		reason = fmt.Sprintf("timeout after %s", d.timeout())
	case err != nil:
		reason = err.Error()
	case status >= 200 && status <= 299:
		return Outcome{Status: StatusDelivered}
	case status == http.StatusGone:
		return Outcome{Status: StatusFailed, Reason: "410 Gone: registration disabled", DisableRegistration: true}
	case status >= 300 && status <= 399:
		reason = fmt.Sprintf("HTTP %d %s (redirects are not followed; register the final URL)", status, http.StatusText(status))
		if loc := h.Get("Location"); loc != "" {
			reason += " Location: " + loc
		}
	default:
		reason = fmt.Sprintf("HTTP %d %s", status, http.StatusText(status))
	}
	sched := d.schedule()
	if n > len(sched) {
		return Outcome{Status: StatusFailed, Reason: fmt.Sprintf("gave up after %d attempts: %s", n, reason)}
	}
	delay := d.jitter(sched[n-1])
	if ra, ok := parseRetryAfter(h.Get("Retry-After"), now); ok {
		maxRA := d.MaxRetryAfter
		if maxRA <= 0 {
			maxRA = DefaultMaxRetryAfter
		}
		delay = max(delay, min(ra, maxRA))
	}
	return Outcome{Status: StatusPending, RetryAt: now.Add(delay), Reason: reason}
}

func (d *Dispatcher) jitter(delay time.Duration) time.Duration {
	j := d.Jitter
	if j == 0 {
		j = DefaultJitter
	}
	if j < 0 {
		return delay
	}
	j = min(j, 1)
	return time.Duration(float64(delay) * (1 + j*(2*rand.Float64()-1)))
}

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// parseRetryAfter reads a Retry-After header: delay seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	d, ok := httpretry.ParseRetryAfter(v, now)
	return min(d, DefaultMaxRetryAfter*365), ok
}
