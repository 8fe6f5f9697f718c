// Package netguard is the SSRF guard of every outbound request cropkit makes
// on behalf of someone else's data (webhook deliveries, STAC catalogues, band
// files, scene URLs): URL checks before any traffic and a connect-time check
// of the resolved address, so DNS rebinding is caught too.
//
// A Guard refuses loopback, private, link-local, metadata and other special
// addresses. Permission to reach them is scoped: AllowAll lifts the refusal
// for every URL (webhooks on a private network, tests), while Allow lifts it
// only for the origins (host and port) the operator named, such as the
// catalogue given to `cropkit watch --catalog`. Hosts that such an origin
// points to (next links, assets, redirects) stay guarded unless they are
// allowed themselves.
package netguard

import (
	"context"
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

// MaxURLLength bounds a URL the guard accepts.
const MaxURLLength = 2048

// DefaultTimeout bounds a request of NewClient when the timeout given is not positive.
const DefaultTimeout = 15 * time.Second

// ErrInvalidURL is wrapped by every URL rejection that is not an address
// rejection.
var ErrInvalidURL = errors.New("invalid URL")

// ErrForbiddenAddress is wrapped by AddressError: the URL names, or its host
// resolved to, an address that must not be reached (SSRF guard).
var ErrForbiddenAddress = errors.New("forbidden address")

// AddressError reports an address refused by the guard, before a request
// (literal IP in the URL) or at connect time (resolved IP).
type AddressError struct {
	Addr   netip.Addr
	Reason string // "loopback", "private", "link-local", "cloud metadata"…
	// Purpose names what the address was for in the message ("webhook",
	// "catalogue"); empty says just "address".
	Purpose string
}

func (e *AddressError) Error() string {
	what := "address"
	if e.Purpose != "" {
		what = e.Purpose + " address"
	}
	return fmt.Sprintf("%s %s refused: %s address", what, e.Addr, e.Reason)
}

// Unwrap makes errors.Is(err, ErrForbiddenAddress) true.
func (e *AddressError) Unwrap() error { return ErrForbiddenAddress }

// URLError is a URL refused for its form (scheme, host, credentials, length).
type URLError struct {
	// Purpose names what the URL was for ("webhook", "catalogue").
	Purpose string
	Msg     string
}

func (e *URLError) Error() string {
	if e.Purpose == "" {
		return "invalid URL: " + e.Msg
	}
	return "invalid " + e.Purpose + " URL: " + e.Msg
}

// Unwrap makes errors.Is(err, ErrInvalidURL) true.
func (e *URLError) Unwrap() error { return ErrInvalidURL }

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

// CheckAddr returns an *AddressError when a must not be connected to:
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

// Guard decides which URLs and addresses outbound requests may reach. The
// nil Guard (and the zero one) refuses every special address. A Guard is
// immutable and safe for concurrent use.
type Guard struct {
	purpose  string
	all      bool
	origins  map[string]bool // "host:port", host lowercased, default port filled in
	patterns []string        // the origins as given, for messages
}

// New returns a strict guard whose errors name purpose ("webhook",
// "catalogue"; "" for none).
func New(purpose string) *Guard { return &Guard{purpose: purpose} }

// AllowAll returns a copy of g that lets every URL reach special addresses
// when allow is true (and g itself otherwise).
func (g *Guard) AllowAll(allow bool) *Guard {
	if !allow {
		return g
	}
	c := g.clone()
	c.all = true
	return c
}

// Allow returns a copy of g that lets the origins of urls (their host and
// port; the scheme's default port when none) reach special addresses: the
// URLs an operator named (a catalogue, a token service, an item URL given to
// the CLI). Other hosts stay guarded. A URL that does not parse or has no
// host is an error.
func (g *Guard) Allow(urls ...string) (*Guard, error) {
	c := g.clone()
	for _, raw := range urls {
		if raw == "" {
			continue
		}
		u, err := url.Parse(raw)
		if err != nil {
			return nil, &URLError{Purpose: g.Purpose(), Msg: err.Error()}
		}
		key, ok := originKey(u.Scheme, u.Host)
		if !ok {
			return nil, &URLError{Purpose: g.Purpose(), Msg: fmt.Sprintf("%q has no host", raw)}
		}
		c.origins[key] = true
		c.patterns = append(c.patterns, key)
	}
	return c, nil
}

// AllowHosts is Allow for "host:port" (or bare host, meaning ports 80 and
// 443) names, as an operator lists extra hosts on the command line.
func (g *Guard) AllowHosts(hosts ...string) (*Guard, error) {
	var urls []string
	for _, h := range hosts {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		if strings.Contains(h, "://") {
			urls = append(urls, h)
			continue
		}
		if _, _, err := net.SplitHostPort(h); err == nil {
			urls = append(urls, "http://"+h)
			continue
		}
		urls = append(urls, "http://"+h, "https://"+h)
	}
	return g.Allow(urls...)
}

func (g *Guard) clone() *Guard {
	c := &Guard{origins: map[string]bool{}}
	if g != nil {
		c.purpose, c.all = g.purpose, g.all
		for k := range g.origins {
			c.origins[k] = true
		}
		c.patterns = append(c.patterns, g.patterns...)
	}
	return c
}

// Purpose is the word the guard's errors use for what it guards.
func (g *Guard) Purpose() string {
	if g == nil {
		return ""
	}
	return g.purpose
}

// AllowsAll reports whether every URL may reach special addresses.
func (g *Guard) AllowsAll() bool { return g != nil && g.all }

// Origins are the allowed origins ("host:port"), in the order allowed.
func (g *Guard) Origins() []string {
	if g == nil {
		return nil
	}
	return append([]string(nil), g.patterns...)
}

// originKey is the "host:port" key of an origin, the port defaulted from the scheme.
func originKey(scheme, hostport string) (string, bool) {
	host, port := hostport, ""
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		host, port = h, p
	} else {
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	}
	if host == "" {
		return "", false
	}
	if port == "" {
		switch strings.ToLower(scheme) {
		case "https":
			port = "443"
		default:
			port = "80"
		}
	}
	return net.JoinHostPort(strings.ToLower(host), port), true
}

