package webhook_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/webhook"
)

// These addresses are only ever inputs that must be refused before any
// connection is tried.
func TestValidateURL(t *testing.T) {
	tests := []struct {
		url        string
		wantErr    error  // without allowPrivate
		reason     string // AddressError reason
		okIfPublic bool   // accepted with allowPrivate
	}{
		{url: "https://farm.example.com/hooks/cropkit"},
		{url: "http://farm.example.com:8080/h?x=1"},
		{url: "HTTPS://Farm.Example.com/h"},
		{url: "https://8.8.8.8/hook"},
		{url: "https://[2001:4860:4860::8888]/hook"},
		{url: "http://localhost:8080/hook"}, // names are checked at connect time
		{url: "http://10.0.0.1/hook", wantErr: webhook.ErrForbiddenAddress, reason: "private", okIfPublic: true},
		{url: "http://172.16.5.4/hook", wantErr: webhook.ErrForbiddenAddress, reason: "private", okIfPublic: true},
		{url: "http://192.168.1.1/hook", wantErr: webhook.ErrForbiddenAddress, reason: "private", okIfPublic: true},
		{url: "http://127.0.0.1:9000/hook", wantErr: webhook.ErrForbiddenAddress, reason: "loopback", okIfPublic: true},
		{url: "http://127.1.2.3/hook", wantErr: webhook.ErrForbiddenAddress, reason: "loopback", okIfPublic: true},
		{url: "http://[::1]:9000/hook", wantErr: webhook.ErrForbiddenAddress, reason: "loopback", okIfPublic: true},
		{url: "http://169.254.169.254/latest/meta-data/", wantErr: webhook.ErrForbiddenAddress, reason: "cloud metadata", okIfPublic: true},
		{url: "http://[fd00:ec2::254]/latest/meta-data/", wantErr: webhook.ErrForbiddenAddress, reason: "cloud metadata", okIfPublic: true},
		{url: "http://169.254.10.1/", wantErr: webhook.ErrForbiddenAddress, reason: "link-local", okIfPublic: true},
		{url: "http://[fe80::1]/", wantErr: webhook.ErrForbiddenAddress, reason: "link-local", okIfPublic: true},
		{url: "http://0.0.0.0/", wantErr: webhook.ErrForbiddenAddress, reason: "unspecified", okIfPublic: true},
		{url: "http://[::]/", wantErr: webhook.ErrForbiddenAddress, reason: "unspecified", okIfPublic: true},
		{url: "http://100.64.1.1/", wantErr: webhook.ErrForbiddenAddress, reason: "carrier-grade NAT", okIfPublic: true},
		{url: "http://224.0.0.1/", wantErr: webhook.ErrForbiddenAddress, reason: "multicast", okIfPublic: true},
		{url: "http://[ff02::1]/", wantErr: webhook.ErrForbiddenAddress, reason: "multicast", okIfPublic: true},
		{url: "http://[fc00::5]/", wantErr: webhook.ErrForbiddenAddress, reason: "private", okIfPublic: true},
		{url: "http://[::ffff:127.0.0.1]/", wantErr: webhook.ErrForbiddenAddress, reason: "loopback", okIfPublic: true},
		{url: "http://[::ffff:169.254.169.254]/", wantErr: webhook.ErrForbiddenAddress, reason: "cloud metadata", okIfPublic: true},
		{url: "http://[::ffff:a00:1]/", wantErr: webhook.ErrForbiddenAddress, reason: "private", okIfPublic: true},
		{url: "http://[64:ff9b::a00:1]/", wantErr: webhook.ErrForbiddenAddress, reason: "NAT64", okIfPublic: true},
		{url: "http://[::ffff:0:7f00:1]/", wantErr: webhook.ErrForbiddenAddress, reason: "IPv4-translated (SIIT)", okIfPublic: true},
		{url: "http://[::ffff:0:169.254.169.254]/", wantErr: webhook.ErrForbiddenAddress, reason: "IPv4-translated (SIIT)", okIfPublic: true},
		{url: "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", wantErr: webhook.ErrForbiddenAddress, reason: "Teredo", okIfPublic: true},
		{url: "http://[2002:a00:1::1]/", wantErr: webhook.ErrForbiddenAddress, reason: "6to4", okIfPublic: true},
		{url: "http://[64:ff9b::7f00:1]/", wantErr: webhook.ErrForbiddenAddress, reason: "NAT64", okIfPublic: true},
		{url: "http://255.255.255.255/", wantErr: webhook.ErrForbiddenAddress, reason: "reserved", okIfPublic: true},
		{url: "http://2130706433/", wantErr: webhook.ErrInvalidURL, okIfPublic: true},
		{url: "http://0x7f.1/", wantErr: webhook.ErrInvalidURL, okIfPublic: true},
		{url: "http://0177.0.0.1/", wantErr: webhook.ErrInvalidURL, okIfPublic: true},
		{url: "", wantErr: webhook.ErrInvalidURL},
		{url: "ftp://farm.example.com/", wantErr: webhook.ErrInvalidURL},
		{url: "file:///etc/passwd", wantErr: webhook.ErrInvalidURL},
		{url: "javascript:alert(1)", wantErr: webhook.ErrInvalidURL},
		{url: "farm.example.com/hook", wantErr: webhook.ErrInvalidURL},
		{url: "/relative/hook", wantErr: webhook.ErrInvalidURL},
		{url: "http:///nohost", wantErr: webhook.ErrInvalidURL},
		{url: "https://user:pass@farm.example.com/", wantErr: webhook.ErrInvalidURL},
		{url: "https://user@farm.example.com/", wantErr: webhook.ErrInvalidURL},
		{url: "https://farm.example.com:0/", wantErr: webhook.ErrInvalidURL},
		{url: "https://farm.example.com:99999/", wantErr: webhook.ErrInvalidURL},
		{url: "https://farm.example.com/" + strings.Repeat("a", webhook.MaxURLLength), wantErr: webhook.ErrInvalidURL},
		{url: "http://[::1", wantErr: webhook.ErrInvalidURL},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			err := webhook.ValidateURL(tt.url, false)
			if tt.wantErr == nil {
				require.NoError(t, err)
				require.NoError(t, webhook.ValidateURL(tt.url, true))
				return
			}
			require.ErrorIs(t, err, tt.wantErr)
			if tt.reason != "" {
				var ae *webhook.AddressError
				require.ErrorAs(t, err, &ae)
				assert.Equal(t, tt.reason, ae.Reason)
			}
			if tt.okIfPublic {
				require.NoError(t, webhook.ValidateURL(tt.url, true))
			} else {
				require.ErrorIs(t, webhook.ValidateURL(tt.url, true), tt.wantErr)
			}
		})
	}
}

