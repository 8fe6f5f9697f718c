package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/geo/crs"
	"github.com/cropkit/cropkit/imagery/geotiff"
	"github.com/cropkit/cropkit/imagery/geotiff/geotifftest"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/server"
	"github.com/cropkit/cropkit/server/servertest"
)

func countProducts(t *testing.T, env *servertest.Env) int {
	t.Helper()
	var n int
	require.NoError(t, env.DB(t).QueryRow(`SELECT count(*) FROM products`).Scan(&n))
	return n
}

func TestReingestReplacesAndGeometryUpdateDropsProducts(t *testing.T) {
	sceneRoot := testenv.DataDir(t, "s2", "flanders-31UES")
	fields := flandersFields(t)
	env := servertest.New(t, server.Config{})
	h := env.Handler
	tok := env.AddUser(t, "u", nil)
	geom := map[string]any{"type": "MultiPolygon", "coordinates": fields["UES-03"].Geometry}
	r := do(t, h, "POST", "/fields/register", tok, map[string]any{"field_name": "a", "geometry": geom, "indices": []string{"ndvi", "ndre"}})
	require.Equal(t, 201, r.Status, "%s", r.Body)
	ctx := context.Background()
	for range 2 {
		for _, d := range []string{"2019-06-20", "2019-06-25"} {
			_, err := env.Archive.Ingest(ctx, filepath.Join(sceneRoot, d), archive.IngestOptions{})
			require.NoError(t, err)
		}
	}
	assert.Equal(t, 4, countProducts(t, env), "2 dates × 2 indices, re-ingestion replaces")
	entries := env.BlobKeys(t, "products/1")
	require.Len(t, entries, 1, "one bundle: the cloudy date has no files")
	assert.Regexp(t, `^products/1/2019-06-20-[0-9a-f]{12}\.zip$`, entries[0], "versioned bundle name")

	// Group change keeps products; geometry change drops them.
	r = do(t, h, "POST", "/fields/update", tok, map[string]any{"field_name": "a", "group": "g2"})
	require.Equal(t, 200, r.Status)
	assert.Equal(t, 4, countProducts(t, env))
	geom12 := map[string]any{"type": "MultiPolygon", "coordinates": fields["UES-12"].Geometry}
	r = do(t, h, "POST", "/fields/update", tok, map[string]any{"field_name": "a", "geometry": geom12})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	assert.Equal(t, "g2", r.JSON(t)["field"].(map[string]any)["group"])
	assert.Equal(t, 0, countProducts(t, env))
	assert.NoDirExists(t, filepath.Join(env.Dir, "products", "1"))
	assert.Empty(t, env.BlobKeys(t, "products/1"))
	r = do(t, h, "POST", "/download/ndvi/json?field_name=a", tok, nil)
	assert.Equal(t, 404, r.Status)
	assert.Equal(t, "no_imagery", r.ErrorCode(t))
}

