package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/archive/backend"
	"github.com/cropkit/cropkit/imagery/geotiff"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/server"
	"github.com/cropkit/cropkit/server/servertest"
	"github.com/cropkit/cropkit/webhook"
)

// hookRequest is one notification a receiver got.
type hookRequest struct {
	Header http.Header
	Body   []byte
	At     time.Time
}

// receiver is a loopback webhook endpoint answering with reply (n counts
// its requests from 1) and recording every request.
type receiver struct {
	srv     *httptest.Server
	release chan struct{} // closed at cleanup: unblocks hanging replies
	mu      sync.Mutex
	reqs    []hookRequest
}

func newReceiver(t *testing.T, reply func(n int, w http.ResponseWriter, r *http.Request, release <-chan struct{})) *receiver {
	t.Helper()
	rc := &receiver{release: make(chan struct{})}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.reqs = append(rc.reqs, hookRequest{Header: r.Header.Clone(), Body: body, At: time.Now()})
		n := len(rc.reqs)
		rc.mu.Unlock()
		reply(n, w, r, rc.release)
	}))
	t.Cleanup(rc.srv.Close)
	t.Cleanup(func() { close(rc.release) }) // runs first
	return rc
}

// ack answers 204 to everything.
func ack(_ int, w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
	w.WriteHeader(http.StatusNoContent)
}

func (rc *receiver) URL() string { return rc.srv.URL + "/hook" }

func (rc *receiver) requests() []hookRequest {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]hookRequest(nil), rc.reqs...)
}

// runWebhooks runs the server's dispatcher until the test ends.
func runWebhooks(t *testing.T, srv *archive.Archive) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.RunWebhooks(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
	})
}

// webhookEnv is a server with fast retries, its dispatcher running, and
// one user "farmer".
func webhookEnv(t *testing.T, opts archive.WebhookOptions) (*servertest.Env, string) {
	t.Helper()
	env := servertest.NewWith(t, archive.Config{Webhooks: opts}, server.Config{})
	runWebhooks(t, env.Archive)
	return env, env.AddUser(t, "farmer", nil)
}

// registerRealFields registers flanders-31UES fields in group "flanders".
func registerRealFields(t *testing.T, h http.Handler, tok string, names, indices []string) {
	t.Helper()
	fields := flandersFields(t)
	for _, name := range names {
		r := do(t, h, "POST", "/fields/register", tok, map[string]any{
			"field_name": name, "group": "flanders", "indices": indices,
			"geometry": map[string]any{"type": "MultiPolygon", "coordinates": fields[name].Geometry},
		})
		require.Equal(t, 201, r.Status, "%s", r.Body)
	}
}

type registered struct {
	Message  string `json:"message"`
	Username string `json:"username"`
	ID       int64  `json:"id"`
	URL      string `json:"url"`
	Created  bool   `json:"created"`
	Secret   string `json:"secret"`
}

