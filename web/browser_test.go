package web_test

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/internal/testenv"
)

// demoServer is `cropkit serve --demo` running as a real process.
type demoServer struct {
	base  string // http://127.0.0.1:port
	token string
}

// startDemo builds cmd/cropkit and runs `serve --demo` on a free loopback
// port with a fresh data folder; the process is stopped when the test ends.
func startDemo(t *testing.T) demoServer {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "cropkit")
	build := exec.Command("go", "build", "-o", bin, "github.com/cropkit/cropkit/cmd/cropkit")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build cmd/cropkit: %s", out)

	cmd := exec.Command(bin, "serve", "--demo", "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "data"), "--shutdown-grace", "2s")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var logs lockedBuffer
	cmd.Stderr = &logs
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("server log (tail):\n%s", tail(logs.String(), 4000))
		}
	})

	type ready struct{ base, token string }
	readyc := make(chan ready, 1)
	go func() {
		var r ready
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if v, ok := strings.CutPrefix(line, "ADMIN TOKEN: "); ok {
				r.token = strings.TrimSpace(v)
			}
			if rest, ok := strings.CutPrefix(line, "cropkit listening on "); ok {
				r.base, _, _ = strings.Cut(rest, " ")
				readyc <- r
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case r := <-readyc:
		require.NotEmpty(t, r.token, "serve printed no admin token")
		require.True(t, strings.HasPrefix(r.base, "http://127.0.0.1:"), r.base)
		return demoServer{base: r.base, token: r.token}
	case <-exited:
		t.Fatalf("serve --demo exited early:\n%s", tail(logs.String(), 4000))
	case <-time.After(4 * time.Minute):
		t.Fatalf("serve --demo not ready after 4 minutes:\n%s", tail(logs.String(), 4000))
	}
	return demoServer{}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// findChromium returns the browser's path; it skips the test when there is
// none, or fails it under CI=true.
func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return testenv.RequireTool(t, "chromium")
}

// newBrowser starts headless Chromium for one test: no sandbox (CI runs as
// root), no background traffic, a fresh profile. It skips outside CI when
// Chromium is not installed.
func newBrowser(t *testing.T, timeout time.Duration) context.Context {
	t.Helper()
	chromium := findChromium(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.WindowSize(1280, 800),
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(bcancel)
	require.NoError(t, chromedp.Do(bctx), "start chromium")
	return bctx
}

// screenshotDir is $CROPKIT_SCREENSHOTS, or a temporary folder.
func screenshotDir(t *testing.T) string {
	if d := os.Getenv("CROPKIT_SCREENSHOTS"); d != "" {
		require.NoError(t, os.MkdirAll(d, 0o755))
		return d
	}
	return t.TempDir()
}

// waitJS polls a JavaScript boolean expression until it holds.
func waitJS(ctx context.Context, t *testing.T, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if eval[bool](ctx, t, expr) {
			return
		}
		if time.Now().After(deadline) {
			msgs, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#messages").innerText`))
			t.Fatalf("timed out waiting for %s (page messages: %q)", what, msgs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](ctx context.Context, t *testing.T, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	require.NoError(t, err, "evaluate %s", expr)
	return v
}

func evalString(ctx context.Context, t *testing.T, expr string) string {
	t.Helper()
	return eval[string](ctx, t, expr)
}

func evalInt(ctx context.Context, t *testing.T, expr string) int {
	t.Helper()
	return eval[int](ctx, t, expr)
}

// setValue sets a form control's value as typing would, firing input and change.
func setValue(sel, v string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Run(ctx, chromedp.Evaluate[*struct{}](fmt.Sprintf(`(() => {
			const e = document.querySelector(%q);
			e.value = %q;
			e.dispatchEvent(new Event("input", {bubbles: true}));
			e.dispatchEvent(new Event("change", {bubbles: true}));
		})()`, sel, v)))
		return err
	})
}

// run runs a statement in the page, ignoring its value.
func run(ctx context.Context, t *testing.T, expr string) {
	t.Helper()
	_, err := chromedp.Run(ctx, chromedp.Evaluate[*struct{}](expr))
	require.NoError(t, err, "evaluate %s", expr)
}

// idle is true once the page made its API calls and none is in flight.
const idle = `document.documentElement.dataset.pending === "0"`

const overlaySrc = `((document.querySelector("img.index-overlay") || {dataset: {}}).dataset.src || "")`

// netStats counts the HTTP requests of a page and the bytes they moved.
type netStats struct {
	mu       sync.Mutex
	urls     map[network.RequestID]string
	bytes    map[network.RequestID]float64
	finished map[network.RequestID]bool
}

func watchNetwork(t *testing.T, ctx context.Context) *netStats {
	n := &netStats{urls: map[network.RequestID]string{}, bytes: map[network.RequestID]float64{}, finished: map[network.RequestID]bool{}}
	err := chromedp.Listen(ctx, func(ev any) {
		n.mu.Lock()
		defer n.mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			if strings.HasPrefix(e.Request.URL, "http") {
				n.urls[e.RequestID] = e.Request.URL
			}
		case *network.EventLoadingFinished:
			n.bytes[e.RequestID] = e.EncodedDataLength
			n.finished[e.RequestID] = true
		}
	})
	require.NoError(t, err, "listen to the network events")
	return n
}

