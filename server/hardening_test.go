package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/server"
	"github.com/cropkit/cropkit/server/servertest"
)

// Unclean paths get a JSON 404 that echoes neither the path's query nor a
// Location (the mux would redirect with the token in Location).
func TestUncleanPathsAre404WithoutEcho(t *testing.T) {
	env := servertest.New(t, server.Config{})
	tok := env.AddUser(t, "alice", nil)
	for _, target := range []string{
		"/download/../fields/list?token=" + tok,
		"//download/ndvi?token=" + tok,
		"/fields/./list?token=" + tok,
	} {
		t.Run(target, func(t *testing.T) {
			r := do(t, env.Handler, "GET", target, "", nil)
			assert.Equal(t, 404, r.Status)
			assert.Equal(t, "not_found", r.ErrorCode(t))
			assert.Empty(t, r.Header.Get("Location"))
			assert.NotContains(t, string(r.Body), tok)
		})
	}
}

// A malformed body keeps the query's token: the caller is authenticated,
// then told the body is wrong (400), not asked for a token (403).
func TestMalformedBodyKeepsQueryToken(t *testing.T) {
	env := servertest.New(t, server.Config{})
	tok := env.AddUser(t, "alice", nil)
	for _, body := range []string{"[1,2]", "{", "42"} {
		r := do(t, env.Handler, "POST", "/download/ndvi/json?field_name=x&token="+tok, "", body)
		assert.Equal(t, 400, r.Status, "body %s: %s", body, r.Body)
		assert.Equal(t, "bad_request", r.ErrorCode(t))
	}
	r := do(t, env.Handler, "POST", "/download/ndvi/json?field_name=x", "", "[1,2]")
	assert.Equal(t, 403, r.Status, "no token anywhere")
	r = do(t, env.Handler, "POST", "/download/ndvi/json?field_name=x&token=wrong", "", "[1,2]")
	assert.Equal(t, 403, r.Status, "a wrong token is still refused first")
}

// The typed §2.2 keys are accepted as query or form strings.
func TestMetadataTypedKeysFromQuery(t *testing.T) {
	env := servertest.New(t, server.Config{})
	tok := env.AddUser(t, "alice", nil)
	r := do(t, env.Handler, "POST", "/fields/register", tok, map[string]any{"field_name": "f", "geometry": polygonJSON(4.06, 50.74, 4.07, 50.75)})
	require.Equal(t, 201, r.Status, "%s", r.Body)
	r = do(t, env.Handler, "POST", "/fields/metadata/register?token="+tok+
		"&field_name=f&start_date=2019-03-01&is_tilled=true&is_cover_crop=FALSE&yield_amount=9&crop_type=maize", "", nil)
	require.Equal(t, 201, r.Status, "%s", r.Body)
	f, err := env.Archive.Store().FieldSummary(context.Background(), userID(t, env, "alice"), "f")
	require.NoError(t, err)
	seasons, err := env.Archive.Store().Seasons(context.Background(), f.ID)
	require.NoError(t, err)
	require.Len(t, seasons, 1)
	assert.JSONEq(t, `{"field_name":"f","start_date":"2019-03-01","crop_type":"maize","is_cover_crop":false,"yield_amount":9,"is_tilled":true}`, string(seasons[0].Record))

	for _, tc := range []struct{ query, key string }{
		{"is_tilled=yes", "is_tilled"},
		{"yield_amount=9.5", "yield_amount"},
		{"yield_amount=lots", "yield_amount"},
	} {
		r = do(t, env.Handler, "POST", "/fields/metadata/register?token="+tok+"&field_name=f&start_date=2019-04-01&"+tc.query, "", nil)
		assert.Equal(t, 400, r.Status, "%s: %s", tc.query, r.Body)
		assert.Contains(t, string(r.Body), tc.key)
	}
}

func userID(t *testing.T, env *servertest.Env, name string) int64 {
	t.Helper()
	u, err := env.Archive.UserByName(context.Background(), name)
	require.NoError(t, err)
	return u.ID
}

func TestWebhookRegistrationsCapped(t *testing.T) {
	env := servertest.NewWith(t, archive.Config{Limits: archive.Limits{WebhooksPerUser: 2}}, server.Config{})
	tok := env.AddUser(t, "alice", nil)
	reg := func(u string) response {
		return do(t, env.Handler, "POST", "/notifications/register_webhook?url="+url.QueryEscape(u), tok, nil)
	}
	require.Equal(t, 200, reg("https://example.com/a").Status)
	require.Equal(t, 200, reg("https://example.com/b").Status)
	r := reg("https://example.com/c")
	assert.Equal(t, 400, r.Status)
	assert.Contains(t, string(r.Body), "at most 2")
	assert.Equal(t, 200, reg("https://example.com/a").Status, "registering a known URL again is no new registration")
	require.Equal(t, 200, do(t, env.Handler, "POST", "/notifications/delete?url="+url.QueryEscape("https://example.com/b"), tok, nil).Status)
	assert.Equal(t, 200, reg("https://example.com/c").Status, "room again after a delete")
	bob := env.AddUser(t, "bob", nil)
	r = do(t, env.Handler, "POST", "/notifications/register_webhook?url="+url.QueryEscape("https://example.com/c"), bob, nil)
	assert.Equal(t, 200, r.Status, "the cap is per account")
}