func registerHook(t *testing.T, h http.Handler, tok, hookURL string) registered {
	t.Helper()
	r := do(t, h, "POST", "/notifications/register_webhook?url="+url.QueryEscape(hookURL)+"&token="+tok, "", nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	var out registered
	require.NoError(t, json.Unmarshal(r.Body, &out))
	return out
}

type listedDelivery struct {
	ID             int64             `json:"id"`
	MessageID      string            `json:"message_id"`
	RegistrationID int64             `json:"registration_id"`
	URL            string            `json:"url"`
	Status         webhook.Status    `json:"status"`
	LastError      string            `json:"last_error"`
	Attempts       []webhook.Attempt `json:"attempts"`
	Payload        webhook.Payload   `json:"payload"`
}

func deliveries(t *testing.T, h http.Handler, tok string) []listedDelivery {
	t.Helper()
	r := do(t, h, "GET", "/notifications/deliveries?limit=1000", tok, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	var out struct {
		Deliveries []listedDelivery `json:"deliveries"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &out))
	return out.Deliveries
}

// settled waits until none of the user's deliveries is pending.
func settled(t *testing.T, h http.Handler, tok string, within time.Duration) []listedDelivery {
	t.Helper()
	var ds []listedDelivery
	require.Eventually(t, func() bool {
		ds = deliveries(t, h, tok)
		for _, d := range ds {
			if d.Status == webhook.StatusPending {
				return false
			}
		}
		return true
	}, within, 20*time.Millisecond)
	return ds
}

func ingest(t *testing.T, env *servertest.Env, scene string) {
	t.Helper()
	_, err := env.Archive.Ingest(context.Background(), scene, archive.IngestOptions{})
	require.NoError(t, err)
}

// storedProduct is the field's stored product of index and date.
func storedProduct(t *testing.T, env *servertest.Env, user, field, index, date string) archive.Product {
	t.Helper()
	ctx := context.Background()
	u, err := env.Archive.UserByName(ctx, user)
	require.NoError(t, err)
	f, err := env.Archive.Store().FieldByName(ctx, u.ID, field)
	require.NoError(t, err)
	ps, err := env.Archive.Store().Products(ctx, archive.ProductQuery{FieldID: f.ID, Index: index, From: date, To: date})
	require.NoError(t, err)
	require.Len(t, ps, 1)
	return ps[0]
}

// previousUsableMean is the mean of the field's last usable image of index before date.
func previousUsableMean(t *testing.T, env *servertest.Env, user, field, index, date string) *float64 {
	t.Helper()
	ctx := context.Background()
	u, err := env.Archive.UserByName(ctx, user)
	require.NoError(t, err)
	f, err := env.Archive.Store().FieldByName(ctx, u.ID, field)
	require.NoError(t, err)
	ps, err := env.Archive.Store().Products(ctx, archive.ProductQuery{FieldID: f.ID, Index: index, UsableOnly: true})
	require.NoError(t, err)
	var prev *float64
	for _, p := range ps {
		if p.Date < date {
			m := p.Mean
			prev = &m
		}
	}
	return prev
}

func TestWebhooksEndToEndRealScenes(t *testing.T) {
	sceneRoot := testenv.DataDir(t, "s2", "flanders-31UES")
	env, tok := webhookEnv(t, archive.WebhookOptions{AllowPrivate: true, RetryBase: 50 * time.Millisecond, Timeout: 2 * time.Second})
	h := env.Handler
	names := []string{"UES-03", "UES-12", "UES-14"}
	indices := []string{"ndvi", "ndre", "evi"}
	registerRealFields(t, h, tok, names, indices)

	a, b := newReceiver(t, ack), newReceiver(t, ack)
	regA, regB := registerHook(t, h, tok, a.URL()), registerHook(t, h, tok, b.URL())
	for _, reg := range []registered{regA, regB} {
		assert.True(t, reg.Created)
		assert.Equal(t, "farmer", reg.Username)
		assert.Contains(t, reg.Message, reg.URL)
		assert.True(t, strings.HasPrefix(reg.Secret, "whsec_"), reg.Secret)
	}
	assert.NotEqual(t, regA.Secret, regB.Secret, "one secret per registration")
	again := registerHook(t, h, tok, a.URL())
	assert.Equal(t, registered{Message: again.Message, Username: "farmer", ID: regA.ID, URL: a.URL()}, again, "idempotent, secret not shown again")

	// Ingest one scene through the API: one notification per field per receiver.
	r := do(t, h, "POST", "/scenes/ingest", env.AdminToken, map[string]string{"source": filepath.Join(sceneRoot, "2019-06-20")})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	settled(t, h, tok, 10*time.Second)

	type check struct {
		rc     *receiver
		secret string
	}
	verify := func(t *testing.T, date string, want int) {
		for _, c := range []check{{a, regA.Secret}, {b, regB.Secret}} {
			reqs := c.rc.requests()
			require.Len(t, reqs, want)
			seen := map[string]bool{}
			for _, q := range reqs[want-len(names):] {
				require.NoError(t, webhook.Verify(c.secret, q.Header, q.Body, webhook.VerifyOptions{}))
				official, err := standardwebhooks.NewWebhook(c.secret)
				require.NoError(t, err)
				require.NoError(t, official.Verify(q.Body, q.Header), "the official Standard Webhooks library verifies it")
				assert.Equal(t, "application/json", q.Header.Get("Content-Type"))
				assert.Equal(t, "cropkit-webhook/1", q.Header.Get("User-Agent"))
				var p webhook.Payload
				require.NoError(t, json.Unmarshal(q.Body, &p))
				assert.Equal(t, "flanders", p.Group)
				assert.False(t, seen[p.Field], "one notification per field: %s", p.Field)
				seen[p.Field] = true
				require.Len(t, p.Data, len(indices))
				for i, u := range p.Data {
					assert.Equal(t, indices[i], u.Index)
					// The scene's acquisition time (ACQUISITION_DATETIME_UTC), not just the day.
					assert.Regexp(t, `^`+date+` 1[01]:\d\d:\d\d GMT$`, u.Date)
					assert.NotEqual(t, date+" 00:00:00 GMT", u.Date)
					sp := storedProduct(t, env, "farmer", p.Field, u.Index, date)
					require.True(t, sp.Usable)
					c := u.Content
					assert.Equal(t, []float64{sp.Mean, sp.Median, sp.Std, sp.Min, sp.Max, sp.P25, sp.P75},
						[]float64{c.Mean, c.Median, c.Std, c.Min, c.Max, c.P25, c.P75}, "%s %s", p.Field, u.Index)
					prev := previousUsableMean(t, env, "farmer", p.Field, u.Index, date)
					if prev == nil {
						assert.Zero(t, c.MeanVariation, "first image")
						assert.Nil(t, c.PreviousDate, "first image")
						continue
					}
					require.NotNil(t, c.PreviousDate)
					assert.InDelta(t, 100*(sp.Mean-*prev)/math.Abs(*prev), c.MeanVariation, 1e-9)
					// The download's §2.5 JSON says the same.
					r := do(t, h, "GET", fmt.Sprintf("/download/%s/json?field_name=%s&date=%s", u.Index, p.Field, date), tok, nil)
					require.Equal(t, 200, r.Status, "%s", r.Body)
					assert.Equal(t, c.MeanVariation, r.JSON(t)["mean_variation"])
					assert.Equal(t, *c.PreviousDate, r.JSON(t)["previous_date"])
				}
			}
			assert.Len(t, seen, len(names))
		}
	}
	verify(t, "2019-06-20", 3)

	// A later date: mean_variation against the previous usable image.
	ingest(t, env, filepath.Join(sceneRoot, "2019-07-05"))
	settled(t, h, tok, 10*time.Second)
	verify(t, "2019-07-05", 6)
	for _, q := range a.requests()[3:] {
		var p webhook.Payload
		require.NoError(t, json.Unmarshal(q.Body, &p))
		for _, u := range p.Data {
			assert.NotNil(t, u.Content.MeanVariation, "%s %s has a previous image", p.Field, u.Index)
		}
	}

	// A fully cloudy date stores only unusable products: no notification.
	ingest(t, env, filepath.Join(sceneRoot, "2019-06-25"))
	time.Sleep(300 * time.Millisecond)
	assert.Len(t, a.requests(), 6)
	assert.Len(t, b.requests(), 6)

	// Every delivery: delivered at the first attempt, distinct webhook-ids.
	ds := deliveries(t, h, tok)
	require.Len(t, ds, 12)
	ids := map[string]bool{}
	for _, d := range ds {
		assert.Equal(t, webhook.StatusDelivered, d.Status)
		require.Len(t, d.Attempts, 1)
		assert.Equal(t, http.StatusNoContent, d.Attempts[0].StatusCode)
		assert.Empty(t, d.Attempts[0].Error)
		ids[d.MessageID] = true
	}
	assert.Len(t, ids, 12)
	for _, q := range append(a.requests(), b.requests()...) {
		assert.True(t, ids[q.Header.Get("webhook-id")])
	}
}

func TestWebhookRetriesDisableAndIsolation(t *testing.T) {
	sceneRoot := testenv.DataDir(t, "s2", "flanders-31UES")
	const timeout = 3 * time.Second
	env, tok := webhookEnv(t, archive.WebhookOptions{AllowPrivate: true, RetryBase: 10 * time.Millisecond, Timeout: timeout})
	h := env.Handler
	registerRealFields(t, h, tok, []string{"UES-03"}, []string{"ndvi"})

	// flaky: 503, then 429 with Retry-After 1 s, then 200.
	flaky := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
		switch n {
		case 1:
			w.WriteHeader(http.StatusServiceUnavailable)
		case 2:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			w.WriteHeader(http.StatusOK)
		}
	})
	gone := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
		w.WriteHeader(http.StatusGone)
	})
	hanging := newReceiver(t, func(_ int, _ http.ResponseWriter, r *http.Request, release <-chan struct{}) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	fast := newReceiver(t, ack)
	regs := map[string]registered{}
	for name, rc := range map[string]*receiver{"flaky": flaky, "gone": gone, "hanging": hanging, "fast": fast} {
		regs[name] = registerHook(t, h, tok, rc.URL())
	}

	start := time.Now()
	ingest(t, env, filepath.Join(sceneRoot, "2019-06-20"))
	require.Eventually(t, func() bool { return len(fast.requests()) == 1 }, timeout, 5*time.Millisecond)
	assert.Less(t, time.Since(start), timeout-time.Second, "the hanging receiver does not delay the others")
	require.Eventually(t, func() bool { return len(hanging.requests()) == 1 }, time.Second, 5*time.Millisecond,
		"the hanging receiver got its attempt concurrently")

	byReg := func() map[int64]listedDelivery {
		out := map[int64]listedDelivery{}
		for _, d := range deliveries(t, h, tok) {
			out[d.RegistrationID] = d
		}
		return out
	}
	require.Eventually(t, func() bool {
		ds := byReg()
		return ds[regs["flaky"].ID].Status == webhook.StatusDelivered &&
			ds[regs["gone"].ID].Status == webhook.StatusFailed &&
			strings.Contains(ds[regs["hanging"].ID].LastError, "timeout")
	}, 4*timeout, 20*time.Millisecond)
	ds := byReg()

	// Fail twice, then succeed: one acknowledged delivery, three attempts, one webhook-id.
	fd := ds[regs["flaky"].ID]
	require.Len(t, fd.Attempts, 3)
	assert.Equal(t, []int{503, 429, 200}, []int{fd.Attempts[0].StatusCode, fd.Attempts[1].StatusCode, fd.Attempts[2].StatusCode})
	assert.Equal(t, "HTTP 503 Service Unavailable", fd.Attempts[0].Error)
	assert.Equal(t, "HTTP 429 Too Many Requests", fd.Attempts[1].Error)
	assert.Empty(t, fd.Attempts[2].Error)
	reqs := flaky.requests()
	require.Len(t, reqs, 3)
	for _, q := range reqs {
		assert.Equal(t, fd.MessageID, q.Header.Get("webhook-id"))
		require.NoError(t, webhook.Verify(regs["flaky"].Secret, q.Header, q.Body, webhook.VerifyOptions{}))
	}
	assert.GreaterOrEqual(t, reqs[2].At.Sub(reqs[1].At), 950*time.Millisecond, "Retry-After honoured")
	assert.Less(t, reqs[1].At.Sub(reqs[0].At), 500*time.Millisecond, "first retry after ~10ms")

	// 410 disables the registration.
	gd := ds[regs["gone"].ID]
	require.Len(t, gd.Attempts, 1)
	assert.Equal(t, 410, gd.Attempts[0].StatusCode)
	r := do(t, h, "GET", "/notifications/list", tok, nil)
	require.Equal(t, 200, r.Status)
	var list struct {
		Webhooks []struct {
			ID             int64  `json:"id"`
			URL            string `json:"url"`
			Disabled       bool   `json:"disabled"`
			DisabledReason string `json:"disabled_reason"`
		} `json:"webhooks"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &list))
	require.Len(t, list.Webhooks, 4)
	for _, w := range list.Webhooks {
		assert.Equal(t, w.ID == regs["gone"].ID, w.Disabled, w.URL)
		if w.Disabled {
			assert.Contains(t, w.DisabledReason, "410")
		}
	}

	// The hanging receiver's attempt timed out and is retried later.
	hd := ds[regs["hanging"].ID]
	assert.Equal(t, webhook.StatusPending, hd.Status)
	assert.Equal(t, fmt.Sprintf("timeout after %s", timeout), hd.LastError)

	// The next ingestion skips the disabled URL.
	ingest(t, env, filepath.Join(sceneRoot, "2019-07-05"))
	require.Eventually(t, func() bool { return len(fast.requests()) == 2 && len(flaky.requests()) == 4 }, timeout, 10*time.Millisecond)
	time.Sleep(100 * time.Millisecond)
	assert.Len(t, gone.requests(), 1)
	n := 0
	for _, d := range deliveries(t, h, tok) {
		if d.RegistrationID == regs["gone"].ID {
			n++
		}
	}
	assert.Equal(t, 1, n, "nothing enqueued for a disabled registration")

	// Registering the URL again re-enables it, without a new secret.
	again := registerHook(t, h, tok, gone.URL())
	assert.Equal(t, regs["gone"].ID, again.ID)
	assert.False(t, again.Created)
	assert.Empty(t, again.Secret)
	r = do(t, h, "GET", "/notifications/list", tok, nil)
	require.NoError(t, json.Unmarshal(r.Body, &list))
	for _, w := range list.Webhooks {
		assert.False(t, w.Disabled, w.URL)
	}
}

func TestWebhookSSRFGuard(t *testing.T) {
	sceneRoot := testenv.DataDir(t, "s2", "flanders-31UES")
	env, tok := webhookEnv(t, archive.WebhookOptions{RetryBase: 10 * time.Millisecond, Timeout: 2 * time.Second})
	h := env.Handler

	// Literal private addresses are refused at registration, before any connection.
	for _, tc := range []struct{ url, reason string }{
		{"http://10.0.0.1/", "private"},
		{"http://192.168.1.1/x", "private"},
		{"http://169.254.169.254/", "cloud metadata"},
		{"http://127.0.0.1:1/", "loopback"},
		{"http://[::1]:8080/", "loopback"},
		{"http://2130706433/", "non-canonical IP"},
	} {
		r := do(t, h, "POST", "/notifications/register_webhook?url="+url.QueryEscape(tc.url), tok, nil)
		assert.Equal(t, 400, r.Status, tc.url)
		assert.Equal(t, "bad_request", r.ErrorCode(t))
		assert.Contains(t, r.JSON(t)["error"].(map[string]any)["message"], tc.reason, tc.url)
	}

	// A host name resolving to loopback passes registration and is refused at connect time.
	rc := newReceiver(t, ack)
	port := rc.srv.Listener.Addr().(*net.TCPAddr).Port
	reg := registerHook(t, h, tok, fmt.Sprintf("http://localhost:%d/hook", port))
	registerRealFields(t, h, tok, []string{"UES-03"}, []string{"ndvi"})
	ingest(t, env, filepath.Join(sceneRoot, "2019-06-20"))
	ds := settled(t, h, tok, 10*time.Second)
	require.Len(t, ds, 1)
	d := ds[0]
	assert.Equal(t, reg.ID, d.RegistrationID)
	assert.Equal(t, webhook.StatusFailed, d.Status, "refused addresses are not retried")
	require.Len(t, d.Attempts, 1)
	assert.Zero(t, d.Attempts[0].StatusCode)
	assert.Contains(t, d.Attempts[0].Error, "refused")
	assert.Contains(t, d.Attempts[0].Error, "loopback")
	assert.Equal(t, d.Attempts[0].Error, d.LastError)
	assert.Equal(t, "UES-03", d.Payload.Field)
	assert.Empty(t, rc.requests(), "no request reached the receiver")
}

func TestWebhookEndpointErrors(t *testing.T) {
	env, alice := webhookEnv(t, archive.WebhookOptions{})
	h := env.Handler
	bob := env.AddUser(t, "bob", nil)
	const aliceURL, bobURL = "https://farm.example.com/hooks/a", "https://farm.example.com/hooks/b"

	for _, tc := range []struct {
		name, method, target, token string
		body                        any
		status                      int
		msg                         string
	}{
		{"missing url", "POST", "/notifications/register_webhook", alice, nil, 400, "url"},
		{"empty url", "POST", "/notifications/register_webhook?url=", alice, nil, 400, "url"},
		{"missing token", "POST", "/notifications/register_webhook?url=" + url.QueryEscape(aliceURL), "", nil, 403, "token"},
		{"bad token", "POST", "/notifications/register_webhook?token=nope&url=" + url.QueryEscape(aliceURL), "", nil, 403, "token"},
		{"bad scheme", "POST", "/notifications/register_webhook?url=" + url.QueryEscape("ftp://farm.example.com/x"), alice, nil, 400, "scheme"},
		{"credentials", "POST", "/notifications/register_webhook?url=" + url.QueryEscape("https://u:pw@farm.example.com/x"), alice, nil, 400, "credentials"},
		{"relative", "POST", "/notifications/register_webhook", alice, map[string]string{"url": "/hooks"}, 400, "absolute"},
		{"GET not allowed", "GET", "/notifications/register_webhook?url=" + url.QueryEscape(aliceURL), alice, nil, 405, "method"},
		{"delete without key", "POST", "/notifications/delete", alice, nil, 400, "id or url"},
		{"delete bad id", "POST", "/notifications/delete?id=abc", alice, nil, 400, "id"},
		{"deliveries bad limit", "GET", "/notifications/deliveries?limit=0", alice, nil, 400, "limit"},
		{"list without token", "GET", "/notifications/list", "", nil, 403, "token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, h, tc.method, tc.target, tc.token, tc.body)
			require.Equal(t, tc.status, r.Status, "%s", r.Body)
			assert.Contains(t, strings.ToLower(r.JSON(t)["error"].(map[string]any)["message"].(string)), tc.msg)
		})
	}

	// JSON body and form bodies work like query parameters.
	r := do(t, h, "POST", "/notifications/register_webhook", alice, map[string]string{"url": aliceURL})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	var regA registered
	require.NoError(t, json.Unmarshal(r.Body, &regA))
	req := httptest.NewRequest("POST", "/notifications/register_webhook", strings.NewReader("url="+url.QueryEscape(bobURL)+"&token="+bob))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, 200, rec.Code, rec.Body.String())
	var regB registered
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &regB))
	assert.Equal(t, "bob", regB.Username)

	// Another user's registration cannot be listed or deleted.
	r = do(t, h, "GET", "/notifications/list", alice, nil)
	require.Equal(t, 200, r.Status)
	hooks := r.JSON(t)["webhooks"].([]any)
	require.Len(t, hooks, 1)
	assert.Equal(t, aliceURL, hooks[0].(map[string]any)["url"])
	assert.NotContains(t, hooks[0], "secret")
	for _, target := range []string{fmt.Sprintf("/notifications/delete?id=%d", regB.ID), "/notifications/delete?url=" + url.QueryEscape(bobURL)} {
		r = do(t, h, "POST", target, alice, nil)
		assert.Equal(t, 404, r.Status, target)
		assert.Equal(t, "not_found", r.ErrorCode(t))
	}
	r = do(t, h, "GET", "/notifications/list", bob, nil)
	assert.Len(t, r.JSON(t)["webhooks"], 1, "bob's registration survived")

	// Deleting by id, then by URL; deleting again is a 404.
	r = do(t, h, "POST", "/notifications/delete", alice, map[string]any{"id": regA.ID})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	r = do(t, h, "POST", "/notifications/delete", alice, map[string]any{"id": regA.ID})
	assert.Equal(t, 404, r.Status)
	r = do(t, h, "POST", "/notifications/delete?url="+url.QueryEscape(bobURL), bob, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	for _, tok := range []string{alice, bob} {
		r = do(t, h, "GET", "/notifications/list", tok, nil)
		assert.Equal(t, []any{}, r.JSON(t)["webhooks"])
		r = do(t, h, "POST", "/notifications/deliveries", tok, nil)
		assert.Equal(t, []any{}, r.JSON(t)["deliveries"])
	}
	assert.Greater(t, env.Responses.N(), 20)
}

