package zoning

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readShapefileDir loads every file of dir/base.* keyed by file name.
func readShapefileDir(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	files := map[string][]byte{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		files[e.Name()] = data
	}
	return files
}

func TestEPSGFromPRJ(t *testing.T) {
	tests := []struct {
		prj  string
		want int
	}{
		{`GEOGCS["GCS_WGS_1984",DATUM["D_WGS_1984",SPHEROID["WGS_1984",6378137.0,298.257223563]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]]`, 4326},
		{`PROJCS["WGS_1984_UTM_Zone_33N",GEOGCS["GCS_WGS_1984",DATUM["D_WGS_1984",SPHEROID["WGS_1984",6378137.0,298.257223563]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]],PROJECTION["Transverse_Mercator"],UNIT["Meter",1.0]]`, 32633},
		{`PROJCS["WGS_1984_UTM_Zone_21S",GEOGCS["GCS_WGS_1984"],UNIT["Meter",1.0]]`, 32721},
		{`PROJCS["WGS 84 / UTM zone 31N",GEOGCS["WGS 84",AUTHORITY["EPSG","4326"]],UNIT["metre",1,AUTHORITY["EPSG","9001"]],AUTHORITY["EPSG","32631"]]`, 32631},
		{`PROJCS["ETRS_1989_UTM_Zone_32N",GEOGCS["GCS_ETRS_1989"],UNIT["Meter",1.0]]`, 25832},
		{`PROJCS["ETRS89 / UTM zone 33N",GEOGCS["ETRS89"]]`, 25833},
		{`GEOGCS["WGS 84",DATUM["WGS_1984"]]`, 4326},
		{`GEOGCS["GCS_ETRS_1989",DATUM["D_ETRS_1989"]]`, 4258},
		{`PROJCS["WGS_1984_Web_Mercator_Auxiliary_Sphere",GEOGCS["GCS_WGS_1984"]]`, 3857},
		{`PROJCRS["WGS 84 / UTM zone 34N",BASEGEOGCRS["WGS 84"],ID["EPSG",32634]]`, 32634},
		{"\ufeffGEOGCS[\"GCS_WGS_1984\"]\n", 4326},
	}
	for _, tc := range tests {
		got, err := EPSGFromPRJ(tc.prj)
		require.NoError(t, err, tc.prj)
		assert.Equal(t, tc.want, got, tc.prj)
	}
	for _, bad := range []string{"", "hello", `PROJCS["Lambert_Conformal_Conic_Custom",GEOGCS["GCS_WGS_1984"]]`, `GEOGCS["GCS_Tokyo"]`} {
		_, err := EPSGFromPRJ(bad)
		assert.ErrorIs(t, err, ErrUnknownPRJ, bad)
	}
}

func TestReadShapefileReal(t *testing.T) {
	tests := []struct {
		dir, shp  string
		epsg      int
		features  int
		field     string
		geomPoint bool
	}{
		{"slovenia-raba-lulc", "slovenia_raba_lulc.shp", 32633, 88, "RABA_ID", false},
		{"ofpetrial-ssurgo-simple1", "ssurgo-simple1.shp", 4326, 11, "clay", false},
		{"ofpetrial-yield-simple1", "yield-simple1.shp", 4326, 3365, "Yld_Vol_Dr", true},
	}
	for _, tc := range tests {
		t.Run(tc.dir, func(t *testing.T) {
			files := readShapefileDir(t, testenv.DataDir(t, "shapefiles", tc.dir))
			parts, err := ShapefileParts(files, tc.shp)
			require.NoError(t, err)
			s, err := ReadShapefile(parts, ShapefileLimits{})
			require.NoError(t, err)
			assert.Equal(t, tc.epsg, s.EPSG)
			assert.Len(t, s.Features, tc.features)
			assert.Contains(t, s.Fields, tc.field)
			for _, f := range s.Features {
				if tc.geomPoint {
					assert.IsType(t, orb.Point{}, f.Geometry)
				} else {
					require.IsType(t, orb.MultiPolygon{}, f.Geometry)
					assert.Positive(t, geo.Area(f.Geometry.(orb.MultiPolygon)))
				}
				_, ok, err := numeric(f.Attributes[tc.field])
				assert.NoError(t, err)
				assert.True(t, ok)
			}
		})
	}
}