func TestCheckAddrPublic(t *testing.T) {
	for _, s := range []string{"8.8.8.8", "1.1.1.1", "93.184.216.34", "2001:4860:4860::8888", "::ffff:8.8.8.8", "100.128.0.1", "172.32.0.1", "11.0.0.1"} {
		require.NoError(t, webhook.CheckAddr(netip.MustParseAddr(s)), s)
	}
}

// A host name that resolves to loopback passes registration but is refused
// at connect time: the request never reaches the server.
func TestClientRefusesResolvedLoopback(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	target := "http://localhost:" + port + "/hook"
	require.NoError(t, webhook.ValidateURL(target, false))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, nil)
	require.NoError(t, err)
	_, err = webhook.NewClient(false, 2*time.Second).Do(req)
	require.ErrorIs(t, err, webhook.ErrForbiddenAddress)
	var ae *webhook.AddressError
	require.True(t, errors.As(err, &ae))
	assert.Equal(t, "loopback", ae.Reason)
	assert.True(t, ae.Addr.IsLoopback())
	assert.Equal(t, int32(0), hits.Load())

	// With allowPrivate the same request goes through.
	req, err = http.NewRequestWithContext(ctx, http.MethodPost, target, nil)
	require.NoError(t, err)
	resp, err := webhook.NewClient(true, 2*time.Second).Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, int32(1), hits.Load())
}

func TestClientDoesNotFollowRedirects(t *testing.T) {
	var followed atomic.Bool
	mux := http.NewServeMux()
	mux.HandleFunc("/old", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/new", http.StatusPermanentRedirect)
	})
	mux.HandleFunc("/new", func(w http.ResponseWriter, r *http.Request) { followed.Store(true) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	resp, err := webhook.NewClient(true, 2*time.Second).Post(srv.URL+"/old", "application/json", strings.NewReader("{}"))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusPermanentRedirect, resp.StatusCode)
	assert.False(t, followed.Load())
}

func ExampleValidateURL() {
	for _, u := range []string{"https://farm.example.com/hook", "http://169.254.169.254/latest", "ftp://farm.example.com/"} {
		fmt.Println(webhook.ValidateURL(u, false))
	}
	// Output:
	// <nil>
	// register webhook http://169.254.169.254/latest: webhook address 169.254.169.254 refused: cloud metadata address
	// invalid webhook URL: scheme "ftp" not allowed (want http or https)
}
