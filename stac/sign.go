package stac

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// PlanetaryComputerSASURL is Microsoft Planetary Computer's public SAS token
// service: GET {URL}/token/{collection} answers the token that reads the
// collection's assets on *.blob.core.windows.net.
const PlanetaryComputerSASURL = "https://planetarycomputer.microsoft.com/api/sas/v1"

// DefaultTokenMargin is how long before its msft:expiry a cached token is
// replaced.
const DefaultTokenMargin = 5 * time.Minute

// ErrNoToken: the token service has no token for a collection (404): its
// assets are read unsigned.
var ErrNoToken = errors.New("stac: token service has no token for the collection")

// A Signer gives the credentials that asset requests of a collection carry
// in their query ("st=…&se=…&sig=…"). refresh asks for new credentials
// because the last ones were refused.
type Signer interface {
	Token(ctx context.Context, collection string, refresh bool) (string, error)
}

// SASSigner is a Signer over a Planetary Computer-style SAS token service:
// GET {URL}/token/{collection} → {"token": "st=…&sig=…", "msft:expiry": "…"}.
// Tokens are cached per collection until Margin before their expiry. It is
// safe for concurrent use; its fields must not change once in use.
type SASSigner struct {
	// URL is the service's root, e.g. PlanetaryComputerSASURL.
	URL string
	// HTTPClient fetches tokens; nil means http.DefaultClient.
	HTTPClient *http.Client
	// Margin: a token is replaced this long before it expires; 0 means
	// DefaultTokenMargin (at most half the token's lifetime).
	Margin time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	mu     sync.Mutex
	tokens map[string]sasToken
}

type sasToken struct {
	token  string
	expiry time.Time // when to fetch a new one
}

// maxTokenAnswer bounds a token service's answer.
const maxTokenAnswer = 64 << 10

// Token returns collection's cached token, fetching one when there is none,
// it is about to expire, or refresh is set.
func (s *SASSigner) Token(ctx context.Context, collection string, refresh bool) (string, error) {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tokens[collection]; ok && !refresh && now().Before(t.expiry) {
		if t.token == "" {
			return "", fmt.Errorf("%w %s (cached answer of %s)", ErrNoToken, collection, s.URL)
		}
		return t.token, nil
	}
	t, err := s.fetch(ctx, collection, now())
	if errors.Is(err, ErrNoToken) {
		// Remembered for a while: every band request would ask again.
		t = sasToken{expiry: now().Add(s.margin())}
	} else if err != nil {
		return "", err
	}
	if s.tokens == nil {
		s.tokens = map[string]sasToken{}
	}
	s.tokens[collection] = t
	return t.token, err
}

func (s *SASSigner) margin() time.Duration {
	if s.Margin > 0 {
		return s.Margin
	}
	return DefaultTokenMargin
}

// fetch asks the service for collection's token. Errors name the service
// and the collection, never a token.
func (s *SASSigner) fetch(ctx context.Context, collection string, now time.Time) (sasToken, error) {
	if collection == "" {
		return sasToken{}, fmt.Errorf("stac: sign assets: the item names no collection")
	}
	// The service's root; a URL given with its /token path works too.
	root := strings.TrimSuffix(strings.TrimRight(s.URL, "/"), "/token")
	u := root + "/token/" + url.PathEscape(collection)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return sasToken{}, fmt.Errorf("stac: token service %s: %w", s.URL, err)
	}
	req.Header.Set("Accept", "application/json")
	hc := s.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return sasToken{}, fmt.Errorf("stac: token for collection %s: %w", collection, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return sasToken{}, fmt.Errorf("%w %s (%s answered 404)", ErrNoToken, collection, s.URL)
	}
	if resp.StatusCode != http.StatusOK {
		return sasToken{}, fmt.Errorf("stac: token for collection %s: %s answered %s", collection, s.URL, resp.Status)
	}
	var body struct {
		Token  string `json:"token"`
		Expiry string `json:"msft:expiry"`
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenAnswer))
	if err != nil {
		return sasToken{}, fmt.Errorf("stac: token for collection %s: %w", collection, err)
	}
	if err := json.Unmarshal(data, &body); err != nil || body.Token == "" {
		return sasToken{}, fmt.Errorf("stac: token for collection %s: %s answered no token", collection, s.URL)
	}
	exp, ok := parseExpiry(body.Expiry)
	if !ok || !exp.After(now) {
		// No usable expiry: kept for a margin's time; a 403 replaces it sooner.
		return sasToken{token: strings.TrimPrefix(body.Token, "?"), expiry: now.Add(s.margin())}, nil
	}
	margin := min(s.margin(), exp.Sub(now)/2)
	return sasToken{token: strings.TrimPrefix(body.Token, "?"), expiry: exp.Add(-margin)}, nil
}

