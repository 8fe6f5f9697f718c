package api

// The machine codes of the API's errors (ErrorDetail.Code); the server
// answers each with one HTTP status.
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
	CodeRateLimited      = "rate_limited"
	CodeCanceled         = "canceled"
)

// ErrorBody is the one shape of every error answer:
// {"error":{"code":"…","message":"…"}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is an error's machine code (a Code… constant) and message.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}
