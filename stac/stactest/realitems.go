package stactest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cropkit/cropkit/imagery/geotiff"
	"github.com/cropkit/cropkit/internal/testenv"
)

// RealItems serves the real STAC item documents of ../shared/data/stac-items
// (Earth Search v0/v1, Planetary Computer, CDSE: PROVENANCE.md there)
// retargeted onto one local chip: geometry, bbox, proj:*, datetime and the
// https hrefs are changed, everything else is served as the catalogue served
// it (s3:// hrefs, self links, JPEG 2000 assets, raster:* fields…). Band
// files are fresh copies of the chip's, carrying the archive's offset (+1000
// DN) where the item says the archive has it, without the chip's
// REFLECTANCE_* metadata, as real COGs come.
//
// Assets of Planetary Computer items live on a separate server that, like
// *.blob.core.windows.net, answers 403 to any request without a valid token
// of the local SAS token service (SignURL).
type RealItems struct {
	// Items are the served items, in file name order.
	Items []RealItem
	// SignURL is the root of the SAS token service: GET SignURL/token/{collection}.
	SignURL string
	// BlobURL is the root of the Planetary Computer-like asset server.
	BlobURL string
	// AssetHosts are the "host:port" of the two asset servers (plain and
	// Planetary Computer-like): other origins than the items', which a
	// client must allow separately to reach them on loopback.
	AssetHosts []string

	items, assets, blob, sas *httptest.Server

	unsigned, tokenRequests, blobRequests atomic.Int64
	mu                                    sync.Mutex
	tokens                                map[string]bool // valid tokens' sig
	files                                 map[string]string
}

// RealItem is one served item.
type RealItem struct {
	// Name is the document's file name without .json.
	Name string
	// URL is where the item is served.
	URL string
	// Collection is the item's collection id.
	Collection string
	// Shifted: the band files carry +1000 DN, as the archive serves this item.
	Shifted bool
	// Signed: the assets are on the Planetary Computer-like server.
	Signed bool
}

// planetaryCollections are the collections the local token service knows.
var planetaryCollections = []string{"sentinel-2-l2a", "landsat-c2-l2", "sentinel-1-rtc"}

// ServeRealItems serves the real items retargeted onto the chip folder chip
// (a shared s2/<place>/<date> folder), skipping the test when the shared
// data is absent outside CI.
func ServeRealItems(t testing.TB, chip string) *RealItems {
	t.Helper()
	dir := testenv.DataDir(t, "stac-items")
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(names) == 0 {
		t.Fatalf("stactest: no item in %s: %v", dir, err)
	}
	ci, err := ChipItem(chip)
	if err != nil {
		t.Fatalf("%v", err)
	}
	r := &RealItems{tokens: map[string]bool{}, files: map[string]string{}}
	docs := map[string][]byte{}
	r.items = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		doc, ok := docs[strings.TrimPrefix(req.URL.Path, "/items/")]
		if !ok {
			http.NotFound(w, req)
			return
		}
		w.Header().Set("Content-Type", "application/geo+json")
		w.Write(doc)
	}))
	r.assets = httptest.NewServer(http.HandlerFunc(r.serveAsset))
	r.blob = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.blobRequests.Add(1)
		if !r.validSig(req.URL.Query().Get("sig")) {
			r.unsigned.Add(1)
			http.Error(w, "AuthenticationFailed: Server failed to authenticate the request", http.StatusForbidden)
			return
		}
		r.serveAsset(w, req)
	}))
	r.sas = httptest.NewServer(http.HandlerFunc(r.serveToken))
	t.Cleanup(func() {
		for _, s := range []*httptest.Server{r.items, r.assets, r.blob, r.sas} {
			s.Close()
		}
	})
	r.BlobURL, r.SignURL = r.blob.URL, r.sas.URL+"/api/sas/v1"
	r.AssetHosts = []string{r.assets.Listener.Addr().String(), r.blob.Listener.Addr().String()}

	shifted := map[bool]string{}
	for _, shift := range []bool{false, true} {
		d := filepath.Join(t.TempDir(), fmt.Sprint(shift))
		if err := writeBandCopies(ci, d, shift); err != nil {
			t.Fatalf("stactest: %v", err)
		}
		shifted[shift] = d
	}
	for _, path := range names {
		name := strings.TrimSuffix(filepath.Base(path), ".json")
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("stactest: %v", err)
		}
		var item map[string]any
		if err := json.Unmarshal(raw, &item); err != nil {
			t.Fatalf("stactest: %s: %v", path, err)
		}
		it := RealItem{Name: name, URL: r.items.URL + "/items/" + name, Shifted: archiveOffset(item)}
		it.Collection, _ = item["collection"].(string)
		it.Signed = retarget(item, ci, func(key string, blob bool) string {
			band := assetBandFile(key)
			if band == "" {
				return "" // thumbnails, metadata: not served
			}
			r.mu.Lock()
			r.files[name+"/"+key] = filepath.Join(shifted[it.Shifted], band+".tif")
			r.mu.Unlock()
			root := r.assets.URL
			if blob {
				root = r.blob.URL
			}
			return root + "/" + name + "/" + key + ".tif"
		})
		doc, err := json.Marshal(item)
		if err != nil {
			t.Fatalf("stactest: %v", err)
		}
		docs[name] = doc
		r.Items = append(r.Items, it)
	}
	return r
}

