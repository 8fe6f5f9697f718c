package crs

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/internal/testenv"
)

func TestLookup(t *testing.T) {
	for _, tc := range []struct {
		code       int
		name       string
		method     string
		unit       float64
		geographic bool
		helmert    bool
	}{
		{2154, "RGF93 v1 / Lambert-93", "Lambert Conic Conformal", 1, false, false},
		{27700, "OSGB36 / British National Grid", "Transverse Mercator", 1, false, true},
		{28992, "Amersfoort / RD New", "Oblique Stereographic", 1, false, true},
		{2263, "NAD83 / New York Long Island (ftUS)", "Lambert Conic Conformal", 1200.0 / 3937, false, false},
		{3031, "WGS 84 / Antarctic Polar Stereographic", "Polar Stereographic", 1, false, false},
		{2056, "CH1903+ / LV95", "Hotine Oblique Mercator (Swiss, variant B)", 1, false, true},
		{3857, "WGS 84 / Pseudo-Mercator", "Popular Visualisation Pseudo Mercator", 1, false, false},
		{900913, "WGS 84 / Pseudo-Mercator", "Popular Visualisation Pseudo Mercator", 1, false, false},
		{4283, "GDA94", "Geographic 2D", 1, true, false},
		{4313, "BD72", "Geographic 2D", 1, true, true},
		{8353, "S-JTSK [JTSK03] / Krovak East North", "Krovak (North Orientated)", 1, false, true},
		{2193, "NZGD2000 / New Zealand Transverse Mercator 2000", "Transverse Mercator", 1, false, false},
	} {
		t.Run(fmt.Sprint(tc.code), func(t *testing.T) {
			info, err := Lookup(tc.code)
			require.NoError(t, err)
			assert.Equal(t, tc.code, info.EPSG)
			assert.Equal(t, tc.name, info.Name)
			assert.Equal(t, tc.method, info.Method)
			assert.InDelta(t, tc.unit, info.Unit, 1e-15)
			assert.Equal(t, tc.geographic, info.Geographic)
			assert.Equal(t, tc.helmert, info.Helmert)
			assert.True(t, Supported(tc.code))
		})
	}
	for _, code := range []int{0, -1, 8857, 99999999} {
		_, err := Lookup(code)
		var ue *UnsupportedError
		require.True(t, errors.As(err, &ue), "EPSG:%d", code)
		assert.Equal(t, code, ue.EPSG)
		assert.ErrorIs(t, err, ErrUnsupportedCRS)
		assert.Contains(t, err.Error(), fmt.Sprintf("EPSG:%d", code))
	}
}

func TestTableSortedAndConsistent(t *testing.T) {
	for i := range epsgTable {
		en := &epsgTable[i]
		if i > 0 {
			require.Less(t, epsgTable[i-1].code, en.code, "table not sorted at %d", i)
		}
		require.Less(t, int(en.datum), len(datums), "EPSG:%d", en.code)
		require.Positive(t, en.unit, "EPSG:%d", en.code)
		if en.method != mGeographic {
			_, err := newProjection(en, newEllipsoid(datums[en.datum].a, datums[en.datum].rf))
			require.NoError(t, err)
		}
	}
}

// TestHelmertKnownPoint checks the datum shift on its own with the
// OSGB36 → WGS 84 Helmert (EPSG "OSGB36 to WGS 84 (6)"): pyproj 3.4.1
// without the OSTN15 grid gives, for OSGB36 52.5°N 1.5°W, WGS 84
// lon −1.5014879850609075, lat 52.5003738103626.
func TestHelmertKnownPoint(t *testing.T) {
	tr, err := New(4277, 4326)
	require.NoError(t, err)
	lon, lat := tr.Transform(-1.5, 52.5)
	assert.InDelta(t, 0, groundDistance(lon, lat, -1.5014879850609075, 52.5003738103626), 0.001)
	back, err := New(4326, 4277)
	require.NoError(t, err)
	lon, lat = back.Transform(lon, lat)
	assert.InDelta(t, 0, groundDistance(lon, lat, -1.5, 52.5), 0.001)
}

