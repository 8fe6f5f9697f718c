package server_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"mime/multipart"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/planar"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/geo/crs"
	"github.com/cropkit/cropkit/imagery"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/server"
	"github.com/cropkit/cropkit/server/servertest"
	"github.com/cropkit/cropkit/zoning"
)

// zoneDates are clear 2019 acquisitions of flanders-31UES ingested for the zone tests.
var zoneDates = []string{"2019-04-21", "2019-05-16", "2019-06-20", "2019-07-05"}

// postForm sends a multipart form to path: values, then every file as a
// "files" part (in name order). token "" sends no Authorization header.
func postForm(t testing.TB, env *servertest.Env, path, token string, values map[string]string, files map[string][]byte) response {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		require.NoError(t, mw.WriteField(k, values[k]))
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		w, err := mw.CreateFormFile("files", n)
		require.NoError(t, err)
		_, err = w.Write(files[n])
		require.NoError(t, err)
	}
	require.NoError(t, mw.Close())
	req := httptest.NewRequest("POST", path, &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	env.Handler.ServeHTTP(rec, req)
	return response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
}

// zoneCollection is the §2.4 collection as the tests read it.
type zoneCollection struct {
	Type string `json:"type"`
	CRS  struct {
		Type       string `json:"type"`
		Properties struct {
			Name string `json:"name"`
		} `json:"properties"`
	} `json:"crs"`
	Features []struct {
		Geometry struct {
			Type        string      `json:"type"`
			Coordinates orb.Polygon `json:"coordinates"`
		} `json:"geometry"`
		Properties struct {
			DOSE       float64 `json:"DOSE"`
			RASTER_VAL float64 `json:"RASTER_VAL"`
			ZONE       int     `json:"ZONE"`
		} `json:"properties"`
	} `json:"features"`
}

func decodeZones(t testing.TB, r response) zoneCollection {
	t.Helper()
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, "application/json", r.Header.Get("Content-Type"))
	var c zoneCollection
	require.NoError(t, json.Unmarshal(r.Body, &c))
	require.Equal(t, "FeatureCollection", c.Type)
	require.Equal(t, "name", c.CRS.Type)
	require.NotEmpty(t, c.Features)
	return c
}

// checkZoneGeometry checks the zone polygons (in a metric CRS) are valid,
// do not overlap and cover wantArea m², and returns the area per zone.
func checkZoneGeometry(t *testing.T, c zoneCollection, wantArea float64) map[int]float64 {
	t.Helper()
	areas := map[int]float64{}
	var sum float64
	var polys [][][][2]float64
	for i, f := range c.Features {
		require.Equal(t, "Polygon", f.Geometry.Type)
		require.NoError(t, geo.ValidatePolygon(f.Geometry.Coordinates), "feature %d", i)
		assert.Greater(t, planar.Area(f.Geometry.Coordinates[0]), 0.0, "outer ring counter-clockwise")
		a := geo.Area(orb.MultiPolygon{f.Geometry.Coordinates})
		areas[f.Properties.ZONE] += a
		sum += a
		var rings [][][2]float64
		for _, r := range f.Geometry.Coordinates {
			var pts [][2]float64
			for _, p := range r {
				pts = append(pts, [2]float64(p))
			}
			rings = append(rings, pts)
		}
		polys = append(polys, rings)
	}
	assert.InDelta(t, wantArea, sum, 0.001*wantArea, "zones tile the field's outline")
	// Independent check with shapely: valid, no overlap, union = sum.
	if exec.Command("/usr/bin/python3", "-c", "import shapely").Run() == nil {
		in, err := json.Marshal(polys)
		require.NoError(t, err)
		cmd := exec.Command("/usr/bin/python3", "-c", `
import json, sys
from shapely.geometry import Polygon
from shapely.ops import unary_union
ps = [Polygon(p[0], p[1:]) for p in json.load(sys.stdin)]
u = unary_union(ps)
print(json.dumps([sum(not p.is_valid for p in ps), sum(p.area for p in ps) - u.area, u.area]))`)
		cmd.Stdin = bytes.NewReader(in)
		out, err := cmd.Output()
		require.NoError(t, err)
		var r [3]float64
		require.NoError(t, json.Unmarshal(out, &r))
		assert.Zero(t, r[0], "shapely: invalid polygons")
		assert.InDelta(t, 0, r[1], 1e-6*wantArea, "shapely: overlap area")
		assert.InDelta(t, wantArea, r[2], 0.001*wantArea, "shapely: union area")
	} else if testenv.InCI() {
		t.Fatal("shapely missing under CI")
	}
	return areas
}

// zoneEnv is a server with UES-03 and UES-01 of flanders-31UES registered
// for ndvi and ndre by "farmer" and zoneDates ingested.
type zoneEnv struct {
	env    *servertest.Env
	tok    string
	fields map[string]geo.Feature
	grid   geo.Grid // of UES-03's products
}

func newZoneEnv(t *testing.T, cfg server.Config) *zoneEnv {
	t.Helper()
	sceneRoot := testenv.DataDir(t, "s2", "flanders-31UES")
	z := &zoneEnv{env: servertest.New(t, cfg), fields: flandersFields(t)}
	z.tok = z.env.AddUser(t, "farmer", nil)
	for _, name := range []string{"UES-03", "UES-01"} {
		r := do(t, z.env.Handler, "POST", "/fields/register", z.tok, map[string]any{
			"field_name": name, "indices": "ndvi,ndre",
			"geometry": map[string]any{"type": "MultiPolygon", "coordinates": z.fields[name].Geometry},
		})
		require.Equal(t, 201, r.Status, "%s", r.Body)
	}
	for _, d := range zoneDates {
		_, err := z.env.Archive.Ingest(context.Background(), filepath.Join(sceneRoot, d), archive.IngestOptions{})
		require.NoError(t, err, d)
	}
	u, err := z.env.Archive.UserByName(context.Background(), "farmer")
	require.NoError(t, err)
	f, err := z.env.Archive.Store().FieldByName(context.Background(), u.ID, "UES-03")
	require.NoError(t, err)
	ps, err := z.env.Archive.Store().Products(context.Background(), archive.ProductQuery{FieldID: f.ID, Index: "ndvi", UsableOnly: true})
	require.NoError(t, err)
	require.Len(t, ps, len(zoneDates))
	z.grid = ps[0].Grid
	return z
}

// pixelArea is the area (m²) of the pixels of grid whose centre is in mp (EPSG:4326).
// pixelArea is the area of outline mp in grid's CRS: zones tile the
// outline exactly (zoning.Run), so their areas add up to it.
func pixelArea(t *testing.T, mp orb.MultiPolygon, grid geo.Grid) float64 {
	t.Helper()
	tr, err := crs.New(4326, grid.EPSG)
	require.NoError(t, err)
	projected, err := geo.Transform(mp, tr)
	require.NoError(t, err)
	return geo.Area(projected)
}

func ndviLayer(date string) string {
	return `[{"type":"crop_health","weight":1,"date":"` + date + `","index":"ndvi"}]`
}

