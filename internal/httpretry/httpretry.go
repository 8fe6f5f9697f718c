// Package httpretry reads what an HTTP server says about retrying: the one
// Retry-After parser of the outbound clients (catalogues, weather APIs,
// webhook receivers).
package httpretry

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxRetryAfter bounds a delay in seconds so that a huge value cannot
// overflow time.Duration; callers cap it further to their own limits.
const maxRetryAfter = 365 * 24 * time.Hour

// ParseRetryAfter reads a Retry-After header value: delay seconds or an HTTP
// date (relative to now; a past date is 0). ok is false when v is empty,
// negative or neither form.
func ParseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		if secs > int64(maxRetryAfter/time.Second) {
			return maxRetryAfter, true
		}
		return time.Duration(secs) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}
