package zoning

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testCollection is two zones near Ghent in EPSG:4326; zone 2 has two
// parts, one with a hole.
func testCollection() *Collection {
	sq := func(x0, y0, s float64) orb.Ring {
		return orb.Ring{{x0, y0}, {x0 + s, y0}, {x0 + s, y0 + s}, {x0, y0 + s}, {x0, y0}}
	}
	hole := orb.Ring{{4.0630, 50.7430}, {4.0630, 50.7432}, {4.0632, 50.7432}, {4.0632, 50.7430}, {4.0630, 50.7430}} // clockwise
	return &Collection{EPSG: 4326, Type: NFertilizer, Unit: "kg/ha", Features: []Feature{
		{Zone: 1, RasterVal: 0.41, Dose: 140.5, Polygon: orb.Polygon{sq(4.060, 50.740, 0.001)}},
		{Zone: 2, RasterVal: 0.8, Dose: 99.5, Polygon: orb.Polygon{sq(4.0625, 50.7425, 0.001), hole}},
		{Zone: 2, RasterVal: 0.8, Dose: 99.5, Polygon: orb.Polygon{sq(4.065, 50.740, 0.0005)}},
	}}
}

func runTool(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	require.NoError(t, err, "%s %v: %s", name, args, out)
	return string(out)
}

func TestCollectionJSON(t *testing.T) {
	js, err := testCollection().MarshalJSON()
	require.NoError(t, err)
	var doc struct {
		Type string `json:"type"`
		CRS  struct {
			Type       string `json:"type"`
			Properties struct {
				Name string `json:"name"`
			} `json:"properties"`
		} `json:"crs"`
		Features []struct {
			Type     string `json:"type"`
			Geometry struct {
				Type        string         `json:"type"`
				Coordinates [][][2]float64 `json:"coordinates"`
			} `json:"geometry"`
			Properties map[string]any `json:"properties"`
		} `json:"features"`
	}
	require.NoError(t, json.Unmarshal(js, &doc))
	assert.Equal(t, "FeatureCollection", doc.Type)
	assert.Equal(t, "name", doc.CRS.Type)
	assert.Equal(t, "urn:ogc:def:crs:EPSG::4326", doc.CRS.Properties.Name)
	require.Len(t, doc.Features, 3)
	assert.Equal(t, "Polygon", doc.Features[1].Geometry.Type)
	assert.Len(t, doc.Features[1].Geometry.Coordinates, 2)
	assert.Equal(t, map[string]any{"DOSE": 99.5, "RASTER_VAL": 0.8, "ZONE": 2.0}, doc.Features[2].Properties)

	back, err := ParseCollection(js)
	require.NoError(t, err)
	back.Type, back.Unit = NFertilizer, "kg/ha"
	assert.Equal(t, testCollection(), back)
}

func TestCollectionReproject(t *testing.T) {
	c := testCollection()
	utm, err := c.Reproject(32631)
	require.NoError(t, err)
	assert.Equal(t, 32631, utm.EPSG)
	p := utm.Features[0].Polygon[0][0]
	assert.InDelta(t, 574000, p[0], 2000, "easting near the 31UES chip")
	assert.InDelta(t, 5622000, p[1], 2000)
	js, err := utm.MarshalJSON()
	require.NoError(t, err)
	assert.Contains(t, string(js), `"urn:ogc:def:crs:EPSG::32631"`)
	_, err = c.Reproject(8857)
	assert.ErrorContains(t, err, "8857")
}

func TestParseCollectionErrors(t *testing.T) {
	for _, bad := range []string{
		`{"type":"Feature"}`,
		`{"type":"FeatureCollection","crs":{"properties":{"name":"EPSG:99999"}},"features":[]}`,
		`{"type":"FeatureCollection","features":[{"properties":{}}]}`,
		`{"type":"FeatureCollection","features":[{"geometry":{"type":"Polygon","coordinates":[[[0,0],[1,0],[0,0]]]}}]}`,
		`{"type":"FeatureCollection","features":[{"geometry":{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,1]]]}}]}`,
		`{"type":"FeatureCollection","features":[{"geometry":{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]]]},"properties":{"ZONE":1.5}}]}`,
	} {
		_, err := ParseCollection([]byte(bad))
		assert.Error(t, err, bad)
	}
}

// isoxmlCheck runs testdata/isoxml-check/check.js (the isoxml npm package)
// on a zip and returns its JSON summary.
func isoxmlCheck(t *testing.T, zipData []byte) map[string]any {
	t.Helper()
	return testenv.ISOXMLCheck(t, zipData)
}

func TestWriteISOXMLZip(t *testing.T) {
	tests := []struct {
		name  string
		typ   PrescriptionType
		doses []float64
		ddi   string
		want  []float64 // PDV values of zones 0, 1, 2
	}{
		{"n_fertilizer", NFertilizer, []float64{140.5, 99.5}, "0006", []float64{0, 14050, 9950}},
		{"seeding", Seeding, []float64{85000, 72500}, "000B", []float64{0, 8500, 7250}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := testCollection()
			c.Type = tc.typ
			for i := range c.Features {
				c.Features[i].Dose = tc.doses[c.Features[i].Zone-1]
			}
			var buf bytes.Buffer
			modified := time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)
			require.NoError(t, WriteISOXMLZip(&buf, c, ISOXMLOptions{FieldName: "UES-03", Modified: modified}))
			zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
			require.NoError(t, err)
			require.Len(t, zr.File, 1)
			assert.Equal(t, "TASKDATA/TASKDATA.XML", zr.File[0].Name)
			assert.True(t, modified.Equal(zr.File[0].Modified), "modified %v", zr.File[0].Modified)
			var again bytes.Buffer
			require.NoError(t, WriteISOXMLZip(&again, c, ISOXMLOptions{FieldName: "UES-03", Modified: modified}))
			assert.Equal(t, buf.Bytes(), again.Bytes(), "reproducible with a fixed time")
			rc, err := zr.File[0].Open()
			require.NoError(t, err)
			var x bytes.Buffer
			_, err = x.ReadFrom(rc)
			require.NoError(t, err)
			xmlText := x.String()
			assert.Contains(t, xmlText, `<ISO11783_TaskData VersionMajor="4"`)
			assert.Contains(t, xmlText, `<PDV A="`+tc.ddi+`" B="`)
			assert.Equal(t, 3, strings.Count(xmlText, "<TZN "))

			res := isoxmlCheck(t, buf.Bytes())
			assert.Empty(t, res["warnings"], "isoxml warnings")
			pfd := res["partfields"].([]any)
			require.Len(t, pfd, 1)
			assert.Equal(t, "UES-03", pfd[0].(map[string]any)["designator"])
			assert.Equal(t, 3.0, pfd[0].(map[string]any)["polygons"])
			tasks := res["tasks"].([]any)
			require.Len(t, tasks, 1)
			zones := tasks[0].(map[string]any)["zones"].([]any)
			require.Len(t, zones, 3)
			for i, z := range zones {
				zm := z.(map[string]any)
				assert.Equal(t, float64(i), zm["code"])
				pdv := zm["pdv"].([]any)
				require.Len(t, pdv, 1)
				assert.Equal(t, tc.ddi, pdv[0].(map[string]any)["ddi"])
				assert.Equal(t, tc.want[i], pdv[0].(map[string]any)["value"])
			}
			z2 := zones[2].(map[string]any)["polygons"].([]any)
			require.Len(t, z2, 2, "zone 2 has two polygons")
			assert.Equal(t, []any{5.0, 5.0}, z2[0].(map[string]any)["rings"], "outer ring and hole")
		})
	}
}