func TestVariableRateZonesReal(t *testing.T) {
	z := newZoneEnv(t, server.Config{})
	field := z.fields["UES-03"].Geometry
	fieldArea := pixelArea(t, field, z.grid)

	// The library on the scene itself, for comparison.
	sc, err := imagery.OpenScene(context.Background(), filepath.Join(testenv.DataDir(t, "s2", "flanders-31UES"), "2019-06-20"), imagery.SceneOptions{})
	require.NoError(t, err)
	lib, err := sc.FieldProducts(context.Background(), field, []string{"ndvi"}, nil)
	sc.Close()
	require.NoError(t, err)
	require.Equal(t, z.grid, lib[0].Grid)

	for k := 3; k <= 6; k++ {
		vals := map[string]string{"field_name": "UES-03", "n_zones": itoa(k), "layers": ndviLayer("2019-06-20"), "dst_crs": "32631"}
		r := postForm(t, z.env, "/v1/variable-rate-zones", z.tok, vals, nil)
		c := decodeZones(t, r)
		// The server composes the library: the same zones as the library on
		// the scene (stored values are rounded to 6 decimals).
		want, err := zoning.Run(context.Background(), zoning.Request{Grid: lib[0].Grid, Outline: field,
			Layers:       []zoning.Layer{{Name: "ndvi", Type: zoning.CropHealth, Values: lib[0].Values, Weight: 1}},
			Options:      zoning.Options{Zones: k, Seed: 1},
			Prescription: zoning.Prescription{Type: zoning.NFertilizer}, DstEPSG: 32631})
		require.NoError(t, err)
		require.Len(t, c.Features, len(want.Features), "k=%d", k)
		for i, wf := range want.Features {
			gf := c.Features[i]
			assert.Equal(t, wf.Zone, gf.Properties.ZONE)
			assert.InDelta(t, wf.RasterVal, gf.Properties.RASTER_VAL, 1e-6)
			assert.InDelta(t, wf.Dose, gf.Properties.DOSE, 1e-3)
			assert.InDelta(t, geo.Area(orb.MultiPolygon{wf.Polygon}), geo.Area(orb.MultiPolygon{gf.Geometry.Coordinates}), 1e-3)
		}
		assert.Equal(t, "urn:ogc:def:crs:EPSG::32631", c.CRS.Properties.Name)
		assert.Contains(t, r.Header.Get("Content-Disposition"), "UES-03_zones.geojson")
		areas := checkZoneGeometry(t, c, fieldArea)
		// Zones 1..n by ascending RASTER_VAL, one RASTER_VAL per zone.
		rv := map[int]float64{}
		for _, f := range c.Features {
			if v, ok := rv[f.Properties.ZONE]; ok {
				assert.Equal(t, v, f.Properties.RASTER_VAL)
			}
			rv[f.Properties.ZONE] = f.Properties.RASTER_VAL
		}
		assert.GreaterOrEqual(t, len(rv), 2, "k=%d", k)
		assert.LessOrEqual(t, len(rv), k)
		for id := 2; id <= len(rv); id++ {
			assert.Greater(t, rv[id], rv[id-1], "k=%d zone %d", k, id)
		}
		// n_fertilizer doses by default: area-weighted mean 120 kg/ha.
		var dose, area float64
		for _, f := range c.Features {
			a := geo.Area(orb.MultiPolygon{f.Geometry.Coordinates})
			dose += a * f.Properties.DOSE
			area += a
		}
		assert.InDelta(t, 120, dose/area, 0.01, "k=%d", k)
		assert.Len(t, areas, len(rv))
		// Reproducible: the same request answers the same bytes.
		again := postForm(t, z.env, "/v1/variable-rate-zones", z.tok, vals, nil)
		assert.Equal(t, r.Body, again.Body, "k=%d reproducible", k)
	}

	t.Run("token in the form", func(t *testing.T) {
		r := postForm(t, z.env, "/v1/variable-rate-zones", "", map[string]string{
			"token": z.tok, "field_name": "UES-03", "n_zones": "3", "layers": ndviLayer("2019-06-20")}, nil)
		c := decodeZones(t, r)
		assert.Equal(t, "urn:ogc:def:crs:EPSG::4326", c.CRS.Properties.Name)
		lon, lat := c.Features[0].Geometry.Coordinates[0][0][0], c.Features[0].Geometry.Coordinates[0][0][1]
		assert.InDelta(t, 4.06, lon, 0.02)
		assert.InDelta(t, 50.745, lat, 0.02)
	})

	t.Run("dst_crs 3857", func(t *testing.T) {
		r := postForm(t, z.env, "/v1/variable-rate-zones", z.tok, map[string]string{
			"field_name": "UES-03", "n_zones": "4", "layers": ndviLayer("2019-06-20"), "dst_crs": "EPSG:3857"}, nil)
		c := decodeZones(t, r)
		assert.Equal(t, "urn:ogc:def:crs:EPSG::3857", c.CRS.Properties.Name)
		tr, err := crs.New(3857, 4326)
		require.NoError(t, err)
		lon, lat := tr.Transform(c.Features[0].Geometry.Coordinates[0][0][0], c.Features[0].Geometry.Coordinates[0][0][1])
		assert.InDelta(t, 4.06, lon, 0.02)
		assert.InDelta(t, 50.745, lat, 0.02)
	})

	t.Run("date range and two layers", func(t *testing.T) {
		layers := `[{"type":"crop_health","weight":1,"start_date":"2019-04-01","end_date":"2019-07-31","index":"ndvi"},
			{"type":"crop_health","weight":1,"date":"2019-06-20","index":"ndre"}]`
		r := postForm(t, z.env, "/v1/variable-rate-zones", z.tok, map[string]string{
			"field_name": "UES-03", "n_zones": "4", "layers": layers, "dst_crs": "32631"}, nil)
		c := decodeZones(t, r)
		checkZoneGeometry(t, c, fieldArea)
		single := decodeZones(t, postForm(t, z.env, "/v1/variable-rate-zones", z.tok, map[string]string{
			"field_name": "UES-03", "n_zones": "4", "layers": ndviLayer("2019-06-20"), "dst_crs": "32631"}, nil))
		assert.NotEqual(t, single.Features[0].Properties.RASTER_VAL, c.Features[0].Properties.RASTER_VAL,
			"the seasonal mean differs from one date")
	})

	t.Run("parcel inside the field", func(t *testing.T) {
		parcel := innerParcel(t, field, z.grid, 10)
		parcelJSON, err := json.Marshal(map[string]any{"type": "Feature", "properties": map[string]any{},
			"geometry": map[string]any{"type": "Polygon", "coordinates": parcel}})
		require.NoError(t, err)
		r := postForm(t, z.env, "/v1/variable-rate-zones", z.tok, map[string]string{
			"field_name": "UES-03", "n_zones": "3", "layers": ndviLayer("2019-06-20"), "dst_crs": "32631",
			"parcel_geojson": string(parcelJSON)}, nil)
		c := decodeZones(t, r)
		want := pixelArea(t, orb.MultiPolygon{parcel}, z.grid)
		assert.InDelta(t, 10000, want, 500, "a parcel of about 10×10 pixels")
		checkZoneGeometry(t, c, want)
	})

	t.Run("shapefile and isoxml", func(t *testing.T) {
		vals := map[string]string{"field_name": "UES-03", "n_zones": "4", "layers": ndviLayer("2019-06-20"), "format": "shapefile"}
		r := postForm(t, z.env, "/v1/variable-rate-zones", z.tok, vals, nil)
		require.Equal(t, 200, r.Status, "%s", r.Body)
		assert.Equal(t, "application/zip", r.Header.Get("Content-Type"))
		assert.Contains(t, r.Header.Get("Content-Disposition"), "UES-03_zones.zip")
		names := zipNames(t, r.Body)
		for _, ext := range []string{".shp", ".shx", ".dbf", ".prj"} {
			assert.Contains(t, names, "UES-03"+ext)
		}
		if ogr, err := exec.LookPath("ogrinfo"); err == nil || testenv.InCI() {
			if err != nil {
				ogr = testenv.RequireTool(t, "ogrinfo")
			}
			path := filepath.Join(t.TempDir(), "zones.zip")
			require.NoError(t, os.WriteFile(path, r.Body, 0o600))
			out, err := exec.Command(ogr, "-al", "-so", "/vsizip/"+path).CombinedOutput()
			require.NoError(t, err, "%s", out)
			assert.Contains(t, string(out), "Geometry: Polygon")
			assert.Contains(t, string(out), "RATE: Real")
			assert.Contains(t, string(out), "ZONE: Integer")
			assert.Contains(t, string(out), "WGS 84")
		}

		vals["format"] = "isoxml"
		r = postForm(t, z.env, "/v1/variable-rate-zones", z.tok, vals, nil)
		require.Equal(t, 200, r.Status, "%s", r.Body)
		assert.Equal(t, []string{"TASKDATA/TASKDATA.XML"}, zipNames(t, r.Body))
		xmlText := string(zipFile(t, r.Body, "TASKDATA/TASKDATA.XML"))
		assert.Contains(t, xmlText, `<PDV A="0006"`)
		assert.Contains(t, xmlText, `PFD`)
		assert.GreaterOrEqual(t, strings.Count(xmlText, "<TZN "), 4)
	})
}

