package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/server"
	"github.com/cropkit/cropkit/server/servertest"
)

// statuses counts answers by label and status, safely from goroutines.
type statuses struct {
	mu     sync.Mutex
	n      map[string]int
	bodies map[string]string
}

func (s *statuses) add(label string, code int, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == nil {
		s.n, s.bodies = map[string]int{}, map[string]string{}
	}
	k := fmt.Sprintf("%s %d", label, code)
	s.n[k]++
	s.bodies[k] = string(body)
}

// serve sends one request without testify (safe in goroutines).
func serve(h http.Handler, method, target, token, contentType string, body []byte) (int, []byte) {
	req := httptest.NewRequest(method, target, bytes.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes()
}

func jsonBody(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// QA (uploads during outline updates): two uploads looping while the outline toggles
// between a ring and another: 22 of 291 uploads answered 500 (the outline
// change's cleanup removed the in-flight upload's temporary file) and 9 a
// 404 although the field existed throughout. Every upload must succeed.
func TestUploadDuringOutlineUpdate(t *testing.T) {
	dir := testenv.DataDir(t, "shapefiles", "ofpetrial-ssurgo-simple1")
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	require.NoError(t, mw.WriteField("field_name", "toggled"))
	for _, ext := range []string{".shp", ".shx", ".dbf", ".prj"} {
		data, err := os.ReadFile(filepath.Join(dir, "ssurgo-simple1"+ext))
		require.NoError(t, err)
		w, err := mw.CreateFormFile("files", "ssurgo-simple1"+ext)
		require.NoError(t, err)
		_, err = w.Write(data)
		require.NoError(t, err)
	}
	require.NoError(t, mw.Close())

	env := servertest.New(t, server.Config{HeavyRequests: 4, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	tok := env.AddUser(t, "alice", nil)
	a := polygonJSON(4.06, 50.74, 4.07, 50.75)
	b := polygonJSON(4.06, 50.74, 4.071, 50.75)
	r := do(t, env.Handler, "POST", "/fields/register", tok, map[string]any{"field_name": "toggled", "geometry": a, "indices": []string{"ndvi"}})
	require.Equal(t, 201, r.Status, "%s", r.Body)

	var got statuses
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				code, body := serve(env.Handler, "POST", "/files/upload", tok, mw.FormDataContentType(), form.Bytes())
				got.add("upload", code, body)
			}
		})
	}
	uploads := func() int {
		got.mu.Lock()
		defer got.mu.Unlock()
		n := 0
		for k, v := range got.n {
			if len(k) > 6 && k[:6] == "upload" {
				n += v
			}
		}
		return n
	}
	updates := 0
	for i := 0; i < 30 || (uploads() < 60 && i < 3000); i++ {
		updates++
		g := a
		if i%2 == 0 {
			g = b
		}
		code, body := serve(env.Handler, "POST", "/fields/update", tok, "application/json",
			jsonBody(t, map[string]any{"field_name": "toggled", "geometry": g}))
		got.add("update", code, body)
	}
	close(stop)
	wg.Wait()
	for k, n := range got.n {
		assert.Contains(t, []string{"upload 201", "update 200"}, k, "%d× %s", n, got.bodies[k])
	}
	t.Log(got.n)
	assert.Equal(t, updates, got.n["update 200"])
	assert.GreaterOrEqual(t, got.n["upload 201"], 60)
	// The last upload is stored for the current outline; no temporary file is left.
	r = do(t, env.Handler, "POST", "/files/uploads", tok, map[string]any{"field_name": "toggled"})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	assert.Contains(t, string(r.Body), "ssurgo-simple1.shp")
	for _, k := range env.BlobKeys(t, "uploads/") {
		assert.NotContains(t, k, ".tmp-")
	}
}

// QA (metadata during delete and re-register): metadata registered while the field is deleted and
// registered again answered 500 (FOREIGN KEY constraint failed); QA
// (16 threads of register+delete): registration answered 404 "field 151:
// not found" for a field it had created. Only 201/200/404 "field … not
// found" (by name) are right, and every 201 of a registration is a field
// that existed.
func TestRegisterMetadataDuringDelete(t *testing.T) {
	env := servertest.New(t, server.Config{})
	tok := env.AddUser(t, "alice", nil)
	geom := polygonJSON(4.06, 50.74, 4.07, 50.75)
	var got statuses
	var wg sync.WaitGroup
	const workers, cycles = 8, 15
	for w := range workers {
		wg.Go(func() {
			name := fmt.Sprintf("f%d", w%2) // two names, four workers each
			reg := jsonBody(t, map[string]any{"field_name": name, "geometry": geom, "indices": []string{"ndvi"}})
			meta := jsonBody(t, map[string]any{"field_name": name, "start_date": "2018-01-01"})
			del := jsonBody(t, map[string]any{"field_name": name})
			for range cycles {
				code, body := serve(env.Handler, "POST", "/fields/register", tok, "application/json", reg)
				got.add("register", code, body)
				code, body = serve(env.Handler, "POST", "/fields/metadata/register", tok, "application/json", meta)
				got.add("metadata", code, body)
				code, body = serve(env.Handler, "POST", "/fields/delete", tok, "application/json", del)
				got.add("delete", code, body)
			}
		})
	}
	wg.Wait()
	t.Log(got.n)
	allowed := []string{"register 201", "register 409", "metadata 201", "metadata 404", "delete 200", "delete 404"}
	for k, n := range got.n {
		assert.Contains(t, allowed, k, "%d× %s", n, got.bodies[k])
		if slices.Contains([]string{"metadata 404", "delete 404"}, k) {
			assert.Regexp(t, `field \\"f[01]\\" not found`, got.bodies[k])
		}
	}
	// Each successful registration created a field that a delete removed
	// (or that still exists): registrations = deletions + survivors.
	r := do(t, env.Handler, "GET", "/fields/list", tok, nil)
	require.Equal(t, 200, r.Status)
	survivors := len(r.JSON(t)["fields"].([]any))
	assert.Equal(t, got.n["register 201"], got.n["delete 200"]+survivors)
}
