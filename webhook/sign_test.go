package webhook_test

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/webhook"
)

// The published Standard Webhooks test vector (libraries/*/tests of
// github.com/standard-webhooks/standard-webhooks).
const (
	vectorSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorUnix   = 1614265330
	vectorBody   = `{"test": 2432232314}`
	vectorSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func vectorHeader() http.Header {
	h := http.Header{}
	h.Set(webhook.HeaderID, vectorID)
	h.Set(webhook.HeaderTimestamp, strconv.Itoa(vectorUnix))
	h.Set(webhook.HeaderSignature, vectorSig)
	return h
}

func vectorNow() time.Time { return time.Unix(vectorUnix, 0) }

func TestSignTestVector(t *testing.T) {
	for _, secret := range []string{vectorSecret, strings.TrimPrefix(vectorSecret, "whsec_")} {
		sig, err := webhook.Sign(secret, vectorID, time.Unix(vectorUnix, 0), []byte(vectorBody))
		require.NoError(t, err)
		assert.Equal(t, vectorSig, sig)
	}
}

func TestVerifyTestVector(t *testing.T) {
	err := webhook.Verify(vectorSecret, vectorHeader(), []byte(vectorBody), webhook.VerifyOptions{Now: vectorNow})
	require.NoError(t, err)
}

func TestVerifyErrors(t *testing.T) {
	other := "whsec_" + base64.StdEncoding.EncodeToString([]byte("another-secret-of-24-bytes!"))
	tests := []struct {
		name   string
		secret string
		edit   func(h http.Header)
		body   string
		now    time.Time
		tol    time.Duration
		want   error
	}{
		{name: "valid", now: vectorNow()},
		{name: "valid at edge of tolerance", now: vectorNow().Add(5 * time.Minute)},
		{name: "tolerance disabled", now: vectorNow().Add(24 * time.Hour), tol: -1},
		{name: "custom tolerance", now: vectorNow().Add(50 * time.Minute), tol: time.Hour},
		{name: "too old", now: vectorNow().Add(5*time.Minute + time.Second), want: webhook.ErrTimestampOutOfRange},
		{name: "too new", now: vectorNow().Add(-6 * time.Minute), want: webhook.ErrTimestampOutOfRange},
		{name: "tampered body", body: `{"test": 2432232315}`, now: vectorNow(), want: webhook.ErrInvalidSignature},
		{name: "other secret", secret: other, now: vectorNow(), want: webhook.ErrInvalidSignature},
		{name: "bad secret", secret: "whsec_!!!", now: vectorNow(), want: webhook.ErrInvalidSecret},
		{name: "empty secret", secret: "whsec_", now: vectorNow(), want: webhook.ErrInvalidSecret},
		{name: "other id", edit: func(h http.Header) { h.Set(webhook.HeaderID, "msg_other") }, now: vectorNow(), want: webhook.ErrInvalidSignature},
		{name: "timestamp changed", edit: func(h http.Header) { h.Set(webhook.HeaderTimestamp, strconv.Itoa(vectorUnix+1)) }, now: vectorNow(), want: webhook.ErrInvalidSignature},
		{name: "missing id", edit: func(h http.Header) { h.Del(webhook.HeaderID) }, now: vectorNow(), want: webhook.ErrMissingHeaders},
		{name: "missing timestamp", edit: func(h http.Header) { h.Del(webhook.HeaderTimestamp) }, now: vectorNow(), want: webhook.ErrMissingHeaders},
		{name: "missing signature", edit: func(h http.Header) { h.Del(webhook.HeaderSignature) }, now: vectorNow(), want: webhook.ErrMissingHeaders},
		{name: "non-numeric timestamp", edit: func(h http.Header) { h.Set(webhook.HeaderTimestamp, "soon") }, now: vectorNow(), want: webhook.ErrInvalidHeaders},
		{name: "wrong version", edit: func(h http.Header) { h.Set(webhook.HeaderSignature, strings.Replace(vectorSig, "v1,", "v2,", 1)) }, now: vectorNow(), want: webhook.ErrInvalidSignature},
		{name: "asymmetric only", edit: func(h http.Header) { h.Set(webhook.HeaderSignature, "v1a,"+vectorSig[3:]) }, now: vectorNow(), want: webhook.ErrInvalidSignature},
		{name: "several signatures, one valid", edit: func(h http.Header) {
			h.Set(webhook.HeaderSignature, "v1,Ym9ndXM= v1a,abc garbage "+vectorSig)
		}, now: vectorNow()},
		{name: "several signatures, none valid", edit: func(h http.Header) {
			h.Set(webhook.HeaderSignature, "v1,Ym9ndXM= v1,"+vectorSig[3:10])
		}, now: vectorNow(), want: webhook.ErrInvalidSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := vectorHeader()
			if tt.edit != nil {
				tt.edit(h)
			}
			secret, body := vectorSecret, vectorBody
			if tt.secret != "" {
				secret = tt.secret
			}
			if tt.body != "" {
				body = tt.body
			}
			now := tt.now
			err := webhook.Verify(secret, h, []byte(body), webhook.VerifyOptions{Tolerance: tt.tol, Now: func() time.Time { return now }})
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.want)
		})
	}
}

