package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/internal/testenv"
)

// response is a recorded answer.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into a generic map.
func (r response) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.Body, &m), "body: %s", r.Body)
	return m
}

// ErrorCode is the error code of an error answer.
func (r response) ErrorCode(t testing.TB) string {
	t.Helper()
	m := r.JSON(t)
	e, ok := m["error"].(map[string]any)
	require.True(t, ok, "no error object in %s", r.Body)
	return e["code"].(string)
}

// do sends one request to h. body may be nil, a string (sent as is with the
// given content type in header "Content-Type", default JSON) or any value
// (sent as JSON). token "" sends none; it goes in the Authorization header.
func do(t testing.TB, h http.Handler, method, target, token string, body any) response {
	t.Helper()
	var rd io.Reader
	ct := ""
	switch b := body.(type) {
	case nil:
	case string:
		rd, ct = strings.NewReader(b), "application/json"
	case []byte:
		rd, ct = bytes.NewReader(b), "application/json"
	default:
		data, err := json.Marshal(b)
		require.NoError(t, err)
		rd, ct = bytes.NewReader(data), "application/json"
	}
	req := httptest.NewRequestWithContext(context.Background(), method, target, rd)
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
}

// flandersFields reads the real field polygons of flanders-31UES by name.
func flandersFields(t testing.TB) map[string]geo.Feature {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.DataDir(t, "fields"), "flanders-31UES.geojson"))
	require.NoError(t, err)
	feats, err := geo.ReadFeatures(data)
	require.NoError(t, err)
	out := map[string]geo.Feature{}
	for _, f := range feats {
		out[f.Name] = f
	}
	return out
}

// polygonJSON is a GeoJSON Polygon of a lon/lat box.
func polygonJSON(w, s, e, n float64) map[string]any {
	return map[string]any{"type": "Polygon", "coordinates": [][][2]float64{{{w, s}, {e, s}, {e, n}, {w, n}, {w, s}}}}
}

func readFile(path string) ([]byte, error) { return os.ReadFile(path) }

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

func mustPolygon(t testing.TB) orb.MultiPolygon {
	t.Helper()
	mp, err := geo.ParseGeometry([]byte(`{"type":"Polygon","coordinates":[[[4.06,50.74],[4.07,50.74],[4.07,50.75],[4.06,50.74]]]}`))
	require.NoError(t, err)
	return mp
}
