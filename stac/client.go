package stac

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/cropkit/cropkit/internal/httpretry"
	"github.com/cropkit/cropkit/internal/netguard"
)

// Defaults of the Client fields left zero.
const (
	DefaultTimeout     = 30 * time.Second
	DefaultMaxRetries  = 4
	DefaultBaseBackoff = 500 * time.Millisecond
	DefaultMaxBackoff  = 30 * time.Second
)

// MaxIdleConnsPerHost is the idle connections NewClient keeps per catalogue
// or asset host.
const MaxIdleConnsPerHost = 64

// maxDocument bounds a landing page, search page or item read into memory.
const maxDocument = 32 << 20

// maxErrorBody bounds the start of an error answer kept for messages and logs.
const maxErrorBody = 4 << 10

// Client talks to STAC APIs. The zero value works but has no SSRF guard of
// its own beyond URL checks: use NewClient. A Client is safe for concurrent
// use; its fields must not change while it is in use, and it must not be
// copied after first use.
type Client struct {
	// HTTPClient makes every request; nil means the guard's client (Guard.Client(Timeout)).
	// Its transport carries the connect-time SSRF guard, so assets read through
	// Client.OpenScene are guarded as well.
	HTTPClient *http.Client
	// Timeout bounds one attempt of one request (connect, answer, body); 0 means DefaultTimeout.
	Timeout time.Duration
	// MaxRetries is how many times a request is retried after a transport
	// error, 408, 429 or 5xx; 0 means DefaultMaxRetries, negative means none.
	MaxRetries int
	// BaseBackoff is the first retry's delay, doubled each retry with full
	// jitter, capped at MaxBackoff; 0 means DefaultBaseBackoff / DefaultMaxBackoff.
	// A Retry-After answer header sets the delay instead, honoured up to
	// MaxBackoff; a wait that would outlast the context's deadline is not
	// made: the answer (status, Retry-After) is returned at once.
	BaseBackoff, MaxBackoff time.Duration
	// AllowPrivate lets every catalogue, next-link and asset URL name
	// loopback and private addresses (tests). Prefer Guard, which scopes the
	// permission to the origins the operator named.
	AllowPrivate bool
	// Guard checks every URL before a request (literal special addresses
	// refused unless its origin is allowed); the default HTTPClient also
	// checks resolved addresses at connect time. nil means a strict guard
	// (AllowPrivate lifting it for every URL).
	Guard *netguard.Guard
	// UserAgent is sent when not empty.
	UserAgent string
	// Logger receives a warning for each retried answer (status, Retry-After,
	// the start of the body); nil logs nothing.
	Logger *slog.Logger
	// Signer signs the asset requests of OpenScene whose host SignHost
	// matches; nil means a SASSigner over PlanetaryComputerSASURL through
	// HTTPClient.
	Signer Signer
	// SignHost reports whether requests to an asset host are signed; nil
	// means IsPlanetaryComputerHost (*.blob.core.windows.net).
	SignHost func(host string) bool

	// defaultHC is the client made once when HTTPClient is nil, so that
	// requests share its connections instead of each opening a transport.
	defaultOnce sync.Once
	defaultHC   *http.Client
	// defaultSigner is the Planetary Computer signer made once when Signer
	// is nil, so its tokens are cached across items.
	signerOnce    sync.Once
	defaultSigner *SASSigner
}

func (c *Client) signer() Signer {
	if c.Signer != nil {
		return c.Signer
	}
	c.signerOnce.Do(func() { c.defaultSigner = &SASSigner{URL: PlanetaryComputerSASURL, HTTPClient: c.httpClient()} })
	return c.defaultSigner
}

func (c *Client) signHost() func(string) bool {
	if c.SignHost != nil {
		return c.SignHost
	}
	return IsPlanetaryComputerHost
}