// UseTokenService makes c sign every asset request of OpenScene, whatever
// its host, with tokens of the SAS token service at serviceURL (the same
// protocol as PlanetaryComputerSASURL: a mirror, a proxy, a test double).
// hc fetches the tokens; nil means c's HTTPClient.
func (c *Client) UseTokenService(serviceURL string, hc *http.Client) error {
	u, err := url.Parse(serviceURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("stac: token service %q: want an http(s) URL", serviceURL)
	}
	if hc == nil {
		hc = c.httpClient()
	}
	c.Signer = &SASSigner{URL: serviceURL, HTTPClient: hc}
	c.SignHost = func(string) bool { return true }
	return nil
}

// parseExpiry reads msft:expiry: RFC 3339, or without a zone (UTC).
func parseExpiry(v string) (time.Time, bool) {
	v = strings.TrimSpace(v)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// IsPlanetaryComputerHost reports whether host is Planetary Computer's blob
// storage (*.blob.core.windows.net), whose assets need a SAS token.
func IsPlanetaryComputerHost(host string) bool {
	return strings.HasSuffix(strings.ToLower(strings.TrimSuffix(host, ".")), ".blob.core.windows.net")
}

// signingTransport adds a collection's token to the query of requests to
// the hosts that need it, and asks for a new token once when one is
// refused with 403. The request the caller holds keeps its unsigned URL, so
// errors and logs built from it never show a token.
type signingTransport struct {
	base       http.RoundTripper
	signer     Signer
	collection string
	match      func(host string) bool
}

func (t *signingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.match(req.URL.Hostname()) || req.URL.Query().Has("sig") {
		return t.base.RoundTrip(req)
	}
	tok, err := t.signer.Token(req.Context(), t.collection, false)
	if errors.Is(err, ErrNoToken) {
		return t.base.RoundTrip(req)
	}
	if err != nil {
		return nil, err
	}
	resp, err := t.base.RoundTrip(signed(req, tok))
	if err != nil {
		return nil, redact(err, tok)
	}
	if resp.StatusCode != http.StatusForbidden {
		return resp, nil
	}
	// The token expired early or was revoked: one new token, one retry.
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
	tok2, err := t.signer.Token(req.Context(), t.collection, true)
	if err != nil {
		return nil, err
	}
	resp, err = t.base.RoundTrip(signed(req, tok2))
	if err != nil {
		return nil, redact(redact(err, tok2), tok)
	}
	return resp, nil
}

// signed is a copy of req whose query carries tok.
func signed(req *http.Request, tok string) *http.Request {
	r := req.Clone(req.Context())
	u := *req.URL
	if u.RawQuery == "" {
		u.RawQuery = tok
	} else {
		u.RawQuery += "&" + tok
	}
	r.URL = &u
	return r
}

// redactedError hides a token in an error's text and keeps its chain.
type redactedError struct {
	err   error
	token string
}

func (e *redactedError) Error() string {
	return strings.ReplaceAll(e.err.Error(), e.token, "REDACTED")
}

func (e *redactedError) Unwrap() error { return e.err }

func redact(err error, tok string) error {
	if tok == "" || !strings.Contains(err.Error(), tok) {
		return err
	}
	return &redactedError{err: err, token: tok}
}

// signingClient is hc whose requests to hosts that need it are signed for
// collection's assets.
func signingClient(hc *http.Client, signer Signer, collection string, match func(string) bool) *http.Client {
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c := *hc
	c.Transport = &signingTransport{base: base, signer: signer, collection: collection, match: match}
	return &c
}