type wktSample struct {
	code    int
	flavour string
	wkt     string
}

func loadWKTSamples(t testing.TB) []wktSample {
	t.Helper()
	data, err := os.ReadFile("testdata/wkt_samples.json")
	require.NoError(t, err)
	var raw [][3]any
	require.NoError(t, json.Unmarshal(data, &raw))
	out := make([]wktSample, len(raw))
	for i, r := range raw {
		out[i] = wktSample{int(r[0].(float64)), r[1].(string), r[2].(string)}
	}
	return out
}

// knownWKTMisses are ESRI names too far from EPSG's to match by name, on
// geographic CRSs that have nothing but the name and an ellipsoid.
var knownWKTMisses = map[int]bool{
	4033: true, // GCS_OSU_91A: EPSG "Unknown datum based upon the OSU91A ellipsoid"
	4708: true, // GCS_Anna_1_1965: EPSG "Anna 1 Astro 1965"
}

// TestFromWKTSamples matches ESRI and OGC WKT1 texts pyproj wrote, with
// every AUTHORITY removed, back to a code: the code itself or one that
// transforms identically (NAD83 and NAD83(HARN) share their zones).
func TestFromWKTSamples(t *testing.T) {
	ref := loadReference(t)
	point := map[int][2]float64{}
	for _, rows := range [][][5]float64{ref.Projected, ref.Geographic} {
		for _, r := range rows {
			point[int(r[0])] = [2]float64{r[1], r[2]}
		}
	}
	samples := loadWKTSamples(t)
	require.GreaterOrEqual(t, len(samples), 200)
	exact, equivalent := 0, 0
	var misses []string
	for _, s := range samples {
		if strings.HasPrefix(s.wkt, "PROJCS[") && !strings.Contains(s.wkt, "PARAMETER[") ||
			strings.HasPrefix(s.wkt, "GEOGCS[") && !strings.Contains(s.wkt, "SPHEROID[") {
			continue // pyproj wrote a bare name (ESRI has no equivalent): nothing to match
		}
		got, err := FromWKT(s.wkt)
		if err != nil && knownWKTMisses[s.code] {
			continue
		}
		if err != nil {
			misses = append(misses, fmt.Sprintf("EPSG:%d %s: %v", s.code, s.flavour, err))
			continue
		}
		if got == s.code {
			exact++
			continue
		}
		p, ok := point[s.code]
		require.True(t, ok, "no reference point for EPSG:%d", s.code)
		a, err := New(4326, s.code)
		require.NoError(t, err)
		b, err := New(4326, got)
		if err != nil {
			misses = append(misses, fmt.Sprintf("EPSG:%d %s: matched unsupported EPSG:%d", s.code, s.flavour, got))
			continue
		}
		ax, ay := a.Transform(p[0], p[1])
		bx, by := b.Transform(p[0], p[1])
		if math.Hypot(ax-bx, ay-by) > 1e-6 {
			misses = append(misses, fmt.Sprintf("EPSG:%d %s: matched EPSG:%d, %g apart", s.code, s.flavour, got, math.Hypot(ax-bx, ay-by)))
			continue
		}
		equivalent++
	}
	t.Logf("%d WKT samples: %d matched their code, %d an equivalent one, %d missed", len(samples), exact, equivalent, len(misses))
	assert.Empty(t, misses)
}