func (n *netStats) reset() {
	n.mu.Lock()
	defer n.mu.Unlock()
	clear(n.urls)
	clear(n.bytes)
	clear(n.finished)
}

func (n *netStats) snapshot() (urls []string, bytes int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	total := 0.0
	for id, u := range n.urls {
		urls = append(urls, u)
		total += n.bytes[id]
	}
	sort.Strings(urls)
	return urls, int(total)
}

// TestBrowserDemo drives the viewer in headless Chromium against
// `cropkit serve --demo`: sign-in, the 16 demo fields listed and drawn, a
// field selected, index and date switched, zones drawn and a shapefile
// downloaded, with screenshots at 1280×800 and 768×1024.
func TestBrowserDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: -short")
	}
	ctx := newBrowser(t, 5*time.Minute)
	srv := startDemo(t)
	shots := screenshotDir(t)
	downloads := t.TempDir()
	net := watchNetwork(t, ctx)
	_, err := chromedp.CallBrowser(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: downloads})
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)))

	// Steps build on each other: stop at the first failure.
	step := func(name string, f func(t *testing.T)) {
		if !t.Run(name, f) {
			t.FailNow()
		}
	}
	step("token in the URL signs in; fields listed and drawn; index image placed", func(t *testing.T) {
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.base+"/#token="+srv.token)))
		waitJS(ctx, t, "16 fields and the index image", idle+` && document.querySelectorAll("#fields-list button").length === 16 && `+overlaySrc+` !== ""`)
		assert.Equal(t, "", evalString(ctx, t, `location.hash`), "the token leaves the address bar")
		assert.Equal(t, srv.token, evalString(ctx, t, `sessionStorage.getItem("cropkit.token")`))

		names := eval[[]string](ctx, t, `[...document.querySelectorAll("#fields-list button .name")].map(e => e.textContent)`)
		want := make([]string, 16)
		for i := range want {
			want[i] = fmt.Sprintf("UES-%02d", i+1)
		}
		assert.Equal(t, want, names)
		assert.Equal(t, 16, evalInt(ctx, t, `document.querySelectorAll("#map path.field-outline").length`), "16 outlines on the map")
		assert.Equal(t, 1, evalInt(ctx, t, `document.querySelectorAll("#map.leaflet-container img.leaflet-image-layer.index-overlay").length`))
		assert.Equal(t, "/download/ndvi/image?field_name=UES-01&date=2019-08-24", evalString(ctx, t, overlaySrc), "latest usable NDVI of the first field")
		assert.True(t, strings.HasPrefix(evalString(ctx, t, `document.querySelector("img.index-overlay").src`), "blob:"+srv.base+"/"), "the PNG is shown from a blob: URL (token only in the header)")
		assert.Contains(t, evalString(ctx, t, `document.querySelector("#stats").innerText`), "Mean")

		// Page-load budget: the page, 3 stylesheets, 3 scripts, the colormaps,
		// fields, dates, the §2.5 JSON and the PNG, and the chart's daily
		// series, phenology and events.
		urls, bytes := net.snapshot()
		t.Logf("page load: %d requests, %d bytes on the wire:\n  %s", len(urls), bytes, strings.Join(urls, "\n  "))
		assert.LessOrEqual(t, len(urls), 15, "requests of one page load")
		for _, u := range urls {
			assert.True(t, strings.HasPrefix(u, srv.base+"/"), "request off the server: %s", u)
			assert.NotContains(t, u, srv.token, "token in a URL: %s", u)
		}

		// The (x, y) of the image's corners match the JSON's bounds: the
		// overlay covers the selected field's outline.
		inside := eval[bool](ctx, t, `(() => {
			const img = document.querySelector("img.index-overlay").getBoundingClientRect();
			const f = document.querySelector("#map path.field-outline.selected").getBoundingClientRect();
			return img.width > 20 && f.left >= img.left - 2 && f.right <= img.right + 2 && f.top >= img.top - 2 && f.bottom <= img.bottom + 2;
		})()`)
		assert.True(t, inside, "the field's outline lies inside its image")
		shoot(ctx, t, shots, "viewer-1280x800.png")
	})

	step("a second visit revalidates or reuses the assets", func(t *testing.T) {
		_, first := net.snapshot()
		net.reset()
		// A new navigation (not a reload): the token comes from sessionStorage.
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.base+"/")))
		waitJS(ctx, t, "page again", idle+` && document.querySelectorAll("#fields-list button").length === 16 && `+overlaySrc+` !== ""`)
		urls, bytes := net.snapshot()
		t.Logf("second visit: %d requests, %d bytes on the wire (first: %d)", len(urls), bytes, first)
		assert.Less(t, bytes, first/2, "vendored libraries come from the cache")
	})

	step("search filters the list", func(t *testing.T) {
		require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#fields-search"), "ues-1")))
		waitJS(ctx, t, "filtered list", `document.querySelectorAll("#fields-list button").length === 7`)
		names := eval[[]string](ctx, t, `[...document.querySelectorAll("#fields-list button .name")].map(e => e.textContent)`)
		assert.Equal(t, []string{"UES-10", "UES-11", "UES-12", "UES-13", "UES-14", "UES-15", "UES-16"}, names)
		require.NoError(t, chromedp.Do(ctx, setValue("#fields-search", "")))
		waitJS(ctx, t, "full list", `document.querySelectorAll("#fields-list button").length === 16`)
	})

	var stats string
	step("select a field", func(t *testing.T) {
		before := evalString(ctx, t, `document.querySelector("#stats").innerText`)
		require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#fields-list button[data-field="UES-05"]`))))
		waitJS(ctx, t, "UES-05 image", idle+` && (`+overlaySrc+`).includes("field_name=UES-05")`)
		assert.Equal(t, "/download/ndvi/image?field_name=UES-05&date=2019-08-24", evalString(ctx, t, overlaySrc))
		assert.Equal(t, "Field UES-05", evalString(ctx, t, `document.querySelector("#field-title").textContent`))
		assert.Equal(t, "true", evalString(ctx, t, `document.querySelector('#fields-list button[data-field="UES-05"]').getAttribute("aria-current")`))
		stats = evalString(ctx, t, `document.querySelector("#stats").innerText`)
		assert.NotEqual(t, before, stats, "statistics follow the field")
		// One timeline date per usable image the API lists (UES-05 has 6 NDVI
		// dates: its 2019-04-26 image is cloudy).
		assert.Equal(t, usableDates(t, srv, "UES-05", "ndvi"), eval[[]string](ctx, t, `[...document.querySelectorAll("#timeline button[role=radio]")].map(b => b.dataset.date)`))
		assert.Equal(t, 1, evalInt(ctx, t, `document.querySelectorAll("#chart canvas").length`))
		// The daily series replaces the plain chart: one point per day from
		// the first to the last usable date, its 80 % band, observations by sensor.
		waitJS(ctx, t, "daily series chart", `(document.querySelector("#chart").getAttribute("aria-label") || "").includes("daily estimate")`)
		dates := usableDates(t, srv, "UES-05", "ndvi")
		first, _ := time.Parse(time.DateOnly, dates[0])
		last, _ := time.Parse(time.DateOnly, dates[len(dates)-1])
		assert.Equal(t, strconv.Itoa(int(last.Sub(first).Hours()/24)+1), evalString(ctx, t, `document.querySelector("#chart").dataset.days`))
		label := evalString(ctx, t, `document.querySelector("#chart").getAttribute("aria-label")`)
		assert.Contains(t, label, "NDVI daily estimate with its 80 % interval from "+dates[0])
		assert.Contains(t, label, fmt.Sprintf("%d observations (sentinel-2", len(dates)))
		assert.Equal(t, 1, evalInt(ctx, t, `document.querySelectorAll("#chart canvas").length`))
	})

	step("switch index", func(t *testing.T) {
		run(ctx, t, `(() => { const s = document.querySelector("#index-select"); s.value = "ndwi"; s.dispatchEvent(new Event("change")); })()`)
		waitJS(ctx, t, "NDWI image", idle+` && (`+overlaySrc+`).startsWith("/download/ndwi/")`)
		assert.Equal(t, "/download/ndwi/image?field_name=UES-05&date=2019-08-24", evalString(ctx, t, overlaySrc), "the date is kept across indices")
		next := evalString(ctx, t, `document.querySelector("#stats").innerText`)
		assert.NotEqual(t, stats, next, "statistics follow the index")
		stats = next
		// The legend is §2.6's NDWI scale, 10 colours from 0 to 1.
		assert.Contains(t, evalString(ctx, t, `document.querySelector("#legend .legend-bar").style.background`), "rgb(211, 50, 43)")
		assert.Equal(t, "0 0.25 0.5 0.75 1", evalString(ctx, t, `[...document.querySelectorAll("#legend .legend-ticks span")].map(s => s.textContent).join(" ")`))
	})

	step("switch date on the timeline", func(t *testing.T) {
		require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#timeline button[data-date="2019-05-16"]`))))
		waitJS(ctx, t, "2019-05-16 image", idle+` && (`+overlaySrc+`).endsWith("date=2019-05-16")`)
		assert.Equal(t, "/download/ndwi/image?field_name=UES-05&date=2019-05-16", evalString(ctx, t, overlaySrc))
		next := evalString(ctx, t, `document.querySelector("#stats").innerText`)
		assert.NotEqual(t, stats, next, "statistics follow the date")
		assert.Contains(t, next, "2019-05-16")
		assert.Equal(t, "true", evalString(ctx, t, `document.querySelector('#timeline button[data-date="2019-05-16"]').getAttribute("aria-checked")`))
		// Keyboard: the right arrow moves to the next date.
		require.NoError(t, chromedp.Do(ctx, chromedp.Focus(chromedp.CSS(`#timeline button[data-date="2019-05-16"]`)), chromedp.KeyEvent(kb.ArrowRight)))
		waitJS(ctx, t, "next date by keyboard", idle+` && (`+overlaySrc+`).endsWith("date=2019-06-20")`)
		assert.Equal(t, "2019-06-20", evalString(ctx, t, `document.activeElement.dataset.date || ""`), "focus follows the date")
	})

	step("API errors are messages", func(t *testing.T) {
		require.NoError(t, chromedp.Do(ctx,
			chromedp.Click(chromedp.CSS("#tab-zones")),
			setValue("#zones-n", "3"),
			setValue("#zones-base", "100"),
			setValue("#zones-min", "150"),
			chromedp.Click(chromedp.CSS("#zones-draw")),
		))
		waitJS(ctx, t, "error message", idle+` && document.querySelector("#messages .message.error") !== null`)
		msg := evalString(ctx, t, `document.querySelector("#messages .message.error").innerText`)
		assert.Contains(t, msg, "Zones:")
		assert.Contains(t, msg, "min_rate")
		require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#messages .message.error button"))))
		assert.Equal(t, 0, evalInt(ctx, t, `document.querySelectorAll("#messages .message").length`))
		assert.False(t, evalString(ctx, t, `document.querySelector("#app-view").hidden ? "hidden" : ""`) == "hidden", "the page stays")
	})

	step("draw zones with their dose", func(t *testing.T) {
		require.NoError(t, chromedp.Do(ctx,
			setValue("#zones-base", ""),
			setValue("#zones-min", ""),
			setValue("#zones-n", "4"),
			chromedp.Click(chromedp.CSS("#zones-draw")),
		))
		waitJS(ctx, t, "zones", idle+` && document.querySelectorAll("#map path.zone-polygon").length > 0`)
		rows := evalInt(ctx, t, `document.querySelectorAll("#zones-result tbody tr").length`)
		assert.Equal(t, 4, rows, "4 zones")
		labels := evalString(ctx, t, `[...document.querySelectorAll(".leaflet-tooltip.zone-label")].map(e => e.textContent).join("|")`)
		polys := evalInt(ctx, t, `document.querySelectorAll("#map path.zone-polygon").length`)
		assert.Equal(t, polys, strings.Count(labels, "|")+1, "one DOSE label per polygon")
		doses := map[float64]bool{}
		for _, l := range strings.Split(labels, "|") {
			m := regexp.MustCompile(`^([0-9.]+) kg N/ha$`).FindStringSubmatch(l)
			require.NotNil(t, m, "label %q", l)
			v, err := strconv.ParseFloat(m[1], 64)
			require.NoError(t, err)
			assert.True(t, v >= 60 && v <= 180, "dose %v within the default 60–180 kg N/ha", v)
			doses[v] = true
		}
		assert.Len(t, doses, 4, "4 distinct doses")
		assert.Contains(t, evalString(ctx, t, `document.querySelector("#zones-result caption").textContent`), "on NDWI of 2019-06-20")
		shoot(ctx, t, shots, "viewer-zones-1280x800.png")
	})

	step("seeding zones", func(t *testing.T) {
		require.NoError(t, chromedp.Do(ctx, setValue("#zones-type", "seeding"), setValue("#zones-n", "3"),
			chromedp.Click(chromedp.CSS("#zones-draw"))))
		waitJS(ctx, t, "seeding zones", idle+` && (() => { const l = [...document.querySelectorAll(".leaflet-tooltip.zone-label")]; return l.length > 0 && l.every(e => e.textContent.endsWith("seeds/ha")); })()`) // old labels fade out
		assert.Equal(t, 3, evalInt(ctx, t, `document.querySelectorAll("#zones-result tbody tr").length`))
		assert.Contains(t, evalString(ctx, t, `document.querySelector("#zones-result caption").textContent`), "3 zones, seeding on NDWI")
		for _, l := range eval[[]string](ctx, t, `[...document.querySelectorAll(".leaflet-tooltip.zone-label")].map(e => e.textContent)`) {
			m := regexp.MustCompile(`^([0-9,]+) seeds/ha$`).FindStringSubmatch(l)
			require.NotNil(t, m, "label %q", l)
			v, err := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
			require.NoError(t, err)
			assert.True(t, v >= 60000 && v <= 100000, "dose %d within the default 60,000–100,000 seeds/ha", v)
		}
		// Back to nitrogen for the download.
		require.NoError(t, chromedp.Do(ctx, setValue("#zones-type", "n_fertilizer"), setValue("#zones-n", "4"),
			chromedp.Click(chromedp.CSS("#zones-draw"))))
		waitJS(ctx, t, "nitrogen zones", idle+` && document.querySelectorAll("#zones-result tbody tr").length === 4`)
	})

	step("download a shapefile", func(t *testing.T) {
		require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`.downloads button[data-format="shapefile"]`))))
		waitJS(ctx, t, "download", `(document.querySelector("#download-status").dataset.file || "").endsWith(".zip")`)
		size, err := strconv.Atoi(evalString(ctx, t, `document.querySelector("#download-status").dataset.bytes`))
		require.NoError(t, err)
		var zipBytes []byte
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			entries, err := os.ReadDir(downloads)
			require.NoError(t, err)
			for _, e := range entries {
				b, err := os.ReadFile(filepath.Join(downloads, e.Name()))
				if err == nil && len(b) == size {
					zipBytes = b
				}
			}
			if zipBytes != nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		require.NotNil(t, zipBytes, "no %d-byte file in the download folder", size)
		zr, err := zip.NewReader(bytes.NewReader(zipBytes), int64(len(zipBytes)))
		require.NoError(t, err, "the download is a zip")
		var exts []string
		for _, f := range zr.File {
			exts = append(exts, filepath.Ext(f.Name))
		}
		sort.Strings(exts)
		assert.Equal(t, []string{".dbf", ".prj", ".shp", ".shx"}, exts)
	})

	step("tablet 768x1024", func(t *testing.T) {
		require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(768, 1024)))
		time.Sleep(300 * time.Millisecond) // layout and Leaflet's resize
		type box struct {
			MapW, MapH, PageW float64
			FieldsTop, MapBot float64
		}
		layout := eval[box](ctx, t, `(() => {
			const m = document.querySelector("#map").getBoundingClientRect();
			const f = document.querySelector(".fields").getBoundingClientRect();
			return {MapW: m.width, MapH: m.height, PageW: document.documentElement.scrollWidth, FieldsTop: f.top, MapBot: m.bottom};
		})()`)
		assert.Equal(t, 768.0, layout.MapW, "the map spans the tablet's width")
		assert.Greater(t, layout.MapH, 400.0)
		assert.LessOrEqual(t, layout.PageW, 768.0, "no horizontal scrolling")
		assert.GreaterOrEqual(t, layout.FieldsTop, layout.MapBot-1, "the list goes below the map")
		shoot(ctx, t, shots, "viewer-768x1024.png")
		require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)))
	})

	step("keyboard and labels", func(t *testing.T) {
		// Every visible control has an accessible name.
		unnamed := eval[[]string](ctx, t, `[...document.querySelectorAll("button, input, select")]
			.filter(e => e.offsetParent !== null)
			.filter(e => !(e.labels && e.labels.length) && !e.getAttribute("aria-label") && !e.textContent.trim())
			.map(e => e.outerHTML.slice(0, 80))`)
		assert.Empty(t, unnamed)
		// Tab from the top reaches the skip link, the header and then the field search, each with a visible focus ring.
		run(ctx, t, `document.querySelector(".skip").focus()`)
		var seen []string
		for i := range 6 {
			if i > 0 {
				require.NoError(t, chromedp.Do(ctx, chromedp.KeyEvent("\t")))
			}
			type focused struct{ ID, Tag, Outline string }
			f := eval[focused](ctx, t, `(() => { const e = document.activeElement; return {ID: e.id, Tag: e.tagName, Outline: getComputedStyle(e).outlineStyle}; })()`)
			seen = append(seen, f.Tag+"#"+f.ID)
			assert.NotEqual(t, "none", f.Outline, "focus ring on %s#%s", f.Tag, f.ID)
		}
		assert.Equal(t, []string{"A#", "INPUT#osm", "BUTTON#signout", "INPUT#fields-search", "BUTTON#", "BUTTON#"}, seen)
		// The skip link leads to the field search.
		run(ctx, t, `document.querySelector(".skip").focus()`)
		require.NoError(t, chromedp.Do(ctx, chromedp.KeyEvent("\r")))
		assert.Equal(t, "fields-search", evalString(ctx, t, `document.activeElement.id`))
	})

	step("contrast", func(t *testing.T) {
		// WCAG AA: 4.5:1 for the text of these elements on their background.
		for _, sel := range []string{"h2", ".hint", ".stats dt", ".stats dd", "#fields-list button", `#fields-list button[aria-current="true"]`, "#signout", "#tab-index", ".top h1"} {
			type colours struct{ FG, BG string }
			c := eval[colours](ctx, t, `(() => {
				let e = document.querySelector(`+strconv.Quote(sel)+`);
				const fg = getComputedStyle(e).color;
				let bg = "rgba(0, 0, 0, 0)";
				for (let x = e; x; x = x.parentElement) {
					const b = getComputedStyle(x).backgroundColor;
					if (b !== "rgba(0, 0, 0, 0)" && b !== "transparent") { bg = b; break; }
				}
				return {FG: fg, BG: bg === "rgba(0, 0, 0, 0)" ? "rgb(255, 255, 255)" : bg};
			})()`)
			ratio := contrast(t, c.FG, c.BG)
			assert.GreaterOrEqual(t, ratio, 4.5, "%s: %s on %s", sel, c.FG, c.BG)
		}
	})

	step("sign out, wrong password, token form", func(t *testing.T) {
		require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#signout"))))
		waitJS(ctx, t, "sign-in view", `document.documentElement.dataset.view === "signin"`)
		assert.Equal(t, "", evalString(ctx, t, `sessionStorage.getItem("cropkit.token") || ""`))
		require.NoError(t, chromedp.Do(ctx,
			chromedp.SendKeys(chromedp.CSS("#login-user"), "admin"),
			chromedp.SendKeys(chromedp.CSS("#login-password"), "not the password"),
			chromedp.Click(chromedp.CSS("#login-form button[type=submit]")),
		))
		waitJS(ctx, t, "login error", idle+` && document.querySelector("#messages .message.error") !== null`)
		assert.Contains(t, evalString(ctx, t, `document.querySelector("#messages").innerText`), "Sign-in failed: wrong username or password")
		require.NoError(t, chromedp.Do(ctx,
			chromedp.SendKeys(chromedp.CSS("#token-input"), srv.token),
			chromedp.Click(chromedp.CSS("#token-form button[type=submit]")),
		))
		waitJS(ctx, t, "signed in again", idle+` && document.querySelectorAll("#fields-list button").length === 16 && `+overlaySrc+` !== ""`)
		assert.Equal(t, 0, evalInt(ctx, t, `document.querySelectorAll("#messages .message").length`), "signing in clears old messages")
	})

	step("invalid token is a message on the sign-in page", func(t *testing.T) {
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.base+"/#token=not-a-token")))
		waitJS(ctx, t, "sign-in view with message", `document.documentElement.dataset.view === "signin" && document.querySelector("#messages .message.error") !== null`)
		msgs := evalString(ctx, t, `document.querySelector("#messages").innerText`)
		assert.Contains(t, msgs, "invalid, expired or revoked token")
		assert.Equal(t, 1, evalInt(ctx, t, `document.querySelectorAll("#messages .message").length`), "said once: %s", msgs)
	})

	step("a field name is text, never HTML: list, title, map tooltip", func(t *testing.T) {
		const evil = `<b id="pwn">INJECTED</b><a href="https://evil.example/">click</a><img id="pwn-img" src="x">`
		registerField(t, srv, evil, orb.Polygon{{{4.0600, 50.7400}, {4.0612, 50.7400}, {4.0612, 50.7407}, {4.0600, 50.7407}, {4.0600, 50.7400}}})
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.base+"/#token="+srv.token)))
		waitJS(ctx, t, "17 fields", idle+` && document.querySelectorAll("#fields-list button").length === 17`)
		jsEvil := strconv.Quote(evil)
		run(ctx, t, `[...document.querySelectorAll("#fields-list button")].find(b => b.dataset.field === `+jsEvil+`).click()`)
		waitJS(ctx, t, "the field selected", idle+` && document.querySelector("#field-title").textContent === "Field " + `+jsEvil)

		// Hover the selected outline's west edge (a selected outline has no
		// fill): Leaflet opens its sticky tooltip.
		waitJS(ctx, t, "the map settled on the field", `(() => {
			const m = document.querySelector("#map"), p = m.querySelector("path.field-outline.selected");
			p.scrollIntoView({block: "center"}); // messages above the map may push it below the fold
			const r = p.getBoundingClientRect(), b = m.getBoundingClientRect();
			const k = [r.left, r.top, r.width, r.height].join(), same = window.lastOutlineRect === k;
			window.lastOutlineRect = k;
			return same && !m.classList.contains("leaflet-zoom-anim") && r.width > 10 && r.left > b.left && r.right < b.right && r.top > b.top && r.bottom < b.bottom && r.top >= 0 && r.bottom <= innerHeight;
		})()`)
		type point struct{ X, Y float64 }
		c := eval[point](ctx, t, `(() => { const r = document.querySelector("#map path.field-outline.selected").getBoundingClientRect(); return {X: r.left, Y: r.top + r.height / 2}; })()`)
		require.NoError(t, chromedp.Do(ctx, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, c.X-20, c.Y), chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, c.X, c.Y)))
		require.True(t, eval[bool](ctx, t, fmt.Sprintf(`document.elementFromPoint(%f, %f).matches("path.field-outline.selected")`, c.X, c.Y)), "the pointer is on the outline")
		waitJS(ctx, t, "the outline's tooltip", `document.querySelector(".leaflet-tooltip:not(.zone-label)") !== null`)
		assert.Equal(t, evil, evalString(ctx, t, `document.querySelector(".leaflet-tooltip:not(.zone-label)").textContent`), "the tooltip shows the name as typed")

		assert.Equal(t, 0, evalInt(ctx, t, `document.querySelectorAll("#pwn, #pwn-img, a[href='https://evil.example/']").length`), "no injected element in the page")
		assert.Equal(t, 0, evalInt(ctx, t, `document.querySelectorAll(".leaflet-tooltip b, .leaflet-tooltip a, .leaflet-tooltip img, #fields-list b, #field-title b").length`))
		assert.Equal(t, evil, evalString(ctx, t, `[...document.querySelectorAll("#fields-list button .name")].find(e => e.textContent.startsWith("<b")).textContent`))
		assert.Equal(t, evil+" · cropkit viewer", evalString(ctx, t, `document.title`))
	})
}

