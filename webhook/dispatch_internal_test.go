package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaultAndScaledSchedule(t *testing.T) {
	assert.Equal(t, []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}, DefaultSchedule())
	assert.Equal(t, []time.Duration{100 * time.Millisecond, 6 * time.Second, 36 * time.Second, 144 * time.Second, 6 * time.Minute, 12 * time.Minute, 12 * time.Minute}, ScaledSchedule(100*time.Millisecond))
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestOutcome(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	d := &Dispatcher{Schedule: []time.Duration{time.Second, time.Minute}, Jitter: -1, Timeout: 2 * time.Second}
	hdr := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &AddressError{Addr: netip.MustParseAddr("127.0.0.1"), Reason: "loopback", Purpose: "webhook"}}
	tests := []struct {
		name    string
		n       int
		status  int
		h       http.Header
		err     error
		want    Status
		retryAt time.Time
		reason  string
		disable bool
	}{
		{name: "200", n: 1, status: 200, want: StatusDelivered},
		{name: "204", n: 3, status: 204, want: StatusDelivered},
		{name: "299", n: 1, status: 299, want: StatusDelivered},
		{name: "500 first", n: 1, status: 500, want: StatusPending, retryAt: now.Add(time.Second), reason: "HTTP 500 Internal Server Error"},
		{name: "503 second", n: 2, status: 503, want: StatusPending, retryAt: now.Add(time.Minute), reason: "HTTP 503 Service Unavailable"},
		{name: "500 after schedule", n: 3, status: 500, want: StatusFailed, reason: "gave up after 3 attempts: HTTP 500 Internal Server Error"},
		{name: "429 Retry-After seconds", n: 1, status: 429, h: hdr("Retry-After", "30"), want: StatusPending, retryAt: now.Add(30 * time.Second), reason: "HTTP 429 Too Many Requests"},
		{name: "503 Retry-After date", n: 1, status: 503, h: hdr("Retry-After", now.Add(90*time.Second).Format(http.TimeFormat)), want: StatusPending, retryAt: now.Add(90 * time.Second), reason: "HTTP 503 Service Unavailable"},
		{name: "Retry-After shorter than backoff", n: 2, status: 429, h: hdr("Retry-After", "1"), want: StatusPending, retryAt: now.Add(time.Minute), reason: "HTTP 429 Too Many Requests"},
		{name: "Retry-After capped", n: 1, status: 429, h: hdr("Retry-After", "99999999"), want: StatusPending, retryAt: now.Add(DefaultMaxRetryAfter), reason: "HTTP 429 Too Many Requests"},
		{name: "Retry-After garbage", n: 1, status: 503, h: hdr("Retry-After", "soon"), want: StatusPending, retryAt: now.Add(time.Second), reason: "HTTP 503 Service Unavailable"},
		{name: "301 is a failure", n: 1, status: 301, h: hdr("Location", "https://elsewhere.example/"), want: StatusPending, retryAt: now.Add(time.Second),
			reason: "HTTP 301 Moved Permanently (redirects are not followed; register the final URL) Location: https://elsewhere.example/"},
		{name: "404 retried", n: 1, status: 404, want: StatusPending, retryAt: now.Add(time.Second), reason: "HTTP 404 Not Found"},
		{name: "410 disables", n: 1, status: 410, want: StatusFailed, reason: "410 Gone: registration disabled", disable: true},
		{name: "timeout", n: 1, err: fmt.Errorf("post: %w", context.DeadlineExceeded), want: StatusPending, retryAt: now.Add(time.Second), reason: "timeout after 2s"},
		{name: "net timeout", n: 2, err: &net.OpError{Op: "read", Err: timeoutErr{}}, want: StatusPending, retryAt: now.Add(time.Minute), reason: "timeout after 2s"},
		{name: "connection refused", n: 1, err: errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), want: StatusPending, retryAt: now.Add(time.Second), reason: "dial tcp 127.0.0.1:1: connect: connection refused"},
		{name: "ssrf refused", n: 1, err: refused, want: StatusFailed, reason: "refused: webhook address 127.0.0.1 refused: loopback address"},
		{name: "bad secret", n: 1, err: &permanentError{ErrInvalidSecret}, want: StatusFailed, reason: "invalid webhook secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.h
			if h == nil {
				h = http.Header{}
			}
			o := d.outcome(tt.n, tt.status, h, tt.err, now)
			assert.Equal(t, tt.want, o.Status)
			assert.Equal(t, tt.reason, o.Reason)
			assert.Equal(t, tt.disable, o.DisableRegistration)
			if tt.want == StatusPending {
				assert.Equal(t, tt.retryAt, o.RetryAt)
			}
		})
	}
}

func TestJitter(t *testing.T) {
	d := &Dispatcher{Jitter: 0.25}
	seen := map[time.Duration]bool{}
	for range 1000 {
		j := d.jitter(time.Second)
		require.GreaterOrEqual(t, j, 750*time.Millisecond)
		require.LessOrEqual(t, j, 1250*time.Millisecond)
		seen[j] = true
	}
	assert.Greater(t, len(seen), 100, "jitter must vary")
	assert.Equal(t, time.Second, (&Dispatcher{Jitter: -1}).jitter(time.Second))
	// Default jitter is 20 %.
	for range 100 {
		j := (&Dispatcher{}).jitter(time.Second)
		require.InDelta(t, float64(time.Second), float64(j), 0.2*float64(time.Second))
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{"120", 2 * time.Minute, true},
		{" 7 ", 7 * time.Second, true},
		{"-3", 0, false},
		{now.Add(time.Hour).Format(http.TimeFormat), time.Hour, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{"tomorrow", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseRetryAfter(tt.in, now)
		assert.Equal(t, tt.ok, ok, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
	}
}
