package server

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/api"
)

func TestRecovererAnswers500AndLogs(t *testing.T) {
	var logs bytes.Buffer
	s := &Server{log: slog.New(slog.NewTextHandler(&logs, nil))}
	h := s.recoverer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]int
		m["boom"]++ // nil map write: a panic
	}))
	rec := httptest.NewRecorder()
	require.NotPanics(t, func() { h.ServeHTTP(rec, httptest.NewRequest("GET", "/x", nil)) })
	assert.Equal(t, 500, rec.Code)
	var body api.ErrorBody
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
	assert.Equal(t, api.CodeInternal, body.Error.Code)
	assert.Contains(t, logs.String(), "panic serving request")
	assert.Contains(t, logs.String(), "nil map")
}

func TestDownloadKind(t *testing.T) {
	for _, tc := range []struct{ fileType, ext, want string }{
		{"image", "", kindPNG}, {"json", "", kindJSON}, {"", "", kindZip}, {"json", "json", kindJSON}, {"image", "PNG", kindPNG}, {"png", "png", kindPNG}, {"", "PNG", kindPNG},
	} {
		got, err := downloadKind(tc.fileType, tc.ext)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "%q %q", tc.fileType, tc.ext)
	}
	// The path's file type and ext disagreeing is a 400 too (QA: ext=png on
	// /json answered a PNG).
	for _, tc := range [][2]string{{"pdf", ""}, {"", "gif"}, {"json", "png"}, {"image", "json"}, {"png", "json"}} {
		_, err := downloadKind(tc[0], tc[1])
		var e *Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, 400, e.Status)
	}
}

func TestParams(t *testing.T) {
	r := httptest.NewRequest("POST", "/x?lat=50.5&indices=ndvi,%20NDRE&date=2019-06-20", strings.NewReader(`{"lon":4.25,"labels":"{\"a\":\"b\"}","geometry":{"type":"Polygon"}}`))
	r.Header.Set("Content-Type", "application/json")
	p, err := readParams(r, 1<<20)
	require.NoError(t, err)
	lat, ok, err := p.float("lat")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, 50.5, lat)
	lon, _, err := p.float("lon")
	require.NoError(t, err)
	assert.Equal(t, 4.25, lon)
	l, _, err := p.list("indices")
	require.NoError(t, err)
	assert.Equal(t, []string{"ndvi", "ndre"}, l)
	lab, _, err := p.labels("labels")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"a": "b"}, lab)
	g, _, err := p.object("geometry")
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"Polygon"}`, string(g))
	d, _, err := p.date("date")
	require.NoError(t, err)
	assert.Equal(t, "2019-06-20", d)
	_, _, err = p.str("geometry")
	assert.Error(t, err)
}