// NewClient returns a Client whose requests go through the SSRF guard
// (no proxy, redirects not followed, loopback/private/metadata addresses
// refused unless allowPrivate, for every URL), timeout bounding each attempt.
// NewGuardedClient scopes the permission instead.
func NewClient(allowPrivate bool, timeout time.Duration) *Client {
	return NewGuardedClient(NewGuard().AllowAll(allowPrivate), timeout)
}

// NewGuard is the strict guard of catalogue requests (its errors name the
// catalogue): allow the catalogue's origin with Allow.
func NewGuard() *netguard.Guard { return netguard.New("catalogue") }

// NewGuardedClient returns a Client whose requests go through g (nil: a
// strict guard): URLs checked before any request, resolved addresses at
// connect time, no proxy, redirects not followed; timeout bounds each attempt.
func NewGuardedClient(g *netguard.Guard, timeout time.Duration) *Client {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if g == nil {
		g = NewGuard()
	}
	return &Client{HTTPClient: guardedHTTPClient(g, timeout), Timeout: timeout, AllowPrivate: g.AllowsAll(), Guard: g}
}

func guardedHTTPClient(g *netguard.Guard, timeout time.Duration) *http.Client {
	hc := g.Client(timeout)
	if t, ok := hc.Transport.(*http.Transport); ok {
		// Band reads fetch many tiles of one host at once: idle connections
		// beyond the default of 4 per host would be closed and reopened for
		// every tile.
		t.MaxIdleConnsPerHost = MaxIdleConnsPerHost
	}
	return hc
}

// guard is the Guard in effect.
func (c *Client) guard() *netguard.Guard {
	if c.Guard != nil {
		return c.Guard
	}
	return NewGuard().AllowAll(c.AllowPrivate)
}

// HTTP is the http.Client the Client's requests go through (HTTPClient, or
// the guarded one made for it).
func (c *Client) HTTP() *http.Client { return c.httpClient() }

func (c *Client) httpClient() *http.Client {
	if c.HTTPClient != nil {
		return c.HTTPClient
	}
	c.defaultOnce.Do(func() { c.defaultHC = guardedHTTPClient(c.guard(), c.timeout()) })
	return c.defaultHC
}

func (c *Client) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

func (c *Client) maxRetries() int {
	switch {
	case c.MaxRetries < 0:
		return 0
	case c.MaxRetries == 0:
		return DefaultMaxRetries
	}
	return c.MaxRetries
}

// checkURL refuses URLs the SSRF guard would refuse, before any traffic.
func (c *Client) checkURL(u string) error {
	if err := c.guard().CheckURL(u); err != nil {
		return fmt.Errorf("stac: %w", err)
	}
	return nil
}

// request is one HTTP request, replayable for retries.
type request struct {
	method  string
	url     string
	body    []byte // JSON, for POST
	headers map[string]string
}

// do runs req with retries and returns the answer's body on 2xx. Non-2xx
// answers are *HTTPError; after the retries a retryable failure is wrapped
// in ErrUnavailable, and so is one whose next wait would outlast ctx.
func (c *Client) do(ctx context.Context, req request) ([]byte, error) {
	if err := c.checkURL(req.url); err != nil {
		return nil, err
	}
	hc := c.httpClient()
	retries := c.maxRetries()
	for attempt := 0; ; attempt++ {
		body, err := c.once(ctx, hc, req)
		if err == nil {
			return body, nil
		}
		if ctx.Err() != nil {
			// The last answer says why (a 429 rather than "deadline exceeded").
			return nil, fmt.Errorf("stac: %s %s: %w (last attempt: %w)", req.method, req.url, ctx.Err(), err)
		}
		if !retryable(err) {
			return nil, err
		}
		if attempt >= retries {
			return nil, fmt.Errorf("%w: %d attempts: %w", ErrUnavailable, attempt+1, err)
		}
		var he *HTTPError
		var ra time.Duration
		if errors.As(err, &he) {
			ra = he.RetryAfter
		}
		wait := c.backoff(attempt, ra)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return nil, fmt.Errorf("%w: %d attempts, next wait %v outlasts the deadline: %w", ErrUnavailable, attempt+1, wait.Round(time.Millisecond), err)
		}
		if c.Logger != nil {
			args := []any{"method", req.method, "url", req.url, "attempt", attempt + 1, "wait", wait.Round(time.Millisecond), "err", err}
			if he != nil {
				args = append(args, "status", he.Status, "retry_after", he.RetryAfter)
			}
			c.Logger.WarnContext(ctx, "catalogue request failed; retrying", args...)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("stac: %s %s: %w (last attempt: %w)", req.method, req.url, ctx.Err(), err)
		case <-t.C:
		}
	}
}

