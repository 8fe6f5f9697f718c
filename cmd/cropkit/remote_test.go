package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/archive/backend"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/imagery"
	"github.com/cropkit/cropkit/internal/demodata"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/stac/stactest"
)

// cropkit index --scene <item URL> reads real item documents (served on
// loopback, pixels local) with the catalogue's rules: the same reports as
// the chip's folder, Planetary Computer assets fetched only signed with
// --sign-url, the archive's offset undone; refused items name the reason.
func TestIndexRemoteRealItems(t *testing.T) {
	chip := testenv.DataDir(t, "s2", "flanders-31UES", "2019-06-20")
	fields := testenv.DataDir(t, "fields", "flanders-31UES.geojson")
	ri := stactest.ServeRealItems(t, chip)

	ref := t.TempDir()
	_, err := runIndexArgs(t, "--scene", chip, "--fields", fields, "--index", "ndvi,ndmi", "--out", ref)
	require.NoError(t, err)

	for _, name := range []string{"pc-s2l2a-S2B", "earthsearch-v1-s2l2a-S2A_32TMT_20200305_1", "earthsearch-v0"} {
		t.Run(name, func(t *testing.T) {
			it := ri.Item(t, name)
			u := it.URL
			if strings.HasPrefix(name, "earthsearch-v0") {
				u = strings.Replace(u, "127.0.0.1", "localhost", 1) // named by host name
			}
			out := t.TempDir()
			_, err := runIndexArgs(t, "--scene", u, "--sign-url", ri.SignURL, "--ingest-allow-host", strings.Join(ri.AssetHosts, ","),
				"--fields", fields, "--index", "ndvi,ndmi", "--out", out)
			require.NoError(t, err)
			for _, idx := range []string{"ndvi", "ndmi"} {
				want := readReport(t, filepath.Join(ref, "UES-03", "2019-06-20", idx+".json"))
				got := readReport(t, filepath.Join(out, "UES-03", "2019-06-20", idx+".json"))
				assert.Equal(t, want.Stats, got.Stats, idx)
			}
		})
	}
	assert.Zero(t, ri.Unsigned(), "Planetary Computer hrefs are requested only signed")
	assert.Positive(t, ri.BlobRequests())

	// The item URL's origin is allowed, not the other loopback origin its
	// assets are on: that one needs --ingest-allow-host (issue 18).
	_, err = runIndexArgs(t, "--scene", ri.Item(t, "earthsearch-v1-s2l2a-S2A_32TMT_20200305_1").URL, "--fields", fields, "--index", "ndvi", "--out", t.TempDir())
	assert.ErrorContains(t, err, "catalogue address 127.0.0.1 refused: loopback address")

	// Without --sign-url the Planetary Computer-like host (not on
	// *.blob.core.windows.net) answers 403, named in the error.
	_, err = runIndexArgs(t, "--scene", ri.Item(t, "pc-s2l2a-S2B").URL, "--ingest-allow-host", ri.AssetHosts[1],
		"--fields", fields, "--index", "ndvi", "--out", t.TempDir())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "403")

	for name, reason := range map[string]string{
		"cdse-s2l2a-S2A_MSIL2A_20241107": "JPEG 2000 only (CDSE): not supported",
		"earthsearch-v1-landsat":         "s3://usgs-landsat is a requester-pays bucket",
		"earthsearch-v1-s1grd":           "Sentinel-1 GRD item: in radar geometry",
	} {
		_, err := runIndexArgs(t, "--scene", ri.Item(t, name).URL, "--sign-url", ri.SignURL, "--ingest-allow-host", ri.AssetHosts[0],
			"--ingest-allow-host", ri.AssetHosts[1], "--fields", fields, "--index", "ndvi", "--out", t.TempDir())
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), reason)
	}
}

