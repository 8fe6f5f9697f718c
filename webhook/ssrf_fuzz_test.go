package webhook_test

import (
	"errors"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/cropkit/cropkit/webhook"
)

// FuzzValidateURL feeds arbitrary strings to ValidateURL, the registration
// check of webhook URLs. Invariants: no panic; every refusal matches
// ErrInvalidURL or ErrForbiddenAddress; allowing private addresses never
// refuses a URL the strict mode accepts; an accepted URL is absolute
// http(s) with a host, no credentials, at most MaxURLLength bytes, and, in
// strict mode, a literal IP host that CheckAddr accepts.
func FuzzValidateURL(f *testing.F) {
	for _, s := range []string{
		"https://example.com/hooks/cropkit",
		"http://hooks.example.org:8080/a?b=c#d",
		"http://127.0.0.1/",
		"http://[::ffff:169.254.169.254]/latest/meta-data",
		"http://0x7f.1/",
		"http://2130706433/",
		"https://user:pw@example.com/",
		"ftp://example.com/",
		"http://[fe80::1%25eth0]:80/",
	} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, raw string, allowPrivate bool) {
		err := webhook.ValidateURL(raw, allowPrivate)
		if err != nil {
			if !errors.Is(err, webhook.ErrInvalidURL) && !errors.Is(err, webhook.ErrForbiddenAddress) {
				t.Fatalf("error matches neither ErrInvalidURL nor ErrForbiddenAddress: %v", err)
			}
			if allowPrivate && errors.Is(err, webhook.ErrForbiddenAddress) {
				t.Fatalf("address refused although private addresses are allowed: %v", err)
			}
			return
		}
		if !allowPrivate {
			if err := webhook.ValidateURL(raw, true); err != nil {
				t.Fatalf("accepted in strict mode, refused when allowing private addresses: %v", err)
			}
		}
		if len(raw) > webhook.MaxURLLength {
			t.Fatalf("accepted a URL of %d bytes", len(raw))
		}
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("accepted URL does not parse: %v", err)
		}
		if s := strings.ToLower(u.Scheme); s != "http" && s != "https" {
			t.Fatalf("accepted scheme %q", u.Scheme)
		}
		if u.Hostname() == "" || u.User != nil || u.Opaque != "" {
			t.Fatalf("accepted %q: host %q, user %v, opaque %q", raw, u.Hostname(), u.User, u.Opaque)
		}
		if a, err := netip.ParseAddr(u.Hostname()); err == nil && !allowPrivate {
			if err := webhook.CheckAddr(a); err != nil {
				t.Fatalf("accepted literal address %s: %v", a, err)
			}
		}
	})
}