// After POST /notifications/delete?id=N, registering again (even the same
// URL) gets a new id: ids in the delivery history never name another URL.
func TestWebhookIDsNotReusedAfterDelete(t *testing.T) {
	env, alice := webhookEnv(t, archive.WebhookOptions{})
	h := env.Handler
	register := func(u string) registered {
		t.Helper()
		r := do(t, h, "POST", "/notifications/register_webhook?url="+url.QueryEscape(u), alice, nil)
		require.Equal(t, 200, r.Status, "%s", r.Body)
		var reg registered
		require.NoError(t, json.Unmarshal(r.Body, &reg))
		return reg
	}
	first := register("https://farm.example.com/hooks/a")
	r := do(t, h, "POST", fmt.Sprintf("/notifications/delete?id=%d", first.ID), alice, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	again := register("https://farm.example.com/hooks/a")
	assert.Greater(t, again.ID, first.ID)
	r = do(t, h, "POST", fmt.Sprintf("/notifications/delete?id=%d", again.ID), alice, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	other := register("https://farm.example.com/hooks/b")
	assert.Greater(t, other.ID, again.ID)
}

// BenchmarkIngestWebhooks is one scene's ingestion for 100 fields × 8
// indices (the real 64² Flanders chip, 6×6 px fields) with the owner having
// 0 or 2 webhook URLs (enqueue cost inside the products' transaction), and
// with 2 URLs delivered to loopback receivers until all 200 notifications
// are acknowledged.
func BenchmarkIngestWebhooks(b *testing.B) {
	sceneDir := testenv.DataDir(b, "s2", "flanders-31UES", "2019-06-20")
	f, err := geotiff.OpenFile(filepath.Join(sceneDir, "B04.tif"))
	require.NoError(b, err)
	g := f.Grid()
	f.Close()
	ctx := context.Background()
	for _, bc := range []struct {
		name    string
		hooks   int
		deliver bool
	}{{"hooks=0", 0, false}, {"hooks=2/enqueue", 2, false}, {"hooks=2/delivered", 2, true}} {
		b.Run(bc.name, func(b *testing.B) {
			env := servertest.NewWith(b, archive.Config{Webhooks: archive.WebhookOptions{AllowPrivate: true}}, server.Config{})
			gridFields(b, env.Archive.Store(), g, 10, 6, allIndices)
			var (
				mu   sync.Mutex
				acks int
			)
			rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				mu.Lock()
				acks++
				mu.Unlock()
				w.WriteHeader(http.StatusNoContent)
			}))
			defer rc.Close()
			for i := range bc.hooks {
				r := do(b, env.Handler, "POST", fmt.Sprintf("/notifications/register_webhook?url=%s/%d", rc.URL, i), env.AdminToken, nil)
				require.Equal(b, 200, r.Status, "%s", r.Body)
			}
			if bc.deliver {
				rctx, cancel := context.WithCancel(ctx)
				done := make(chan error, 1)
				go func() { done <- env.Archive.RunWebhooks(rctx) }()
				defer func() { cancel(); <-done }()
			}
			start := time.Now()
			n := 0
			for b.Loop() {
				res, err := env.Archive.Ingest(ctx, sceneDir, archive.IngestOptions{})
				require.NoError(b, err)
				require.Equal(b, 100, res.Fields)
				n++
				if bc.deliver {
					for {
						mu.Lock()
						got := acks
						mu.Unlock()
						if got >= 200*n {
							break
						}
						time.Sleep(time.Millisecond)
					}
				}
			}
			b.ReportMetric(float64(100*n)/time.Since(start).Seconds(), "fields/s")
			if bc.deliver {
				b.ReportMetric(float64(200*n)/time.Since(start).Seconds(), "notifications/s")
			}
		})
	}
}