// Our signatures verify with the official Go library, and theirs with ours.
func TestOfficialLibraryInterop(t *testing.T) {
	secret, err := webhook.NewSecret()
	require.NoError(t, err)
	id, err := webhook.NewMessageID()
	require.NoError(t, err)
	body := []byte(`{"group":"g","field":"f","data":[]}`)
	now := time.Now()

	h, err := webhook.Headers(secret, id, now, body)
	require.NoError(t, err)
	official, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)
	require.NoError(t, official.Verify(body, h))
	assert.Error(t, official.Verify(append(body, ' '), h))

	theirs, err := official.Sign(id, now, body)
	require.NoError(t, err)
	ours, err := webhook.Sign(secret, id, now, body)
	require.NoError(t, err)
	assert.Equal(t, theirs, ours)
	h.Set(webhook.HeaderSignature, theirs)
	require.NoError(t, webhook.Verify(secret, h, body, webhook.VerifyOptions{}))
}

func TestNewSecretAndMessageID(t *testing.T) {
	s1, err := webhook.NewSecret()
	require.NoError(t, err)
	s2, err := webhook.NewSecret()
	require.NoError(t, err)
	assert.NotEqual(t, s1, s2)
	require.True(t, strings.HasPrefix(s1, "whsec_"))
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s1, "whsec_"))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, len(key), 24)

	id, err := webhook.NewMessageID()
	require.NoError(t, err)
	assert.Regexp(t, `^msg_[0-9a-f]{32}$`, id)
}

func TestHeaders(t *testing.T) {
	h, err := webhook.Headers(vectorSecret, vectorID, time.Unix(vectorUnix, 0), []byte(vectorBody))
	require.NoError(t, err)
	assert.Equal(t, vectorID, h.Get("Webhook-Id"))
	assert.Equal(t, "1614265330", h.Get("Webhook-Timestamp"))
	assert.Equal(t, vectorSig, h.Get("Webhook-Signature"))
	assert.Equal(t, "application/json", h.Get("Content-Type"))

	_, err = webhook.Headers(vectorSecret, "msg.with.dots", time.Now(), nil)
	require.Error(t, err)
	_, err = webhook.Headers("whsec_***", vectorID, time.Now(), nil)
	require.ErrorIs(t, err, webhook.ErrInvalidSecret)
}

func BenchmarkSign(b *testing.B) {
	body := []byte(strings.Repeat(`{"index":"ndvi","date":"2019-06-20 10:56:29 GMT"},`, 20))
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := webhook.Sign(vectorSecret, vectorID, time.Unix(vectorUnix, 0), body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerify(b *testing.B) {
	body := []byte(strings.Repeat(`{"index":"ndvi","date":"2019-06-20 10:56:29 GMT"},`, 20))
	h, err := webhook.Headers(vectorSecret, vectorID, time.Unix(vectorUnix, 0), body)
	if err != nil {
		b.Fatal(err)
	}
	opts := webhook.VerifyOptions{Now: vectorNow}
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := webhook.Verify(vectorSecret, h, body, opts); err != nil {
			b.Fatal(err)
		}
	}
}
