package server_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"math"
	"net/url"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/geo/crs"
	"github.com/cropkit/cropkit/imagery"
	"github.com/cropkit/cropkit/imagery/geotiff"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/server"
	"github.com/cropkit/cropkit/server/servertest"
)

// e2eDates are 14 acquisitions of flanders-31UES in 2019: clear, partly
// cloudy (03-17, 04-26) and fully cloudy (03-27, 05-01, 06-15, 06-25, 07-10).
var e2eDates = []string{
	"2019-03-17", "2019-03-22", "2019-03-27", "2019-04-01", "2019-04-21", "2019-04-26", "2019-05-01",
	"2019-05-16", "2019-06-15", "2019-06-20", "2019-06-25", "2019-07-05", "2019-07-10", "2019-07-30",
}

var (
	e2eFields  = []string{"UES-03", "UES-12", "UES-14", "UES-07"}
	e2eIndices = []string{"ndvi", "ndre", "evi"}
)

// libraryProducts is what the library computes for a field on every e2e date, by index then date.
func libraryProducts(t *testing.T, sceneRoot string, field orb.MultiPolygon) map[string]map[string]imagery.Product {
	t.Helper()
	out := map[string]map[string]imagery.Product{}
	for _, ix := range e2eIndices {
		out[ix] = map[string]imagery.Product{}
	}
	for _, d := range e2eDates {
		sc, err := imagery.OpenScene(context.Background(), filepath.Join(sceneRoot, d), imagery.SceneOptions{})
		require.NoError(t, err)
		ps, err := sc.FieldProducts(context.Background(), field, e2eIndices, nil)
		sc.Close()
		if err != nil {
			require.ErrorIs(t, err, imagery.ErrNoClearPixels, d)
			continue
		}
		for _, p := range ps {
			out[p.Index][d] = p
		}
	}
	return out
}

