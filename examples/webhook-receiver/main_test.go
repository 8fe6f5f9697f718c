package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/webhook"
)

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

func post(t *testing.T, h http.Handler, id string, ts time.Time, body string, sign string) *httptest.ResponseRecorder {
	t.Helper()
	hdr, err := webhook.Headers(sign, id, ts, []byte(body))
	require.NoError(t, err)
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	req.Header = hdr
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestReceiver(t *testing.T) {
	body := `{"group":"flanders","field":"field-12","data":[{"index":"ndvi","date":"2019-06-20 10:56:29 GMT","content":{"mean":0.6,"mean_variation":0,"previous_date":null,"median":0.62,"std":0.07,"min":0.21,"max":0.83,"p25":0.55,"p75":0.66}}]}`
	other := "whsec_" + strings.Repeat("QUJD", 8)
	tests := []struct {
		name    string
		id      string
		ts      time.Time
		body    string
		signer  string
		want    int
		printed bool
	}{
		{"valid", "msg_1", time.Now(), body, secret, http.StatusNoContent, true},
		{"duplicate id acknowledged, not printed", "msg_1", time.Now(), body, secret, http.StatusNoContent, false},
		{"wrong secret", "msg_2", time.Now(), body, other, http.StatusUnauthorized, false},
		{"replayed old message", "msg_3", time.Now().Add(-time.Hour), body, secret, http.StatusUnauthorized, false},
		{"not JSON", "msg_4", time.Now(), "hello", secret, http.StatusBadRequest, false},
		{"second message", "msg_5", time.Now(), body, secret, http.StatusNoContent, true},
	}
	var out bytes.Buffer
	rc := newReceiver(secret, &out)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out.Reset()
			rec := post(t, rc, tt.id, tt.ts, tt.body, tt.signer)
			assert.Equal(t, tt.want, rec.Code, rec.Body.String())
			if tt.printed {
				assert.Contains(t, out.String(), tt.id+` field="field-12" group="flanders"`)
				assert.Contains(t, out.String(), `"previous_date": null`)
				assert.Contains(t, out.String(), `"p75": 0.66`)
			} else {
				assert.Empty(t, out.String())
			}
		})
	}

	t.Run("missing headers", func(t *testing.T) {
		req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		rec := httptest.NewRecorder()
		rc.ServeHTTP(rec, req)
		assert.Equal(t, http.StatusBadRequest, rec.Code)
	})
	t.Run("GET refused", func(t *testing.T) {
		rec := httptest.NewRecorder()
		rc.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		assert.Equal(t, http.StatusMethodNotAllowed, rec.Code)
	})
}

func TestReceiverForgetsOldIDs(t *testing.T) {
	rc := newReceiver(secret, &bytes.Buffer{})
	for i := range maxSeen + 1 {
		require.True(t, rc.firstTime(fmt.Sprintf("msg_%d", i)))
	}
	assert.Len(t, rc.seen, maxSeen)
	assert.True(t, rc.firstTime("msg_0"), "the oldest id was forgotten")
	assert.False(t, rc.firstTime("msg_5"))
	assert.Len(t, rc.order, maxSeen)
}
