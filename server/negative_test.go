package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/server"
	"github.com/cropkit/cropkit/server/servertest"
)

// snapshot is everything a request could change: every table row and every
// product file with its content hash.
func snapshot(t *testing.T, env *servertest.Env) string {
	t.Helper()
	var b strings.Builder
	db := env.DB(t)
	for _, q := range []string{
		`SELECT id, name, password_hash, is_admin, indices FROM users ORDER BY id`,
		`SELECT hash, user_id FROM tokens ORDER BY hash`,
		`SELECT id, user_id, name, grp, labels, indices, geometry, updated_at FROM fields ORDER BY id`,
		`SELECT field_id, start_date, record FROM seasons ORDER BY field_id, start_date`,
		`SELECT field_id, idx, date, usable, cloud_cover, mean, ingested_at FROM products ORDER BY field_id, idx, date`,
	} {
		rows, err := db.Query(q)
		require.NoError(t, err)
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			require.NoError(t, rows.Scan(ptrs...))
			fmt.Fprintln(&b, vals...)
		}
		require.NoError(t, rows.Err())
		rows.Close()
	}
	root := env.Dir
	require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := readFile(path)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		rel, _ := filepath.Rel(root, path)
		fmt.Fprintln(&b, rel, hex.EncodeToString(sum[:8]))
		return nil
	}))
	if servertest.Backend() == servertest.BackendPostgres { // the files are objects
		for _, prefix := range []string{"products", "uploads"} {
			for _, k := range env.BlobKeys(t, prefix) {
				data, err := env.Archive.Blobs().Get(context.Background(), k)
				require.NoError(t, err)
				sum := sha256.Sum256(data)
				fmt.Fprintln(&b, k, hex.EncodeToString(sum[:8]))
			}
		}
	}
	return b.String()
}