// privateAllowed reports whether the origin host:port may reach special addresses.
func (g *Guard) privateAllowed(scheme, hostport string) bool {
	if g == nil {
		return false
	}
	if g.all {
		return true
	}
	key, ok := originKey(scheme, hostport)
	return ok && g.origins[key]
}

// AllowsPrivate reports whether rawURL's origin may reach special addresses.
func (g *Guard) AllowsPrivate(rawURL string) bool {
	u, err := url.Parse(rawURL)
	return err == nil && g.privateAllowed(u.Scheme, u.Host)
}

// CheckURL checks a URL before any request: absolute http or https, a
// host, no user:password, a valid port, at most MaxURLLength bytes. Unless
// its origin may reach special addresses, a host that is a literal IP must
// pass CheckAddr, and numeric host spellings that are not canonical IPs
// ("2130706433", "0x7f.1") are refused because some resolvers read them as
// IPv4 addresses. Host names are not resolved here: the connect-time check
// of Client and DialContext catches the resolved address.
func (g *Guard) CheckURL(raw string) error {
	bad := func(format string, args ...any) error {
		return &URLError{Purpose: g.Purpose(), Msg: fmt.Sprintf(format, args...)}
	}
	if raw == "" {
		return bad("empty")
	}
	if len(raw) > MaxURLLength {
		return bad("longer than %d bytes", MaxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return bad("%v", err)
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	case "":
		return bad("%q is not absolute (want http:// or https://)", raw)
	default:
		return bad("scheme %q not allowed (want http or https)", u.Scheme)
	}
	if u.Opaque != "" {
		return bad("%q has no host", raw)
	}
	if u.User != nil {
		return bad("credentials in the URL are not allowed")
	}
	host := u.Hostname()
	if host == "" {
		return bad("%q has no host", raw)
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return bad("port %q out of range", p)
		}
	}
	if g.privateAllowed(u.Scheme, u.Host) {
		return nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if err := CheckAddr(a); err != nil {
			return fmt.Errorf("%s: %w", u.Redacted(), g.named(err))
		}
		return nil
	}
	if numericHost(host) {
		return bad("host %q is a non-canonical IP address", host)
	}
	return nil
}

// named sets the guard's purpose on an *AddressError.
func (g *Guard) named(err error) error {
	var ae *AddressError
	if errors.As(err, &ae) && ae.Purpose == "" {
		ae.Purpose = g.Purpose()
	}
	return err
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

// DialContext dials like a net.Dialer with timeout, refusing special
// resolved addresses unless the dialled host:port (the URL's origin, before
// resolution) may reach them. It runs the check on the exact IP about to be
// connected, so a DNS answer that changes between the URL check and the
// request (rebinding) is still caught.
func (g *Guard) DialContext(timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	open := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	guarded := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second,
		Control: func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("dial %s %s: %w", network, address, err)
			}
			return g.named(CheckAddr(ap.Addr()))
		}}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		// The transport dials "host:port" with the port filled in, so the
		// scheme does not matter here.
		if g.privateAllowed("", addr) {
			return open.DialContext(ctx, network, addr)
		}
		return guarded.DialContext(ctx, network, addr)
	}
}

// Client returns an HTTP client through the guard: the connect-time check
// of DialContext, no proxy (a proxy would connect on our behalf, bypassing
// the guard), redirects returned instead of followed (a redirect is another
// URL the operator did not name), and timeout as the whole-request limit
// (DefaultTimeout when not positive).
func (g *Guard) Client(timeout time.Duration) *http.Client {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	t := &http.Transport{
		Proxy:                 nil,
		DialContext:           g.DialContext(timeout),
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