func itoa(i int) string { return strconv.Itoa(i) }

// innerParcel is an n×n block of field pixels (all inside the field) as a
// lon/lat polygon shrunk by 1 m, so it lies strictly inside the field.
func innerParcel(t *testing.T, field orb.MultiPolygon, grid geo.Grid, n int) orb.Polygon {
	t.Helper()
	mask, err := zoning.FieldMask(field, grid)
	require.NoError(t, err)
	toLL, err := crs.New(grid.EPSG, 4326)
	require.NoError(t, err)
	for row := 0; row+n <= grid.Rows; row++ {
	cols:
		for col := 0; col+n <= grid.Cols; col++ {
			for r := row - 1; r <= row+n; r++ {
				for c := col - 1; c <= col+n; c++ {
					if r < 0 || c < 0 || r >= grid.Rows || c >= grid.Cols || !mask[r*grid.Cols+c] {
						continue cols
					}
				}
			}
			x0, y1 := grid.X0+float64(col)*grid.DX+1, grid.Y0-float64(row)*grid.DY-1
			x1, y0 := grid.X0+float64(col+n)*grid.DX-1, grid.Y0-float64(row+n)*grid.DY+1
			ring := orb.Ring{{x0, y0}, {x1, y0}, {x1, y1}, {x0, y1}, {x0, y0}}
			mp, err := geo.Transform(orb.MultiPolygon{{ring}}, toLL)
			require.NoError(t, err)
			return mp[0]
		}
	}
	t.Fatalf("no %d×%d block of pixels inside the field", n, n)
	return nil
}

func zipNames(t testing.TB, data []byte) []string {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
	var out []string
	for _, f := range zr.File {
		out = append(out, f.Name)
	}
	return out
}

func zipFile(t testing.TB, data []byte, name string) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
	rc, err := zr.Open(name)
	require.NoError(t, err)
	defer rc.Close()
	var b bytes.Buffer
	_, err = b.ReadFrom(rc)
	require.NoError(t, err)
	return b.Bytes()
}

func TestPrescriptionZonesReal(t *testing.T) {
	z := newZoneEnv(t, server.Config{})
	fieldArea := pixelArea(t, z.fields["UES-03"].Geometry, z.grid)
	get := func(kv ...string) response {
		v := url.Values{"field_name": {"UES-03"}, "index": {"ndvi"}, "n_zones": {"4"}, "dst_crs": {"32631"}}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return do(t, z.env.Handler, "POST", "/prescription_maps/get_zones?"+v.Encode(), z.tok, nil)
	}
	meanDose := func(c zoneCollection) (float64, map[int]float64) {
		var dose, area float64
		byZone := map[int]float64{}
		for _, f := range c.Features {
			a := geo.Area(orb.MultiPolygon{f.Geometry.Coordinates})
			dose += a * f.Properties.DOSE
			area += a
			byZone[f.Properties.ZONE] = f.Properties.DOSE
		}
		return dose / area, byZone
	}
	tests := []struct {
		name     string
		kv       []string
		date     string // X-Image-Date
		base     float64
		lowFirst bool // zone 1 (lowest vigour) gets the highest dose
	}{
		{"n_fertilizer latest", []string{"type", "n_fertilizer"}, "2019-07-05", 120, true},
		{"n_fertilizer on a date", []string{"type", "n_fertilizer", "date", "2019-06-20"}, "2019-06-20", 120, true},
		{"n_fertilizer closest date", []string{"type", "n_fertilizer", "date", "2019-06-24"}, "2019-06-20", 120, true},
		{"n_fertilizer base rate", []string{"type", "n_fertilizer", "base_rate", "90", "min_rate", "50", "max_rate", "130"}, "2019-07-05", 90, true},
		{"n_fertilizer proportional", []string{"type", "n_fertilizer", "strategy", "proportional"}, "2019-07-05", 120, false},
		{"seeding", []string{"type", "seeding"}, "2019-04-21/2019-07-05", 80000, false},
		{"seeding base rate", []string{"type", "seeding", "base_rate", "70000"}, "2019-04-21/2019-07-05", 70000, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := get(tc.kv...)
			c := decodeZones(t, r)
			assert.Equal(t, tc.date, r.Header.Get("X-Image-Date"))
			checkZoneGeometry(t, c, fieldArea)
			mean, byZone := meanDose(c)
			assert.InDelta(t, tc.base, mean, 1e-6*tc.base, "area-weighted mean dose = base_rate")
			n := len(byZone)
			require.GreaterOrEqual(t, n, 2)
			if tc.lowFirst {
				assert.Greater(t, byZone[1], byZone[n])
			} else {
				assert.Less(t, byZone[1], byZone[n])
			}
		})
	}
	t.Run("isoxml seeding", func(t *testing.T) {
		r := get("type", "seeding", "format", "isoxml")
		require.Equal(t, 200, r.Status, "%s", r.Body)
		assert.Equal(t, "application/zip", r.Header.Get("Content-Type"))
		res := isoxmlCheck(t, r.Body)
		tasks := res["tasks"].([]any)
		require.Len(t, tasks, 1)
		zones := tasks[0].(map[string]any)["zones"].([]any)
		require.GreaterOrEqual(t, len(zones), 3, "zone 0 (outside) and the zones")
		for i, zn := range zones {
			zm := zn.(map[string]any)
			assert.Equal(t, float64(i), zm["code"])
			pdv := zm["pdv"].([]any)
			require.Len(t, pdv, 1)
			assert.Equal(t, "000B", pdv[0].(map[string]any)["ddi"])
			v := pdv[0].(map[string]any)["value"].(float64)
			if i == 0 {
				assert.Zero(t, v)
			} else {
				assert.InDelta(t, 8000, v, 2000, "seeds/ha ÷ 10 in the DDI's 0.001/m²")
			}
		}
	})
	t.Run("shapefile n_fertilizer", func(t *testing.T) {
		r := get("type", "n_fertilizer", "format", "shapefile")
		require.Equal(t, 200, r.Status, "%s", r.Body)
		assert.Contains(t, r.Header.Get("Content-Disposition"), "UES-03_n_fertilizer_ndvi_20190705.zip")
		assert.Len(t, zipNames(t, r.Body), 4)
	})
	// Seeding follows the field's season: with a season holding one image,
	// its zones are the n_fertilizer zones of that date.
	r := do(t, z.env.Handler, "POST", "/fields/metadata/register", z.tok, map[string]any{
		"field_name": "UES-03", "start_date": "2019-05-01", "harvest_date": "2019-05-31"})
	require.Equal(t, 201, r.Status, "%s", r.Body)
	// A season registered ahead (no image yet) is not the seeding season.
	r = do(t, z.env.Handler, "POST", "/fields/metadata/register", z.tok, map[string]any{
		"field_name": "UES-03", "start_date": "2019-09-01", "crop_type": "mustard", "is_cover_crop": true})
	require.Equal(t, 201, r.Status, "%s", r.Body)
	seed := decodeZones(t, get("type", "seeding"))
	fert := decodeZones(t, get("type", "n_fertilizer", "date", "2019-05-16"))
	require.Equal(t, len(fert.Features), len(seed.Features))
	for i := range seed.Features {
		assert.Equal(t, fert.Features[i].Properties.RASTER_VAL, seed.Features[i].Properties.RASTER_VAL)
		assert.Equal(t, fert.Features[i].Geometry.Coordinates, seed.Features[i].Geometry.Coordinates)
	}

}

