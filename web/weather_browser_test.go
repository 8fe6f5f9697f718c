package web_test

import (
	"context"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/metadata"
	"github.com/cropkit/cropkit/server"
	"github.com/cropkit/cropkit/server/servertest"
	"github.com/cropkit/cropkit/weather"
	"github.com/cropkit/cropkit/weather/weathertest"
)

// The viewer shows a field's season of GDD and rain beside the index
// chart, on request, from /fields/weather (a loopback Open-Meteo fixture
// serving the AgERA5 days).
func TestBrowserWeather(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: -short")
	}
	ctx := newBrowser(t, 3*time.Minute)
	tab, err := weather.ReadTableFile(testenv.DataDir(t, "weather", "flanders-31UES.csv"))
	require.NoError(t, err)
	upstream := weathertest.New(tab.All())
	defer upstream.Close()
	cfg, err := archive.OpenMeteoWeather(upstream.URL, true)
	require.NoError(t, err)
	now := func() time.Time { return time.Date(2019, 12, 1, 0, 0, 0, 0, time.UTC) }
	cfg.Source.(*weather.OpenMeteo).Now, cfg.Now = now, now
	env := servertest.NewWith(t, archive.Config{Weather: cfg}, server.Config{})
	ts := httptest.NewServer(env.Server) // the page and assets are outside the OpenAPI document
	defer ts.Close()

	bg := context.Background()
	admin, err := env.Archive.UserByName(bg, "admin")
	require.NoError(t, err)
	_, err = env.Archive.RegisterField(bg, admin, archive.FieldInput{Name: "UES-03", Indices: []string{"ndvi"},
		Geometry: []byte(`{"type":"Polygon","coordinates":[[[4.0640,50.7440],[4.0660,50.7440],[4.0660,50.7450],[4.0640,50.7450],[4.0640,50.7440]]]}`)})
	require.NoError(t, err)
	_, _, _, err = env.Archive.RegisterSeason(bg, admin, metadata.Record{FieldName: "UES-03", StartDate: "2019-04-15", HarvestDate: "2019-10-10", CropType: "Maize"})
	require.NoError(t, err)
	for _, d := range []string{"2019-06-20", "2019-07-30"} {
		_, err := env.Archive.Ingest(bg, filepath.Join(testenv.DataDir(t, "s2", "flanders-31UES"), d), archive.IngestOptions{})
		require.NoError(t, err)
	}

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/#token="+env.AdminToken)))
	waitJS(ctx, t, "the field and its index chart", idle+` && document.querySelectorAll("#fields-list button").length === 1 && document.querySelector("#chart canvas") !== null`)
	// The daily series' GDD column fetched the season's weather once (server side).
	assert.Equal(t, 1, upstream.Requests(), "the season's cell fetched once, for the series' GDD column")
	assert.True(t, eval[bool](ctx, t, `document.querySelector("#weather-chart").hidden`))

	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#weather-load"))))
	waitJS(ctx, t, "the weather chart", idle+` && document.querySelector("#weather-chart canvas") !== null`)
	summary := evalString(ctx, t, `document.querySelector("#weather-summary").textContent`)
	from, _ := weather.ParseDate("2019-04-15")
	to, _ := weather.ParseDate("2019-10-10")
	days, err := tab.Daily(bg, weather.Query{From: from, To: to})
	require.NoError(t, err)
	p, _ := weather.ParamsFor("maize", nil, nil)
	want := weather.Accumulate(days, p)
	assert.True(t, strings.HasPrefix(summary, "Maize (base 10 °C, cap 30 °C), 2019-04-15 → 2019-10-10: "), summary)
	assert.Contains(t, summary, formatThousands(want.Totals.GDD)+" GDD")
	assert.Contains(t, summary, "Open-Meteo")
	assert.Equal(t, "Hide the weather", evalString(ctx, t, `document.querySelector("#weather-load").textContent`))
	assert.False(t, eval[bool](ctx, t, `document.querySelector("#weather-chart").hidden`))
	assert.Contains(t, evalString(ctx, t, `document.querySelector("#weather-chart").getAttribute("aria-label")`), "growing degree days and daily rain")
	assert.Equal(t, 1, evalInt(ctx, t, `document.querySelectorAll("#chart canvas").length`), "the index chart is drawn again with the season marks")
	assert.Equal(t, 0, evalInt(ctx, t, `document.querySelectorAll("#messages .message.error").length`))
	assert.Equal(t, 1, upstream.Requests())

	// The choice is remembered: a reload shows the weather at once.
	require.NoError(t, chromedp.Do(ctx, chromedp.Reload()))
	waitJS(ctx, t, "the weather chart after a reload", idle+` && document.querySelector("#weather-chart canvas") !== null`)
	assert.Equal(t, 1, upstream.Requests(), "served from the archive's cache")

	run(ctx, t, `document.querySelector("#weather-chart").scrollIntoView({block: "end"})`)
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(screenshotDir(t), "viewer-weather.png"), png, 0o644))

	// Hidden again: no chart, no marks, and remembered off.
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#weather-load"))))
	waitJS(ctx, t, "the weather hidden", `document.querySelector("#weather-chart").hidden && document.querySelector("#weather-summary").textContent === ""`)
	assert.Equal(t, "0", evalString(ctx, t, `localStorage.getItem("cropkit.weather")`))
}

// formatThousands is fmt() of app.js for values ≥ 1000: rounded, with commas.
func formatThousands(v float64) string {
	s := strconv.FormatInt(int64(math.Round(v)), 10)
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}
