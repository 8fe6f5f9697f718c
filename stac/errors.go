package stac

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// ErrUnavailable wraps the last error of a request that still failed after
// the retries (connection refused, timeouts, 429 and 5xx answers): the
// catalogue is down or overloaded, try again later.
var ErrUnavailable = errors.New("stac: catalogue unavailable")

// ErrTooLarge is wrapped by the error of an answer over the document size
// limit (32 MiB); it is not retried.
var ErrTooLarge = errors.New("catalogue answer too large")

// ErrNextLinkCycle is wrapped by the error of a search whose next links
// lead back to a page already read.
var ErrNextLinkCycle = errors.New("catalogue next links form a cycle")

// HTTPError is a non-success answer of a catalogue.
type HTTPError struct {
	Method string
	URL    string
	Status int
	// Body is the start of the answer's body (at most 4 KiB), for messages.
	Body string
	// RetryAfter is the answer's Retry-After delay (0 when absent).
	RetryAfter time.Duration
}

func (e *HTTPError) Error() string {
	ra := ""
	if e.RetryAfter > 0 {
		ra = fmt.Sprintf(" (Retry-After %v)", e.RetryAfter)
	}
	return fmt.Sprintf("stac: catalogue answered %s %s: HTTP %d %s%s: %s", e.Method, e.URL, e.Status, http.StatusText(e.Status), ra, e.Body)
}

// retryable: rate limited or a server-side failure that may pass.
func (e *HTTPError) retryable() bool {
	return e.Status == http.StatusTooManyRequests || e.Status == http.StatusRequestTimeout || e.Status >= 500
}