// isoxmlCheck parses an ISOXML zip with the independent isoxml npm package.
func isoxmlCheck(t *testing.T, zipData []byte) map[string]any {
	t.Helper()
	res := testenv.ISOXMLCheck(t, zipData)
	assert.Empty(t, res["warnings"], "isoxml warnings")
	return res
}

// raba reads the real slovenia-raba-lulc shapefile set by file name.
func raba(t testing.TB) map[string][]byte {
	t.Helper()
	dir := testenv.DataDir(t, "shapefiles", "slovenia-raba-lulc")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	out := map[string][]byte{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		out[e.Name()] = data
	}
	return out
}

// sloveniaBlock is a 600 m × 500 m block of the Slovenian scene spanning
// forest, meadows and fields (several RABA land uses), as a GeoJSON Polygon.
func sloveniaBlock(t *testing.T) orb.Polygon {
	t.Helper()
	tr, err := crs.New(32633, 4326)
	require.NoError(t, err)
	x0, y0 := 465181.05+200, 5080254.63-250
	ring := orb.Ring{{x0, y0 - 500}, {x0 + 600, y0 - 500}, {x0 + 600, y0}, {x0, y0}, {x0, y0 - 500}}
	mp, err := geo.Transform(orb.MultiPolygon{{ring}}, tr)
	require.NoError(t, err)
	return mp[0]
}