func TestShapefilePartsErrors(t *testing.T) {
	_, err := ShapefileParts(map[string][]byte{"a.dbf": {1}}, "")
	assert.ErrorIs(t, err, ErrShapefile)
	_, err = ShapefileParts(map[string][]byte{"a.shp": {1}, "b.shp": {1}}, "")
	assert.ErrorContains(t, err, "several")
	_, err = ShapefileParts(map[string][]byte{"a.shp": {1}}, "b.shp")
	assert.ErrorContains(t, err, "b.shp not found")
	p, err := ShapefileParts(map[string][]byte{"dir/Soil.SHP": {1}, "Soil.dbf": {2}, "other.dbf": {3}}, "soil.shp")
	require.NoError(t, err)
	assert.Equal(t, map[string][]byte{".shp": {1}, ".dbf": {2}}, p)
}

func TestReadShapefileLimits(t *testing.T) {
	files := readShapefileDir(t, testenv.DataDir(t, "shapefiles", "slovenia-raba-lulc"))
	parts, err := ShapefileParts(files, "")
	require.NoError(t, err)
	for _, lim := range []ShapefileLimits{{MaxFileBytes: 1000}, {MaxRecords: 10}, {MaxPoints: 5}, {MaxTotalPoints: 100}} {
		_, err := ReadShapefile(parts, lim)
		assert.ErrorIs(t, err, ErrShapefile, "%+v", lim)
	}
	// A .dbf header claiming 2³² records must be refused before allocation.
	dbf := bytes.Clone(parts[".dbf"])
	binary.LittleEndian.PutUint32(dbf[4:8], math.MaxUint32)
	bad := map[string][]byte{".shp": parts[".shp"], ".dbf": dbf}
	_, err = ReadShapefile(bad, ShapefileLimits{})
	assert.ErrorIs(t, err, ErrShapefile)
	// A .shp record claiming a huge content length.
	shpData := bytes.Clone(parts[".shp"])
	binary.BigEndian.PutUint32(shpData[104:108], math.MaxUint32/2)
	_, err = ReadShapefile(map[string][]byte{".shp": shpData, ".dbf": parts[".dbf"]}, ShapefileLimits{})
	assert.ErrorIs(t, err, ErrShapefile)
	_, err = ReadShapefile(map[string][]byte{".shp": parts[".shp"]}, ShapefileLimits{})
	assert.ErrorContains(t, err, ".dbf missing")
}

// TestReadShapefileCorrupted feeds thousands of corrupted variants of the
// real files (byte flips, 32-bit overwrites with extreme values, truncation)
// and checks that none panics or allocates more than a bounded amount.
func TestReadShapefileCorrupted(t *testing.T) {
	files := readShapefileDir(t, testenv.DataDir(t, "shapefiles", "ofpetrial-ssurgo-simple1"))
	parts, err := ShapefileParts(files, "")
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(11, 12))
	var ms runtime.MemStats
	iterations := 3000
	if testing.Short() {
		iterations = 300
	}
	worst := uint64(0)
	for i := range iterations {
		mut := map[string][]byte{}
		for ext, data := range parts {
			mut[ext] = bytes.Clone(data)
		}
		target := []string{".shp", ".dbf", ".prj"}[r.IntN(3)]
		d := mut[target]
		switch r.IntN(3) {
		case 0:
			for range 1 + r.IntN(8) {
				d[r.IntN(len(d))] ^= byte(1 + r.IntN(255))
			}
		case 1:
			if len(d) > 8 {
				off := r.IntN(len(d) - 4)
				binary.LittleEndian.PutUint32(d[off:], []uint32{0, math.MaxUint32, math.MaxInt32, 1 << 20}[r.IntN(4)])
			}
		case 2:
			d = d[:r.IntN(len(d))]
		}
		mut[target] = d
		runtime.ReadMemStats(&ms)
		before := ms.TotalAlloc
		_, _ = ReadShapefile(mut, ShapefileLimits{}) // must not panic
		runtime.ReadMemStats(&ms)
		worst = max(worst, ms.TotalAlloc-before)
		if ms.TotalAlloc-before > 256<<20 {
			t.Fatalf("iteration %d: %d MB allocated for a %d-byte file", i, (ms.TotalAlloc-before)>>20, len(d))
		}
	}
	t.Logf("worst allocation over %d corrupted inputs: %.1f MB", iterations, float64(worst)/(1<<20))
}

