package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/cropkit/cropkit/api"
	"github.com/cropkit/cropkit/archive"
)

// Error is an API error: an HTTP status with a stable machine code and a
// human message. Every error response of the server has the body
// {"error":{"code":"…","message":"…"}}.
type Error struct {
	Status  int
	Code    string
	Message string
	// RetryAfter, in seconds, sets the Retry-After header when positive (503s).
	RetryAfter int
}

func (e *Error) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

func badRequest(format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Code: api.CodeBadRequest, Message: fmt.Sprintf(format, args...)}
}

func forbidden(format string, args ...any) *Error {
	return &Error{Status: http.StatusForbidden, Code: api.CodeForbidden, Message: fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) *Error {
	return &Error{Status: http.StatusNotFound, Code: api.CodeNotFound, Message: fmt.Sprintf(format, args...)}
}

// unavailable is a 503 asking the client to retry in a second.
func unavailable(format string, args ...any) *Error {
	return &Error{Status: http.StatusServiceUnavailable, Code: api.CodeUnavailable, Message: fmt.Sprintf(format, args...), RetryAfter: 1}
}

// fieldNotFound is the answer for a missing field and for another user's field alike.
func fieldNotFound(name string) *Error {
	return notFound("field %q not found", name)
}

// writeError answers with the JSON error shape.
func writeError(w http.ResponseWriter, e *Error) {
	h := w.Header()
	for _, k := range []string{"Content-Disposition", "X-Image-Date", "Content-Length"} {
		h.Del(k)
	}
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	if e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	w.WriteHeader(e.Status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(api.ErrorBody{Error: api.ErrorDetail{Code: e.Code, Message: e.Message}})
}

// kindStatus is the one table from the core's error kinds to the API's
// statuses and codes.
var kindStatus = []struct {
	kind   error
	status int
	code   string
}{
	{archive.ErrInvalidGeometry, http.StatusBadRequest, api.CodeInvalidGeometry},
	{archive.ErrInvalid, http.StatusBadRequest, api.CodeBadRequest},
	{archive.ErrQuota, http.StatusBadRequest, api.CodeBadRequest},
	{archive.ErrUnauthenticated, http.StatusForbidden, api.CodeUnauthorized},
	{archive.ErrBadPassword, http.StatusForbidden, api.CodeUnauthorized},
	{archive.ErrForbidden, http.StatusForbidden, api.CodeForbidden},
	{archive.ErrNoImagery, http.StatusNotFound, api.CodeNoImagery},
	{archive.ErrNotFound, http.StatusNotFound, api.CodeNotFound},
	{archive.ErrExists, http.StatusConflict, api.CodeConflict},
	{archive.ErrConflict, http.StatusConflict, api.CodeConflict},
	{archive.ErrRateLimited, http.StatusTooManyRequests, api.CodeRateLimited},
	{archive.ErrBusy, http.StatusServiceUnavailable, api.CodeUnavailable},
}

// asAPIError maps err to the error answered: an *Error as is, a core error
// by its kind (kindStatus), a body over its limit to 413, anything else to
// a 500 whose details stay in the log.
func asAPIError(err error) (e *Error, internal bool) {
	if errors.As(err, &e) {
		return e, false
	}
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return &Error{Status: http.StatusRequestEntityTooLarge, Code: api.CodeTooLarge,
			Message: fmt.Sprintf("request body larger than %d bytes", tooBig.Limit)}, false
	}
	for _, k := range kindStatus {
		if errors.Is(err, k.kind) {
			e := &Error{Status: k.status, Code: k.code, Message: err.Error()}
			var ae *archive.Error
			if errors.As(err, &ae) {
				e.Message, e.RetryAfter = ae.Msg, ae.RetryAfter
			}
			if k.kind == archive.ErrBusy {
				e.RetryAfter = max(e.RetryAfter, 1)
				if ae == nil {
					// Another process held the database's write lock past
					// the busy timeout: transient, not a server fault.
					e.Message = "the database is busy; retry shortly"
				}
			}
			if k.kind == archive.ErrRateLimited {
				e.RetryAfter = max(e.RetryAfter, 1)
			}
			return e, false
		}
	}
	if errors.Is(err, context.Canceled) {
		// The client went away: nothing to answer, nothing to log as a fault.
		return &Error{Status: StatusClientClosed, Code: api.CodeCanceled, Message: "request canceled"}, false
	}
	return &Error{Status: http.StatusInternalServerError, Code: api.CodeInternal, Message: "internal error"}, true
}

// StatusClientClosed is logged for requests whose client went away (nginx's 499).
const StatusClientClosed = 499

func isNotFound(err error) bool { return errors.Is(err, archive.ErrNotFound) }
