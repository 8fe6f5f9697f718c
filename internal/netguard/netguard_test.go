package netguard_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/internal/netguard"
)

// The permission to reach private addresses covers the origins named, not
// other ports of the same host, other hosts or the metadata address.
func TestGuardScopedAllowance(t *testing.T) {
	g, err := netguard.New("catalogue").Allow("http://127.0.0.1:8080/stac/v1")
	require.NoError(t, err)
	g, err = g.AllowHosts("10.1.2.3:9000", "assets.internal")
	require.NoError(t, err)
	tests := []struct {
		url    string
		reason string // "" when allowed
	}{
		{"http://127.0.0.1:8080/search?page=2", ""},
		{"http://127.0.0.1:8080", ""},
		{"http://127.0.0.1:8081/search", "loopback"},
		{"https://127.0.0.1/", "loopback"},
		{"http://169.254.169.254/latest/meta-data/", "cloud metadata"},
		{"http://[::ffff:169.254.169.254]:8080/", "cloud metadata"},
		{"http://10.1.2.3:9000/b04.tif", ""},
		{"http://10.1.2.3:9001/b04.tif", "private"},
		{"https://assets.internal/b04.tif", ""},
		{"http://ASSETS.internal:80/b04.tif", ""},
		{"https://example.com/b04.tif", ""},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			err := g.CheckURL(tt.url)
			if tt.reason == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, netguard.ErrForbiddenAddress)
			var ae *netguard.AddressError
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, tt.reason, ae.Reason)
			assert.Contains(t, err.Error(), "catalogue address")
		})
	}
	assert.Equal(t, []string{"127.0.0.1:8080", "10.1.2.3:9000", "assets.internal:80", "assets.internal:443"}, g.Origins())
	assert.False(t, g.AllowsAll())
	assert.True(t, netguard.New("").AllowAll(true).AllowsPrivate("http://169.254.169.254/"))
	var strict *netguard.Guard
	assert.ErrorIs(t, strict.CheckURL("http://127.0.0.1/"), netguard.ErrForbiddenAddress)
}

// The connect-time check follows the dialled origin: a name resolving to
// loopback reaches the allowed port only.
func TestGuardClientConnectTime(t *testing.T) {
	var hitsA, hitsB atomic.Int32
	a := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hitsA.Add(1) }))
	defer a.Close()
	b := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hitsB.Add(1) }))
	defer b.Close()
	viaName := func(u string) string { return strings.Replace(u, "127.0.0.1", "localhost", 1) }
	g, err := netguard.New("catalogue").Allow(viaName(a.URL))
	require.NoError(t, err)
	hc := g.Client(2 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	get := func(u string) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		require.NoError(t, err)
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	require.NoError(t, get(viaName(a.URL)+"/x"))
	err = get(viaName(b.URL) + "/x")
	require.ErrorIs(t, err, netguard.ErrForbiddenAddress)
	assert.Contains(t, err.Error(), "catalogue address")
	assert.Equal(t, int32(1), hitsA.Load())
	assert.Equal(t, int32(0), hitsB.Load())
}

func TestGuardRefusesBadURLs(t *testing.T) {
	g := netguard.New("catalogue").AllowAll(true)
	for _, u := range []string{"", "file:///etc/shadow", "s3://bucket/key", "http://user:pw@host/", "/relative", "http://host:0/"} {
		err := g.CheckURL(u)
		require.ErrorIs(t, err, netguard.ErrInvalidURL, u)
		assert.True(t, strings.HasPrefix(err.Error(), "invalid catalogue URL: "), err.Error())
	}
	_, err := netguard.New("").Allow("not a url://")
	require.Error(t, err)
}