func TestNegative(t *testing.T) {
	sceneRoot := testenv.DataDir(t, "s2", "flanders-31UES")
	fields := flandersFields(t)
	env := servertest.New(t, server.Config{MaxBodyBytes: 64 << 10})
	h := env.Handler
	alice := env.AddUser(t, "alice", nil)
	bob := env.AddUser(t, "bob", []string{"ndvi"})
	geom := func(name string) map[string]any {
		return map[string]any{"type": "MultiPolygon", "coordinates": fields[name].Geometry}
	}
	r := do(t, h, "POST", "/fields/register", alice, map[string]any{"field_name": "a1", "geometry": geom("UES-03"), "indices": "ndvi,ndre"})
	require.Equal(t, 201, r.Status, "%s", r.Body)
	r = do(t, h, "POST", "/fields/register", alice, map[string]any{"field_name": "empty", "geometry": geom("UES-14")})
	require.Equal(t, 201, r.Status, "%s", r.Body)
	r = do(t, h, "POST", "/fields/register", bob, map[string]any{"field_name": "b1", "geometry": geom("UES-12")})
	require.Equal(t, 201, r.Status, "%s", r.Body)
	assert.Equal(t, []any{"ndvi"}, r.JSON(t)["field"].(map[string]any)["indices"], "default indices: those the user may use")
	// Only a1 and b1 get imagery: ingest, then register "empty".
	res, err := env.Archive.Ingest(context.Background(), filepath.Join(sceneRoot, "2019-06-20"), archive.IngestOptions{})
	require.NoError(t, err)
	require.Equal(t, 3, res.Fields)
	r = do(t, h, "POST", "/fields/delete?field_name=empty", alice, nil)
	require.Equal(t, 200, r.Status)
	r = do(t, h, "POST", "/fields/register", alice, map[string]any{"field_name": "empty", "geometry": geom("UES-14")})
	require.Equal(t, 201, r.Status)
	r = do(t, h, "POST", "/fields/metadata/register", alice, map[string]any{"field_name": "a1", "start_date": "2019-01-01"})
	require.Equal(t, 201, r.Status, "%s", r.Body)

	before := snapshot(t, env)
	bowtie := map[string]any{"type": "Polygon", "coordinates": [][][2]float64{{{4.06, 50.74}, {4.08, 50.76}, {4.08, 50.74}, {4.06, 50.75}, {4.06, 50.74}}}}
	open := map[string]any{"type": "Polygon", "coordinates": [][][2]float64{{{4.06, 50.74}, {4.07, 50.74}, {4.07, 50.75}, {4.06, 50.75}}}}
	three := map[string]any{"type": "Polygon", "coordinates": [][][2]float64{{{4.06, 50.74}, {4.07, 50.74}, {4.06, 50.74}}}}
	huge := polygonJSON(-80, -80, 80, 80)
	swapped := polygonJSON(50.74, 4.06, 50.75, 95.0)
	a1Value := "/fields/value?field_name=a1&index=ndvi"
	big := `{"field_name":"x","geometry":{"type":"Polygon","coordinates":[[` + strings.Repeat("[4.06,50.74],", 8000) + `[4.06,50.74]]]}}`

	type tc struct {
		name         string
		method, path string
		token        string
		body         any
		status       int
		code         string
		contains     string // in the message
	}
	cases := []tc{
		// Auth.
		{"no token", "POST", "/fields/list", "", nil, 403, "unauthorized", "missing token"},
		{"bad token", "POST", "/fields/list", "nope", nil, 403, "unauthorized", "invalid, expired or revoked token"},
		{"bad token query", "POST", "/fields/list?token=nope", "", nil, 403, "unauthorized", ""},
		{"ingest not admin", "POST", "/scenes/ingest", alice, map[string]string{"source": sceneRoot}, 403, "forbidden", "administrators"},
		{"login wrong password", "POST", "/login", "", map[string]string{"username": "admin", "password": "x"}, 403, "unauthorized", ""},
		{"login unknown user", "POST", "/login", "", map[string]string{"username": "nobody", "password": "x"}, 403, "unauthorized", ""},
		{"login missing password", "POST", "/login", "", map[string]string{"username": "admin"}, 400, "bad_request", "password"},
		// Routing and bodies.
		{"unknown route", "POST", "/nope", alice, nil, 404, "not_found", "/nope"},
		{"wrong method", "DELETE", "/fields/list", alice, nil, 405, "method_not_allowed", "DELETE"},
		{"GET on a write", "GET", "/fields/register", alice, nil, 405, "method_not_allowed", ""},
		{"body not an object", "POST", "/fields/register", alice, `[1,2]`, 400, "bad_request", "JSON object"},
		{"body malformed", "POST", "/fields/register", alice, `{"field_name":`, 400, "bad_request", "JSON object"},
		{"oversize body", "POST", "/fields/register", alice, big, 413, "too_large", ""},
		// Register.
		{"register missing name", "POST", "/fields/register", alice, map[string]any{"geometry": geom("UES-01")}, 400, "bad_request", "field_name"},
		{"register missing geometry", "POST", "/fields/register", alice, map[string]any{"field_name": "x"}, 400, "bad_request", "geometry"},
		{"register geometry not JSON", "POST", "/fields/register", alice, map[string]any{"field_name": "x", "geometry": "{nope"}, 400, "bad_request", "geometry"},
		{"register point", "POST", "/fields/register", alice, map[string]any{"field_name": "x", "geometry": map[string]any{"type": "Point", "coordinates": []float64{4, 50}}}, 400, "invalid_geometry", "Point"},
		{"register self-intersecting", "POST", "/fields/register", alice, map[string]any{"field_name": "x", "geometry": bowtie}, 400, "invalid_geometry", "intersects itself"},
		{"register unclosed", "POST", "/fields/register", alice, map[string]any{"field_name": "x", "geometry": open}, 400, "invalid_geometry", "not closed"},
		{"register 3 points", "POST", "/fields/register", alice, map[string]any{"field_name": "x", "geometry": three}, 400, "invalid_geometry", "at least 4"},
		{"register absurd area", "POST", "/fields/register", alice, map[string]any{"field_name": "x", "geometry": huge}, 400, "invalid_geometry", "area"},
		{"register lat out of range", "POST", "/fields/register", alice, map[string]any{"field_name": "x", "geometry": swapped}, 400, "invalid_geometry", "longitude"},
		{"register forbidden index", "POST", "/fields/register", bob, map[string]any{"field_name": "x", "geometry": geom("UES-01"), "indices": []string{"ndvi", "ndre"}}, 403, "forbidden", "ndre"},
		{"register unknown index", "POST", "/fields/register", alice, map[string]any{"field_name": "x", "geometry": geom("UES-01"), "indices": []string{"nope"}}, 400, "bad_request", "nope"},
		{"register duplicate", "POST", "/fields/register", alice, map[string]any{"field_name": "a1", "geometry": geom("UES-01")}, 409, "conflict", "a1"},
		{"register labels not strings", "POST", "/fields/register", alice, map[string]any{"field_name": "x", "geometry": geom("UES-01"), "labels": map[string]any{"a": 1}}, 400, "bad_request", "labels"},
		// Update and delete.
		{"update other user's field", "POST", "/fields/update", bob, map[string]any{"field_name": "a1", "group": "g"}, 404, "not_found", "a1"},
		{"update missing field", "POST", "/fields/update", alice, map[string]any{"field_name": "zz", "group": "g"}, 404, "not_found", "zz"},
		{"update missing name", "POST", "/fields/update", alice, map[string]any{"group": "g"}, 400, "bad_request", "field_name"},
		{"update bad geometry", "POST", "/fields/update", alice, map[string]any{"field_name": "a1", "geometry": bowtie}, 400, "invalid_geometry", ""},
		{"update forbidden index", "POST", "/fields/update", bob, map[string]any{"field_name": "b1", "indices": "evi"}, 403, "forbidden", "evi"},
		{"delete other user's field", "POST", "/fields/delete?field_name=a1", bob, nil, 404, "not_found", "a1"},
		{"delete missing name", "POST", "/fields/delete", alice, nil, 400, "bad_request", "field_name"},
		// Metadata.
		{"metadata unknown field", "POST", "/fields/metadata/register", alice, map[string]any{"field_name": "zz", "start_date": "2019-01-01"}, 404, "not_found", "zz"},
		{"metadata other user's field", "POST", "/fields/metadata/register", bob, map[string]any{"field_name": "a1", "start_date": "2019-01-01"}, 404, "not_found", "a1"},
		{"metadata missing start_date", "POST", "/fields/metadata/register", alice, map[string]any{"field_name": "a1"}, 400, "bad_request", "start_date"},
		{"metadata bad date", "POST", "/fields/metadata/register", alice, map[string]any{"field_name": "a1", "start_date": "2019-02-30"}, 400, "bad_request", "start_date"},
		{"metadata harvest before start", "POST", "/fields/metadata/register", alice, map[string]any{"field_name": "a1", "start_date": "2019-05-01", "harvest_date": "2019-01-01"}, 400, "bad_request", "harvest_date"},
		{"metadata unknown key", "POST", "/fields/metadata/register", alice, map[string]any{"field_name": "a1", "start_date": "2019-01-01", "yeild": 3}, 400, "bad_request", "yeild"},
		{"metadata list other user's", "POST", "/fields/metadata/list?field_name=a1", bob, nil, 404, "not_found", ""},
		{"metadata list missing name", "POST", "/fields/metadata/list", alice, nil, 400, "bad_request", "field_name"},
		// Downloads.
		{"download missing field", "POST", "/download/ndvi/json", alice, nil, 400, "bad_request", "field_name"},
		{"download bad date", "POST", "/download/ndvi/json?field_name=a1&date=2019-6-20", alice, nil, 400, "bad_request", "date"},
		{"download impossible date", "POST", "/download/ndvi/json?field_name=a1&date=2019-02-29", alice, nil, 400, "bad_request", "date"},
		{"download bad ext", "POST", "/download/ndvi/json?field_name=a1&ext=gif", alice, nil, 400, "bad_request", "ext"},
		{"download bad file_type", "POST", "/download/ndvi/pdf?field_name=a1", alice, nil, 400, "bad_request", "file_type"},
		{"download unknown index", "POST", "/download/nope/json?field_name=a1", alice, nil, 400, "bad_request", "nope"},
		{"download forbidden index", "POST", "/files/get/ndre/json?field_name=b1", bob, nil, 403, "forbidden", "ndre"},
		{"download other user's field", "POST", "/download/ndvi/json?field_name=a1", bob, nil, 404, "not_found", "a1"},
		{"download missing field name", "POST", "/download/ndvi/image?field_name=zz", alice, nil, 404, "not_found", "zz"},
		{"download no imagery", "POST", "/download/ndvi/image?field_name=empty", alice, nil, 404, "no_imagery", "empty"},
		{"download index not registered", "POST", "/download/evi/json?field_name=a1", alice, nil, 404, "not_found", "evi"},
		{"download no token", "POST", "/download/ndvi/json?field_name=a1", "", nil, 403, "unauthorized", ""},
		// files/list.
		{"files missing field", "GET", "/files/list", alice, nil, 400, "bad_request", "field_name"},
		{"files bad start", "GET", "/files/list?field_name=a1&start_date=x", alice, nil, 400, "bad_request", "start_date"},
		{"files end before start", "GET", "/files/list?field_name=a1&start_date=2019-06-01&end_date=2019-05-01", alice, nil, 400, "bad_request", "before"},
		{"files forbidden index", "GET", "/files/list?field_name=b1&index=evi", bob, nil, 403, "forbidden", ""},
		{"files other user's", "GET", "/files/list?field_name=a1", bob, nil, 404, "not_found", ""},
		// Value.
		{"value missing lat", "GET", a1Value + "&lon=4.06", alice, nil, 400, "bad_request", "lat"},
		{"value lat not a number", "GET", a1Value + "&lat=north&lon=4.06", alice, nil, 400, "bad_request", "lat"},
		{"value lat out of range", "GET", a1Value + "&lat=91&lon=4.06", alice, nil, 400, "bad_request", "lat"},
		{"value outside field", "GET", a1Value + "&lat=50.0&lon=4.0", alice, nil, 400, "bad_request", "outside"},
		{"value missing index", "GET", "/fields/value?field_name=a1&lat=50&lon=4", alice, nil, 400, "bad_request", "index"},
		{"value other user's", "GET", a1Value + "&lat=50.7&lon=4.06", bob, nil, 404, "not_found", ""},
		{"value forbidden index", "GET", "/fields/value?field_name=b1&index=ndre&lat=50.7&lon=4.06", bob, nil, 403, "forbidden", ""},
		// Raster.
		{"raster missing index", "GET", "/rasters/get?field_name=a1", alice, nil, 400, "bad_request", "index"},
		{"raster other user's", "GET", "/rasters/get?field_name=a1&index=ndvi", bob, nil, 404, "not_found", ""},
		{"raster bad date", "GET", "/rasters/get?field_name=a1&index=ndvi&date=yesterday", alice, nil, 400, "bad_request", "date"},
		// Ingest.
		{"ingest missing source", "POST", "/scenes/ingest", env.AdminToken, map[string]string{}, 400, "bad_request", "source"},
		{"ingest missing folder", "POST", "/scenes/ingest", env.AdminToken, map[string]string{"source": "/nonexistent/scene"}, 400, "bad_request", ""},
		{"ingest malformed", "POST", "/scenes/ingest", env.AdminToken, `{"source":`, 400, "bad_request", ""},
		{"ingest no token", "POST", "/scenes/ingest", "", map[string]string{"source": sceneRoot}, 403, "unauthorized", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := do(t, h, c.method, c.path, c.token, c.body)
			require.Equal(t, c.status, r.Status, "%s", r.Body)
			assert.Equal(t, c.code, r.ErrorCode(t))
			msg := r.JSON(t)["error"].(map[string]any)["message"].(string)
			assert.Contains(t, msg, c.contains)
		})
	}
	// Wrong content type and an oversize multipart upload.
	req := httptest.NewRequest("POST", "/fields/register", strings.NewReader("<field/>"))
	req.Header.Set("Content-Type", "application/xml")
	req.Header.Set("Authorization", "Bearer "+alice)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	assert.Equal(t, http.StatusUnsupportedMediaType, rec.Code)

	require.Equal(t, before, snapshot(t, env), "a failed request changed the stored state")
}

