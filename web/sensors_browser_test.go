package web_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/internal/testenv"
)

// apiPost sends a JSON body to the demo server as admin and wants want.
func apiPost(t *testing.T, srv demoServer, path string, body any, want int) {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, srv.base+path, bytes.NewReader(b))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+srv.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	require.Equal(t, want, resp.StatusCode, "%s: %s", path, msg)
}

// The viewer over a field with Sentinel-2 and Sentinel-1 images: the
// timeline marks each date's sensor, the radar index is selectable with its
// legend, and the chart draws the optical and the radar series on two axes.
func TestBrowserSensors(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: -short")
	}
	data, err := os.ReadFile(testenv.DataDir(t, "fields", "flanders-31UES.geojson"))
	require.NoError(t, err)
	feats, err := geo.ReadFeatures(data)
	require.NoError(t, err)
	var outline any
	for _, f := range feats {
		if f.Name == "UES-03" {
			outline = map[string]any{"type": "MultiPolygon", "coordinates": f.Geometry}
		}
	}
	require.NotNil(t, outline)
	ctx := newBrowser(t, 4*time.Minute)
	srv := startDemo(t)
	apiPost(t, srv, "/fields/register", map[string]any{"field_name": "RADAR-03", "indices": []string{"ndvi", "vv"}, "geometry": outline}, http.StatusCreated)
	for _, src := range []string{
		testenv.DataDir(t, "s2", "flanders-31UES", "2019-06-20"),
		testenv.DataDir(t, "s1", "flanders-31UES", "2019-06-16"),
		testenv.DataDir(t, "s1", "flanders-31UES", "2019-06-22"),
	} {
		apiPost(t, srv, "/scenes/ingest", map[string]any{"source": src}, http.StatusOK)
	}
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(srv.base+"/#token="+srv.token)))
	waitJS(ctx, t, "the field list", idle+` && document.querySelector('#fields-list button[data-field="RADAR-03"]') !== null && `+overlaySrc+` !== ""`)
	run(ctx, t, `document.querySelector('#fields-list button[data-field="RADAR-03"]').click()`)
	waitJS(ctx, t, "RADAR-03's ndvi", idle+` && `+overlaySrc+`.includes("field_name=RADAR-03")`)

	// NDVI: one Sentinel-2 date; the chart adds VV on a second axis.
	assert.Equal(t, []string{"sentinel-2"}, eval[[]string](ctx, t, `[...document.querySelectorAll("#timeline button[role=radio]")].map(b => b.dataset.sensor)`))
	assert.Equal(t, "ndvi,vv", evalString(ctx, t, `document.querySelector("#chart").dataset.series`))
	assert.Contains(t, evalString(ctx, t, `document.querySelector("#chart").getAttribute("aria-label")`), "VV mean on the second axis")

	// VV: two Sentinel-1 dates (the folders name the mission only) marked as
	// radar, its legend −25…0 dB.
	run(ctx, t, `(() => { const s = document.querySelector("#index-select"); s.value = "vv"; s.dispatchEvent(new Event("change")); })()`)
	waitJS(ctx, t, "the vv image", idle+` && `+overlaySrc+`.startsWith("/download/vv/image")`)
	assert.Equal(t, []string{"sentinel-1", "sentinel-1"}, eval[[]string](ctx, t, `[...document.querySelectorAll("#timeline button[role=radio]")].map(b => b.dataset.sensor)`))
	assert.Equal(t, 2, evalInt(ctx, t, `document.querySelectorAll("#timeline button.sensor-sentinel-1").length`))
	assert.Contains(t, evalString(ctx, t, `document.querySelector("#timeline button[role=radio]").getAttribute("aria-label")`), "Sentinel-1")
	assert.Equal(t, "/download/vv/image?field_name=RADAR-03&date=2019-06-22&sensor=sentinel-1", evalString(ctx, t, overlaySrc))
	assert.Equal(t, []string{"-25", "-18.75", "-12.5", "-6.25", "0"}, eval[[]string](ctx, t, `[...document.querySelectorAll("#legend .legend-ticks span")].map(s => s.textContent)`))
	assert.Equal(t, "vv,ndvi", evalString(ctx, t, `document.querySelector("#chart").dataset.series`))
	assert.Equal(t, 1, evalInt(ctx, t, `document.querySelectorAll("#chart canvas").length`))
}
