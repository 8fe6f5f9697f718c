package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/server"
	"github.com/cropkit/cropkit/server/servertest"
)

func TestScenesListAndMetrics(t *testing.T) {
	sceneRoot := testenv.DataDir(t, "s2", "flanders-31UES")
	fields := flandersFields(t)
	reg := prometheus.NewRegistry()
	env := servertest.New(t, server.Config{Metrics: reg})
	h := env.Handler
	tok := env.AddUser(t, "farmer", nil)
	ctx := context.Background()
	for _, name := range []string{"UES-01", "UES-03"} {
		r := do(t, h, "POST", "/fields/register", tok, map[string]any{"field_name": name, "indices": []string{"ndvi", "evi"},
			"geometry": map[string]any{"type": "MultiPolygon", "coordinates": fields[name].Geometry}})
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Body)
	}
	// What the watcher records: an ingested item (its products carry its
	// id as scene) and a failed one.
	res, err := env.Archive.Ingest(ctx, filepath.Join(sceneRoot, "2019-06-20"), archive.IngestOptions{})
	require.NoError(t, err)
	require.Equal(t, 4, res.Usable)
	farmer, err := env.Archive.UserByName(ctx, "farmer")
	require.NoError(t, err)
	list, err := env.Archive.Fields(ctx, farmer, nil)
	require.NoError(t, err)
	require.Len(t, list, 2)
	acquired := time.Date(2019, 6, 20, 10, 57, 3, 0, time.UTC)
	require.NoError(t, env.Archive.RecordItem(ctx, archive.SceneItem{Collection: "sentinel-2-l2a", ID: res.Scene, Datetime: acquired,
		Updated: "2024-01-01T00:00:00Z", Source: "https://stac.example/items/a", State: archive.ItemIngested,
		Fields: map[int64]int64{list[0].ID: list[0].Version, list[1].ID: list[1].Version}}))
	require.NoError(t, env.Archive.RecordItem(ctx, archive.SceneItem{Collection: "sentinel-2-l2a", ID: "S2B_late", Datetime: acquired.Add(-24 * time.Hour),
		Source: "https://stac.example/items/b", State: archive.ItemFailed, Error: "band B04: HTTP 404"}))

	tests := []struct {
		name, method, target, token string
		status                      int
		ids                         []string
	}{
		{"admin GET", "GET", "/scenes/list", env.AdminToken, http.StatusOK, []string{res.Scene, "S2B_late"}},
		{"admin POST limit", "POST", "/scenes/list?limit=1", env.AdminToken, http.StatusOK, []string{res.Scene}},
		{"other collection", "GET", "/scenes/list?collection=landsat", env.AdminToken, http.StatusOK, []string{}},
		{"not an admin", "GET", "/scenes/list", tok, http.StatusForbidden, nil},
		{"bad limit", "GET", "/scenes/list?limit=0", env.AdminToken, http.StatusBadRequest, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, h, tt.method, tt.target, tt.token, nil)
			require.Equal(t, tt.status, r.Status, "%s", r.Body)
			if tt.ids == nil {
				return
			}
			var out struct {
				Items []struct {
					ID     string              `json:"id"`
					Usable int                 `json:"usable"`
					State  string              `json:"state"`
					Error  string              `json:"error"`
					Fields []map[string]string `json:"fields"`
				} `json:"items"`
			}
			require.NoError(t, json.Unmarshal(r.Body, &out))
			ids := []string{}
			for _, it := range out.Items {
				ids = append(ids, it.ID)
			}
			assert.Equal(t, tt.ids, ids)
			if len(out.Items) > 0 {
				assert.Equal(t, 4, out.Items[0].Usable)
				assert.Equal(t, "ingested", out.Items[0].State)
				assert.Equal(t, []map[string]string{{"owner": "farmer", "field_name": "UES-01"}, {"owner": "farmer", "field_name": "UES-03"}}, out.Items[0].Fields)
			}
			if len(out.Items) > 1 {
				assert.Equal(t, "failed", out.Items[1].State)
				assert.Equal(t, "band B04: HTTP 404", out.Items[1].Error)
				assert.Empty(t, out.Items[1].Fields)
			}
		})
	}

	// /metrics is outside the API document: call the server itself.
	metrics := func(token string) (int, string) {
		req := httptest.NewRequest("GET", "/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		env.Server.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	code, body := metrics(env.AdminToken)
	require.Equal(t, http.StatusOK, code)
	for _, want := range []string{
		`cropkit_http_request_duration_seconds_count{code="201",method="POST",route="POST /fields/register"} 2`,
		`cropkit_http_request_duration_seconds_count{code="200",method="GET",route="GET /scenes/list"} 2`,
		`cropkit_http_request_duration_seconds_count{code="403",method="GET",route="GET /scenes/list"} 1`,
	} {
		assert.True(t, strings.Contains(body, want), "/metrics lacks %s", want)
	}
	code, _ = metrics(tok)
	assert.Equal(t, http.StatusForbidden, code)
	code, _ = metrics("")
	assert.Equal(t, http.StatusForbidden, code)
}