func FuzzReadShapefile(f *testing.F) {
	dir := filepath.Join("..", "..", "shared", "data", "shapefiles", "ofpetrial-ssurgo-simple1")
	shpData, err1 := os.ReadFile(filepath.Join(dir, "ssurgo-simple1.shp"))
	dbfData, err2 := os.ReadFile(filepath.Join(dir, "ssurgo-simple1.dbf"))
	if err1 == nil && err2 == nil {
		f.Add(shpData, dbfData)
	}
	f.Add([]byte{0, 0, 39, 10}, []byte{3})
	// A PolygonZ without the M part, which ReadShapefile rewrites first.
	zShp, err1 := os.ReadFile(filepath.Join("testdata", "shapefile-z", "polygon_xyz.shp"))
	zDbf, err2 := os.ReadFile(filepath.Join("testdata", "shapefile-z", "polygon_xyz.dbf"))
	if err1 == nil && err2 == nil {
		f.Add(zShp, zDbf)
	}
	f.Fuzz(func(t *testing.T, shpData, dbfData []byte) {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		before := ms.TotalAlloc
		_, _ = ReadShapefile(map[string][]byte{".shp": shpData, ".dbf": dbfData}, ShapefileLimits{})
		runtime.ReadMemStats(&ms)
		if ms.TotalAlloc-before > 256<<20 {
			t.Fatalf("%d MB allocated for %d+%d input bytes", (ms.TotalAlloc-before)>>20, len(shpData), len(dbfData))
		}
	})
}

func TestRasterizeAttributeRealSlovenia(t *testing.T) {
	files := readShapefileDir(t, testenv.DataDir(t, "shapefiles", "slovenia-raba-lulc"))
	parts, err := ShapefileParts(files, "slovenia_raba_lulc.shp")
	require.NoError(t, err)
	s, err := ReadShapefile(parts, ShapefileLimits{})
	require.NoError(t, err)
	// The slovenia-eolearn grid (data README).
	grid := geo.Grid{EPSG: 32633, X0: 465181.0522318204, Y0: 5080254.63349641, DX: 9.99479222007154, DY: 9.997448467363668, Cols: 100, Rows: 101}
	vals, err := RasterizeAttribute(s, "raba_id", grid)
	require.NoError(t, err)
	require.Len(t, vals, 100*101)
	counts := map[float64]int{}
	missing := 0
	for _, v := range vals {
		if math.IsNaN(v) {
			missing++
			continue
		}
		counts[v]++
	}
	// RABA codes: 1300 grassland dominates the valley, forest (2000) most of the image.
	assert.Greater(t, counts[2000], 5000, "forest pixels %v", counts)
	assert.Greater(t, counts[1300], 1000, "grassland pixels %v", counts)
	assert.Less(t, missing, 200, "the LULC polygons cover the image")
	_, err = RasterizeAttribute(s, "nope", grid)
	assert.ErrorIs(t, err, ErrAttribute)
	_, err = RasterizeAttribute(s, "LULC_NAME", grid)
	assert.ErrorIs(t, err, ErrAttribute)
}