// The archive enqueues notifications with the products; RunWebhooks delivers
// them until its context ends (cropkit serve runs it beside the HTTP server).
func Example_runWebhooks() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "cropkit-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	core, err := backend.Open(ctx, dir, true, archive.Config{Webhooks: archive.WebhookOptions{Timeout: 5 * time.Second}})
	if err != nil {
		panic(err)
	}
	defer core.Close()
	token, _, _ := core.EnsureAdmin(ctx)
	srv, err := server.New(server.Config{Archive: core})
	if err != nil {
		panic(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- core.RunWebhooks(runCtx) }()
	defer func() { stop(); <-done }()

	req := httptest.NewRequest("POST", "/notifications/register_webhook?url="+url.QueryEscape("https://farm.example.com/hooks/cropkit"), nil)
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	var reg struct {
		Message string `json:"message"`
		Created bool   `json:"created"`
		Secret  string `json:"secret"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &reg); err != nil {
		panic(err)
	}
	fmt.Println(rec.Code, reg.Created, strings.HasPrefix(reg.Secret, "whsec_"))
	fmt.Println(reg.Message)
	// Output:
	// 200 true true
	// webhook https://farm.example.com/hooks/cropkit registered; keep its secret, it is shown only once
}

func TestRunWebhooksOnce(t *testing.T) {
	env, _ := webhookEnv(t, archive.WebhookOptions{}) // runs one dispatcher
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	// A second concurrent run is refused once the first has started (probing
	// with RunWebhooks itself could take the slot before the first run does).
	require.Eventually(t, env.Archive.DeliveringWebhooks, 5*time.Second, 5*time.Millisecond)
	require.ErrorIs(t, env.Archive.RunWebhooks(cancelled), archive.ErrWebhooksRunning)

	// Another server over a fresh store runs and stops with its context.
	other := servertest.New(t, server.Config{})
	require.ErrorIs(t, other.Archive.RunWebhooks(cancelled), context.Canceled)
	_, err := archive.New(archive.Config{Store: other.Archive.Store(), Blobs: other.Archive.Blobs(), Webhooks: archive.WebhookOptions{Timeout: -time.Second}})
	require.ErrorContains(t, err, "negative webhook option")
}
