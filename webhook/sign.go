package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Standard Webhooks header names (https://www.standardwebhooks.com).
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// SecretPrefix marks a symmetric Standard Webhooks signing secret.
const SecretPrefix = "whsec_"

// secretBytes is the random key length of NewSecret; the standard asks for 24 to 64.
const secretBytes = 32

// DefaultTolerance is how far a webhook-timestamp may be from the receiver's
// clock before Verify rejects the message as a possible replay.
const DefaultTolerance = 5 * time.Minute

// Errors returned by Verify (wrapped; test with errors.Is).
var (
	ErrMissingHeaders      = errors.New("missing webhook-id, webhook-timestamp or webhook-signature header")
	ErrInvalidHeaders      = errors.New("invalid webhook headers")
	ErrInvalidSecret       = errors.New("invalid webhook secret")
	ErrTimestampOutOfRange = errors.New("webhook timestamp outside tolerance")
	ErrInvalidSignature    = errors.New("no matching webhook signature")
)

// NewSecret returns a fresh signing secret: "whsec_" followed by the standard
// base64 encoding of 32 random bytes.
func NewSecret() (string, error) {
	b := make([]byte, secretBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate webhook secret: %w", err)
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(b), nil
}

// NewMessageID returns a fresh webhook-id ("msg_" + 32 hex digits). The id is
// fixed when a notification is enqueued and repeated on every retry, so
// receivers can use it to drop duplicates.
func NewMessageID() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate webhook message id: %w", err)
	}
	return "msg_" + hex.EncodeToString(b), nil
}

// decodeSecret returns the HMAC key of a "whsec_…" secret (prefix optional,
// as in the official libraries).
func decodeSecret(secret string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, SecretPrefix))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSecret, err)
	}
	if len(key) == 0 {
		return nil, fmt.Errorf("%w: empty key", ErrInvalidSecret)
	}
	return key, nil
}

func mac(key []byte, msgID string, unix int64, body []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(msgID))
	h.Write([]byte{'.'})
	h.Write(strconv.AppendInt(nil, unix, 10))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// Sign returns the webhook-signature value "v1,<base64 HMAC-SHA256>" of
// "msgID.unix(ts).body" under secret.
func Sign(secret, msgID string, ts time.Time, body []byte) (string, error) {
	key, err := decodeSecret(secret)
	if err != nil {
		return "", err
	}
	if msgID == "" || strings.Contains(msgID, ".") {
		return "", fmt.Errorf("sign webhook: message id %q must be non-empty and contain no '.'", msgID)
	}
	return "v1," + base64.StdEncoding.EncodeToString(mac(key, msgID, ts.Unix(), body)), nil
}

// Headers returns the request headers of one delivery attempt: the three
// Standard Webhooks headers and Content-Type: application/json.
func Headers(secret, msgID string, ts time.Time, body []byte) (http.Header, error) {
	sig, err := Sign(secret, msgID, ts, body)
	if err != nil {
		return nil, err
	}
	h := make(http.Header, 4)
	h.Set(HeaderID, msgID)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(HeaderSignature, sig)
	h.Set("Content-Type", "application/json")
	return h, nil
}

// VerifyOptions tune Verify. The zero value checks the timestamp against
// time.Now with DefaultTolerance.
type VerifyOptions struct {
	// Tolerance is the largest accepted distance between webhook-timestamp
	// and Now; 0 means DefaultTolerance, negative disables the check.
	Tolerance time.Duration
	// Now replaces time.Now (tests, replays of stored messages).
	Now func() time.Time
}

// Verify checks that body and the webhook-* headers in h were signed with
// secret: the timestamp must be within the tolerance and one of the
// space-separated "v1,<sig>" signatures must match (compared in constant
// time). Errors wrap ErrMissingHeaders, ErrInvalidHeaders, ErrInvalidSecret,
// ErrTimestampOutOfRange or ErrInvalidSignature.
func Verify(secret string, h http.Header, body []byte, opts VerifyOptions) error {
	msgID, tsText, sigs := h.Get(HeaderID), h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	if msgID == "" || tsText == "" || sigs == "" {
		return fmt.Errorf("verify webhook: %w", ErrMissingHeaders)
	}
	unix, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return fmt.Errorf("verify webhook: timestamp %q: %w", tsText, ErrInvalidHeaders)
	}
	key, err := decodeSecret(secret)
	if err != nil {
		return fmt.Errorf("verify webhook: %w", err)
	}
	if opts.Tolerance >= 0 {
		tol := opts.Tolerance
		if tol == 0 {
			tol = DefaultTolerance
		}
		now := time.Now()
		if opts.Now != nil {
			now = opts.Now()
		}
		ts := time.Unix(unix, 0)
		if d := now.Sub(ts); d > tol || d < -tol {
			return fmt.Errorf("verify webhook %s: timestamp %s is %s from now (tolerance %s): %w",
				msgID, ts.UTC().Format(time.RFC3339), d.Round(time.Second), tol, ErrTimestampOutOfRange)
		}
	}
	want := mac(key, msgID, unix, body)
	for _, s := range strings.Fields(sigs) {
		version, enc, ok := strings.Cut(s, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			continue
		}
		if hmac.Equal(got, want) {
			return nil
		}
	}
	return fmt.Errorf("verify webhook %s: %w", msgID, ErrInvalidSignature)
}