func TestRasterizeAttributeSynthetic(t *testing.T) {
	// 4×4 grid of 10 m pixels in UTM 31N; a square polygon over the left half,
	// a thin sliver holding no centre, and points in the right half.
	grid := geo.Grid{EPSG: 32631, X0: 0, Y0: 40, DX: 10, DY: 10, Cols: 4, Rows: 4}
	half := orb.MultiPolygon{{{{0, 0}, {20, 0}, {20, 40}, {0, 40}, {0, 0}}}}
	sliver := orb.MultiPolygon{{{{21, 10}, {22, 10}, {22, 12}, {21, 12}, {21, 10}}}}
	s := &Shapes{EPSG: 32631, Fields: []string{"V"}, Features: []Shape{
		{Geometry: half, Attributes: map[string]any{"V": 5.0}},
		{Geometry: sliver, Attributes: map[string]any{"V": 9}},
		{Geometry: orb.Point{35, 35}, Attributes: map[string]any{"V": 1.0}},
		{Geometry: orb.Point{36, 36}, Attributes: map[string]any{"V": "3"}},
		{Geometry: orb.Point{36, 5}, Attributes: map[string]any{"V": nil}},
		{Geometry: orb.Point{15, 15}, Attributes: map[string]any{"V": 100.0}}, // in the polygon: polygon wins
	}}
	got, err := RasterizeAttribute(s, "v", grid)
	require.NoError(t, err)
	n := math.NaN()
	want := []float64{
		5, 5, n, 2,
		5, 5, n, n,
		5, 5, 9, n,
		5, 5, n, n,
	}
	for i := range want {
		if math.IsNaN(want[i]) {
			assert.True(t, math.IsNaN(got[i]), "pixel %d = %v", i, got[i])
		} else {
			assert.Equal(t, want[i], got[i], "pixel %d", i)
		}
	}
	s.Features = append(s.Features, Shape{Geometry: orb.MultiLineString{{{0, 0}, {1, 1}}}, Attributes: map[string]any{"V": 1.0}})
	_, err = RasterizeAttribute(s, "V", grid)
	assert.ErrorIs(t, err, ErrAttribute)
}

func TestWriteShapefileZipOgrinfo(t *testing.T) {
	c := testCollection()
	var buf bytes.Buffer
	modified := time.Date(2026, 11, 21, 12, 30, 0, 0, time.UTC)
	require.NoError(t, WriteShapefileZip(&buf, c, ShapefileOptions{Modified: modified}))
	zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	require.NoError(t, err)
	var names []string
	files := map[string][]byte{}
	for _, f := range zr.File {
		names = append(names, f.Name)
		assert.True(t, modified.Equal(f.Modified), "%s modified %v", f.Name, f.Modified)
		rc, err := f.Open()
		require.NoError(t, err)
		var b bytes.Buffer
		_, err = b.ReadFrom(rc)
		require.NoError(t, err)
		files[f.Name] = b.Bytes()
	}
	assert.Equal(t, []string{"zones.shp", "zones.shx", "zones.dbf", "zones.prj"}, names)
	// dBASE last-update date: years since 1900, month, day.
	assert.Equal(t, []byte{126, 11, 21}, files["zones.dbf"][1:4])
	var again bytes.Buffer
	require.NoError(t, WriteShapefileZip(&again, c, ShapefileOptions{Modified: modified}))
	assert.Equal(t, buf.Bytes(), again.Bytes(), "reproducible with a fixed time")

	// Read back with our own reader: one record per zone, multi-part zone 2.
	parts, err := ShapefileParts(files, "")
	require.NoError(t, err)
	s, err := ReadShapefile(parts, ShapefileLimits{})
	require.NoError(t, err)
	assert.Equal(t, 4326, s.EPSG)
	assert.Equal(t, []string{"ZONE", "RATE", "RASTER_VAL"}, s.Fields)
	require.Len(t, s.Features, 2)
	assert.Equal(t, 1, s.Features[0].Attributes["ZONE"])
	assert.InDelta(t, 140.5, s.Features[0].Attributes["RATE"], 1e-9)
	assert.InDelta(t, 0.41, s.Features[0].Attributes["RASTER_VAL"], 1e-9)
	assert.Len(t, s.Features[1].Geometry.(orb.MultiPolygon), 2, "zone 2 has two parts")

	ogrinfo := testenv.RequireTool(t, "ogrinfo")
	zipPath := filepath.Join(t.TempDir(), "zones.zip")
	require.NoError(t, os.WriteFile(zipPath, buf.Bytes(), 0o600))
	out := runTool(t, ogrinfo, "-al", "-ro", "/vsizip/"+zipPath)
	assert.Contains(t, out, "Geometry: Polygon")
	assert.Contains(t, out, "Feature Count: 2")
	assert.Contains(t, out, `GEOGCRS["WGS 84"`)
	assert.Contains(t, out, "ZONE: Integer")
	assert.Contains(t, out, "RATE: Real")
	assert.Contains(t, out, "RATE (Real) = 140.5")
	assert.Contains(t, out, "RATE (Real) = 99.5")
	assert.Contains(t, out, "MULTIPOLYGON")
	// go-shp alone gives 1924-05-03.
	assert.Contains(t, out, "DBF_DATE_LAST_UPDATE=2026-11-21")
	assert.NotContains(t, strings.ToLower(out), "error")

	// More than 100 zones are refused for a prescription, allowed for conversion.
	many := &Collection{EPSG: 4326}
	for z := 1; z <= 101; z++ {
		x := float64(z) * 0.001
		many.Features = append(many.Features, Feature{Zone: z, Polygon: orb.Polygon{{{x, 0}, {x + 0.001, 0}, {x + 0.001, 0.001}, {x, 0.001}, {x, 0}}}})
	}
	assert.ErrorIs(t, WriteShapefileZip(&bytes.Buffer{}, many, ShapefileOptions{}), ErrTooManyZones)
	assert.NoError(t, WriteShapefileZip(&bytes.Buffer{}, many, ShapefileOptions{NoZoneLimit: true}))
}