func TestVariableRateZonesCustomLayer(t *testing.T) {
	scene := testenv.DataDir(t, "s2", "slovenia-eolearn", "2015-07-11")
	files := raba(t)
	env := servertest.New(t, server.Config{})
	tok := env.AddUser(t, "farmer", nil)
	r := do(t, env.Handler, "POST", "/fields/register", tok, map[string]any{
		"field_name": "block", "indices": "ndvi", "geometry": map[string]any{"type": "Polygon", "coordinates": sloveniaBlock(t)}})
	require.Equal(t, 201, r.Status, "%s", r.Body)
	_, err := env.Archive.Ingest(context.Background(), scene, archive.IngestOptions{})
	require.NoError(t, err)

	layers := func(w int) string {
		return `[{"type":"crop_health","weight":1,"date":"2015-07-11","index":"ndvi"},
			{"type":"custom","weight":` + itoa(w) + `,"filename":"slovenia_raba_lulc.shp","attribute":"RABA_ID"}]`
	}
	zones := func(layers string, files map[string][]byte) response {
		r := postForm(t, env, "/v1/variable-rate-zones", tok, map[string]string{
			"field_name": "block", "n_zones": "4", "layers": layers, "dst_crs": "32633"}, files)
		require.Equal(t, 200, r.Status, "%s", r.Body)
		return r
	}
	only := zones(ndviLayerSI, nil)
	w1 := zones(layers(1), files)
	w10 := zones(layers(10), files)
	assert.NotEqual(t, only.Body, w1.Body, "the custom layer changes the zones")
	assert.NotEqual(t, w1.Body, w10.Body, "raising its weight changes the zones")
	grid := sloveniaGrid(t, env)
	area := pixelArea(t, orb.MultiPolygon{sloveniaBlock(t)}, grid)
	for _, r := range []response{only, w1, w10} {
		checkZoneGeometry(t, decodeZones(t, r), area)
	}
	assert.Less(t, overlapShare(t, decodeZones(t, only), decodeZones(t, w10)), overlapShare(t, decodeZones(t, only), decodeZones(t, w1)),
		"the heavier the land-use layer, the further from NDVI-only zones")
	before := snapshot(t, env)
	assert.NotContains(t, before, "uploads", "§4.1 does not store the request's files")

	// The same shapefile uploaded first, then used by name.
	up := postForm(t, env, "/files/upload", tok, map[string]string{"field_name": "block"}, files)
	require.Equal(t, 201, up.Status, "%s", up.Body)
	var ul struct {
		FieldName string `json:"field_name"`
		Uploads   []struct {
			Filename   string   `json:"filename"`
			Files      []string `json:"files"`
			Records    int      `json:"records"`
			Attributes []string `json:"attributes"`
			EPSG       int      `json:"epsg"`
		} `json:"uploads"`
	}
	require.NoError(t, json.Unmarshal(up.Body, &ul))
	require.Len(t, ul.Uploads, 1)
	assert.Equal(t, "slovenia_raba_lulc.shp", ul.Uploads[0].Filename)
	assert.Len(t, ul.Uploads[0].Files, 5)
	assert.Contains(t, ul.Uploads[0].Attributes, "RABA_ID")
	assert.Greater(t, ul.Uploads[0].Records, 10)
	assert.Equal(t, 32633, ul.Uploads[0].EPSG)
	stored := zones(layers(10), nil)
	assert.Equal(t, w10.Body, stored.Body, "uploaded files give the same zones")
	// Request files win over stored ones of the same name; partial request
	// sets are completed from the upload.
	partial := map[string][]byte{"slovenia_raba_lulc.dbf": files["slovenia_raba_lulc.dbf"]}
	assert.Equal(t, w10.Body, zones(layers(10), partial).Body)

	r = do(t, env.Handler, "GET", "/files/uploads?field_name=block", tok, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.NoError(t, json.Unmarshal(r.Body, &ul))
	require.Len(t, ul.Uploads, 1)
	assert.Equal(t, "slovenia_raba_lulc.shp", ul.Uploads[0].Filename)

	// Deleting the field deletes its uploads.
	r = do(t, env.Handler, "POST", "/fields/delete?field_name=block", tok, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	_, err = os.Stat(filepath.Join(env.Dir, "uploads", "1"))
	assert.True(t, os.IsNotExist(err), "uploads removed with the field")
	assert.Empty(t, env.BlobKeys(t, "uploads/1"), "uploads removed with the field")
}

const ndviLayerSI = `[{"type":"crop_health","weight":1,"date":"2015-07-11","index":"ndvi"}]`

func sloveniaGrid(t *testing.T, env *servertest.Env) geo.Grid {
	t.Helper()
	ps, err := env.Archive.Store().Products(context.Background(), archive.ProductQuery{FieldID: 1, Index: "ndvi", UsableOnly: true})
	require.NoError(t, err)
	require.NotEmpty(t, ps)
	return ps[0].Grid
}

// overlapShare is the share of a's area where b has the same zone number.
func overlapShare(t *testing.T, a, b zoneCollection) float64 {
	t.Helper()
	var same, all float64
	for _, fa := range a.Features {
		pa := fa.Geometry.Coordinates
		all += geo.Area(orb.MultiPolygon{pa})
		for _, fb := range b.Features {
			if fb.Properties.ZONE != fa.Properties.ZONE || !fb.Geometry.Coordinates.Bound().Intersects(pa.Bound()) {
				continue
			}
			same += sampledIntersection(pa, fb.Geometry.Coordinates)
		}
	}
	return same / all
}

// sampledIntersection estimates the intersection area of two pixel-edge
// polygons by testing the centres of a 5 m lattice over a's bound.
func sampledIntersection(a, b orb.Polygon) float64 {
	bd := a.Bound()
	n := 0
	for x := bd.Min[0] + 2.5; x < bd.Max[0]; x += 5 {
		for y := bd.Min[1] + 2.5; y < bd.Max[1]; y += 5 {
			p := orb.Point{x, y}
			if planar.PolygonContains(a, p) && planar.PolygonContains(b, p) {
				n++
			}
		}
	}
	return float64(n) * 25
}

func TestConvertGeoJSONToShapefile(t *testing.T) {
	env := servertest.New(t, server.Config{})
	tok := env.AddUser(t, "farmer", nil)
	fc := `{"type":"FeatureCollection","features":[
		{"type":"Feature","properties":{"ZONE":1,"DOSE":100,"RASTER_VAL":0.4},"geometry":{"type":"Polygon","coordinates":[[[4.06,50.74],[4.061,50.74],[4.061,50.741],[4.06,50.741],[4.06,50.74]]]}},
		{"type":"Feature","properties":{"ZONE":2,"DOSE":140,"RASTER_VAL":0.7},"geometry":{"type":"Polygon","coordinates":[[[4.061,50.74],[4.062,50.74],[4.062,50.741],[4.061,50.741],[4.061,50.74]]]}}]}`
	r := do(t, env.Handler, "POST", "/convert/geojson-to-shapefile", tok, fc)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	assert.Equal(t, "application/zip", r.Header.Get("Content-Type"))
	assert.Len(t, zipNames(t, r.Body), 4)

	// As a multipart part "file", with the token in the query.
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	w, err := mw.CreateFormFile("file", "zones.geojson")
	require.NoError(t, err)
	w.Write([]byte(fc))
	require.NoError(t, mw.Close())
	req := httptest.NewRequest("POST", "/convert/geojson-to-shapefile?token="+url.QueryEscape(tok), &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	rec := httptest.NewRecorder()
	env.Handler.ServeHTTP(rec, req)
	require.Equal(t, 200, rec.Code, rec.Body.String())
	// The same files (the zips' modification times are the request's clock).
	names := zipNames(t, r.Body)
	require.Equal(t, names, zipNames(t, rec.Body.Bytes()))
	for _, name := range names {
		assert.Equal(t, zipFile(t, r.Body, name), zipFile(t, rec.Body.Bytes(), name), name)
	}

	if ogr, err := exec.LookPath("ogrinfo"); err == nil {
		path := filepath.Join(t.TempDir(), "zones.zip")
		require.NoError(t, os.WriteFile(path, r.Body, 0o600))
		out, err := exec.Command(ogr, "-al", "/vsizip/"+path).CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Contains(t, string(out), "Feature Count: 2")
		assert.Contains(t, string(out), "RATE (Real) = 140")
	}
	for _, bad := range []string{"", `{"type":"Point","coordinates":[4,50]}`, `{"type":"FeatureCollection","features":[{"geometry":{"type":"Polygon","coordinates":[[[0,0],[1,0],[0,0]]]}}]}`} {
		r := do(t, env.Handler, "POST", "/convert/geojson-to-shapefile", tok, bad)
		assert.Equal(t, 400, r.Status, "%q: %s", bad, r.Body)
	}
	r = do(t, env.Handler, "POST", "/convert/geojson-to-shapefile", "", fc)
	assert.Equal(t, 403, r.Status)
}

func TestZonesNegative(t *testing.T) {
	z := newZoneEnv(t, server.Config{})
	env, h, tok := z.env, z.env.Handler, z.tok
	rabaFiles := raba(t)
	bob := env.AddUser(t, "bob", []string{"ndvi"})
	r := do(t, h, "POST", "/fields/register", bob, map[string]any{"field_name": "b1",
		"geometry": map[string]any{"type": "MultiPolygon", "coordinates": z.fields["UES-07"].Geometry}})
	require.Equal(t, 201, r.Status, "%s", r.Body)
	// A field without imagery (registered after ingestion), and one only for ndvi.
	r = do(t, h, "POST", "/fields/register", tok, map[string]any{"field_name": "empty", "indices": "ndvi",
		"geometry": map[string]any{"type": "MultiPolygon", "coordinates": z.fields["UES-14"].Geometry}})
	require.Equal(t, 201, r.Status, "%s", r.Body)
	// A stored upload, so failing uploads are checked not to replace it.
	r = postForm(t, env, "/files/upload", tok, map[string]string{"field_name": "UES-01"}, rabaFiles)
	require.Equal(t, 201, r.Status, "%s", r.Body)

	field := z.fields["UES-03"].Geometry
	inner := innerParcel(t, field, z.grid, 6)
	parcel := func(p any) string {
		b, err := json.Marshal(p)
		require.NoError(t, err)
		return string(b)
	}
	c := inner[0][0]
	bowtie := map[string]any{"type": "Polygon", "coordinates": [][][2]float64{{{c[0], c[1]}, {c[0] + 0.0005, c[1] + 0.0003}, {c[0] + 0.0005, c[1]}, {c[0], c[1] + 0.0003}, {c[0], c[1]}}}}
	open := map[string]any{"type": "Polygon", "coordinates": [][][2]float64{{{c[0], c[1]}, {c[0] + 0.0003, c[1]}, {c[0] + 0.0003, c[1] + 0.0003}, {c[0], c[1] + 0.0003}}}}
	three := map[string]any{"type": "Polygon", "coordinates": [][][2]float64{{{c[0], c[1]}, {c[0] + 0.0003, c[1]}, {c[0], c[1]}}}}
	outside := polygonJSON(3.0, 50.0, 3.001, 50.001)
	overlapping := polygonJSON(4.0, 50.7, 4.2, 50.8) // covers the field and beyond
	corrupt := map[string][]byte{}
	for k, v := range rabaFiles {
		corrupt[k] = v
	}
	shp := bytes.Clone(rabaFiles["slovenia_raba_lulc.shp"])
	for i := 100; i < len(shp); i += 7 {
		shp[i] = 0xff
	}
	corrupt["slovenia_raba_lulc.shp"] = shp
	onlyShp := map[string][]byte{"slovenia_raba_lulc.shp": rabaFiles["slovenia_raba_lulc.shp"]}
	// Without its .prj the RABA file's UTM metres must not pass for degrees.
	noPRJ := map[string][]byte{}
	for name, data := range rabaFiles {
		if !strings.HasSuffix(name, ".prj") {
			noPRJ[name] = data
		}
	}

	ndvi := ndviLayer("2019-06-20")
	custom := func(file, attr string) string {
		return `[{"type":"crop_health","weight":1,"date":"2019-06-20","index":"ndvi"},{"type":"custom","weight":1,"filename":"` + file + `","attribute":"` + attr + `"}]`
	}
	vrz := func(kv ...string) map[string]string {
		m := map[string]string{"field_name": "UES-03", "n_zones": "3", "layers": ndvi}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == "-" {
				delete(m, kv[i])
			} else {
				m[kv[i]] = kv[i+1]
			}
		}
		return m
	}
	type formCase struct {
		name     string
		path     string
		token    string
		values   map[string]string
		files    map[string][]byte
		status   int
		code     string
		contains string
	}
	const V = "/v1/variable-rate-zones"
	const U = "/files/upload"
	forms := []formCase{
		{"no token", V, "", vrz(), nil, 403, "unauthorized", "token"},
		{"missing field_name", V, tok, vrz("field_name", "-"), nil, 400, "bad_request", "field_name"},
		{"missing n_zones", V, tok, vrz("n_zones", "-"), nil, 400, "bad_request", "n_zones"},
		{"missing layers", V, tok, vrz("layers", "-"), nil, 400, "bad_request", "layers"},
		{"n_zones 0", V, tok, vrz("n_zones", "0"), nil, 400, "bad_request", "n_zones"},
		{"n_zones too many", V, tok, vrz("n_zones", "101"), nil, 400, "bad_request", "n_zones"},
		{"n_zones not a number", V, tok, vrz("n_zones", "three"), nil, 400, "bad_request", "n_zones"},
		{"layers malformed", V, tok, vrz("layers", `[{"type":`), nil, 400, "bad_request", "layers"},
		{"layers not an array", V, tok, vrz("layers", `{"type":"crop_health"}`), nil, 400, "bad_request", "layers"},
		{"layer without date", V, tok, vrz("layers", `[{"type":"crop_health","weight":1,"index":"ndvi"}]`), nil, 400, "bad_request", "date"},
		{"no crop_health layer", V, tok, vrz("layers", `[{"type":"custom","weight":1,"filename":"slovenia_raba_lulc.shp","attribute":"RABA_ID"}]`), rabaFiles, 400, "bad_request", "crop_health"},
		{"unknown index", V, tok, vrz("layers", ndviLayerIndex("nope")), nil, 400, "bad_request", "nope"},
		{"forbidden index", V, bob, vrz("field_name", "b1", "layers", ndviLayerIndex("ndre")), nil, 403, "forbidden", "ndre"},
		{"index not registered", V, tok, vrz("layers", ndviLayerIndex("evi")), nil, 400, "bad_request", "evi"},
		{"parcel self-intersecting", V, tok, vrz("parcel_geojson", parcel(bowtie)), nil, 400, "invalid_geometry", "intersect"},
		{"parcel not closed", V, tok, vrz("parcel_geojson", parcel(open)), nil, 400, "invalid_geometry", "closed"},
		{"parcel 3 points", V, tok, vrz("parcel_geojson", parcel(three)), nil, 400, "invalid_geometry", "4"},
		{"parcel outside the field", V, tok, vrz("parcel_geojson", parcel(outside)), nil, 400, "invalid_geometry", "inside"},
		{"parcel larger than the field", V, tok, vrz("parcel_geojson", parcel(overlapping)), nil, 400, "invalid_geometry", "inside"},
		{"parcel not JSON", V, tok, vrz("parcel_geojson", "{nope"), nil, 400, "invalid_geometry", ""},
		{"parcel a point", V, tok, vrz("parcel_geojson", `{"type":"Point","coordinates":[4.06,50.74]}`), nil, 400, "invalid_geometry", ""},
		{"unsupported dst_crs", V, tok, vrz("dst_crs", "8857"), nil, 400, "bad_request", "8857"},
		{"malformed dst_crs", V, tok, vrz("dst_crs", "lambert"), nil, 400, "bad_request", "dst_crs"},
		{"unknown format", V, tok, vrz("format", "kml"), nil, 400, "bad_request", "kml"},
		{"custom layer file missing", V, tok, vrz("layers", custom("soil.shp", "clay")), nil, 400, "bad_request", "soil.shp"},
		{"custom layer unknown attribute", V, tok, vrz("layers", custom("slovenia_raba_lulc.shp", "CLAY")), rabaFiles, 400, "bad_request", "CLAY"},
		{"custom layer outside the field", V, tok, vrz("layers", custom("slovenia_raba_lulc.shp", "RABA_ID")), rabaFiles, 400, "bad_request", ""},
		{"custom layer corrupt shapefile", V, tok, vrz("layers", custom("slovenia_raba_lulc.shp", "RABA_ID")), corrupt, 400, "bad_request", "shapefile"},
		{"custom layer without .dbf", V, tok, vrz("layers", custom("slovenia_raba_lulc.shp", "RABA_ID")), onlyShp, 400, "bad_request", ".dbf"},
		{"unknown field", V, tok, vrz("field_name", "zz"), nil, 404, "not_found", "zz"},
		{"another user's field", V, bob, vrz(), nil, 404, "not_found", "UES-03"},
		{"no imagery", V, tok, vrz("field_name", "empty"), nil, 404, "no_imagery", "empty"},
		{"no imagery in the range", V, tok, vrz("layers", `[{"type":"crop_health","weight":1,"start_date":"2018-01-01","end_date":"2018-12-31","index":"ndvi"}]`), nil, 404, "no_imagery", "2018-01-01"},
		{"bad prescription", V, tok, vrz("min_rate", "500"), nil, 400, "bad_request", "min_rate"},
		{"upload unknown field", U, tok, map[string]string{"field_name": "zz"}, rabaFiles, 404, "not_found", "zz"},
		{"upload another user's field", U, bob, map[string]string{"field_name": "UES-03"}, rabaFiles, 404, "not_found", ""},
		{"upload missing field_name", U, tok, map[string]string{}, rabaFiles, 400, "bad_request", "field_name"},
		{"upload no files", U, tok, map[string]string{"field_name": "UES-01"}, nil, 400, "bad_request", "files"},
		{"upload corrupt", U, tok, map[string]string{"field_name": "UES-01"}, corrupt, 400, "bad_request", "shapefile"},
		{"upload not a shapefile", U, tok, map[string]string{"field_name": "UES-01"}, map[string][]byte{"notes.txt": []byte("x")}, 400, "bad_request", "notes.txt"},
		{"upload without .dbf", U, tok, map[string]string{"field_name": "UES-01"}, onlyShp, 400, "bad_request", ".dbf"},
		{"upload metres without .prj", U, tok, map[string]string{"field_name": "UES-01"}, noPRJ, 400, "bad_request", "no .prj and shape 1 spans x 4"},
		{"upload bad file name", U, tok, map[string]string{"field_name": "UES-01"}, map[string][]byte{"a;b.shp": []byte("x")}, 400, "bad_request", "a;b.shp"},
	}
	const P = "/prescription_maps/get_zones?"
	rx := func(kv ...string) string {
		v := url.Values{"field_name": {"UES-03"}, "type": {"n_fertilizer"}, "n_zones": {"3"}, "index": {"ndvi"}}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == "-" {
				v.Del(kv[i])
			} else {
				v.Set(kv[i], kv[i+1])
			}
		}
		return P + v.Encode()
	}
	type getCase struct {
		name     string
		method   string
		path     string
		token    string
		body     any
		status   int
		code     string
		contains string
	}
	gets := []getCase{
		{"rx no token", "POST", rx(), "", nil, 403, "unauthorized", ""},
		{"rx missing field_name", "POST", rx("field_name", "-"), tok, nil, 400, "bad_request", "field_name"},
		{"rx missing type", "POST", rx("type", "-"), tok, nil, 400, "bad_request", "type"},
		{"rx bad type", "POST", rx("type", "herbicide"), tok, nil, 400, "bad_request", "herbicide"},
		{"rx missing n_zones", "POST", rx("n_zones", "-"), tok, nil, 400, "bad_request", "n_zones"},
		{"rx n_zones 0", "GET", rx("n_zones", "0"), tok, nil, 400, "bad_request", "n_zones"},
		{"rx n_zones too many", "POST", rx("n_zones", "1000"), tok, nil, 400, "bad_request", "n_zones"},
		{"rx missing index", "POST", rx("index", "-"), tok, nil, 400, "bad_request", "index"},
		{"rx unknown index", "POST", rx("index", "nope"), tok, nil, 400, "bad_request", "nope"},
		{"rx forbidden index", "POST", rx("field_name", "b1", "index", "ndre"), bob, nil, 403, "forbidden", "ndre"},
		{"rx index not registered", "POST", rx("index", "evi"), tok, nil, 400, "bad_request", "evi"},
		{"rx date for seeding", "POST", rx("type", "seeding", "date", "2019-06-20"), tok, nil, 400, "bad_request", "date"},
		{"rx bad date", "POST", rx("date", "2019-02-30"), tok, nil, 400, "bad_request", "date"},
		{"rx bad strategy", "POST", rx("strategy", "random"), tok, nil, 400, "bad_request", "strategy"},
		{"rx bad base_rate", "POST", rx("base_rate", "-5"), tok, nil, 400, "bad_request", "base_rate"},
		{"rx max below base", "POST", rx("max_rate", "100"), tok, nil, 400, "bad_request", "max_rate"},
		{"rx unsupported dst_crs", "POST", rx("dst_crs", "8857"), tok, nil, 400, "bad_request", "8857"},
		{"rx unknown format", "POST", rx("format", "pdf"), tok, nil, 400, "bad_request", "pdf"},
		{"rx unknown field", "POST", rx("field_name", "zz"), tok, nil, 404, "not_found", "zz"},
		{"rx another user's field", "POST", rx(), bob, nil, 404, "not_found", "UES-03"},
		{"rx no imagery", "POST", rx("field_name", "empty"), tok, nil, 404, "no_imagery", "empty"},
		{"rx seeding no imagery", "POST", rx("field_name", "empty", "type", "seeding"), tok, nil, 404, "no_imagery", "empty"},
		{"rx JSON body bad n_zones", "POST", P, tok, map[string]any{"field_name": "UES-03", "type": "seeding", "n_zones": 0, "index": "ndvi"}, 400, "bad_request", "n_zones"},
		{"uploads unknown field", "GET", "/files/uploads?field_name=zz", tok, nil, 404, "not_found", "zz"},
		{"uploads missing field_name", "GET", "/files/uploads", tok, nil, 400, "bad_request", "field_name"},
		{"upload JSON body", "POST", "/files/upload", tok, map[string]any{"field_name": "UES-01"}, 400, "bad_request", "multipart"},
		{"convert empty", "POST", "/convert/geojson-to-shapefile", tok, "", 400, "bad_request", "empty"},
		{"convert not GeoJSON", "POST", "/convert/geojson-to-shapefile", tok, "{nope", 400, "bad_request", ""},
	}

	before := snapshot(t, env)
	require.Contains(t, before, "uploads", "the stored upload is part of the snapshot")
	for _, c := range forms {
		t.Run(c.name, func(t *testing.T) {
			r := postForm(t, env, c.path, c.token, c.values, c.files)
			require.Equal(t, c.status, r.Status, "%s", r.Body)
			assert.Equal(t, c.code, r.ErrorCode(t))
			assert.Contains(t, r.JSON(t)["error"].(map[string]any)["message"], c.contains)
		})
	}
	for _, c := range gets {
		t.Run(c.name, func(t *testing.T) {
			r := do(t, h, c.method, c.path, c.token, c.body)
			require.Equal(t, c.status, r.Status, "%s", r.Body)
			assert.Equal(t, c.code, r.ErrorCode(t))
			assert.Contains(t, r.JSON(t)["error"].(map[string]any)["message"], c.contains)
		})
	}
	require.Equal(t, before, snapshot(t, env), "a failed request changed the stored state")
}

func ndviLayerIndex(index string) string {
	return `[{"type":"crop_health","weight":1,"date":"2019-06-20","index":"` + index + `"}]`
}

// BenchmarkPrescriptionZones times §4.3 n_fertilizer zones (k = 5) of the
// peers' 100, 1,000 and 10,000 ha fields (../shared/bench/peers, scenes in
// /tmp/peers-data/tile) through the server handler: stored values read,
// field mask, k-means, sieve, polygons, doses, reprojection to EPSG:4326 and
// the GeoJSON answer. Compare with peer_zones.py on the same fields.
func BenchmarkPrescriptionZones(b *testing.B) {
	const tile = "/tmp/peers-data/tile"
	if _, err := os.Stat(filepath.Join(tile, "B04.tif")); err != nil {
		b.Skip("peers data /tmp/peers-data/tile not generated (see ../shared/bench/peers/README.md)")
	}
	env := servertest.New(b, server.Config{})
	ctx := context.Background()
	admin, err := env.Archive.UserByName(ctx, "admin")
	require.NoError(b, err)
	sizes := []string{"100ha", "1000ha", "10000ha"}
	for _, size := range sizes {
		data, err := os.ReadFile(filepath.Join(tile, "field_"+size+".geojson"))
		require.NoError(b, err)
		feats, err := geo.ReadFeatures(data)
		require.NoError(b, err)
		_, err = env.Archive.Store().InsertField(ctx, archive.Field{OwnerID: admin.ID, Name: size, Indices: []string{"ndvi"}, Geometry: feats[0].Geometry}, 0)
		require.NoError(b, err)
	}
	_, err = env.Archive.Ingest(ctx, tile, archive.IngestOptions{Date: time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)})
	require.NoError(b, err)
	for _, size := range sizes {
		b.Run(size, func(b *testing.B) {
			target := "/prescription_maps/get_zones?type=n_fertilizer&n_zones=5&index=ndvi&field_name=" + size
			for b.Loop() {
				req := httptest.NewRequest("POST", target, nil)
				req.Header.Set("Authorization", "Bearer "+env.AdminToken)
				rec := httptest.NewRecorder()
				env.Server.ServeHTTP(rec, req) // unvalidated: the server's own time
				if rec.Code != 200 {
					b.Fatalf("%d: %s", rec.Code, rec.Body.String())
				}
			}
		})
	}
}