func TestTokenForms(t *testing.T) {
	env := servertest.New(t, server.Config{})
	h := env.Handler
	tok := env.AddUser(t, "carol", nil)
	// Header, query and form parameter are all accepted.
	r := do(t, h, "GET", "/fields/list", tok, nil)
	assert.Equal(t, 200, r.Status)
	r = do(t, h, "GET", "/fields/list?token="+url.QueryEscape(tok), "", nil)
	assert.Equal(t, 200, r.Status)
	req := httptest.NewRequest("POST", "/fields/list", strings.NewReader("token="+url.QueryEscape(tok)))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	assert.Equal(t, 200, rec.Code, rec.Body.String())
	// A JSON body token works too.
	r = do(t, h, "POST", "/fields/list", "", map[string]string{"token": tok})
	assert.Equal(t, 200, r.Status)
	// A malformed Authorization header is refused even with a good query token.
	req = httptest.NewRequest("GET", "/fields/list?token="+url.QueryEscape(tok), nil)
	req.Header.Set("Authorization", "Basic Zm9vOmJhcg==")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	assert.Equal(t, 403, rec.Code)

	// Tokens are stored hashed, never in clear.
	var n int
	require.NoError(t, env.DB(t).QueryRow(env.SQL(`SELECT count(*) FROM tokens WHERE hash = ?`), tok).Scan(&n))
	assert.Zero(t, n)
	assert.GreaterOrEqual(t, len(tok), 43, "32 random bytes in base64url")

	// Login with a password issues a working token.
	_, err := env.Archive.CreateUser(context.Background(), archive.NewUser{Name: "dave", Password: "correct horse"})
	require.NoError(t, err)
	r = do(t, h, "POST", "/login", "", map[string]string{"username": "dave", "password": "correct horse"})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	newTok := r.JSON(t)["token"].(string)
	r = do(t, h, "GET", "/fields/list", newTok, nil)
	assert.Equal(t, 200, r.Status)
	var hash string
	require.NoError(t, env.DB(t).QueryRow(`SELECT password_hash FROM users WHERE name = 'dave'`).Scan(&hash))
	assert.True(t, strings.HasPrefix(hash, "$2a$"), "bcrypt hash, got %q", hash)
}