func TestGeoJSONToShapefileZip(t *testing.T) {
	c := testCollection()
	js, err := c.MarshalJSON()
	require.NoError(t, err)
	var buf bytes.Buffer
	before := time.Now().UTC().Add(-2 * time.Second) // zip times have a 1 s resolution
	require.NoError(t, GeoJSONToShapefileZip(js, &buf))
	after := time.Now().UTC().Add(2 * time.Second)
	zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	require.NoError(t, err)
	assert.Len(t, zr.File, 4)
	for _, f := range zr.File {
		assert.True(t, f.Modified.After(before) && f.Modified.Before(after), "%s modified %v, now %v", f.Name, f.Modified, before)
		if strings.HasSuffix(f.Name, ".dbf") {
			rc, err := f.Open()
			require.NoError(t, err)
			head := make([]byte, 4)
			_, err = io.ReadFull(rc, head)
			require.NoError(t, err)
			rc.Close()
			assert.Equal(t, f.Modified.Year()-1900, int(head[1]), "dbf year")
		}
	}
	for _, bad := range []string{`{}`, `{"type":"FeatureCollection","features":[]}`, `{"type":"FeatureCollection","features":[{"geometry":{"type":"Point","coordinates":[1,2]}}]}`, `[`} {
		assert.Error(t, GeoJSONToShapefileZip([]byte(bad), &bytes.Buffer{}), bad)
	}
}

// hostileDBF builds a dBase III file of nRec one-byte records (the
// deletion flag only) with nFields zero-length character fields, the
// layout that made go-shapefile allocate gigabytes, and an empty .shp.
func hostileDBF(nFields, nRec int) (shp, dbf []byte) {
	le := binary.LittleEndian
	var d bytes.Buffer
	hdr := make([]byte, 32)
	hdr[0] = 3
	le.PutUint32(hdr[4:], uint32(nRec))
	le.PutUint16(hdr[8:], uint16(min(32+32*nFields+1, 65535)))
	le.PutUint16(hdr[10:], 1)
	d.Write(hdr)
	for i := range nFields {
		fd := make([]byte, 32)
		copy(fd, "F"+strings.Repeat("x", i%5))
		fd[11] = 'C'
		d.Write(fd)
	}
	d.WriteByte(0x0d)
	d.Write(bytes.Repeat([]byte{' '}, nRec))
	d.WriteByte(0x1a)
	shp = make([]byte, 100)
	binary.BigEndian.PutUint32(shp[0:], 9994)
	binary.BigEndian.PutUint32(shp[24:], 50)
	le.PutUint32(shp[28:], 1000)
	le.PutUint32(shp[32:], 5)
	return shp, d.Bytes()
}

