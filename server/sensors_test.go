package server_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/server"
	"github.com/cropkit/cropkit/server/servertest"
)

// Radar and Landsat through the API: /download/vv/json serves a Sentinel-1
// image, the sensor parameter keeps one family (default: the index's),
// history and files/list rows name their sensor, the index catalogue
// lists each index's sensors.
func TestSensorsThroughTheAPI(t *testing.T) {
	env := servertest.New(t, server.Config{})
	tok := env.AddUser(t, "farmer", nil)
	data, err := os.ReadFile(testenv.DataDir(t, "fields", "flanders-31UDS.geojson"))
	require.NoError(t, err)
	feats, err := geo.ReadFeatures(data)
	require.NoError(t, err)
	for _, f := range feats {
		if f.Name == "UDS-02" {
			r := do(t, env.Handler, "POST", "/fields/register", tok, map[string]any{"field_name": "UDS-02", "indices": []string{"ndvi", "vv", "rvi"},
				"geometry": map[string]any{"type": "MultiPolygon", "coordinates": f.Geometry}})
			require.Equal(t, 201, r.Status, "%s", r.Body)
		}
	}
	ingest(t, env, filepath.Join(testenv.DataDir(t, "s2", "flanders-31UDS"), "2018-06-10"))
	ingest(t, env, filepath.Join(testenv.DataDir(t, "landsat8", "flanders-31UDS"), "2018-06-06"))
	ingest(t, env, filepath.Join(testenv.DataDir(t, "s1", "flanders-31UDS"), "2018-06-15"))

	r := do(t, env.Handler, "GET", "/download/vv/json?field_name=UDS-02", tok, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	doc := r.JSON(t)
	assert.Equal(t, "sentinel-1", doc["sensor"])
	assert.Equal(t, "2018-06-15", doc["date"])
	assert.Less(t, doc["mean"], 0.0, "backscatter in dB")
	r = do(t, env.Handler, "GET", "/download/vv/image?field_name=UDS-02", tok, nil)
	require.Equal(t, 200, r.Status)
	assert.Equal(t, "image/png", r.Header.Get("Content-Type"))

	r = do(t, env.Handler, "GET", "/download/ndvi/json?field_name=UDS-02&date=2018-06-06", tok, nil)
	require.Equal(t, 200, r.Status)
	assert.Equal(t, "2018-06-10", r.Header.Get("X-Image-Date"), "default: Sentinel-2 only")
	r = do(t, env.Handler, "GET", "/download/ndvi/json?field_name=UDS-02&date=2018-06-06&sensor=any", tok, nil)
	require.Equal(t, 200, r.Status)
	assert.Equal(t, "2018-06-06", r.Header.Get("X-Image-Date"))
	assert.Equal(t, "landsat-8", r.JSON(t)["sensor"])
	r = do(t, env.Handler, "GET", "/download/ndvi/json?field_name=UDS-02&sensor=sentinel-1", tok, nil)
	assert.Equal(t, 400, r.Status, "ndvi does not apply to radar")
	r = do(t, env.Handler, "GET", "/download/ndvi/json?field_name=UDS-02&sensor=modis", tok, nil)
	assert.Equal(t, 400, r.Status)

	r = do(t, env.Handler, "GET", "/fields/history?field_name=UDS-02&sensor=any", tok, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	var hist struct {
		Indices map[string][]archive.HistoryRow `json:"indices"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &hist))
	sensors := map[string]string{}
	for ix, rows := range hist.Indices {
		for _, row := range rows {
			sensors[ix+" "+row.Date] = row.Sensor
		}
	}
	assert.Equal(t, map[string]string{"ndvi 2018-06-06": "landsat-8", "ndvi 2018-06-10": "sentinel-2",
		"vv 2018-06-15": "sentinel-1", "rvi 2018-06-15": "sentinel-1"}, sensors)

	r = do(t, env.Handler, "GET", "/files/list?field_name=UDS-02&sensor=landsat", tok, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	var list struct {
		Indices map[string][]struct{ Date, Sensor string } `json:"indices"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &list))
	assert.Len(t, list.Indices["ndvi"], 1)
	assert.Equal(t, "landsat-8", list.Indices["ndvi"][0].Sensor)
	assert.Empty(t, list.Indices["vv"], "vv has no Landsat image")

	// Zones from one sensor's image: Sentinel-2 by default, Landsat or
	// Sentinel-1 when asked; "any" mixes grids and is refused.
	zones := func(index, sensor string) response {
		q := "/prescription_maps/get_zones?field_name=UDS-02&type=n_fertilizer&n_zones=3&dst_crs=32631&index=" + index
		if sensor != "" {
			q += "&sensor=" + sensor
		}
		return do(t, env.Handler, "POST", q, tok, nil)
	}
	for _, tt := range []struct{ index, sensor, date string }{
		{"ndvi", "", "2018-06-10"}, {"ndvi", "landsat", "2018-06-06"}, {"vv", "", "2018-06-15"},
	} {
		r = zones(tt.index, tt.sensor)
		require.Equal(t, 200, r.Status, "%s %s: %s", tt.index, tt.sensor, r.Body)
		assert.Equal(t, tt.date, r.Header.Get("X-Image-Date"), tt.index+" "+tt.sensor)
	}
	assert.Equal(t, 400, zones("ndvi", "any").Status)

	r = do(t, env.Handler, "GET", "/indices/list", tok, nil)
	require.Equal(t, 200, r.Status)
	var cat struct {
		Indices []struct {
			Name    string
			Sensors []string
		} `json:"indices"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &cat))
	got := map[string][]string{}
	for _, ix := range cat.Indices {
		got[ix.Name] = ix.Sensors
	}
	assert.Equal(t, []string{"sentinel-1"}, got["vh_vv"])
	assert.Equal(t, []string{"sentinel-2", "landsat"}, got["ndvi"])
	assert.Equal(t, []string{"sentinel-2"}, got["ndre"])
}
