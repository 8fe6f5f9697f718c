package web_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/colormap"
	"github.com/cropkit/cropkit/web"
)

func get(t *testing.T, h http.Handler, method, path string, hdr map[string]string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	require.NoError(t, err)
	return string(b)
}

func TestHandlerServesPageAndAssets(t *testing.T) {
	h := web.Handler()
	tests := []struct {
		path        string
		contentType string
		cache       string
		contains    string
	}{
		{"/", "text/html; charset=utf-8", "no-cache", `<div id="map"`},
		{"/app/index.html", "text/html; charset=utf-8", "no-cache", `<script type="module" src="/app/app.js">`},
		{"/app/app.js", "text/javascript; charset=utf-8", "no-cache", `"Authorization", "Bearer "`},
		{"/app/app.css", "text/css; charset=utf-8", "no-cache", ":focus-visible"},
		{"/app/colormaps.json", "application/json", "no-cache", `"index":"ndwi"`},
		{"/app/vendor/leaflet-1.9.4/leaflet.js", "text/javascript; charset=utf-8", "public, max-age=31536000, immutable", "Leaflet 1.9.4"},
		{"/app/vendor/leaflet-1.9.4/leaflet.css", "text/css; charset=utf-8", "public, max-age=31536000, immutable", ".leaflet-pane"},
		{"/app/vendor/leaflet-1.9.4/LICENSE", "text/plain; charset=utf-8", "public, max-age=31536000, immutable", "BSD 2-Clause"},
		{"/app/vendor/leaflet-1.9.4/images/layers.png", "image/png", "public, max-age=31536000, immutable", "\x89PNG"},
		{"/app/vendor/uplot-1.6.32/uPlot.iife.min.js", "text/javascript; charset=utf-8", "public, max-age=31536000, immutable", "uPlot"},
		{"/app/vendor/uplot-1.6.32/uPlot.min.css", "text/css; charset=utf-8", "public, max-age=31536000, immutable", ".uplot"},
		{"/app/vendor/uplot-1.6.32/LICENSE", "text/plain; charset=utf-8", "public, max-age=31536000, immutable", "MIT"},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			r := get(t, h, http.MethodGet, tc.path, nil)
			require.Equal(t, http.StatusOK, r.StatusCode)
			assert.Equal(t, tc.contentType, r.Header.Get("Content-Type"))
			assert.Equal(t, tc.cache, r.Header.Get("Cache-Control"))
			assert.Equal(t, "nosniff", r.Header.Get("X-Content-Type-Options"))
			assert.Regexp(t, `^"[0-9a-f]{24}"$`, r.Header.Get("ETag"))
			assert.Empty(t, r.Header.Get("Content-Encoding"), "no gzip unless asked")
			assert.Contains(t, body(t, r), tc.contains)
		})
	}
}

func TestHandlerPageSecurityHeaders(t *testing.T) {
	r := get(t, web.Handler(), http.MethodGet, "/", nil)
	csp := r.Header.Get("Content-Security-Policy")
	assert.Contains(t, csp, "default-src 'self'")
	assert.Contains(t, csp, "script-src 'self';", "no inline or remote scripts")
	assert.Contains(t, csp, "connect-src 'self';", "the page talks to its own origin only")
	assert.Contains(t, csp, "img-src 'self' blob: data: https://tile.openstreetmap.org;")
	assert.Equal(t, "DENY", r.Header.Get("X-Frame-Options"))
	assert.Equal(t, "no-referrer", r.Header.Get("Referrer-Policy"))
}

func TestHandlerRevalidationAndGzip(t *testing.T) {
	h := web.Handler()
	first := get(t, h, http.MethodGet, "/app/app.js", nil)
	plain := body(t, first)
	etag := first.Header.Get("ETag")

	notModified := get(t, h, http.MethodGet, "/app/app.js", map[string]string{"If-None-Match": etag})
	assert.Equal(t, http.StatusNotModified, notModified.StatusCode)
	assert.Empty(t, body(t, notModified))

	zipped := get(t, h, http.MethodGet, "/app/app.js", map[string]string{"Accept-Encoding": "br, gzip;q=0.8"})
	require.Equal(t, http.StatusOK, zipped.StatusCode)
	assert.Equal(t, "gzip", zipped.Header.Get("Content-Encoding"))
	assert.Equal(t, "Accept-Encoding", zipped.Header.Get("Vary"))
	assert.Equal(t, strings.TrimSuffix(etag, `"`)+`-gz"`, zipped.Header.Get("ETag"))
	zr, err := gzip.NewReader(zipped.Body)
	require.NoError(t, err)
	unzipped, err := io.ReadAll(zr)
	require.NoError(t, err)
	assert.Equal(t, plain, string(unzipped))

	refused := get(t, h, http.MethodGet, "/app/app.js", map[string]string{"Accept-Encoding": "gzip;q=0"})
	assert.Empty(t, refused.Header.Get("Content-Encoding"))

	// A PNG is not recompressed.
	png := get(t, h, http.MethodGet, "/app/vendor/leaflet-1.9.4/images/layers.png", map[string]string{"Accept-Encoding": "gzip"})
	assert.Empty(t, png.Header.Get("Content-Encoding"))

	head := get(t, h, http.MethodHead, "/", nil)
	assert.Equal(t, http.StatusOK, head.StatusCode)
	assert.Empty(t, body(t, head))
}