func TestFromWKT(t *testing.T) {
	for _, tc := range []struct {
		wkt  string
		want int
	}{
		{`PROJCS["RGF_1993_Lambert_93",GEOGCS["GCS_RGF_1993",DATUM["D_RGF_1993",SPHEROID["GRS_1980",6378137.0,298.257222101]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]],PROJECTION["Lambert_Conformal_Conic"],PARAMETER["False_Easting",700000.0],PARAMETER["False_Northing",6600000.0],PARAMETER["Central_Meridian",3.0],PARAMETER["Standard_Parallel_1",49.0],PARAMETER["Standard_Parallel_2",44.0],PARAMETER["Latitude_Of_Origin",46.5],UNIT["Meter",1.0]]`, 2154},
		{`PROJCS["British_National_Grid",GEOGCS["GCS_OSGB_1936",DATUM["D_OSGB_1936",SPHEROID["Airy_1830",6377563.396,299.3249646]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]],PROJECTION["Transverse_Mercator"],PARAMETER["False_Easting",400000.0],PARAMETER["False_Northing",-100000.0],PARAMETER["Central_Meridian",-2.0],PARAMETER["Scale_Factor",0.9996012717],PARAMETER["Latitude_Of_Origin",49.0],UNIT["Meter",1.0]]`, 27700},
		{`PROJCS["WGS_1984_UTM_Zone_33N",GEOGCS["GCS_WGS_1984"]]`, 32633},
		{`GEOGCS["GCS_WGS_1984",DATUM["D_WGS_1984",SPHEROID["WGS_1984",6378137.0,298.257223563]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]]`, 4326},
		{`PROJCS["custom",GEOGCS["x",AUTHORITY["EPSG","4326"]],AUTHORITY["EPSG","5514"]]`, 5514},
		// WKT2 (pyproj's WKT2_2019 without ID and USAGE), unit in the axes and the parameters.
		{`PROJCRS["NAD83 / New York Long Island (ftUS)",BASEGEOGCRS["NAD83",DATUM["North American Datum 1983",ELLIPSOID["GRS 1980",6378137,298.257222101,LENGTHUNIT["metre",1]]],PRIMEM["Greenwich",0,ANGLEUNIT["degree",0.0174532925199433]]],CONVERSION["SPCS83 New York Long Island zone (US Survey feet)",METHOD["Lambert Conic Conformal (2SP)"],PARAMETER["Latitude of false origin",40.1666666666667,ANGLEUNIT["degree",0.0174532925199433]],PARAMETER["Longitude of false origin",-74,ANGLEUNIT["degree",0.0174532925199433]],PARAMETER["Latitude of 1st standard parallel",41.0333333333333,ANGLEUNIT["degree",0.0174532925199433]],PARAMETER["Latitude of 2nd standard parallel",40.6666666666667,ANGLEUNIT["degree",0.0174532925199433]],PARAMETER["Easting at false origin",984250,LENGTHUNIT["US survey foot",0.304800609601219]],PARAMETER["Northing at false origin",0,LENGTHUNIT["US survey foot",0.304800609601219]]],CS[Cartesian,2],AXIS["easting (X)",east,ORDER[1],LENGTHUNIT["US survey foot",0.304800609601219]],AXIS["northing (Y)",north,ORDER[2],LENGTHUNIT["US survey foot",0.304800609601219]]]`, 2263},
		// The same zone renamed: only the numbers identify it.
		{`PROJCRS["my farm grid",BASEGEOGCRS["NAD83",DATUM["North American Datum 1983",ELLIPSOID["GRS 1980",6378137,298.257222101,LENGTHUNIT["metre",1]]],PRIMEM["Greenwich",0,ANGLEUNIT["degree",0.0174532925199433]]],CONVERSION["x",METHOD["Lambert Conic Conformal (2SP)"],PARAMETER["Latitude of false origin",40.1666666666667,ANGLEUNIT["degree",0.0174532925199433]],PARAMETER["Longitude of false origin",-74,ANGLEUNIT["degree",0.0174532925199433]],PARAMETER["Latitude of 1st standard parallel",41.0333333333333,ANGLEUNIT["degree",0.0174532925199433]],PARAMETER["Latitude of 2nd standard parallel",40.6666666666667,ANGLEUNIT["degree",0.0174532925199433]],PARAMETER["Easting at false origin",300000,LENGTHUNIT["metre",1]],PARAMETER["Northing at false origin",0,LENGTHUNIT["metre",1]]],CS[Cartesian,2],AXIS["easting (X)",east,ORDER[1],LENGTHUNIT["metre",1]],AXIS["northing (Y)",north,ORDER[2],LENGTHUNIT["metre",1]]]`, 32118},
	} {
		got, err := FromWKT(tc.wkt)
		require.NoError(t, err, tc.wkt)
		assert.Equal(t, tc.want, got, tc.wkt)
	}
	for _, bad := range []string{"", "hello", `PROJCS["Lambert_Conformal_Conic_Custom",GEOGCS["GCS_WGS_1984"]]`, `GEOGCS["GCS_Tokyo"]`, `PROJCS["x",`} {
		_, err := FromWKT(bad)
		assert.ErrorIs(t, err, ErrNoMatch, bad)
	}
}

