package stac_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/imagery"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/stac"
)

// fakePC answers, without any network, as Planetary Computer does: its
// token service on planetarycomputer.microsoft.com and band files on
// *.blob.core.windows.net that refuse requests without a valid token.
type fakePC struct {
	files map[string][]byte // URL path → bytes

	mu       sync.Mutex
	token    string
	tokens   int
	requests []string // every request URL, query included
	unsigned int
}

func (f *fakePC) RoundTrip(req *http.Request) (*http.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, req.URL.String())
	rec := httptest.NewRecorder()
	switch {
	case req.URL.Host == "planetarycomputer.microsoft.com" && strings.HasPrefix(req.URL.Path, "/api/sas/v1/token/"):
		f.tokens++
		f.token = fmt.Sprintf("st=2024-04-19T00%%3A00%%3A00Z&se=2024-04-20T00%%3A00%%3A00Z&sp=rl&sr=c&sig=SECRET%d", f.tokens)
		json.NewEncoder(rec).Encode(map[string]string{"token": f.token, "msft:expiry": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
	case strings.HasSuffix(req.URL.Host, ".blob.core.windows.net"):
		if f.token == "" || !strings.HasSuffix(req.URL.RawQuery, f.token) {
			f.unsigned++
			rec.WriteHeader(http.StatusForbidden)
			break
		}
		data, ok := f.files[req.URL.Path]
		if !ok {
			rec.WriteHeader(http.StatusNotFound)
			break
		}
		http.ServeContent(rec, req, "b.tif", time.Time{}, bytes.NewReader(data))
	default:
		rec.WriteHeader(http.StatusNotFound)
	}
	return rec.Result(), nil
}

// Without any configuration, a Client signs the assets of items on
// *.blob.core.windows.net with Planetary Computer's public token service,
// fetching one token per collection; the scene's errors never show it.
func TestDefaultPlanetaryComputerSigning(t *testing.T) {
	chip := testenv.DataDir(t, "s2", "flanders-31UES", "2019-06-20")
	pc := &fakePC{files: map[string][]byte{}}
	assets := map[string]any{}
	for _, b := range []string{"B04", "B08", "SCL"} {
		data, err := os.ReadFile(filepath.Join(chip, b+".tif"))
		require.NoError(t, err)
		pc.files["/sentinel2-l2/31/U/ES/"+b+".tif"] = data
		assets[b] = map[string]any{"href": "https://sentinel2l2a01.blob.core.windows.net/sentinel2-l2/31/U/ES/" + b + ".tif",
			"type": "image/tiff; application=geotiff; profile=cloud-optimized"}
	}
	assets["B05"] = map[string]any{"href": "https://sentinel2l2a01.blob.core.windows.net/sentinel2-l2/31/U/ES/missing.tif", "type": "image/tiff"}
	raw, err := json.Marshal(map[string]any{"type": "Feature", "id": "S2B_MSIL2A_20190620", "collection": "sentinel-2-l2a",
		"properties": map[string]any{"datetime": "2019-06-20T10:57:03Z", "platform": "Sentinel-2B", "s2:processing_baseline": "02.12"},
		"assets":     assets})
	require.NoError(t, err)
	item, err := stac.ParseItem(raw, "https://planetarycomputer.microsoft.com/api/stac/v1/search")
	require.NoError(t, err)

	fdata, err := os.ReadFile(testenv.DataDir(t, "fields", "flanders-31UES.geojson"))
	require.NoError(t, err)
	feats, err := geo.ReadFeatures(fdata)
	require.NoError(t, err)
	field := feats[0].Geometry
	var logs bytes.Buffer
	c := &stac.Client{HTTPClient: &http.Client{Transport: pc}}
	ctx := context.Background()
	s, err := c.OpenScene(ctx, item, imagery.SceneOptions{})
	require.NoError(t, err)
	_, err = s.ReadField(ctx, field, []string{"B04", "B08"})
	require.NoError(t, err)
	_, err = s.ReadField(ctx, field, []string{"B05"})
	require.Error(t, err, "a missing file: 404")
	slog.New(slog.NewTextHandler(&logs, nil)).Error("read failed", "err", err, "scene", s.ID())
	require.NoError(t, s.Close())

	assert.Equal(t, 1, pc.tokens, "one token for the collection, cached")
	assert.Zero(t, pc.unsigned)
	assert.Contains(t, err.Error(), "404")
	for _, text := range []string{err.Error(), logs.String()} {
		assert.NotContains(t, text, "SECRET")
		assert.NotContains(t, text, "sig=")
	}
	for _, r := range pc.requests {
		if strings.Contains(r, ".blob.core.windows.net") {
			assert.Contains(t, r, "sig=SECRET1", "signed: %s", r)
		}
	}
	// Stored as the item's source: the unsigned location.
	assert.NotContains(t, item.Source(), "sig=")
}

// Tokens are reused until shortly before msft:expiry, then fetched again.
func TestSASSignerCache(t *testing.T) {
	var calls int
	expiry := time.Date(2024, 4, 19, 12, 0, 0, 0, time.UTC)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		if r.URL.Path == "/api/sas/v1/token/unknown" {
			http.NotFound(w, r)
			return
		}
		layout := time.RFC3339
		if calls > 5 {
			layout = "2006-01-02T15:04:05" // no zone
		}
		fmt.Fprintf(w, `{"token":"se=x&sig=T%d","msft:expiry":%q}`, calls, expiry.Format(layout))
	}))
	defer srv.Close()
	now := expiry.Add(-time.Hour)
	s := &stac.SASSigner{URL: srv.URL + "/api/sas/v1", Now: func() time.Time { return now }}
	ctx := context.Background()
	tok, err := s.Token(ctx, "sentinel-2-l2a", false)
	require.NoError(t, err)
	assert.Equal(t, "se=x&sig=T1", tok)
	now = expiry.Add(-6 * time.Minute)
	tok, _ = s.Token(ctx, "sentinel-2-l2a", false)
	assert.Equal(t, "se=x&sig=T1", tok, "cached until 5 minutes before expiry")
	now = expiry.Add(-4 * time.Minute)
	tok, _ = s.Token(ctx, "sentinel-2-l2a", false)
	assert.Equal(t, "se=x&sig=T2", tok, "renewed shortly before expiry")
	tok, _ = s.Token(ctx, "landsat-c2-l2", false)
	assert.Equal(t, "se=x&sig=T3", tok, "one token per collection")
	tok, _ = s.Token(ctx, "sentinel-2-l2a", true)
	assert.Equal(t, "se=x&sig=T4", tok, "refresh forces a new one")
	_, err = s.Token(ctx, "unknown", false)
	require.ErrorIs(t, err, stac.ErrNoToken)
	_, err = s.Token(ctx, "unknown", false)
	require.ErrorIs(t, err, stac.ErrNoToken, "the 404 is remembered")
	assert.Equal(t, 5, calls)

	// The service named with its /token path; an expiry without zone is UTC.
	expiry = time.Date(2024, 4, 19, 12, 0, 0, 0, time.UTC)
	s2 := &stac.SASSigner{URL: srv.URL + "/api/sas/v1/token/", Now: func() time.Time { return now }}
	now = expiry.Add(-time.Hour)
	tok, err = s2.Token(ctx, "sentinel-2-l2a", false)
	require.NoError(t, err)
	assert.Equal(t, "se=x&sig=T6", tok)
	now = expiry.Add(-10 * time.Minute)
	tok, _ = s2.Token(ctx, "sentinel-2-l2a", false)
	assert.Equal(t, "se=x&sig=T6", tok)
}