func TestFieldExtentAndQuota(t *testing.T) {
	env := servertest.NewWith(t, archive.Config{Limits: archive.Limits{FieldsPerUser: 3, FieldParts: 4}}, server.Config{})
	tok := env.AddUser(t, "alice", nil)
	square := func(lon, lat float64) [][][2]float64 {
		return [][][2]float64{{{lon, lat}, {lon + 0.001, lat}, {lon + 0.001, lat + 0.001}, {lon, lat + 0.001}, {lon, lat}}}
	}
	hole := [][][2]float64{
		{{3, 50}, {5, 50}, {5, 51}, {3, 51}, {3, 50}},
		{{3.0001, 50.0001}, {3.0001, 50.9999}, {4.9999, 50.9999}, {4.9999, 50.0001}, {3.0001, 50.0001}},
	}
	many := [][][][2]float64{}
	for i := range 5 {
		many = append(many, square(4.06+0.002*float64(i), 50.74))
	}
	for _, tc := range []struct {
		name string
		geom map[string]any
		msg  string
	}{
		{"two tiny squares 2° apart", map[string]any{"type": "MultiPolygon", "coordinates": [][][][2]float64{square(4.06, 50.74), square(6.06, 52.74)}}, "bounding box"},
		{"huge ring with a big hole", map[string]any{"type": "Polygon", "coordinates": hole}, "bounding box"},
		{"too many parts", map[string]any{"type": "MultiPolygon", "coordinates": many}, "at most 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, env.Handler, "POST", "/fields/register", tok, map[string]any{"field_name": "x", "geometry": tc.geom})
			assert.Equal(t, 400, r.Status, "%s", r.Body)
			assert.Equal(t, "invalid_geometry", r.ErrorCode(t))
			assert.Contains(t, string(r.Body), tc.msg)
		})
	}
	// Updates are held to the same caps.
	r := do(t, env.Handler, "POST", "/fields/register", tok, map[string]any{"field_name": "f0", "geometry": polygonJSON(4.06, 50.74, 4.07, 50.75)})
	require.Equal(t, 201, r.Status, "%s", r.Body)
	r = do(t, env.Handler, "POST", "/fields/update", tok, map[string]any{"field_name": "f0", "geometry": map[string]any{"type": "Polygon", "coordinates": hole}})
	assert.Equal(t, 400, r.Status)
	// The quota: 3 fields.
	for _, name := range []string{"f1", "f2"} {
		r = do(t, env.Handler, "POST", "/fields/register", tok, map[string]any{"field_name": name, "geometry": polygonJSON(4.06, 50.74, 4.07, 50.75)})
		require.Equal(t, 201, r.Status, "%s", r.Body)
	}
	r = do(t, env.Handler, "POST", "/fields/register", tok, map[string]any{"field_name": "f3", "geometry": polygonJSON(4.06, 50.74, 4.07, 50.75)})
	assert.Equal(t, 400, r.Status)
	assert.Contains(t, string(r.Body), "quota")
	require.Equal(t, 200, do(t, env.Handler, "POST", "/fields/delete?field_name=f2", tok, nil).Status)
	r = do(t, env.Handler, "POST", "/fields/register", tok, map[string]any{"field_name": "f3", "geometry": polygonJSON(4.06, 50.74, 4.07, 50.75)})
	assert.Equal(t, 201, r.Status, "%s", r.Body)
}

func TestConvertBodyLimit(t *testing.T) {
	env := servertest.New(t, server.Config{})
	tok := env.AddUser(t, "alice", nil)
	big := `{"type":"FeatureCollection","features":[` + strings.Repeat(" ", 17<<20) + `]}`
	r := do(t, env.Handler, "POST", "/convert/geojson-to-shapefile", tok, big)
	assert.Equal(t, 413, r.Status)
	assert.Equal(t, "too_large", r.ErrorCode(t))
}

