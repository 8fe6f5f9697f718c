package stac

import (
	"errors"
	"fmt"
	"net/http"
)

// ErrUnavailable wraps the last error of a request that still failed after
// the retries (connection refused, timeouts, 429 and 5xx answers): the
// catalogue is down or overloaded, try again later.
var ErrUnavailable = errors.New("stac: catalogue unavailable")

// HTTPError is a non-success answer of a catalogue.
type HTTPError struct {
	Method string
	URL    string
	Status int
	// Body is the start of the answer's body (at most 4 KiB), for messages.
	Body string
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("stac: %s %s: HTTP %d %s: %s", e.Method, e.URL, e.Status, http.StatusText(e.Status), e.Body)
}

// retryable: rate limited or a server-side failure that may pass.
func (e *HTTPError) retryable() bool {
	return e.Status == http.StatusTooManyRequests || e.Status == http.StatusRequestTimeout || e.Status >= 500
}
