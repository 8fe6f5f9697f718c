package webhook

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// MaxURLLength bounds a registered URL.
const MaxURLLength = 2048

// ErrInvalidURL is wrapped by every ValidateURL rejection that is not an
// address rejection.
var ErrInvalidURL = errors.New("invalid webhook URL")

// ErrForbiddenAddress is wrapped by AddressError: the URL names, or its host
// resolved to, an address that webhooks must not reach (SSRF guard).
var ErrForbiddenAddress = errors.New("forbidden webhook address")

// AddressError reports an address refused by the SSRF guard, at registration
// (literal IP in the URL) or at connect time (resolved IP).
type AddressError struct {
	Addr   netip.Addr
	Reason string // "loopback", "private", "link-local", "cloud metadata"…
}

func (e *AddressError) Error() string {
	return fmt.Sprintf("webhook address %s refused: %s address", e.Addr, e.Reason)
}

// Unwrap makes errors.Is(err, ErrForbiddenAddress) true.
func (e *AddressError) Unwrap() error { return ErrForbiddenAddress }

// blockedPrefix is one range the guard refuses, with the reason reported.
type blockedPrefix struct {
	prefix netip.Prefix
	reason string
}

// blockedPrefixes are checked after IPv4-mapped IPv6 addresses are unmapped.
// Metadata addresses come first so they are reported as such.
var blockedPrefixes = []blockedPrefix{
	{netip.MustParsePrefix("169.254.169.254/32"), "cloud metadata"},
	{netip.MustParsePrefix("fd00:ec2::254/128"), "cloud metadata"},
	{netip.MustParsePrefix("100.100.100.200/32"), "cloud metadata"},
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignment"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation"},
	{netip.MustParsePrefix("192.88.99.0/24"), "6to4 relay"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible"},
	{netip.MustParsePrefix("::ffff:0:0:0/96"), "IPv4-translated (SIIT)"},
	{netip.MustParsePrefix("64:ff9b::/96"), "NAT64"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "NAT64"},
	{netip.MustParsePrefix("100::/64"), "discard-only"},
	{netip.MustParsePrefix("2001::/32"), "Teredo"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation"},
	{netip.MustParsePrefix("2002::/16"), "6to4"},
	{netip.MustParsePrefix("fc00::/7"), "private"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

// CheckAddr returns an *AddressError when webhooks must not connect to a:
// loopback, private, link-local, unspecified, multicast, carrier-grade NAT,
// reserved and documentation ranges, cloud metadata addresses, and IPv6
// forms that embed an IPv4 address (mapped, compatible, SIIT-translated
// ::ffff:0:a.b.c.d, NAT64, 6to4, Teredo), all refused whatever the
// embedded address, since a relay or translator may deliver to it.
func CheckAddr(a netip.Addr) error {
	if !a.IsValid() {
		return &AddressError{Addr: a, Reason: "invalid"}
	}
	if a.Zone() != "" {
		return &AddressError{Addr: a, Reason: "zoned"}
	}
	u := a.Unmap()
	for _, b := range blockedPrefixes {
		if b.prefix.Contains(u) {
			return &AddressError{Addr: a, Reason: b.reason}
		}
	}
	if u.Is4() && u == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
		return &AddressError{Addr: a, Reason: "broadcast"}
	}
	return nil
}

// ValidateURL checks a webhook URL at registration: absolute http or https,
// a host, no user:password, a valid port, at most MaxURLLength bytes. Unless
// allowPrivate, a host that is a literal IP must pass CheckAddr, and numeric
// host spellings that are not canonical IPs ("2130706433", "0x7f.1") are
// refused because some resolvers read them as IPv4 addresses. Host names are
// not resolved here: the connect-time guard of NewClient checks the
// resolved address on every delivery.
func ValidateURL(raw string, allowPrivate bool) error {
	if raw == "" {
		return fmt.Errorf("%w: empty", ErrInvalidURL)
	}
	if len(raw) > MaxURLLength {
		return fmt.Errorf("%w: longer than %d bytes", ErrInvalidURL, MaxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidURL, err)
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	case "":
		return fmt.Errorf("%w: %q is not absolute (want http:// or https://)", ErrInvalidURL, raw)
	default:
		return fmt.Errorf("%w: scheme %q not allowed (want http or https)", ErrInvalidURL, u.Scheme)
	}
	if u.Opaque != "" {
		return fmt.Errorf("%w: %q has no host", ErrInvalidURL, raw)
	}
	if u.User != nil {
		return fmt.Errorf("%w: credentials in the URL are not allowed", ErrInvalidURL)
	}
	host := u.Hostname()
	if host == "" {
		return fmt.Errorf("%w: %q has no host", ErrInvalidURL, raw)
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%w: port %q out of range", ErrInvalidURL, p)
		}
	}
	if allowPrivate {
		return nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if err := CheckAddr(a); err != nil {
			return fmt.Errorf("register webhook %s: %w", u.Redacted(), err)
		}
		return nil
	}
	if numericHost(host) {
		return fmt.Errorf("%w: host %q is a non-canonical IP address", ErrInvalidURL, host)
	}
	return nil
}

// numericHost reports whether every dot-separated label of host is a number
// (decimal, octal or 0x-hex), the inet_aton spellings of IPv4 addresses.
func numericHost(host string) bool {
	host = strings.TrimSuffix(host, ".")
	for _, label := range strings.Split(host, ".") {
		l := strings.ToLower(label)
		if strings.HasPrefix(l, "0x") {
			l = l[2:]
			if strings.Trim(l, "0123456789abcdef") != "" {
				return false
			}
			continue
		}
		if l == "" || strings.Trim(l, "0123456789") != "" {
			return false
		}
	}
	return true
}

// controlAddr is a net.Dialer.Control that refuses forbidden resolved addresses.
// It runs after name resolution, on the exact IP about to be connected, so a
// DNS answer that changes between validation and delivery (rebinding) is
// still caught.
func controlAddr(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("webhook dial %s %s: %w", network, address, err)
	}
	return CheckAddr(ap.Addr())
}

// NewDialer returns a net.Dialer whose Control refuses forbidden addresses
// at connect time, unless allowPrivate.
func NewDialer(allowPrivate bool, timeout time.Duration) *net.Dialer {
	d := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		d.Control = controlAddr
	}
	return d
}

// NewClient returns the HTTP client for deliveries: the connect-time SSRF
// guard of NewDialer (unless allowPrivate), no proxy (a proxy would connect
// on our behalf, bypassing the guard), redirects returned instead of
// followed, and timeout as the whole-request limit.
func NewClient(allowPrivate bool, timeout time.Duration) *http.Client {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	t := &http.Transport{
		Proxy:                 nil,
		DialContext:           NewDialer(allowPrivate, timeout).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
	}
	return &http.Client{
		Transport: t,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}
