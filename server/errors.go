package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
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

// The error codes of the API.
const (
	CodeBadRequest       = "bad_request"
	CodeInvalidGeometry  = "invalid_geometry"
	CodeUnauthorized     = "unauthorized"
	CodeForbidden        = "forbidden"
	CodeNotFound         = "not_found"
	CodeNoImagery        = "no_imagery"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeConflict         = "conflict"
	CodeTooLarge         = "too_large"
	CodeUnsupportedMedia = "unsupported_media_type"
	CodeInternal         = "internal"
	CodeUnavailable      = "unavailable"
)

func badRequest(format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Code: CodeBadRequest, Message: fmt.Sprintf(format, args...)}
}

func forbidden(format string, args ...any) *Error {
	return &Error{Status: http.StatusForbidden, Code: CodeForbidden, Message: fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) *Error {
	return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: fmt.Sprintf(format, args...)}
}

// unavailable is a 503 asking the client to retry in a second.
func unavailable(format string, args ...any) *Error {
	return &Error{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Message: fmt.Sprintf(format, args...), RetryAfter: 1}
}

// fieldNotFound is the answer for a missing field and for another user's field alike.
func fieldNotFound(name string) *Error {
	return notFound("field %q not found", name)
}

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
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
	enc.Encode(errorBody{Error: errorDetail{Code: e.Code, Message: e.Message}})
}

// asAPIError maps err to the error answered: an *Error as is, a body over
// its limit to 413, anything else to a 500 whose details stay in the log.
func asAPIError(err error) (e *Error, internal bool) {
	if errors.As(err, &e) {
		return e, false
	}
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return &Error{Status: http.StatusRequestEntityTooLarge, Code: CodeTooLarge,
			Message: fmt.Sprintf("request body larger than %d bytes", tooBig.Limit)}, false
	}
	if IsBusy(err) {
		// Another process (an admin command) held the database's write lock
		// past the busy timeout: a transient condition, not a server fault.
		return unavailable("the database is busy; retry shortly"), false
	}
	return &Error{Status: http.StatusInternalServerError, Code: CodeInternal, Message: "internal error"}, true
}