// usableDates lists, by date, those where the product has ≥ 60 % clear pixels.
func usableDates(ps map[string]imagery.Product) []string {
	var out []string
	for d, p := range ps {
		if float64(p.Stats.Num) >= archive.DefaultMinClear*float64(p.Stats.FieldPixels) {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
}

// closest is the usable date closest to want (ties: earlier).
func closest(dates []string, want string) string {
	w, _ := time.Parse(time.DateOnly, want)
	best, bestDist := "", time.Duration(math.MaxInt64)
	for _, d := range dates {
		t, _ := time.Parse(time.DateOnly, d)
		dist := t.Sub(w)
		if dist < 0 {
			dist = -dist
		}
		if dist < bestDist {
			best, bestDist = d, dist
		}
	}
	return best
}

func TestEndToEndRealTimeSeries(t *testing.T) {
	sceneRoot := testenv.DataDir(t, "s2", "flanders-31UES")
	fields := flandersFields(t)
	env := servertest.New(t, server.Config{})
	h := env.Handler
	tok := env.AddUser(t, "farmer", nil)
	ctx := context.Background()

	// Register the fields.
	for _, name := range e2eFields {
		f := fields[name]
		r := do(t, h, "POST", "/fields/register", tok, map[string]any{
			"field_name": name, "group": "flanders", "labels": map[string]string{"crop": f.Properties["crop"].(string)},
			"indices":  e2eIndices,
			"geometry": map[string]any{"type": "Feature", "properties": map[string]any{}, "geometry": map[string]any{"type": "MultiPolygon", "coordinates": f.Geometry}},
		})
		require.Equal(t, 201, r.Status, "%s", r.Body)
	}
	r := do(t, h, "GET", "/fields/list?group=flanders", tok, nil)
	require.Equal(t, 200, r.Status)
	require.Len(t, r.JSON(t)["fields"], len(e2eFields))

	// Ingest: one scene through the API (admin), the others in-process; then
	// re-ingest one to check it replaces.
	r = do(t, h, "POST", "/scenes/ingest", env.AdminToken, map[string]string{"source": filepath.Join(sceneRoot, e2eDates[0])})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	assert.Equal(t, float64(len(e2eFields)), r.JSON(t)["fields"])
	for _, d := range e2eDates[1:] {
		res, err := env.Archive.Ingest(ctx, filepath.Join(sceneRoot, d), archive.IngestOptions{})
		require.NoError(t, err, d)
		require.Equal(t, len(e2eFields), res.Fields, d)
		require.Equal(t, len(e2eFields)*len(e2eIndices), res.Usable+res.Unusable, d)
	}
	_, err := env.Archive.Ingest(ctx, filepath.Join(sceneRoot, "2019-06-20"), archive.IngestOptions{})
	require.NoError(t, err)

	for _, name := range e2eFields {
		lib := libraryProducts(t, sceneRoot, fields[name].Geometry)
		t.Run(name, func(t *testing.T) {
			q := func(kv ...string) string {
				v := url.Values{"field_name": {name}}
				for i := 0; i+1 < len(kv); i += 2 {
					v.Set(kv[i], kv[i+1])
				}
				return v.Encode()
			}
			// files/list: exactly the library's usable dates, with their cloud cover.
			r := do(t, h, "POST", "/files/list?"+q(), tok, nil)
			require.Equal(t, 200, r.Status, "%s", r.Body)
			var list struct {
				Indices map[string][]struct {
					Date       string  `json:"date"`
					CloudCover float64 `json:"cloud_cover"`
				} `json:"indices"`
			}
			require.NoError(t, json.Unmarshal(r.Body, &list))
			require.Len(t, list.Indices, len(e2eIndices))
			for _, ix := range e2eIndices {
				want := usableDates(lib[ix])
				var got []string
				for _, e := range list.Indices[ix] {
					got = append(got, e.Date)
					assert.InDelta(t, lib[ix][e.Date].Stats.CloudCover, e.CloudCover, 1e-9)
				}
				require.Equal(t, want, got, ix)
				require.GreaterOrEqual(t, len(got), 8, "%s %s: want ≥ 8 usable dates", name, ix)
			}
			// Date range filter.
			r = do(t, h, "GET", "/files/list?"+q("index", "ndvi", "start_date", "2019-04-01", "end_date", "2019-05-31"), tok, nil)
			require.Equal(t, 200, r.Status)
			list.Indices = nil
			require.NoError(t, json.Unmarshal(r.Body, &list))
			require.Len(t, list.Indices, 1)
			for _, e := range list.Indices["ndvi"] {
				assert.True(t, e.Date >= "2019-04-01" && e.Date <= "2019-05-31", e.Date)
			}

			// JSON downloads on every requested date: clear, partly and fully
			// cloudy (closest usable date), statistics equal to the library's.
			for _, ix := range e2eIndices {
				usable := usableDates(lib[ix])
				for _, want := range append(slices.Clone(e2eDates), "2019-04-11", "") {
					served := usable[len(usable)-1]
					if want != "" {
						served = closest(usable, want)
					}
					r := do(t, h, "POST", "/download/"+ix+"/json?"+q("date", want), tok, nil)
					require.Equal(t, 200, r.Status, "%s %s: %s", ix, want, r.Body)
					require.Equal(t, served, r.Header.Get("X-Image-Date"), "%s asked %q", ix, want)
					var rep imagery.Report
					require.NoError(t, json.Unmarshal(r.Body, &rep))
					p := lib[ix][served]
					assert.Equal(t, served, rep.Date.Format(time.DateOnly))
					assert.Equal(t, p.Stats.Num, rep.Stats.Num)
					assert.Equal(t, p.Stats.FieldPixels, rep.Stats.FieldPixels)
					for k, pair := range map[string][2]float64{
						"mean": {p.Stats.Mean, rep.Stats.Mean}, "median": {p.Stats.Median, rep.Stats.Median}, "std": {p.Stats.Std, rep.Stats.Std},
						"min": {p.Stats.Min, rep.Stats.Min}, "max": {p.Stats.Max, rep.Stats.Max}, "p25": {p.Stats.P25, rep.Stats.P25}, "p75": {p.Stats.P75, rep.Stats.P75},
						"cloud_cover": {p.Stats.CloudCover, rep.Stats.CloudCover},
					} {
						assert.Equal(t, pair[0], pair[1], "%s %s %s", ix, served, k)
					}
					require.Len(t, rep.Values, len(p.Values))
					for i := range p.Values {
						if math.IsNaN(p.Values[i]) {
							require.True(t, math.IsNaN(rep.Values[i]))
						} else {
							// Pixel values are written rounded to 6 decimals (imagery.Report).
							require.InDelta(t, p.Values[i], rep.Values[i], 5e-7)
						}
					}
					// mean_variation against the previous usable date.
					i := slices.Index(usable, served)
					var doc struct {
						MeanVariation *float64 `json:"mean_variation"`
						PreviousDate  *string  `json:"previous_date"`
					}
					require.NoError(t, json.Unmarshal(r.Body, &doc))
					require.NotNil(t, doc.MeanVariation, "mean_variation is always a number")
					if i == 0 {
						assert.Zero(t, *doc.MeanVariation, "%s %s", ix, served)
						assert.Nil(t, doc.PreviousDate, "%s %s", ix, served)
					} else {
						require.NotNil(t, doc.PreviousDate)
						assert.Equal(t, usable[i-1], *doc.PreviousDate)
						assert.InDelta(t, imagery.MeanVariation(p.Stats.Mean, lib[ix][usable[i-1]].Stats.Mean), *doc.MeanVariation, 1e-9)
					}
				}
			}

			// PNG on a fully cloudy date falls back to the closest usable date.
			usable := usableDates(lib["ndvi"])
			r = do(t, h, "GET", "/files/get/ndvi/image?"+q("date", "2019-06-25"), tok, nil)
			require.Equal(t, 200, r.Status, "%s", r.Body)
			require.Equal(t, "image/png", r.Header.Get("Content-Type"))
			served := closest(usable, "2019-06-25")
			require.Equal(t, served, r.Header.Get("X-Image-Date"))
			img, err := png.Decode(bytes.NewReader(r.Body))
			require.NoError(t, err)
			g := lib["ndvi"][served].Grid
			assert.Equal(t, g.Cols, img.Bounds().Dx())
			assert.Equal(t, g.Rows, img.Bounds().Dy())
			// ext alone names the file; no service means ndvi. ext
			// contradicting the path's file type is a 400 naming both.
			r2 := do(t, h, "GET", "/download?"+q("date", "2019-06-25", "ext", "png"), tok, nil)
			require.Equal(t, 200, r2.Status, "%s", r2.Body)
			assert.Equal(t, r.Body, r2.Body)
			r2 = do(t, h, "GET", "/download/ndvi/json?"+q("date", "2019-06-25", "ext", "png"), tok, nil)
			assert.Equal(t, 400, r2.Status)
			assert.Contains(t, string(r2.Body), "file_type")
			assert.Contains(t, string(r2.Body), "ext")
			r2 = do(t, h, "GET", "/download/ndvi/image?"+q("date", "2019-06-25", "ext", "png"), tok, nil)
			assert.Equal(t, "image/png", r2.Header.Get("Content-Type"))
			// A far-future date is closest to the latest image (a Duration
			// overflow served the earliest).
			r2 = do(t, h, "GET", "/download/ndvi/json?"+q("date", "9999-12-31"), tok, nil)
			require.Equal(t, 200, r2.Status, "%s", r2.Body)
			assert.Equal(t, usable[len(usable)-1], r2.Header.Get("X-Image-Date"))

			// Zip of both files.
			r = do(t, h, "POST", "/download/ndvi?"+q("date", "2019-06-20"), tok, nil)
			require.Equal(t, 200, r.Status, "%s", r.Body)
			require.Equal(t, "application/zip", r.Header.Get("Content-Type"))
			zr, err := zip.NewReader(bytes.NewReader(r.Body), int64(len(r.Body)))
			require.NoError(t, err)
			var names []string
			for _, f := range zr.File {
				names = append(names, f.Name)
				rc, err := f.Open()
				require.NoError(t, err)
				data, err := io.ReadAll(rc)
				rc.Close()
				require.NoError(t, err)
				if filepath.Ext(f.Name) == ".json" {
					var rep imagery.Report
					require.NoError(t, json.Unmarshal(data, &rep))
					assert.Equal(t, lib["ndvi"]["2019-06-20"].Stats.Mean, rep.Stats.Mean)
				}
			}
			base := name + "_ndvi_20190620"
			assert.ElementsMatch(t, []string{base + ".png", base + ".json"}, names)

			// Value at a location: the centre of the field's first clear pixel.
			p := lib["ndvi"]["2019-06-20"]
			toLonLat, err := crs.New(p.Grid.EPSG, 4326)
			require.NoError(t, err)
			idx := slices.IndexFunc(p.Values, func(v float64) bool { return !math.IsNaN(v) })
			c := p.Grid.PixelCenter(idx%p.Grid.Cols, idx/p.Grid.Cols)
			lon, lat := toLonLat.Transform(c[0], c[1])
			r = do(t, h, "POST", "/fields/value?"+q("index", "ndvi", "date", "2019-06-20", "lat", fmt.Sprint(lat), "lon", fmt.Sprint(lon)), tok, nil)
			require.Equal(t, 200, r.Status, "%s", r.Body)
			v := r.JSON(t)
			assert.Equal(t, "2019-06-20", v["date"])
			assert.InDelta(t, p.Values[idx], v["value"].(float64), 5e-7, "stored values carry 6 decimals")

			// The float32 GeoTIFF holds the product's values.
			r = do(t, h, "GET", "/rasters/get?"+q("index", "ndvi", "date", "2019-06-20"), tok, nil)
			require.Equal(t, 200, r.Status, "%s", r.Body)
			assert.Equal(t, "image/tiff", r.Header.Get("Content-Type"))
			tf, err := geotiff.Open(bytes.NewReader(r.Body))
			require.NoError(t, err)
			assert.Equal(t, p.Grid, tf.Grid())
			nd, ok := tf.NoData()
			require.True(t, ok)
			assert.Equal(t, -9999.0, nd)
			rs, err := tf.ReadWindow(ctx, tf.Grid().Full())
			require.NoError(t, err)
			for i, want := range p.Values {
				if math.IsNaN(want) {
					require.Equal(t, -9999.0, rs.At(i))
				} else {
					require.InDelta(t, want, rs.At(i), 1e-6, "6 decimals, then float32")
				}
			}
		})
	}

	// The README's independent reference for UES-03 on 2019-06-20.
	r = do(t, h, "GET", "/download/ndvi/json?field_name=UES-03&date=2019-06-20", tok, nil)
	require.Equal(t, 200, r.Status)
	m := r.JSON(t)
	assert.InDelta(t, 0.849754, m["mean"], 1e-6)
	assert.InDelta(t, 0.888130, m["median"], 1e-6)
	assert.InDelta(t, 0.082123, m["std"], 1e-6)
	assert.Equal(t, 352.0, m["num"])

	// Field metadata seasons.
	for _, rec := range []map[string]any{
		{"field_name": "UES-03", "start_date": "2018-10-15", "crop_type": "winter wheat", "harvest_date": "2019-07-28", "yield_amount": 9, "yield_unit": "t/ha"},
		{"field_name": "UES-03", "start_date": "2019-09-01", "crop_type": "cover crop", "is_cover_crop": true, "is_tilled": true, "tilling_type": ""},
		{"field_name": "UES-03", "start_date": "2018-10-15", "crop_type": "winter wheat", "harvest_date": "2019-07-30", "yield_amount": 10, "yield_unit": "t/ha"},
	} {
		r := do(t, h, "POST", "/fields/metadata/register?token="+tok, "", rec)
		require.Equal(t, 201, r.Status, "%s", r.Body)
		assert.Contains(t, r.JSON(t)["message"], "UES-03")
	}
	r = do(t, h, "POST", "/fields/metadata/list?field_name=UES-03", tok, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	var seasons struct {
		Seasons []map[string]any `json:"seasons"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &seasons))
	require.Len(t, seasons.Seasons, 2)
	assert.Equal(t, "2018-10-15", seasons.Seasons[0]["start_date"])
	assert.Equal(t, "2019-07-30", seasons.Seasons[0]["harvest_date"])
	assert.Equal(t, 10.0, seasons.Seasons[0]["yield_amount"])
	assert.Equal(t, "2019-09-01", seasons.Seasons[1]["start_date"])

	// Deleting a field removes its products.
	r = do(t, h, "POST", "/fields/delete?field_name=UES-07", tok, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	r = do(t, h, "POST", "/download/ndvi/json?field_name=UES-07", tok, nil)
	require.Equal(t, 404, r.Status)
	require.NoDirExists(t, filepath.Join(env.Dir, "products", "4"))
	require.Empty(t, env.BlobKeys(t, "products/4"))

	require.Greater(t, env.Responses.N(), 200)
}