func TestUploadErrors(t *testing.T) {
	sceneRoot := testenv.DataDir(t, "s2", "flanders-31UES", "2019-06-20")
	env := servertest.New(t, server.Config{MaxUploadBytes: 100 << 10})
	upload := func(parts map[string]string) (int, string) {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		require.NoError(t, mw.WriteField("date", "2019-06-20"))
		for name, file := range parts {
			w, err := mw.CreateFormFile(name, filepath.Base(file))
			require.NoError(t, err)
			data, err := os.ReadFile(file)
			if err != nil {
				data = []byte(file)
			}
			w.Write(data)
		}
		require.NoError(t, mw.Close())
		req := httptest.NewRequest("POST", "/scenes/ingest", &buf)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		req.Header.Set("Authorization", "Bearer "+env.AdminToken)
		rec := httptest.NewRecorder()
		env.Handler.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	code, body := upload(map[string]string{"notes": "just text"})
	assert.Equal(t, 400, code, body)
	assert.Contains(t, body, "not a band file")
	code, body = upload(map[string]string{"B04": filepath.Join(sceneRoot, "B04.tif"), "B08": filepath.Join(sceneRoot, "B08.tif"), "SCL": filepath.Join(sceneRoot, "SCL.tif")})
	assert.Equal(t, 200, code, body)
	big := bytes.Repeat([]byte("x"), 200<<10)
	bigFile := filepath.Join(t.TempDir(), "B02.tif")
	require.NoError(t, os.WriteFile(bigFile, big, 0o644))
	code, body = upload(map[string]string{"B02": bigFile})
	assert.Equal(t, 413, code, body)
	entries, err := os.ReadDir(filepath.Join(env.Dir, "tmp"))
	require.NoError(t, err)
	assert.Empty(t, entries, "upload folders are removed")
}

// The GeoTIFF of /rasters/get opens in GDAL with the product's grid and nodata.
func TestRasterOpensInGDAL(t *testing.T) {
	gdalinfo := testenv.RequireTool(t, "gdalinfo")
	sceneRoot := testenv.DataDir(t, "s2", "flanders-31UES")
	fields := flandersFields(t)
	env := servertest.New(t, server.Config{})
	tok := env.AddUser(t, "u", nil)
	r := do(t, env.Handler, "POST", "/fields/register", tok, map[string]any{"field_name": "a", "indices": "ndvi",
		"geometry": map[string]any{"type": "MultiPolygon", "coordinates": fields["UES-12"].Geometry}})
	require.Equal(t, 201, r.Status, "%s", r.Body)
	_, err := env.Archive.Ingest(context.Background(), filepath.Join(sceneRoot, "2019-06-20"), archive.IngestOptions{})
	require.NoError(t, err)
	r = do(t, env.Handler, "GET", "/rasters/get?field_name=a&index=ndvi", tok, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	path := filepath.Join(t.TempDir(), "a.tif")
	require.NoError(t, os.WriteFile(path, r.Body, 0o644))
	out, err := exec.Command(gdalinfo, "-json", "-stats", path).Output()
	require.NoError(t, err)
	var info struct {
		Size  []int `json:"size"`
		Bands []struct {
			Type        string  `json:"type"`
			NoDataValue float64 `json:"noDataValue"`
			Metadata    map[string]map[string]string
		} `json:"bands"`
		CoordinateSystem struct {
			WKT string `json:"wkt"`
		} `json:"coordinateSystem"`
	}
	require.NoError(t, json.Unmarshal(out, &info))
	require.Len(t, info.Bands, 1)
	assert.Equal(t, "Float32", info.Bands[0].Type)
	assert.Equal(t, -9999.0, info.Bands[0].NoDataValue)
	assert.Contains(t, info.CoordinateSystem.WKT, `ID["EPSG",32631]`)
	var rep struct {
		Num  int     `json:"num"`
		Mean float64 `json:"mean"`
	}
	r = do(t, env.Handler, "GET", "/download/ndvi/json?field_name=a", tok, nil)
	require.NoError(t, json.Unmarshal(r.Body, &rep))
	mean, err := strconv.ParseFloat(info.Bands[0].Metadata[""]["STATISTICS_MEAN"], 64)
	require.NoError(t, err, "%s", out)
	assert.InDelta(t, rep.Mean, mean, 1e-6, "GDAL's mean of the float32 values")
	valid, err := strconv.ParseFloat(info.Bands[0].Metadata[""]["STATISTICS_VALID_PERCENT"], 64)
	require.NoError(t, err)
	assert.InDelta(t, 100*float64(rep.Num)/float64(info.Size[0]*info.Size[1]), valid, 0.01)
}

// A STAC item (Earth Search asset keys) is ingested like a folder; served over
// HTTP it is ingested from its URL, reading the band COGs by range requests.
func TestIngestSTACItemPathAndURL(t *testing.T) {
	sceneDir := testenv.DataDir(t, "s2", "flanders-31UES", "2019-06-20")
	fields := flandersFields(t)
	env := servertest.NewWith(t, archive.Config{IngestAllowPrivate: true}, server.Config{}) // the item is served on loopback
	tok := env.AddUser(t, "u", nil)
	r := do(t, env.Handler, "POST", "/fields/register", tok, map[string]any{"field_name": "a", "indices": "ndvi,evi",
		"geometry": map[string]any{"type": "MultiPolygon", "coordinates": fields["UES-03"].Geometry}})
	require.Equal(t, 201, r.Status, "%s", r.Body)

	itemDir := t.TempDir()
	assets := map[string]any{}
	for key, band := range map[string]string{"blue": "B02", "red": "B04", "rededge1": "B05", "nir": "B08", "scl": "SCL"} {
		data, err := os.ReadFile(filepath.Join(sceneDir, band+".tif"))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(itemDir, band+".tif"), data, 0o644))
		assets[key] = map[string]any{"href": "./" + band + ".tif", "type": "image/tiff; application=geotiff; profile=cloud-optimized"}
	}
	item, err := json.Marshal(map[string]any{"type": "Feature", "stac_version": "1.0.0", "id": "S2B_31UES_20190620_0_L2A",
		"properties": map[string]any{"datetime": "2019-06-20T10:57:03Z"}, "assets": assets})
	require.NoError(t, err)
	itemPath := filepath.Join(itemDir, "item.json")
	require.NoError(t, os.WriteFile(itemPath, item, 0o644))

	r = do(t, env.Handler, "POST", "/scenes/ingest", env.AdminToken, map[string]string{"source": itemPath})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	assert.Equal(t, "2019-06-20", r.JSON(t)["date"])
	assert.Equal(t, 2.0, r.JSON(t)["usable"])

	ts := httptest.NewServer(http.FileServer(http.Dir(itemDir)))
	defer ts.Close()
	r = do(t, env.Handler, "POST", "/scenes/ingest", env.AdminToken, map[string]string{"source": ts.URL + "/item.json"})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	assert.Equal(t, 2.0, r.JSON(t)["usable"])
	assert.Equal(t, 2, countProducts(t, env), "the same date again: replaced")
	r = do(t, env.Handler, "GET", "/download/ndvi/json?field_name=a", tok, nil)
	require.Equal(t, 200, r.Status)
	assert.InDelta(t, 0.849754, r.JSON(t)["mean"], 1e-6)
}