// Farm software asks for national grids: dst_crs takes any EPSG code the
// CRS layer can express (Lambert-93, Belgian Lambert 2008, a US state plane
// in feet, a geographic CRS on another datum), and the zones still tile the
// field there; an unknown code is a 400 naming it.
func TestZonesInNationalGrids(t *testing.T) {
	z := newZoneEnv(t, server.Config{})
	field := z.fields["UES-03"].Geometry
	for _, tc := range []struct {
		epsg string
		x, y [2]float64 // plausible coordinate ranges of the field there
	}{
		// Ranges: ±1 km around pyproj's transform of the field's centre.
		{"2154", [2]float64{774022, 776022}, [2]float64{7071543, 7073543}}, // RGF93 / Lambert-93
		{"3812", [2]float64{627280, 629280}, [2]float64{658429, 660429}},   // ETRS89 / Belgian Lambert 2008
		{"31370", [2]float64{127279, 129279}, [2]float64{158431, 160431}},  // BD72 / Belgian Lambert 72 (Helmert)
		{"4258", [2]float64{4.05, 4.07}, [2]float64{50.74, 50.75}},         // ETRS89 geographic
	} {
		t.Run(tc.epsg, func(t *testing.T) {
			r := do(t, z.env.Handler, "GET", "/prescription_maps/get_zones?field_name=UES-03&type=n_fertilizer&n_zones=3&index=ndvi&dst_crs="+tc.epsg, z.tok, nil)
			require.Equal(t, 200, r.Status, "%s", r.Body)
			c := decodeZones(t, r)
			assert.Equal(t, "urn:ogc:def:crs:EPSG::"+tc.epsg, c.CRS.Properties.Name)
			code, err := strconv.Atoi(tc.epsg)
			require.NoError(t, err)
			tr, err := crs.New(4326, code)
			require.NoError(t, err)
			projected, err := geo.Transform(field, tr)
			require.NoError(t, err)
			var sum float64
			for _, f := range c.Features {
				for _, p := range f.Geometry.Coordinates[0] {
					assert.True(t, p[0] >= tc.x[0] && p[0] <= tc.x[1] && p[1] >= tc.y[0] && p[1] <= tc.y[1], "%v outside the expected range", p)
				}
				sum += geo.Area(orb.MultiPolygon{f.Geometry.Coordinates})
			}
			assert.InDelta(t, geo.Area(projected), sum, 1e-3*geo.Area(projected), "the zones tile the field in EPSG:%s", tc.epsg)
		})
	}
	r := do(t, z.env.Handler, "GET", "/prescription_maps/get_zones?field_name=UES-03&type=n_fertilizer&n_zones=3&index=ndvi&dst_crs=999999", z.tok, nil)
	assert.Equal(t, 400, r.Status)
	assert.Contains(t, string(r.Body), "999999")
}