// registerField registers a field of the admin account through the API
// (not the page), with NDVI.
func registerField(t *testing.T, srv demoServer, name string, p orb.Polygon) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"field_name": name, "label": []string{"ndvi"},
		"geojson": map[string]any{"type": "Feature", "properties": map[string]any{}, "geometry": map[string]any{"type": "Polygon", "coordinates": p}}})
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, srv.base+"/fields/register", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+srv.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "register %q: %s", name, msg)
}

// usableDates asks the API (not the page) for a field's dates of an index.
func usableDates(t *testing.T, srv demoServer, field, index string) []string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.base+"/files/list?field_name="+field, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+srv.token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var list struct {
		Indices map[string][]struct{ Date string }
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
	var dates []string
	for _, e := range list.Indices[index] {
		dates = append(dates, e.Date)
	}
	sort.Strings(dates)
	return dates
}

func shoot(ctx context.Context, t *testing.T, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(png, []byte("\x89PNG")))
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, png, 0o644))
	t.Logf("screenshot %s (%d bytes)", p, len(png))
}

// contrast is the WCAG contrast ratio of two CSS rgb()/rgba() colours.
func contrast(t *testing.T, a, b string) float64 {
	t.Helper()
	la, lb := luminance(t, a), luminance(t, b)
	if la < lb {
		la, lb = lb, la
	}
	return (la + 0.05) / (lb + 0.05)
}