// countingWriter counts the bytes a handler writes.
type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	c.n.Add(int64(len(p)))
	return c.ResponseWriter.Write(p)
}

// noise is a deterministic pseudo-random byte of (col, row): texture that
// keeps synthetic COG tiles about as large as real ones (hundreds of KiB).
func noise(col, row int, seed uint32) uint16 {
	h := uint32(col)*0x9e3779b1 ^ uint32(row)*0x85ebca77 ^ seed
	h ^= h >> 15
	h *= 0x2c1b3c6d
	h ^= h >> 12
	return uint16(h & 0xff)
}

// writeSyntheticS2 writes a Sentinel-2-like COG scene into dir: 2048² px
// 10 m bands B02, B04, B08, 1024² px 20 m bands B05, B11 and SCL (all
// vegetation), 512² tiles and overviews, every tile of a band the same
// texture stored at its own offset. It returns the 10 m grid and, by file
// name, the size of one stored tile.
func writeSyntheticS2(t *testing.T, dir string) (geo.Grid, map[string]int64) {
	t.Helper()
	g10 := geo.Grid{EPSG: 32631, X0: 500000, Y0: 5650000, DX: 10, DY: 10, Cols: 2048, Rows: 2048}
	g20 := geo.Grid{EPSG: 32631, X0: 500000, Y0: 5650000, DX: 20, DY: 20, Cols: 1024, Rows: 1024}
	tiles := map[string]int64{}
	for _, b := range []struct {
		name string
		g    geo.Grid
		px   func(col, row int) uint16
	}{
		{"B02", g10, func(c, r int) uint16 { return 300 + noise(c, r, 2) }},
		{"B04", g10, func(c, r int) uint16 { return 400 + noise(c, r, 4) }},
		{"B08", g10, func(c, r int) uint16 { return 3500 + noise(c, r, 8) }},
		{"B05", g20, func(c, r int) uint16 { return 1200 + noise(c, r, 5) }},
		{"B11", g20, func(c, r int) uint16 { return 1800 + noise(c, r, 11) }},
		{"SCL", g20, func(c, r int) uint16 { return 4 }},
	} {
		var buf bytes.Buffer
		require.NoError(t, geotifftest.WriteRepeatedCOG(&buf, b.g, 512, b.px))
		require.NoError(t, os.WriteFile(filepath.Join(dir, b.name+".tif"), buf.Bytes(), 0o644))
		// One tile's stored size: what a one-pixel window costs after the header.
		c := &geotifftest.CountingReaderAt{R: bytes.NewReader(buf.Bytes())}
		f, err := geotiff.Open(c)
		require.NoError(t, err)
		c.Reset()
		_, err = f.ReadWindow(context.Background(), geo.Window{Cols: 1, Rows: 1})
		require.NoError(t, err)
		tiles[b.name+".tif"] = c.Bytes()
	}
	return g10, tiles
}

