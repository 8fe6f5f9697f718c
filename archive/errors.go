package archive

import (
	"errors"
	"fmt"

	"github.com/cropkit/cropkit/geo/crs"
	"github.com/cropkit/cropkit/zoning"
)

// Error kinds callers branch on with errors.Is. The HTTP layer maps each to
// one status in one table; the CLI prints the message.
var (
	// ErrNotFound: a user, token, field, product or upload does not exist
	// (or belongs to another user: the two are indistinguishable on purpose).
	ErrNotFound = errors.New("not found")
	// ErrExists: a user or field name is taken.
	ErrExists = errors.New("already exists")
	// ErrQuota: an account already has as many fields or webhooks as it may.
	ErrQuota = errors.New("quota reached")
	// ErrBadPassword: wrong user name or password (also unknown users).
	ErrBadPassword = errors.New("wrong username or password")
	// ErrUnauthenticated: a missing, unknown, expired or revoked token.
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrForbidden: the account may not do this (an index not granted,
	// an administrator's operation).
	ErrForbidden = errors.New("forbidden")
	// ErrInvalid: a parameter or input the caller can correct.
	ErrInvalid = errors.New("invalid input")
	// ErrInvalidGeometry: a field or parcel outline that is not a valid polygon.
	ErrInvalidGeometry = errors.New("invalid geometry")
	// ErrNoImagery: no usable image (none ingested, all cloudy, a masked pixel).
	ErrNoImagery = errors.New("no imagery")
	// ErrBusy: storage or a bounded resource is busy; retry shortly.
	ErrBusy = errors.New("busy")
	// ErrRateLimited: too many attempts; retry after Error.RetryAfter.
	ErrRateLimited = errors.New("rate limited")
	// ErrConflict: the request conflicts with concurrent changes of the
	// same resource; sending it again may succeed.
	ErrConflict = errors.New("conflict")
	// ErrFieldChanged: the field was deleted, or its outline replaced, while
	// an ingestion processed it; nothing was recorded for it.
	ErrFieldChanged = errors.New("field deleted or its outline changed during ingestion")
)

// Error is an error of one of the kinds above with a message for the user.
type Error struct {
	Kind error
	Msg  string
	// RetryAfter is the wait suggested with ErrBusy and ErrRateLimited, in seconds.
	RetryAfter int
	// Cause, when set, is the library error this one classifies (errors.Is
	// and errors.As reach it).
	Cause error
}

func (e *Error) Error() string { return e.Msg }

// Is makes errors.Is(err, kind) true.
func (e *Error) Is(target error) bool { return target == e.Kind }

// Unwrap returns the kind, and the cause when there is one.
func (e *Error) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Cause}
}

func errorf(kind error, format string, args ...any) *Error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// Invalid is an ErrInvalid error with a formatted message.
func Invalid(format string, args ...any) *Error { return errorf(ErrInvalid, format, args...) }

// Forbidden is an ErrForbidden error with a formatted message.
func Forbidden(format string, args ...any) *Error { return errorf(ErrForbidden, format, args...) }

// NotFound is an ErrNotFound error with a formatted message.
func NotFound(format string, args ...any) *Error { return errorf(ErrNotFound, format, args...) }

// NoImagery is an ErrNoImagery error with a formatted message.
func NoImagery(format string, args ...any) *Error { return errorf(ErrNoImagery, format, args...) }

// InvalidGeometry is an ErrInvalidGeometry error with a formatted message.
func InvalidGeometry(format string, args ...any) *Error {
	return errorf(ErrInvalidGeometry, format, args...)
}

// FieldNotFound is the error for a missing field and another user's field alike.
func FieldNotFound(name string) *Error { return NotFound("field %q not found", name) }

// zoneError classifies the zoning library's errors by kind (see the
// package documentation of zoning for which is which); the library error
// stays reachable as the cause.
func zoneError(err error) error {
	var ae *Error
	if err == nil || errors.As(err, &ae) {
		return err
	}
	switch {
	case errors.As(err, new(*zoning.ZonesAbovePixelsError)):
		// More zones asked than the field has usable pixels: the request
		// can be corrected (both numbers are named).
		return &Error{Kind: ErrInvalid, Msg: err.Error(), Cause: err}
	case errors.Is(err, zoning.ErrInvalidParcel):
		return &Error{Kind: ErrInvalidGeometry, Msg: "parcel_geojson: " + err.Error(), Cause: err}
	case errors.Is(err, zoning.ErrTooFewPixels):
		return &Error{Kind: ErrNoImagery, Msg: err.Error(), Cause: err}
	case errors.Is(err, zoning.ErrInvalidLayers),
		errors.Is(err, zoning.ErrShapefile), errors.Is(err, zoning.ErrUnknownPRJ),
		errors.Is(err, zoning.ErrAttribute), errors.Is(err, zoning.ErrEmptyLayer),
		errors.Is(err, crs.ErrUnsupportedCRS), errors.Is(err, crs.ErrMalformedCRS),
		errors.Is(err, zoning.ErrTooManyZones), errors.Is(err, zoning.ErrInvalidPrescription),
		errors.Is(err, zoning.ErrInvalidOptions), errors.Is(err, zoning.ErrUnknownFormat),
		errors.Is(err, zoning.ErrInvalidCollection):
		return &Error{Kind: ErrInvalid, Msg: err.Error(), Cause: err}
	}
	return err
}
