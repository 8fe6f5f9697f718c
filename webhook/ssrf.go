package webhook

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"time"

	"github.com/cropkit/cropkit/internal/netguard"
)

// The SSRF guard lives in internal/netguard, shared with the catalogue
// client and ingestion; these names keep the webhook API and its messages.

// MaxURLLength bounds a registered URL.
const MaxURLLength = netguard.MaxURLLength

// ErrInvalidURL is wrapped by every ValidateURL rejection that is not an
// address rejection.
var ErrInvalidURL = netguard.ErrInvalidURL

// ErrForbiddenAddress is wrapped by AddressError: the URL names, or its host
// resolved to, an address that webhooks must not reach (SSRF guard).
var ErrForbiddenAddress = netguard.ErrForbiddenAddress

// AddressError reports an address refused by the SSRF guard, at registration
// (literal IP in the URL) or at connect time (resolved IP).
type AddressError = netguard.AddressError

// guard is the webhook guard: private addresses for every URL or none.
func guard(allowPrivate bool) *netguard.Guard {
	return netguard.New("webhook").AllowAll(allowPrivate)
}

// CheckAddr returns an *AddressError when webhooks must not connect to a
// (netguard.CheckAddr: loopback, private, link-local, metadata, embedded
// IPv4 forms and the other special ranges).
func CheckAddr(a netip.Addr) error {
	err := netguard.CheckAddr(a)
	var ae *AddressError
	if errors.As(err, &ae) {
		ae.Purpose = "webhook"
	}
	return err
}

// ValidateURL checks a webhook URL at registration: absolute http or https,
// a host, no user:password, a valid port, at most MaxURLLength bytes. Unless
// allowPrivate, a host that is a literal IP must pass CheckAddr, and numeric
// host spellings that are not canonical IPs ("2130706433", "0x7f.1") are
// refused. Host names are not resolved here: the connect-time guard of
// NewClient checks the resolved address on every delivery.
func ValidateURL(raw string, allowPrivate bool) error {
	err := guard(allowPrivate).CheckURL(raw)
	if errors.Is(err, ErrForbiddenAddress) {
		return fmt.Errorf("register webhook %w", err)
	}
	return err
}

// NewClient returns the HTTP client for deliveries: the connect-time SSRF
// guard (unless allowPrivate), no proxy, redirects returned instead of
// followed, and timeout as the whole-request limit.
func NewClient(allowPrivate bool, timeout time.Duration) *http.Client {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return guard(allowPrivate).Client(timeout)
}
