package zoning

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/internal/testenv"
)

// zPolygons and zPoints are the sources of the Z shapefiles: ogr2ogr makes
// the committed fixtures in testdata/shapefile-z from the same two
// collections (-dim XYZ writes no M part, -dim XYZM writes one).
const (
	zPolygons = `{"type":"FeatureCollection","features":[
{"type":"Feature","properties":{"id":1},"geometry":{"type":"Polygon","coordinates":[[[4.0,51.0,5],[4.01,51.0,5],[4.01,51.01,5],[4.0,51.01,5],[4.0,51.0,5]]]}},
{"type":"Feature","properties":{"id":2},"geometry":{"type":"Polygon","coordinates":[[[4.02,51.0,5],[4.03,51.0,5],[4.03,51.01,5],[4.02,51.01,5],[4.02,51.0,5]]]}}]}`
	zPoints = `{"type":"FeatureCollection","features":[
{"type":"Feature","properties":{"id":1},"geometry":{"type":"Point","coordinates":[4.0,51.0,5]}},
{"type":"Feature","properties":{"id":2},"geometry":{"type":"Point","coordinates":[4.02,51.01,5]}}]}`
)

// zCase is one Z shapefile kind: its file name stem, the ogr2ogr layer
// type and source, and the shape type, record length and first geometry
// ReadShapefile must give.
type zCase struct {
	stem, nlt, src string
	shapeType      uint32
	recordLen      int // content length of record 1 as GDAL writes it
	want           orb.Geometry
}

func zCases() []zCase {
	square := orb.Ring{{4.0, 51.0}, {4.0, 51.01}, {4.01, 51.01}, {4.01, 51.0}, {4.0, 51.0}}     // clockwise, as shapefiles store it
	line := orb.LineString{{4.0, 51.0}, {4.01, 51.0}, {4.01, 51.01}, {4.0, 51.01}, {4.0, 51.0}} // lines keep the source order
	return []zCase{
		{"polygon_xyz", "POLYGON", zPolygons, shpPolygonZ, 184, orb.MultiPolygon{{square}}},
		{"polygon_xyzm", "POLYGON", zPolygons, shpPolygonZ, 240, orb.MultiPolygon{{square}}},
		{"polyline_xyz", "MULTILINESTRING", zPolygons, shpPolyLineZ, 184, orb.MultiLineString{line}},
		{"polyline_xyzm", "MULTILINESTRING", zPolygons, shpPolyLineZ, 240, orb.MultiLineString{line}},
		{"point_xyz", "POINT", zPoints, shpPointZ, 28, orb.Point{4.0, 51.0}},
		{"point_xyzm", "POINT", zPoints, shpPointZ, 36, orb.Point{4.0, 51.0}},
		{"multipoint_xyz", "MULTIPOINT", zPoints, shpMultiPointZ, 80, orb.MultiPoint{{4.0, 51.0}}},
		{"multipoint_xyzm", "MULTIPOINT", zPoints, shpMultiPointZ, 104, orb.MultiPoint{{4.0, 51.0}}},
	}
}

// checkZShapefile reads dir/stem.* and checks it against tc.
func checkZShapefile(t *testing.T, dir string, tc zCase) {
	t.Helper()
	files := readShapefileDir(t, dir)
	parts, err := ShapefileParts(files, tc.stem+".shp")
	require.NoError(t, err)
	shpData := parts[".shp"]
	require.Greater(t, len(shpData), 108)
	require.Equal(t, tc.shapeType, uint32(shpData[32])|uint32(shpData[33])<<8, "shape type in the header")
	require.Equal(t, tc.recordLen, 2*(int(shpData[106])<<8|int(shpData[107])), "record 1 content length")
	s, err := ReadShapefile(parts, ShapefileLimits{})
	require.NoError(t, err)
	assert.Equal(t, 4326, s.EPSG)
	assert.Equal(t, []string{"id"}, s.Fields)
	require.Len(t, s.Features, 2)
	assert.Equal(t, tc.want, s.Features[0].Geometry)
	assert.Equal(t, 1, s.Features[0].Attributes["id"])
	assert.Equal(t, 2, s.Features[1].Attributes["id"])
}

// TestReadShapefileZCommitted reads the committed Z fixtures (ogr2ogr
// output): with and without the optional M part.
func TestReadShapefileZCommitted(t *testing.T) {
	for _, tc := range zCases() {
		t.Run(tc.stem, func(t *testing.T) {
			dir := t.TempDir()
			for _, ext := range []string{".shp", ".shx", ".dbf", ".prj"} {
				data, err := os.ReadFile(filepath.Join("testdata", "shapefile-z", tc.stem+ext))
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(filepath.Join(dir, tc.stem+ext), data, 0o600))
			}
			checkZShapefile(t, dir, tc)
		})
	}
}

// TestReadShapefileZOgr2ogr makes the Z shapefiles with the installed GDAL.
func TestReadShapefileZOgr2ogr(t *testing.T) {
	ogr2ogr := testenv.RequireTool(t, "ogr2ogr")
	for _, tc := range zCases() {
		t.Run(tc.stem, func(t *testing.T) {
			dir := t.TempDir()
			src := filepath.Join(t.TempDir(), "src.geojson")
			require.NoError(t, os.WriteFile(src, []byte(tc.src), 0o600))
			dim := "XYZ"
			if strings.HasSuffix(tc.stem, "m") {
				dim = "XYZM"
			}
			runTool(t, ogr2ogr, "-f", "ESRI Shapefile", filepath.Join(dir, tc.stem+".shp"), src, "-nlt", tc.nlt, "-dim", dim)
			checkZShapefile(t, dir, tc)
		})
	}
}

// TestAddOptionalM checks the rewrite on its own: lengths fixed, no-data
// measures added, other data untouched, broken data left to the parser.
func TestAddOptionalM(t *testing.T) {
	read := func(stem string) []byte {
		data, err := os.ReadFile(filepath.Join("testdata", "shapefile-z", stem+".shp"))
		require.NoError(t, err)
		return data
	}
	tests := []struct {
		stem    string
		grownBy int // bytes added
	}{
		{"polygon_xyz", 2 * (16 + 8*5)},
		{"polyline_xyz", 2 * (16 + 8*5)},
		{"multipoint_xyz", 2 * (16 + 8*1)},
		{"point_xyz", 2 * 8},
		{"polygon_xyzm", 0},
		{"point_xyzm", 0},
	}
	for _, tc := range tests {
		t.Run(tc.stem, func(t *testing.T) {
			in := read(tc.stem)
			out := addOptionalM(in)
			assert.Equal(t, len(in)+tc.grownBy, len(out))
			assert.Equal(t, len(out), 2*int(uint32(out[24])<<24|uint32(out[25])<<16|uint32(out[26])<<8|uint32(out[27])), "file length")
			if tc.grownBy == 0 {
				assert.Equal(t, in, out)
				return
			}
			// With M the file now has the XYZM layout GDAL writes.
			withM := read(strings.Replace(tc.stem, "xyz", "xyzm", 1))
			assert.Equal(t, len(withM), len(out))
			assert.Equal(t, withM[100:108], out[100:108], "record 1 header")
		})
	}
	for name, data := range map[string][]byte{
		"truncated": read("polygon_xyz")[:150],
		"short":     read("polygon_xyz")[:60],
		"2-D":       []byte(fmt.Sprint(make([]byte, 100))),
	} {
		assert.Equal(t, data, addOptionalM(data), name)
	}
}
