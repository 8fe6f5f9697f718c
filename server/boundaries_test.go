package server_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/server"
	"github.com/cropkit/cropkit/server/servertest"
)

// POST /fields/boundaries/detect on the scenes ingested over a real
// Flanders chip: detected fields as GeoJSON; register=true registers them
// and their history is ingested, so downloads serve them at once.
func TestDetectBoundariesEndpoint(t *testing.T) {
	sceneRoot := testenv.DataDir(t, "s2", "flanders-31UES")
	env := servertest.New(t, server.Config{})
	entries, err := os.ReadDir(sceneRoot)
	require.NoError(t, err)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "2019-0") && e.Name() >= "2019-03" { // the 2019 season
			ingest(t, env, filepath.Join(sceneRoot, e.Name()))
		}
	}
	tok := env.AddUser(t, "farmer", nil)
	aoi := polygonJSON(4.0595, 50.7432, 4.0645, 50.7478) // inside the chip
	r := do(t, env.Handler, "POST", "/fields/boundaries/detect", tok, map[string]any{"geometry": aoi})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	fc := r.JSON(t)
	assert.Equal(t, "FeatureCollection", fc["type"])
	feats := fc["features"].([]any)
	require.NotEmpty(t, feats)
	p := feats[0].(map[string]any)["properties"].(map[string]any)
	assert.Positive(t, p["area_ha"])
	assert.Greater(t, len(fc["dates"].([]any)), 5, "a season of clear dates")

	r = do(t, env.Handler, "POST", "/fields/boundaries/detect", tok, map[string]any{"geometry": aoi, "register": true, "name_prefix": "auto"})
	require.Equal(t, 201, r.Status, "%s", r.Body)
	names := r.JSON(t)["registered"].([]any)
	require.Len(t, names, len(feats))
	assert.Equal(t, "auto-1", names[0])
	d := do(t, env.Handler, "GET", "/download/ndvi/json?field_name=auto-1", tok, nil)
	require.Equal(t, 200, d.Status, "%s", d.Body)
	assert.GreaterOrEqual(t, d.Header.Get("X-Image-Date"), "2019-03-01", "history ingested for the new field")

	for name, body := range map[string]map[string]any{
		"too large":  {"geometry": polygonJSON(4.0, 50.7, 4.1, 50.8)},
		"no imagery": {"geometry": polygonJSON(5.0, 51.0, 5.005, 51.005)},
		"bad date":   {"geometry": aoi, "start_date": "June"},
	} {
		r := do(t, env.Handler, "POST", "/fields/boundaries/detect", tok, body)
		want := 400
		if name == "no imagery" {
			want = 404
		}
		assert.Equal(t, want, r.Status, "%s: %s", name, r.Body)
	}
}