// retryable: transport failures and 408/429/5xx, but never an address the
// SSRF guard refused or an answer over the size limit (it would be read
// again in full).
func retryable(err error) bool {
	if errors.Is(err, netguard.ErrForbiddenAddress) || errors.Is(err, netguard.ErrInvalidURL) || errors.Is(err, ErrTooLarge) {
		return false
	}
	var he *HTTPError
	if errors.As(err, &he) {
		return he.retryable()
	}
	return true
}

// backoff is the delay before retry attempt+1: Retry-After when the server
// gave one, else exponential with full jitter, both capped at MaxBackoff.
func (c *Client) backoff(attempt int, retryAfter time.Duration) time.Duration {
	base, maxB := c.BaseBackoff, c.MaxBackoff
	if base <= 0 {
		base = DefaultBaseBackoff
	}
	if maxB <= 0 {
		maxB = DefaultMaxBackoff
	}
	if retryAfter > 0 {
		return min(retryAfter, maxB)
	}
	d := base << min(attempt, 30)
	if d <= 0 || d > maxB {
		d = maxB
	}
	// Full jitter: pollers that failed together do not retry together.
	return time.Duration(rand.Int64N(int64(d)) + 1)
}

// once makes one attempt, bounded by the client's timeout.
func (c *Client) once(ctx context.Context, hc *http.Client, req request) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	var body io.Reader
	if req.body != nil {
		body = bytes.NewReader(req.body)
	}
	hr, err := http.NewRequestWithContext(ctx, req.method, req.url, body)
	if err != nil {
		return nil, fmt.Errorf("stac: %s %s: %w", req.method, req.url, err)
	}
	hr.Header.Set("Accept", "application/geo+json, application/json")
	if req.body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	if c.UserAgent != "" {
		hr.Header.Set("User-Agent", c.UserAgent)
	}
	for k, v := range req.headers {
		hr.Header.Set(k, v)
	}
	resp, err := hc.Do(hr)
	if err != nil {
		return nil, fmt.Errorf("stac: %s %s: %w", req.method, req.url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		return nil, &HTTPError{Method: req.method, URL: req.url, Status: resp.StatusCode, Body: strings.TrimSpace(string(msg)),
			RetryAfter: retryAfter(resp.Header.Get("Retry-After"))}
	}
	if resp.ContentLength > maxDocument {
		return nil, fmt.Errorf("stac: %s %s: %w: Content-Length %d, limit %d bytes", req.method, req.url, ErrTooLarge, resp.ContentLength, maxDocument)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument+1))
	if err != nil {
		return nil, fmt.Errorf("stac: %s %s: read body: %w", req.method, req.url, err)
	}
	if len(data) > maxDocument {
		return nil, fmt.Errorf("stac: %s %s: %w: more than %d bytes", req.method, req.url, ErrTooLarge, maxDocument)
	}
	return data, nil
}

// retryAfter parses a Retry-After header: delay seconds or an HTTP date.
func retryAfter(v string) time.Duration {
	d, _ := httpretry.ParseRetryAfter(v, time.Now())
	return d
}

// getJSON GETs u and decodes its JSON answer into v.
func (c *Client) getJSON(ctx context.Context, u string, v any) error {
	data, err := c.do(ctx, request{method: http.MethodGet, url: u})
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("stac: GET %s: decode: %w", u, err)
	}
	return nil
}
