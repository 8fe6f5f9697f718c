package zoning

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/internal/testenv"
)

// ogrAttributes reads the attributes of every feature of a zipped
// shapefile with ogrinfo: feature → field → value as ogrinfo prints it,
// plus the field types.
func ogrAttributes(t *testing.T, zipData []byte) (feats []map[string]string, types map[string]string) {
	t.Helper()
	ogrinfo := testenv.RequireTool(t, "ogrinfo")
	path := filepath.Join(t.TempDir(), "out.zip")
	require.NoError(t, os.WriteFile(path, zipData, 0o600))
	out := runTool(t, ogrinfo, "-al", "-ro", "-geom=NO", "/vsizip/"+path)
	require.NotContains(t, strings.ToLower(out), "error", out)
	types = map[string]string{}
	decl := regexp.MustCompile(`^(\w+): (\w+) \(`)
	val := regexp.MustCompile(`^  (\w+) \((\w+)\) = (.*)$`)
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "OGRFeature(") {
			feats = append(feats, map[string]string{})
			continue
		}
		if m := val.FindStringSubmatch(line); m != nil && len(feats) > 0 {
			feats[len(feats)-1][m[1]] = m[3]
		} else if m := decl.FindStringSubmatch(line); m != nil && len(feats) == 0 {
			types[m[1]] = m[2]
		}
	}
	return feats, types
}

// TestGeoJSONToShapefileRealFields converts the real Flanders field
// collection (no zone properties) and reads it back with GDAL: same
// feature count, every property an attribute of the same value, no
// invented zone columns.
func TestGeoJSONToShapefileRealFields(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(testenv.DataDir(t, "fields"), "flanders-31UDS.geojson"))
	require.NoError(t, err)
	var src struct {
		Features []struct {
			Properties map[string]any `json:"properties"`
		} `json:"features"`
	}
	require.NoError(t, json.Unmarshal(data, &src))
	require.NotEmpty(t, src.Features)
	var buf bytes.Buffer
	require.NoError(t, GeoJSONToShapefileZip(data, &buf))
	feats, types := ogrAttributes(t, buf.Bytes())
	require.Len(t, feats, len(src.Features))
	// name→10-character column, as written.
	columns := map[string]string{
		"name": "name", "crop_code": "crop_code", "crop": "crop", "area_m2": "area_m2", "pixels_10m": "pixels_10m",
		"clipped_by_image_edge": "clipped_by", "source": "source", "geometry_note": "geometry_n", "utm_epsg": "utm_epsg",
	}
	for _, zoneCol := range []string{"ZONE", "RATE", "RASTER_VAL"} {
		assert.NotContains(t, types, zoneCol)
	}
	assert.Equal(t, "String", types["name"])
	assert.Equal(t, "Integer", types["crop_code"])
	assert.Equal(t, "Real", types["area_m2"])
	for i, f := range src.Features {
		require.Len(t, feats[i], len(columns), "feature %d: %v", i, feats[i])
		for key, v := range f.Properties {
			col, ok := columns[key]
			require.True(t, ok, "property %s has a column", key)
			got := feats[i][col]
			switch v := v.(type) {
			case string:
				assert.Equal(t, v, got, "feature %d %s", i, key)
			case float64:
				var g float64
				_, err := fmt.Sscan(got, &g)
				require.NoError(t, err, "feature %d %s = %q", i, key, got)
				assert.InDelta(t, v, g, 1e-9*math.Max(1, math.Abs(v)), "feature %d %s", i, key)
			case bool:
				assert.Contains(t, []string{map[bool]string{true: "1", false: "0"}[v], map[bool]string{true: "T", false: "F"}[v]}, got, "feature %d %s", i, key)
			}
		}
	}
}

// TestPlainColumns checks the column rules on a synthetic collection:
// types, DBF limits, names cut to 10 characters without clashes, nulls,
// and that a zone collection keeps its zone columns.
func TestPlainColumns(t *testing.T) {
	sq := `"geometry":{"type":"Polygon","coordinates":[[[4,51],[4.001,51],[4.001,51.001],[4,51.001],[4,51]]]}`
	long := strings.Repeat("é", 200) // 400 bytes
	fc := fmt.Sprintf(`{"type":"FeatureCollection","features":[
		{"type":"Feature","properties":{"name":"a","n":1,"x":0.5,"ok":true,"clipped_by_image_edge":1,"clipped_by_other":2,"txt":%q,"obj":{"k":[1,2]},"mixed":1},%s},
		{"type":"Feature","properties":{"name":null,"n":-20,"x":1e-3,"ok":false,"clipped_by_image_edge":3,"clipped_by_other":4,"txt":"b","obj":null,"mixed":"x"},%s},
		{"type":"Feature","properties":null,"geometry":{"type":"MultiPolygon","coordinates":[[[[5,51],[5.001,51],[5.001,51.001],[5,51.001],[5,51]]],[[[6,51],[6.001,51],[6.001,51.001],[6,51.001],[6,51]]]]}}]}`,
		long, sq, sq)
	var buf bytes.Buffer
	require.NoError(t, GeoJSONToShapefileZip([]byte(fc), &buf))
	feats, types := ogrAttributes(t, buf.Bytes())
	require.Len(t, feats, 3, "the MultiPolygon stays one record")
	assert.Equal(t, map[string]string{
		"name": "String", "n": "Integer", "x": "Real", "ok": "String", "clipped_by": "Integer", "clipped__1": "Integer",
		"txt": "String", "obj": "String", "mixed": "String",
	}, types)
	assert.Equal(t, map[string]string{
		"name": "a", "n": "1", "x": "0.500", "ok": "T", "clipped_by": "1", "clipped__1": "2",
		"txt": strings.Repeat("é", 127), "obj": `{"k":[1,2]}`, "mixed": "1",
	}, feats[0])
	assert.Equal(t, "(null)", feats[1]["name"])
	assert.Equal(t, "0.001", feats[1]["x"])
	assert.Equal(t, "F", feats[1]["ok"], "GDAL reads a Logical field as T/F text")
	assert.Equal(t, "x", feats[1]["mixed"])
	assert.Equal(t, "(null)", feats[2]["n"])

	zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	require.NoError(t, err)
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	assert.Equal(t, []string{"zones.shp", "zones.shx", "zones.dbf", "zones.prj", "zones.cpg"}, names)

	// A zone collection (every feature has a numeric ZONE) keeps the zone columns.
	js, err := testCollection().MarshalJSON()
	require.NoError(t, err)
	buf.Reset()
	require.NoError(t, GeoJSONToShapefileZip(js, &buf))
	_, types = ogrAttributes(t, buf.Bytes())
	assert.Equal(t, map[string]string{"ZONE": "Integer64", "RATE": "Real", "RASTER_VAL": "Real"}, types)
}

func TestDBFFieldName(t *testing.T) {
	used := map[string]bool{}
	tests := []struct{ in, want string }{
		{"clipped_by_image_edge", "clipped_by"},
		{"clipped_by_other", "clipped__1"},
		{"CLIPPED_BY", "CLIPPED__2"},
		{"", "FIELD"},
		{"ééééééé", "ééééé"},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, dbfFieldName(tc.in, used), tc.in)
	}
}