// Item returns the served item whose name starts with prefix.
func (r *RealItems) Item(t testing.TB, prefix string) RealItem {
	t.Helper()
	for _, it := range r.Items {
		if strings.HasPrefix(it.Name, prefix) {
			return it
		}
	}
	t.Fatalf("stactest: no real item %s*", prefix)
	return RealItem{}
}

// Unsigned counts requests to the Planetary Computer-like server without a
// valid token (each answered 403).
func (r *RealItems) Unsigned() int64 { return r.unsigned.Load() }

// BlobRequests counts requests to the Planetary Computer-like server.
func (r *RealItems) BlobRequests() int64 { return r.blobRequests.Load() }

// TokenRequests counts the token service's answers.
func (r *RealItems) TokenRequests() int64 { return r.tokenRequests.Load() }

// RevokeTokens makes every token issued so far invalid (as an expired or
// revoked SAS token): the next signed request is answered 403.
func (r *RealItems) RevokeTokens() {
	r.mu.Lock()
	clear(r.tokens)
	r.mu.Unlock()
}

// Token is a valid token of the service, as a client would append it.
func (r *RealItems) Token() string {
	sig := make([]byte, 16)
	rand.Read(sig)
	s := hex.EncodeToString(sig)
	r.mu.Lock()
	r.tokens[s] = true
	r.mu.Unlock()
	return "st=2024-04-19T00%3A00%3A00Z&se=2024-04-20T00%3A00%3A00Z&sp=rl&sv=2024-05-04&sr=c&skoid=local&sig=" + s
}

func (r *RealItems) validSig(sig string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return sig != "" && r.tokens[sig]
}

func (r *RealItems) serveToken(w http.ResponseWriter, req *http.Request) {
	coll, ok := strings.CutPrefix(req.URL.Path, "/api/sas/v1/token/")
	if !ok || !slices.Contains(planetaryCollections, coll) {
		http.Error(w, `{"detail":"Not Found"}`, http.StatusNotFound)
		return
	}
	r.tokenRequests.Add(1)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]string{
		"msft:expiry": time.Now().Add(time.Hour).UTC().Format("2006-01-02T15:04:05Z"),
		"token":       r.Token(),
	})
}

func (r *RealItems) serveAsset(w http.ResponseWriter, req *http.Request) {
	key := strings.TrimSuffix(strings.TrimPrefix(req.URL.Path, "/"), ".tif")
	r.mu.Lock()
	path, ok := r.files[key]
	r.mu.Unlock()
	if !ok {
		http.NotFound(w, req)
		return
	}
	f, err := os.Open(path)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer f.Close()
	http.ServeContent(w, req, key+".tif", time.Time{}, f)
}

// archiveOffset says whether the archive's band files of item carry the
// +1000 DN offset of processing baseline 04.00, by what each archive
// documents: Earth Search and CDSE declare it per asset (raster:bands or
// raster:offset −0.1), Planetary Computer only by s2:processing_baseline.
func archiveOffset(item map[string]any) bool {
	assets, _ := item["assets"].(map[string]any)
	for _, a := range assets {
		a, _ := a.(map[string]any)
		if off, ok := a["raster:offset"].(float64); ok && off != 0 {
			return true
		}
		if rb, ok := a["raster:bands"].([]any); ok && len(rb) == 1 {
			b, _ := rb[0].(map[string]any)
			if off, ok := b["offset"].(float64); ok {
				if s, _ := b["scale"].(float64); s == 0.0001 {
					return off != 0
				}
			}
		}
	}
	props, _ := item["properties"].(map[string]any)
	if applied, ok := props["earthsearch:boa_offset_applied"].(bool); ok && applied {
		return false
	}
	pb, _ := props["s2:processing_baseline"].(string)
	return pb >= "04.00"
}