// /scenes/ingest fetches URL sources through the SSRF guard, and a STAC item
// fetched by URL may not point at local files.
func TestIngestURLPolicy(t *testing.T) {
	sceneDir := testenv.DataDir(t, "s2", "flanders-31UES", "2019-06-20")
	itemDir := t.TempDir()
	assets := map[string]any{}
	for key, band := range map[string]string{"red": "B04", "nir": "B08", "scl": "SCL"} {
		// file: hrefs: fine for a local item, refused for a remote one
		// (an absolute path resolves against the item's URL).
		assets[key] = map[string]any{"href": "file://" + filepath.Join(sceneDir, band+".tif")}
	}
	item, err := json.Marshal(map[string]any{"type": "Feature", "stac_version": "1.0.0", "id": "x",
		"properties": map[string]any{"datetime": "2019-06-20T10:57:03Z"}, "assets": assets})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(itemDir, "item.json"), item, 0o644))
	ts := httptest.NewServer(http.FileServer(http.Dir(itemDir)))
	defer ts.Close()

	guarded := servertest.New(t, server.Config{})
	r := do(t, guarded.Handler, "POST", "/scenes/ingest", guarded.AdminToken, map[string]string{"source": ts.URL + "/item.json"})
	assert.Equal(t, 400, r.Status, "%s", r.Body)
	assert.Contains(t, string(r.Body), "127.0.0.1")

	open := servertest.NewWith(t, archive.Config{IngestAllowPrivate: true}, server.Config{})
	r = do(t, open.Handler, "POST", "/scenes/ingest", open.AdminToken, map[string]string{"source": ts.URL + "/item.json"})
	assert.Equal(t, 400, r.Status, "%s", r.Body)
	assert.Contains(t, string(r.Body), "local asset in a remote STAC item")

	// The same item read from disk is trusted as before.
	r = do(t, open.Handler, "POST", "/scenes/ingest", open.AdminToken, map[string]string{"source": filepath.Join(itemDir, "item.json")})
	assert.Equal(t, 200, r.Status, "%s", r.Body)
}

// Some fields failing does not fail /scenes/ingest: the others are stored
// and the answer lists the failures.
func TestIngestPartialFailureIs200(t *testing.T) {
	sceneDir := testenv.DataDir(t, "s2", "flanders-31UES", "2019-06-20")
	fields := flandersFields(t)
	env := servertest.New(t, server.Config{})
	tok := env.AddUser(t, "u", nil)
	for _, name := range []string{"UES-03", "UES-12"} {
		r := do(t, env.Handler, "POST", "/fields/register", tok, map[string]any{"field_name": name, "indices": "ndvi",
			"geometry": map[string]any{"type": "MultiPolygon", "coordinates": fields[name].Geometry}})
		require.Equal(t, 201, r.Status, "%s", r.Body)
	}
	if servertest.Backend() == servertest.BackendPostgres {
		t.Skip("the failure is injected through the data directory's files")
	}
	// UES-12's product directory cannot be created: a file is in the way.
	f, err := env.Archive.Store().FieldSummary(context.Background(), userID(t, env, "u"), "UES-12")
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(env.Dir, "products"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(env.Dir, "products", strconv.FormatInt(f.ID, 10)), []byte("x"), 0o644))

	r := do(t, env.Handler, "POST", "/scenes/ingest", env.AdminToken, map[string]string{"source": sceneDir})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	var res archive.IngestResult
	require.NoError(t, json.Unmarshal(r.Body, &res))
	assert.Equal(t, 2, res.Fields)
	assert.Equal(t, 1, res.Usable)
	assert.Equal(t, 1, res.Failed)
	require.Len(t, res.Failures, 1)
	assert.Equal(t, "UES-12", res.Failures[0].Field)
	assert.Equal(t, "u", res.Failures[0].Owner)
	r = do(t, env.Handler, "GET", "/download/ndvi/json?field_name=UES-03", tok, nil)
	assert.Equal(t, 200, r.Status, "the other field is served")
}

// Sending a field's outline again keeps its products; a new outline drops them.
func TestUpdateSameGeometryKeepsProducts(t *testing.T) {
	sceneDir := testenv.DataDir(t, "s2", "flanders-31UES", "2019-06-20")
	fields := flandersFields(t)
	env := servertest.New(t, server.Config{})
	tok := env.AddUser(t, "u", nil)
	geom := map[string]any{"type": "MultiPolygon", "coordinates": fields["UES-03"].Geometry}
	r := do(t, env.Handler, "POST", "/fields/register", tok, map[string]any{"field_name": "a", "indices": "ndvi", "geometry": geom})
	require.Equal(t, 201, r.Status, "%s", r.Body)
	_, err := env.Archive.Ingest(context.Background(), sceneDir, archive.IngestOptions{})
	require.NoError(t, err)
	r = do(t, env.Handler, "POST", "/fields/update", tok, map[string]any{"field_name": "a", "geometry": geom, "group": "g"})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	r = do(t, env.Handler, "GET", "/download/ndvi/json?field_name=a", tok, nil)
	assert.Equal(t, 200, r.Status, "same outline: products kept")
	r = do(t, env.Handler, "POST", "/fields/update", tok, map[string]any{"field_name": "a",
		"geometry": map[string]any{"type": "MultiPolygon", "coordinates": fields["UES-12"].Geometry}})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	r = do(t, env.Handler, "GET", "/download/ndvi/json?field_name=a", tok, nil)
	assert.Equal(t, 404, r.Status, "new outline: products dropped")
}