func TestReadShapefileHostileDBF(t *testing.T) {
	shp, dbf := hostileDBF(2000, 100_000)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, err := ReadShapefile(map[string][]byte{".shp": shp, ".dbf": dbf}, ShapefileLimits{})
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, ErrShapefile)
	assert.Less(t, time.Since(start), 2*time.Second)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(16<<20), "bytes allocated")

	// Each layout defect on its own, with the .shp record count matching.
	le := binary.LittleEndian
	tests := []struct {
		name   string
		edit   func(d []byte) []byte
		errMsg string
	}{
		{"valid", func(d []byte) []byte { return d }, ""},
		{"zero-length field", func(d []byte) []byte { d[64+16] = 0; return d }, "field 2 has length 0"},
		{"header size not descriptors", func(d []byte) []byte { le.PutUint16(d[8:], 40); return d }, "header size 40"},
		{"terminator early", func(d []byte) []byte { d[64] = 0x0d; return d }, "terminator inside"},
		{"no terminator at end", func(d []byte) []byte { le.PutUint16(d[8:], 65); return d }, "no field terminator"},
		{"record size mismatch", func(d []byte) []byte { le.PutUint16(d[10:], 4); return d }, "add up to 3 bytes"},
		{"rows differ from shapes", func(d []byte) []byte { le.PutUint32(d[4:], 1); return d }, "1 attribute rows but 0 shapes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			shp, dbf := hostileDBF(2, 0)
			dbf[32+16], dbf[64+16] = 1, 1
			le.PutUint16(dbf[10:], 3)
			_, err := ReadShapefile(map[string][]byte{".shp": shp, ".dbf": tt.edit(dbf)}, ShapefileLimits{})
			if tt.errMsg == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrShapefile)
			assert.ErrorContains(t, err, tt.errMsg)
		})
	}
	// The cell cap: 10 one-byte fields × 600,000 rows is 6M cells.
	require.ErrorContains(t, checkDBFLayout(func() []byte {
		_, d := hostileDBF(10, 0)
		for i := range 10 {
			d[32+32*i+16] = 1
		}
		le.PutUint32(d[4:], 600_000)
		le.PutUint16(d[10:], 11)
		return d
	}(), 600_000, 1_000_000), "exceed 5000000 cells")
}

// TestReadShapefileWithoutPRJ: without a .prj a shapefile is EPSG:4326
// only when its coordinates are longitude/latitude; projected metres (the
// Slovenia RABA file, EPSG:32633) are refused instead of being stored as
// degrees.
func TestReadShapefileWithoutPRJ(t *testing.T) {
	tests := []struct {
		dir      string
		wantErr  bool
		features int
	}{
		{"slovenia-raba-lulc", true, 0},
		{"ofpetrial-ssurgo-simple1", false, 11},
		{"ofpetrial-yield-simple1", false, 3365},
	}
	for _, tc := range tests {
		t.Run(tc.dir, func(t *testing.T) {
			files := readShapefileDir(t, testenv.DataDir(t, "shapefiles", tc.dir))
			parts, err := ShapefileParts(files, "")
			require.NoError(t, err)
			require.NotEmpty(t, parts[".prj"])
			delete(parts, ".prj")
			s, err := ReadShapefile(parts, ShapefileLimits{})
			if tc.wantErr {
				require.ErrorIs(t, err, ErrNoPRJ)
				assert.ErrorIs(t, err, ErrShapefile)
				assert.ErrorContains(t, err, "not longitude/latitude")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, 4326, s.EPSG)
			assert.Len(t, s.Features, tc.features)
		})
	}
}