// bandKey finds the Sentinel-2 band of an asset key: red, B04, B04_10m, SCL_20m.
var bandKey = regexp.MustCompile(`^(B0[1-9]|B1[0-2]|B8A|SCL)(_\d+M)?$`)

// assetBandFile is the chip file name (B04, SCL) an asset key serves, "" for
// keys of no single Sentinel-2 band.
func assetBandFile(key string) string {
	for band, k := range assetKeys {
		if k == strings.ToLower(key) {
			return band
		}
	}
	if m := bandKey.FindStringSubmatch(strings.ToUpper(key)); m != nil {
		return m[1]
	}
	return ""
}

// retarget rewrites item onto chip: footprint, datetime, projection and
// https hrefs (href(key, blob) gives an asset's new href, "" to keep it).
// It reports whether the item's assets were on Planetary Computer's blob
// storage.
func retarget(item map[string]any, chip Item, href func(key string, blob bool) string) (blob bool) {
	b := chip.Bbox
	item["bbox"] = []float64{b[0], b[1], b[2], b[3]}
	item["geometry"] = map[string]any{"type": "Polygon", "coordinates": [][][2]float64{{
		{b[0], b[1]}, {b[2], b[1]}, {b[2], b[3]}, {b[0], b[3]}, {b[0], b[1]}}}}
	props, _ := item["properties"].(map[string]any)
	props["datetime"] = chip.Datetime.UTC().Format("2006-01-02T15:04:05.000000Z")
	reproject := func(m map[string]any) {
		for _, k := range []string{"proj:bbox", "proj:shape", "proj:transform", "proj:centroid", "proj:geometry"} {
			delete(m, k)
		}
		if _, ok := m["proj:epsg"]; ok {
			m["proj:epsg"] = chip.EPSG
		}
		if _, ok := m["proj:code"]; ok {
			m["proj:code"] = fmt.Sprintf("EPSG:%d", chip.EPSG)
		}
	}
	reproject(props)
	assets, _ := item["assets"].(map[string]any)
	for _, a := range assets {
		a, _ := a.(map[string]any)
		h, _ := a["href"].(string)
		blob = blob || strings.Contains(h, ".blob.core.windows.net/")
	}
	for _, key := range slices.Sorted(maps.Keys(assets)) {
		a, _ := assets[key].(map[string]any)
		reproject(a)
		if h, _ := a["href"].(string); strings.HasPrefix(h, "https://") {
			if nh := href(key, blob); nh != "" {
				a["href"] = nh
			}
		}
		alts, _ := a["alternate"].(map[string]any)
		for _, alt := range alts {
			alt, _ := alt.(map[string]any)
			if h, _ := alt["href"].(string); strings.HasPrefix(h, "https://") {
				if nh := href(key, blob); nh != "" {
					alt["href"] = nh
				}
			}
		}
	}
	return blob
}

// writeBandCopies writes the chip's band files into dir as uint16 GeoTIFFs
// with the chip's grid and nodata, reflectance bands shifted by +1000 DN
// (nodata stays 0) when shift, and no REFLECTANCE_* metadata.
func writeBandCopies(chip Item, dir string, shift bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for key, src := range chip.Files {
		band := assetBandFile(key)
		f, err := geotiff.OpenFile(src)
		if err != nil {
			return err
		}
		g := f.Grid()
		r, err := f.ReadWindow(context.Background(), g.Full())
		nd, hasND := f.NoData()
		md := f.Metadata()
		f.Close()
		if err != nil {
			return fmt.Errorf("read %s: %w", src, err)
		}
		for k := range md {
			if strings.HasPrefix(k, "REFLECTANCE_") {
				delete(md, k)
			}
		}
		out := r
		if band != "SCL" && band != "CLM" {
			out = geotiff.NewRaster(r.Window, geotiff.Uint16)
			for i := range out.U16 {
				v := r.At(i)
				if shift && v != 0 {
					v += 1000
				}
				out.U16[i] = uint16(v)
			}
		}
		var buf bytes.Buffer
		if err := geotiff.Write(&buf, g, out, geotiff.WriteOptions{HasNoData: hasND, NoData: nd, Metadata: md}); err != nil {
			return fmt.Errorf("write %s: %w", band, err)
		}
		if err := os.WriteFile(filepath.Join(dir, band+".tif"), buf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}
