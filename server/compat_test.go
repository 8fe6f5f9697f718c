package server_test

import (
	"bytes"
	"context"
	"mime/multipart"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/server"
	"github.com/cropkit/cropkit/server/servertest"
)

// multipartDo posts form fields as multipart/form-data (as SpaceSense's
// Python client does with requests' files=).
func multipartDo(t *testing.T, env *servertest.Env, target, tok string, fields map[string]string) response {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, v := range fields {
		require.NoError(t, mw.WriteField(k, v))
	}
	require.NoError(t, mw.Close())
	req := httptest.NewRequest("POST", target, &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	rec := httptest.NewRecorder()
	env.Handler.ServeHTTP(rec, req)
	return response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
}

func formDo(t *testing.T, env *servertest.Env, target, form string) response {
	t.Helper()
	req := httptest.NewRequest("POST", target, strings.NewReader(form))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	env.Handler.ServeHTTP(rec, req)
	return response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
}

// SpaceSense's published Python client (spacesense-ai/api, client.py and
// its README) works unchanged: its calls, as it makes them.
func TestSpaceSenseClientCalls(t *testing.T) {
	sceneDir := testenv.DataDir(t, "s2", "flanders-31UES", "2019-06-20")
	fields := flandersFields(t)
	env := servertest.New(t, server.Config{})
	_, err := env.Archive.CreateUser(context.Background(), archive.NewUser{Name: "farmer", Password: "s3cret"})
	require.NoError(t, err)

	// POST /user/login with form fields → {"token": …}
	r := formDo(t, env, "/user/login", "username=farmer&password=s3cret")
	require.Equal(t, 200, r.Status, "%s", r.Body)
	tok := r.JSON(t)["token"].(string)

	// GET /fields/check/{field_name} → {"available": …}
	r = do(t, env.Handler, "GET", "/fields/check/Field-A", tok, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	assert.Equal(t, true, r.JSON(t)["available"])

	// Registration as in its README: label mixes services and free labels,
	// geojson is a Feature; it reads back "area (ha)".
	feature := map[string]any{"type": "Feature", "properties": map[string]any{},
		"geometry": map[string]any{"type": "MultiPolygon", "coordinates": fields["UES-03"].Geometry}}
	r = do(t, env.Handler, "POST", "/fields/register", tok, map[string]any{
		"field_name": "Field-A", "label": []string{"ndvi", "Farmer-34", "ndre"}, "geojson": feature})
	require.Equal(t, 201, r.Status, "%s", r.Body)
	area := r.JSON(t)["area (ha)"].(float64)
	assert.InDelta(t, 4.2, area, 2.5, "a real field of a few hectares")
	f := r.JSON(t)["field"].(map[string]any)
	assert.Equal(t, []any{"ndvi", "ndre"}, f["indices"])
	assert.Equal(t, map[string]any{"Farmer-34": ""}, f["labels"])
	r = do(t, env.Handler, "GET", "/fields/check/Field-A", tok, nil)
	assert.Equal(t, false, r.JSON(t)["available"])

	// POST /fields/list → {"fields": […]}
	r = do(t, env.Handler, "POST", "/fields/list", tok, nil)
	require.Equal(t, 200, r.Status)
	assert.Len(t, r.JSON(t)["fields"], 1)

	_, err = env.Archive.Ingest(context.Background(), sceneDir, archive.IngestOptions{})
	require.NoError(t, err)

	// POST /files/list and /files/get with multipart field_name, ext, date (no service: ndvi).
	r = multipartDo(t, env, "/files/list", tok, map[string]string{"field_name": "Field-A"})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	assert.Len(t, r.JSON(t)["indices"].(map[string]any)["ndvi"], 1)
	r = multipartDo(t, env, "/files/get", tok, map[string]string{"field_name": "Field-A", "ext": "png", "date": "2019-06-20"})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	assert.Equal(t, "image/png", r.Header.Get("Content-Type"))
	// The client reads the name as Content-Disposition.split('=')[-1].
	cd := r.Header.Get("Content-Disposition")
	parts := strings.Split(cd, "=")
	assert.Equal(t, "Field-A_ndvi_20190620.png", parts[len(parts)-1], cd)

	// /download/image and /download/json omit the service: ndvi.
	for _, ft := range []string{"image", "json"} {
		r = do(t, env.Handler, "GET", "/download/"+ft+"?field_name=Field-A", tok, nil)
		require.Equal(t, 200, r.Status, "%s: %s", ft, r.Body)
		assert.Contains(t, r.Header.Get("Content-Disposition"), "_ndvi_20190620", ft)
		r = do(t, env.Handler, "GET", "/files/get/"+ft+"?field_name=Field-A", tok, nil)
		require.Equal(t, 200, r.Status, "%s: %s", ft, r.Body)
	}
}

// Re-ingesting identical imagery notifies nobody; imagery whose values
// changed notifies once.
func TestReingestNotifiesOnlyWhatIsNew(t *testing.T) {
	sceneRoot := testenv.DataDir(t, "s2", "flanders-31UES")
	env, tok := webhookEnv(t, archive.WebhookOptions{AllowPrivate: true})
	a := newReceiver(t, ack)
	registerRealFields(t, env.Handler, tok, []string{"UES-03"}, []string{"ndvi"})
	registerHook(t, env.Handler, tok, a.srv.URL+"/hook")
	scene := filepath.Join(sceneRoot, "2019-06-20")
	ingest(t, env, scene)
	settled(t, env.Handler, tok, 10*time.Second)
	require.Len(t, deliveries(t, env.Handler, tok), 1)

	ingest(t, env, scene) // the same imagery again
	settled(t, env.Handler, tok, 10*time.Second)
	assert.Len(t, deliveries(t, env.Handler, tok), 1, "identical imagery: no new notification")

	// A new date notifies (values changed on a known date: archive's TestRecordNotifiesChangedOnly).
	other := filepath.Join(sceneRoot, "2019-07-05")
	_, err := env.Archive.Ingest(context.Background(), other, archive.IngestOptions{})
	require.NoError(t, err)
	settled(t, env.Handler, tok, 10*time.Second)
	require.Len(t, deliveries(t, env.Handler, tok), 2, "a new date notifies")
}