// TestUploadShapefileZ: shapefiles with Z values as GDAL writes them
// (-dim XYZ, no M part; -dim XYZM) are accepted by /files/upload.
func TestUploadShapefileZ(t *testing.T) {
	env := servertest.New(t, server.Config{})
	tok := env.AddUser(t, "farmer", nil)
	r := do(t, env.Handler, "POST", "/fields/register", tok, map[string]any{"field_name": "z",
		"geometry": map[string]any{"type": "Polygon", "coordinates": [][][2]float64{{{4, 51}, {4.03, 51}, {4.03, 51.01}, {4, 51.01}, {4, 51}}}}})
	require.Equal(t, 201, r.Status, "%s", r.Body)
	dir := filepath.Join("..", "zoning", "testdata", "shapefile-z")
	for _, stem := range []string{"polygon_xyz", "polygon_xyzm", "polyline_xyz", "point_xyz", "point_xyzm", "multipoint_xyz"} {
		t.Run(stem, func(t *testing.T) {
			files := map[string][]byte{}
			for _, ext := range []string{".shp", ".shx", ".dbf", ".prj"} {
				data, err := os.ReadFile(filepath.Join(dir, stem+ext))
				require.NoError(t, err)
				files[stem+ext] = data
			}
			up := postForm(t, env, "/files/upload", tok, map[string]string{"field_name": "z"}, files)
			require.Equal(t, 201, up.Status, "%s", up.Body)
			var ul struct {
				Uploads []struct {
					Records int `json:"records"`
					EPSG    int `json:"epsg"`
				} `json:"uploads"`
			}
			require.NoError(t, json.Unmarshal(up.Body, &ul))
			require.Len(t, ul.Uploads, 1)
			assert.Equal(t, 2, ul.Uploads[0].Records)
			assert.Equal(t, 4326, ul.Uploads[0].EPSG)
		})
	}
}