func TestHandlerErrors(t *testing.T) {
	h := web.Handler()
	tests := []struct {
		method, path string
		status       int
		code         string
	}{
		{http.MethodGet, "/app/missing.js", http.StatusNotFound, "not_found"},
		{http.MethodGet, "/app/", http.StatusNotFound, "not_found"},
		{http.MethodGet, "/app/../go.mod", http.StatusNotFound, "not_found"},
		{http.MethodGet, "/other", http.StatusNotFound, "not_found"},
		{http.MethodPost, "/", http.StatusMethodNotAllowed, "method_not_allowed"},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			r := get(t, h, tc.method, tc.path, nil)
			assert.Equal(t, tc.status, r.StatusCode)
			assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
			var e struct {
				Error struct{ Code, Message string }
			}
			require.NoError(t, json.Unmarshal([]byte(body(t, r)), &e))
			assert.Equal(t, tc.code, e.Error.Code)
			assert.NotEmpty(t, e.Error.Message)
		})
	}
}

// The legend's table is the colormap package's, not a copy that could drift.
func TestColormapsJSONMatchesColormapPackage(t *testing.T) {
	r := get(t, web.Handler(), http.MethodGet, "/app/colormaps.json", nil)
	var got []colormap.Colormap
	require.NoError(t, json.Unmarshal([]byte(body(t, r)), &got))
	require.Len(t, got, len(colormap.Names())+len(colormap.RadarNames()))
	for i, name := range append(colormap.Names(), colormap.RadarNames()...) {
		want, ok := colormap.ForIndex(name)
		if !ok {
			want, ok = colormap.ForRadarIndex(name)
		}
		require.True(t, ok)
		assert.Equal(t, want.Index, got[i].Index)
		assert.Equal(t, want.Hex, got[i].Hex)
		assert.Equal(t, want.Start, got[i].Start)
		assert.Equal(t, want.Stop, got[i].Stop)
	}
	assert.Equal(t, []string{"#d3322b", "#f16d43", "#fcab64", "#fedc90", "#faf8c0", "#dcf1ec", "#abd6e8", "#76abd0", "#4a74b4", "#4a74b4"}, got[1].Hex)
	assert.Equal(t, 100.0, got[7].Start)
	assert.Equal(t, 2000.0, got[7].Stop)
	// The radar indices' legends: vv −25…0 dB.
	assert.Equal(t, "vv", got[8].Index)
	assert.Equal(t, -25.0, got[8].Start)
	assert.Equal(t, 0.0, got[8].Stop)
}

// No CDN: the page's own files load nothing from another origin. The one
// external URL allowed is the opt-in OpenStreetMap tile template.
func TestPageReferencesNoExternalURL(t *testing.T) {
	h := web.Handler()
	page := body(t, get(t, h, http.MethodGet, "/", nil))
	refs := regexp.MustCompile(`(?:src|href)="([^"]+)"`).FindAllStringSubmatch(page, -1)
	require.GreaterOrEqual(t, len(refs), 6)
	for _, m := range refs {
		ref := m[1]
		if ref == "data:," || strings.HasPrefix(ref, "#") {
			continue
		}
		assert.True(t, strings.HasPrefix(ref, "/app/"), "page reference %q is not a local asset", ref)
		r := get(t, h, http.MethodGet, ref, nil)
		assert.Equal(t, http.StatusOK, r.StatusCode, "page reference %q", ref)
	}
	external := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	for _, name := range []string{"/", "/app/app.js", "/app/app.css"} {
		text := body(t, get(t, h, http.MethodGet, name, nil))
		for _, u := range external.FindAllString(text, -1) {
			assert.Equal(t, "https://tile.openstreetmap.org", u, "external URL in %s", name)
		}
	}
	// Vendored CSS must not pull fonts or images from elsewhere either.
	for _, name := range []string{"/app/vendor/leaflet-1.9.4/leaflet.css", "/app/vendor/uplot-1.6.32/uPlot.min.css"} {
		text := body(t, get(t, h, http.MethodGet, name, nil))
		for _, m := range regexp.MustCompile(`url\(([^)]*)\)`).FindAllStringSubmatch(text, -1) {
			u := strings.Trim(m[1], `"' `)
			assert.False(t, strings.Contains(u, "//"), "%s loads %s", name, u)
			if !strings.HasPrefix(u, "data:") && !strings.HasPrefix(u, "#") { // #default#VML: old IE behaviour
				r := get(t, h, http.MethodGet, path.Dir(name)+"/"+u, nil)
				assert.Equal(t, http.StatusOK, r.StatusCode, "%s references missing %s", name, u)
			}
		}
	}
}

// Every vendored library keeps its licence and is recorded in the NOTICE.
func TestVendoredLicences(t *testing.T) {
	notice, err := os.ReadFile(filepath.Join("static", "vendor", "README.md"))
	require.NoError(t, err)
	dirs, err := fs.Glob(os.DirFS("static/vendor"), "*-*")
	require.NoError(t, err)
	assert.Equal(t, []string{"leaflet-1.9.4", "uplot-1.6.32"}, dirs)
	for _, d := range dirs {
		lic, err := os.ReadFile(filepath.Join("static", "vendor", d, "LICENSE"))
		require.NoError(t, err, d)
		assert.True(t, bytes.Contains(lic, []byte("Copyright")), d)
		name, version, _ := strings.Cut(d, "-")
		assert.Contains(t, string(notice), "| "+version+" |", name)
	}
}

// Handler is built once per server (server.New); it gzips the assets then.
func BenchmarkHandler(b *testing.B) {
	for b.Loop() {
		_ = web.Handler()
	}
}

func BenchmarkServeLeafletGzip(b *testing.B) {
	h := web.Handler()
	req := httptest.NewRequest(http.MethodGet, "/app/vendor/leaflet-1.9.4/leaflet.js", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatal(rec.Code)
		}
	}
}