// A fields file with one invalid polygon: the other fields are written,
// the bad one is named, and the command fails at the end.
func TestIndexKeepsGoingPastABadField(t *testing.T) {
	chip := testenv.DataDir(t, "s2", "flanders-31UES", "2019-06-20")
	data, err := os.ReadFile(testenv.DataDir(t, "fields", "flanders-31UES.geojson"))
	require.NoError(t, err)
	var fc map[string]any
	require.NoError(t, json.Unmarshal(data, &fc))
	feats := fc["features"].([]any)
	n := len(feats)
	bowtie := map[string]any{"type": "Feature", "properties": map[string]any{"name": "BOWTIE"},
		"geometry": map[string]any{"type": "Polygon", "coordinates": [][][2]float64{{{4.06, 50.74}, {4.07, 50.75}, {4.07, 50.74}, {4.06, 50.75}, {4.06, 50.74}}}}}
	twoPoints := map[string]any{"type": "Feature", "properties": map[string]any{"name": "BROKEN"},
		"geometry": map[string]any{"type": "Polygon", "coordinates": [][][2]float64{{{4.06, 50.74}, {4.07, 50.75}}}}}
	fc["features"] = append([]any{bowtie}, append(feats, twoPoints)...)
	path := filepath.Join(t.TempDir(), "fields.geojson")
	data, err = json.Marshal(fc)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data, 0o644))

	out := t.TempDir()
	stderr, err := runIndexArgs(t, "--scene", chip, "--fields", path, "--index", "ndvi", "--out", out)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `field "BOWTIE"`)
	assert.Contains(t, err.Error(), `field "BROKEN"`)
	assert.Contains(t, stderr, `field "BOWTIE" (feature 0)`)
	written, err := filepath.Glob(filepath.Join(out, "*", "2019-06-20", "ndvi.json"))
	require.NoError(t, err)
	assert.Len(t, written, n, "every good field written")
	assert.NoDirExists(t, filepath.Join(out, "BOWTIE"))

	// zones for one good field of the same file works.
	zout := filepath.Join(t.TempDir(), "zones.geojson")
	var zerr strings.Builder
	err = runZones(t.Context(), []string{"--scene", chip, "--fields", path, "--field", "UES-03", "--zones", "3", "--out", zout}, strings.NewReader(""), &zerr, &zerr)
	require.NoError(t, err, zerr.String())
	assert.FileExists(t, zout)
	// …and names the bad one when it is the one asked for.
	err = runZones(t.Context(), []string{"--scene", chip, "--fields", path, "--field", "BROKEN", "--zones", "3", "--out", zout}, strings.NewReader(""), &zerr, &zerr)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `field "BROKEN"`)
}

// cropkit index over the real Planetary Computer sentinel-1-rtc item
// document (its vv/vh assets served from the shared dB folder, whose
// VALUE_UNIT the reader honours when the item gives no scaling) equals the
// folder's products.
func TestIndexSentinel1Item(t *testing.T) {
	folder := testenv.DataDir(t, "s1", "flanders-31UES", "2019-06-04")
	fields := testenv.DataDir(t, "fields", "flanders-31UES.geojson")
	raw, err := os.ReadFile(filepath.Join(testenv.DataDir(t, "stac-items"),
		"pc-s1rtc-S1A_IW_GRDH_1SDV_20240419T045904_20240419T045916_053498_067DF2_rtc.json"))
	require.NoError(t, err)
	var item map[string]any
	require.NoError(t, json.Unmarshal(raw, &item))
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for key, file := range map[string]string{"vv": "VV.tif", "vh": "VH.tif"} {
		item["assets"].(map[string]any)[key].(map[string]any)["href"] = srv.URL + "/" + file
		mux.HandleFunc("/"+file, func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, filepath.Join(folder, file)) })
	}
	doc, err := json.Marshal(item)
	require.NoError(t, err)
	mux.HandleFunc("/item", func(w http.ResponseWriter, r *http.Request) { w.Write(doc) })

	ref, out := t.TempDir(), t.TempDir()
	_, err = runIndexArgs(t, "--scene", folder, "--fields", fields, "--index", "vv,vh", "--out", ref)
	require.NoError(t, err)
	_, err = runIndexArgs(t, "--scene", srv.URL+"/item", "--fields", fields, "--index", "vv,vh", "--out", out)
	require.NoError(t, err)
	for _, ix := range []string{"vv", "vh"} {
		want := readReport(t, filepath.Join(ref, "UES-03", "2019-06-04", ix+".json"))
		got := readReport(t, filepath.Join(out, "UES-03", "2024-04-19", ix+".json")) // the item's date
		assert.Equal(t, want.Stats, got.Stats, ix)
		assert.Equal(t, imagery.Sentinel1A, got.Sensor)
	}
	_, err = runIndexArgs(t, "--scene", srv.URL+"/item", "--fields", fields, "--index", "ndvi", "--out", t.TempDir())
	assert.ErrorContains(t, err, "index ndvi applies to [sentinel-2 landsat]")
}