// Ingestion reads only the fields' windows: a 30×30 px field inside one
// 512² tile of a 2048² COG scene (16 tiles per 10 m band, plus overviews)
// served over HTTP as a STAC item reads, per band its indices need, the
// header and the one tile under the field; B11 (no index of the field uses
// it) is not fetched at all.
func TestIngestReadsOnlyFieldWindows(t *testing.T) {
	dir := t.TempDir()
	g, tileBytes := writeSyntheticS2(t, dir)

	var mu sync.Mutex
	served := map[string]int64{}
	files := http.FileServer(http.Dir(dir))
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/item.json" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"type":"Feature","stac_version":"1.0.0","id":"synthetic","properties":{"datetime":"2024-06-01T10:00:00Z"},"assets":{`+
				`"blue":{"href":"B02.tif"},"red":{"href":"B04.tif"},"rededge1":{"href":"B05.tif"},"nir":{"href":"B08.tif"},`+
				`"swir16":{"href":"B11.tif"},"scl":{"href":"SCL.tif"}}}`)
			return
		}
		var n atomic.Int64
		files.ServeHTTP(countingWriter{w, &n}, r)
		mu.Lock()
		served[strings.TrimPrefix(r.URL.Path, "/")] += n.Load()
		mu.Unlock()
	}))
	defer ts.Close()

	env := servertest.New(t, server.Config{})
	// Pixels 600..629 of the 10 m grid: 10 m tile (1, 1); 20 m pixels 300..314: tile (0, 0).
	sub := g.Sub(geo.Window{Col: 600, Row: 600, Cols: 30, Rows: 30})
	tr, err := crs.New(g.EPSG, 4326)
	require.NoError(t, err)
	b := sub.Bound()
	var ring orb.Ring
	for _, p := range []orb.Point{b.Min, {b.Max[0], b.Min[1]}, b.Max, {b.Min[0], b.Max[1]}, b.Min} {
		lon, lat := tr.Transform(p[0], p[1])
		ring = append(ring, orb.Point{lon, lat})
	}
	admin, err := env.Archive.UserByName(context.Background(), "admin")
	require.NoError(t, err)
	_, err = env.Archive.Store().InsertField(context.Background(), archive.Field{OwnerID: admin.ID, Name: "small", Indices: []string{"ndvi", "evi", "ndre"}, Geometry: orb.MultiPolygon{{ring}}}, 0)
	require.NoError(t, err)

	res, err := env.Archive.Ingest(context.Background(), ts.URL+"/item.json", archive.IngestOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, res.Fields)
	assert.Equal(t, 3, res.Usable, "%+v", res)
	assert.Zero(t, res.Failed)
	r := do(t, env.Handler, "GET", "/download/ndvi/json?field_name=small", env.AdminToken, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	assert.InDelta(t, 0.746, r.JSON(t)["mean"], 0.005, "B04 ≈ 527.5, B08 ≈ 3627.5")

	// What the headers may cost: the HTTP reader's first request (64 KiB).
	const header = 64 << 10
	var total, read int64
	mu.Lock()
	defer mu.Unlock()
	for name, per := range tileBytes {
		fi, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err)
		total += fi.Size()
		read += served[name]
		t.Logf("%s: read %d of %d bytes (tile %d bytes)", name, served[name], fi.Size(), per)
		if name == "B11.tif" {
			assert.Zero(t, served[name], "B11 is not needed by ndvi, evi or ndre: not even its header is fetched")
			continue
		}
		// The header and the one tile under the field, nothing else.
		assert.GreaterOrEqual(t, served[name], per, "%s: the tile under the field was read", name)
		assert.LessOrEqual(t, served[name], header+per, "%s: more than the header and one tile", name)
	}
	t.Logf("read %d of %d bytes (%.1f %%)", read, total, 100*float64(read)/float64(total))
	assert.Less(t, read, total/10, "more than a tenth of the scene read for a 30×30 px field")
}
