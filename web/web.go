// Package web is cropkit's browser viewer: a single page (a map of the
// fields with their index images, statistics, a timeline and a chart, and a
// zones tab) whose files are embedded in the binary, so `cropkit serve`
// needs no CDN, no build step and no network to serve it.
//
// Handler serves the page at "/" and its assets under AssetPrefix. The page
// talks to the cropkit API of the same origin with a Bearer token it keeps in
// session storage; it never puts the token in a URL.
package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/cropkit/cropkit/colormap"
)

// AssetPrefix is the URL prefix of the page's assets (scripts, styles,
// vendored libraries, colormaps.json). A server mounts Handler at "/" (the
// page) and at AssetPrefix.
const AssetPrefix = "/app/"

// files holds the page and its assets; embed.FS is read-only.
//
//go:embed static
var files embed.FS

// Cache policies. Vendored libraries live in versioned folders
// (vendor/leaflet-1.9.4/…), so a new version is a new URL and the old one may
// be cached for good; the page's own files change with the binary, so the
// browser revalidates them (a cheap 304 thanks to the ETag).
const (
	cacheImmutable   = "public, max-age=31536000, immutable"
	cacheRevalidate  = "no-cache"
	contentSecPolicy = "default-src 'self'; script-src 'self'; connect-src 'self'; " +
		// blob: for the index PNGs fetched with the Bearer header; the OSM
		// tiles are opt-in in the page (off by default, so it works offline).
		"img-src 'self' blob: data: https://tile.openstreetmap.org; " +
		// Leaflet and uPlot position elements with inline styles.
		"style-src 'self' 'unsafe-inline'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)

// asset is one file ready to serve.
type asset struct {
	body        []byte
	contentType string
	cache       string
	etag        string
	// The gzip form is made on the first request that accepts it, not in
	// Handler: every server.New builds a Handler (hundreds in the server
	// tests), and compressing all assets costs ~35 ms of CPU.
	gzOnce sync.Once
	gz     []byte // nil when not compressible or not smaller
}

// handler serves the embedded assets; built once by Handler, read-only after.
type handler struct {
	assets  map[string]*asset // by URL path ("/" is the page)
	modTime time.Time
}

// Handler returns the viewer: GET (and HEAD) "/" answers the page, GET
// AssetPrefix+name its assets with their content type, an ETag and a cache
// policy; other paths get 404 and other methods 405, both as the API's JSON
// error shape.
func Handler() http.Handler {
	h, err := newHandler()
	if err != nil {
		// The files are embedded at compile time and tested: an error here
		// is a broken build, not a runtime condition.
		panic(fmt.Sprintf("web: %v", err))
	}
	return h
}

func newHandler() (*handler, error) {
	h := &handler{assets: map[string]*asset{}}
	err := fs.WalkDir(files, "static", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := files.ReadFile(name)
		if err != nil {
			return fmt.Errorf("read %s: %w", name, err)
		}
		rel := strings.TrimPrefix(name, "static/")
		cache := cacheRevalidate
		if strings.HasPrefix(rel, "vendor/") {
			cache = cacheImmutable
		}
		h.assets[AssetPrefix+rel] = newAsset(b, contentType(rel), cache)
		return nil
	})
	if err != nil {
		return nil, err
	}
	page, ok := h.assets[AssetPrefix+"index.html"]
	if !ok {
		return nil, fmt.Errorf("static/index.html missing")
	}
	h.assets["/"] = page
	cm, err := colormapsJSON()
	if err != nil {
		return nil, err
	}
	h.assets[AssetPrefix+"colormaps.json"] = newAsset(cm, "application/json", cacheRevalidate)
	return h, nil
}

// colormapsJSON is the §2.6 table and the radar indices' colormaps as the
// page's legend reads them, taken from package colormap so the legend and
// the rendered PNGs cannot disagree.
func colormapsJSON() ([]byte, error) {
	var maps []colormap.Colormap
	for _, name := range colormap.Names() {
		c, ok := colormap.ForIndex(name)
		if !ok {
			return nil, fmt.Errorf("colormap %s listed but missing", name)
		}
		maps = append(maps, c)
	}
	for _, name := range colormap.RadarNames() {
		c, ok := colormap.ForRadarIndex(name)
		if !ok {
			return nil, fmt.Errorf("colormap %s listed but missing", name)
		}
		maps = append(maps, c)
	}
	b, err := json.Marshal(maps)
	if err != nil {
		return nil, fmt.Errorf("encode colormaps: %w", err)
	}
	return b, nil
}

func newAsset(body []byte, ctype, cache string) *asset {
	sum := sha256.Sum256(body)
	return &asset{body: body, contentType: ctype, cache: cache, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
}

// gzipped returns the gzip form of a compressible asset, or nil.
func (a *asset) gzipped() []byte {
	a.gzOnce.Do(func() {
		if !compressible(a.contentType) {
			return
		}
		var buf bytes.Buffer
		// Writes to a bytes.Buffer cannot fail, and the level is valid.
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = zw.Write(a.body)
		_ = zw.Close()
		if buf.Len() < len(a.body) {
			a.gz = buf.Bytes()
		}
	})
	return a.gz
}

// contentType is set explicitly (not sniffed, not from the OS's mime.types)
// so the answer is the same on every machine; nosniff makes it binding.
func contentType(name string) string {
	switch path.Ext(name) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".json":
		return "application/json"
	case ".png":
		return "image/png"
	case ".svg":
		return "image/svg+xml"
	case ".md":
		return "text/markdown; charset=utf-8"
	}
	return "text/plain; charset=utf-8" // LICENSE files
}

func compressible(ctype string) bool {
	return strings.HasPrefix(ctype, "text/") || ctype == "application/json" || ctype == "image/svg+xml"
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "method "+r.Method+" not allowed on "+r.URL.Path+" (allowed: GET, HEAD)")
		return
	}
	a, ok := h.assets[r.URL.Path]
	if !ok {
		writeError(w, http.StatusNotFound, "not_found", "no viewer file at "+r.URL.Path)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", a.contentType)
	hd.Set("Cache-Control", a.cache)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	if strings.HasPrefix(a.contentType, "text/html") {
		hd.Set("Content-Security-Policy", contentSecPolicy)
		hd.Set("X-Frame-Options", "DENY")
	}
	body, etag := a.body, a.etag
	if compressible(a.contentType) {
		hd.Add("Vary", "Accept-Encoding")
		if gz := a.gzipped(); gz != nil && acceptsGzip(r) {
			body, etag = gz, strings.TrimSuffix(a.etag, `"`)+`-gz"`
			hd.Set("Content-Encoding", "gzip")
		}
	}
	hd.Set("ETag", etag)
	// ServeContent answers If-None-Match (304), HEAD and ranges.
	http.ServeContent(w, r, "", h.modTime, bytes.NewReader(body))
}

// acceptsGzip reports whether the request accepts gzip (any q > 0).
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			continue
		}
		q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}

// writeError answers in the API's error shape, so a client sees one format
// whether the viewer or the API answered.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	b, _ := json.Marshal(map[string]map[string]string{"error": {"code": code, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