func luminance(t *testing.T, css string) float64 {
	t.Helper()
	m := regexp.MustCompile(`rgba?\((\d+), (\d+), (\d+)`).FindStringSubmatch(css)
	require.NotNil(t, m, "colour %q", css)
	var l float64
	for i, w := range []float64{0.2126, 0.7152, 0.0722} {
		v, _ := strconv.Atoi(m[i+1])
		c := float64(v) / 255
		if c <= 0.03928 {
			c /= 12.92
		} else {
			c = math.Pow((c+0.055)/1.055, 2.4)
		}
		l += w * c
	}
	return l
}

// The demo server answers GET / with the viewer (the route in server.go),
// and the page works in a browser that only dumps the DOM.
func TestDemoServesViewer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary: -short")
	}
	srv := startDemo(t)
	resp, err := http.Get(srv.base + "/")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
	assert.Contains(t, string(b), `<div id="map"`)

	// The acceptance, as written: `chromium --headless --dump-dom` of
	// /#token=… shows, once the scripts ran, the 16 field names and a Leaflet
	// map with an image overlay of a /download PNG.
	chromium := findChromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dom, err := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
		"--user-data-dir="+t.TempDir(), "--virtual-time-budget=20000",
		"--dump-dom", srv.base+"/#token="+srv.token).Output()
	require.NoError(t, err, "chromium --dump-dom")
	page := string(dom)
	for i := 1; i <= 16; i++ {
		assert.Contains(t, page, fmt.Sprintf(`<span class="name">UES-%02d</span>`, i))
	}
	assert.Regexp(t, `<div id="map" class="map leaflet-container`, page)
	assert.Regexp(t, `<img class="leaflet-image-layer[^"]*index-overlay" src="blob:[^"]+" alt="NDVI of UES-01 on 2019-08-24" data-src="/download/ndvi/image\?field_name=UES-01&amp;date=2019-08-24"`, page)
	assert.NotContains(t, page, srv.token, "the token is not in the DOM")
}