// cropkit ingest of remote item URLs: a Planetary Computer item is read
// signed with --sign-url and stored under its unsigned URL, with the same
// products as the chip's folder; Earth Search's Landsat item (requester-pays) is refused, named.
func TestIngestRemoteRealItems(t *testing.T) {
	chip := testenv.DataDir(t, "s2", "flanders-31UES", "2019-06-20")
	ri := stactest.ServeRealItems(t, chip)
	ctx := context.Background()
	setup := func() string {
		dir := t.TempDir()
		st, err := backend.Open(ctx, dir, true, archive.Config{})
		require.NoError(t, err)
		_, _, err = st.EnsureAdmin(ctx)
		require.NoError(t, err)
		admin, err := st.UserByName(ctx, "admin")
		require.NoError(t, err)
		feats, err := geo.ReadFeatures(demodata.Fields())
		require.NoError(t, err)
		_, err = st.Store().InsertField(ctx, archive.Field{OwnerID: admin.ID, Name: feats[0].Name, Indices: []string{"ndvi"}, Geometry: feats[0].Geometry}, 0)
		require.NoError(t, err)
		require.NoError(t, st.Close())
		return dir
	}
	mean := func(dir string) (float64, []string) {
		st, err := backend.Open(ctx, dir, false, archive.Config{})
		require.NoError(t, err)
		defer st.Close()
		admin, err := st.UserByName(ctx, "admin")
		require.NoError(t, err)
		fs, err := st.Fields(ctx, admin, nil)
		require.NoError(t, err)
		require.Len(t, fs, 1)
		ps, err := st.UsableProducts(ctx, fs[0], "ndvi", "", "")
		require.NoError(t, err)
		require.Len(t, ps, 1)
		recs, err := st.Store().ScenesIntersecting(ctx, orb.Bound{Min: orb.Point{-180, -90}, Max: orb.Point{180, 90}}, "", "")
		require.NoError(t, err)
		var sources []string
		for _, r := range recs {
			sources = append(sources, r.Source)
		}
		return ps[0].Mean, sources
	}
	ref := setup()
	code, _, errOut := runCmd(t, "", "ingest", "--data", ref, chip)
	require.Equal(t, 0, code, errOut)
	want, _ := mean(ref)

	dir := setup()
	pc := ri.Item(t, "pc-s2l2a-S2B")
	// The asset servers are other loopback origins than the item's: refused
	// unless named (the item URL's own origin alone is allowed).
	code, _, errOut = runCmd(t, "", "ingest", "--data", dir, "--sign-url", ri.SignURL, pc.URL)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "refused: loopback address")
	code, out, errOut := runCmd(t, "", "ingest", "--data", dir, "--sign-url", ri.SignURL, "--ingest-allow-host", strings.Join(ri.AssetHosts, ","), pc.URL)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "1 usable")
	got, sources := mean(dir)
	assert.InDelta(t, want, got, 1e-12, "the offset of baseline 05.10 undone")
	assert.Equal(t, []string{pc.URL}, sources)
	assert.Zero(t, ri.Unsigned())

	code, _, errOut = runCmd(t, "", "ingest", "--data", dir, "--sign-url", ri.SignURL, "--ingest-allow-host", strings.Join(ri.AssetHosts, ","), ri.Item(t, "earthsearch-v1-landsat").URL)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "s3://usgs-landsat is a requester-pays bucket")
}