// TestLiveAgainstPyproj spot-checks random codes and points against pyproj
// itself (not the committed reference) when python3-pyproj is installed.
func TestLiveAgainstPyproj(t *testing.T) {
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import pyproj").Run(); err != nil {
		if testenv.InCI() {
			t.Fatalf("%s with pyproj is not available, and CI is set: install python3-pyproj proj-data", py)
		}
		t.Skipf("%s with pyproj is not available (skipping outside CI)", py)
	}
	ref := loadReference(t)
	rng := rand.New(rand.NewPCG(15, 6))
	var lines []string
	var sample [][5]float64
	for range 150 {
		r := ref.Projected[rng.IntN(len(ref.Projected))]
		// Move the point by up to ±0.05° so the check is not the committed one.
		r[1] += (rng.Float64() - 0.5) * 0.1
		r[2] += (rng.Float64() - 0.5) * 0.1
		sample = append(sample, r)
		lines = append(lines, fmt.Sprintf("%d %.10f %.10f", int(r[0]), r[1], r[2]))
	}
	script := `import sys, warnings
warnings.simplefilter("ignore")
from pyproj import Transformer
for line in sys.stdin:
    c, lon, lat = line.split()
    x, y = Transformer.from_crs(4326, int(c), always_xy=True).transform(float(lon), float(lat))
    print(repr(x), repr(y))
`
	cmd := exec.Command(py, "-c", script)
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	out, err := cmd.Output()
	require.NoError(t, err)
	rows := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, rows, len(sample))
	worst := map[bool]float64{}
	for i, row := range rows {
		var x, y float64
		_, err := fmt.Sscan(row, &x, &y)
		require.NoError(t, err, row)
		code := int(sample[i][0])
		fwd, inv, info := checkPoint(t, code, sample[i][1], sample[i][2], x, y)
		tol := tolNone
		if info.Helmert {
			tol = tolHelmert
		}
		worst[info.Helmert] = math.Max(worst[info.Helmert], math.Max(fwd, inv))
		assert.LessOrEqual(t, fwd, tol, "EPSG:%d %s at %v", code, info.Name, sample[i][1:3])
		assert.LessOrEqual(t, inv, tol, "EPSG:%d %s inverse at %v", code, info.Name, sample[i][1:3])
	}
	t.Logf("live pyproj, %d points: max error %.3g m (no shift), %.3g m (Helmert)", len(rows), worst[false], worst[true])
}

func BenchmarkTransform(b *testing.B) {
	for _, bc := range []struct {
		name     string
		from, to int
		x, y     float64
	}{
		{"TM_UTM31N", 4326, 32631, 4.06, 50.745},
		{"LCC_Lambert93", 4326, 2154, 2.35, 48.85},
		{"ObliqueStereo_RDNew_Helmert", 4326, 28992, 5.1, 52.1},
		{"TM_BNG_Helmert", 4326, 27700, -1.5, 52.5},
		{"Inverse_LAEA_3035", 3035, 4326, 3902259.6, 3087378.3},
	} {
		b.Run(bc.name, func(b *testing.B) {
			tr, err := New(bc.from, bc.to)
			require.NoError(b, err)
			for i := 0; b.Loop(); i++ {
				tr.Transform(bc.x+float64(i%100)*1e-4, bc.y)
			}
		})
	}
}
