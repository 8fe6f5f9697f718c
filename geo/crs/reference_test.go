package crs

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// reference is testdata/pyproj_reference.json, written by gen/gen_epsg.py:
// points inside each CRS's area of use, lon/lat (EPSG:4326) → x/y by
// pyproj's default transformation with always_xy.
type reference struct {
	Source     string       `json:"source"`
	Projected  [][5]float64 `json:"projected"`
	Geographic [][5]float64 `json:"geographic"`
	Refused    [][3]any     `json:"refused"`
}

func loadReference(t testing.TB) reference {
	t.Helper()
	data, err := os.ReadFile("testdata/pyproj_reference.json")
	require.NoError(t, err)
	var ref reference
	require.NoError(t, json.Unmarshal(data, &ref))
	return ref
}

// Tolerances of the issue: 1 cm where the datum equals WGS 84, 1 m for Helmert datums.
const (
	tolNone    = 0.01
	tolHelmert = 1.0
)

// groundDistance is the distance in metres between two lon/lat points a few
// metres apart (local flat approximation).
func groundDistance(lon1, lat1, lon2, lat2 float64) float64 {
	dlon := math.Mod(lon2-lon1+540, 360) - 180
	dy := (lat2 - lat1) * 111320
	dx := dlon * 111320 * math.Cos(lat1*deg)
	return math.Hypot(dx, dy)
}

type errStats struct {
	codes      map[int]bool
	points     int
	fwd, inv   float64
	worstCode  int
	helmertMax float64
}

// checkPoint returns the forward error (metres) of x/y and the inverse
// error (metres on the ground) of lon/lat for one reference point.
func checkPoint(t testing.TB, code int, lon, lat, x, y float64) (fwd, inv float64, info Info) {
	info, err := Lookup(code)
	require.NoError(t, err)
	f, err := New(4326, code)
	require.NoError(t, err)
	gx, gy := f.Transform(lon, lat)
	if info.Geographic {
		fwd = groundDistance(x, y, gx, gy)
	} else {
		fwd = math.Hypot(gx-x, gy-y) * info.Unit
	}
	b, err := New(code, 4326)
	require.NoError(t, err)
	blon, blat := b.Transform(x, y)
	inv = groundDistance(lon, lat, blon, blat)
	if math.IsNaN(fwd) {
		fwd = math.Inf(1)
	}
	if math.IsNaN(inv) {
		inv = math.Inf(1)
	}
	return fwd, inv, info
}

func TestTableMatchesPyproj(t *testing.T) {
	ref := loadReference(t)
	require.GreaterOrEqual(t, len(ref.Projected), 200)
	stats := map[string]*errStats{}
	var failures []string
	for _, rows := range [][][5]float64{ref.Projected, ref.Geographic} {
		for _, r := range rows {
			code := int(r[0])
			fwd, inv, info := checkPoint(t, code, r[1], r[2], r[3], r[4])
			tol := tolNone
			key := info.Method
			if info.Helmert {
				tol = tolHelmert
				key += " (Helmert)"
			}
			s := stats[key]
			if s == nil {
				s = &errStats{codes: map[int]bool{}}
				stats[key] = s
			}
			s.codes[code] = true
			s.points++
			if fwd > s.fwd {
				s.fwd, s.worstCode = fwd, code
			}
			s.inv = math.Max(s.inv, inv)
			if !(fwd <= tol) || !(inv <= tol) {
				failures = append(failures, fmt.Sprintf("EPSG:%d %s (%s): lon %g lat %g: forward %.4g m, inverse %.4g m",
					code, info.Name, key, r[1], r[2], fwd, inv))
			}
		}
	}
	keys := make([]string, 0, len(stats))
	for k := range stats {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "%-52s %6s %6s %12s %12s %s\n", "method", "codes", "points", "max fwd (m)", "max inv (m)", "worst code")
	for _, k := range keys {
		s := stats[k]
		fmt.Fprintf(&b, "%-52s %6d %6d %12.3g %12.3g EPSG:%d\n", k, len(s.codes), s.points, s.fwd, s.inv, s.worstCode)
	}
	t.Logf("against %s\n%s", ref.Source, b.String())
	slices.Sort(failures)
	assert.Empty(t, failures, "%d points beyond tolerance", len(failures))
}

func TestRefusedAreRefused(t *testing.T) {
	ref := loadReference(t)
	require.NotEmpty(t, ref.Refused)
	for _, r := range ref.Refused {
		code := int(r[0].(float64))
		_, err := Lookup(code)
		var ue *UnsupportedError
		require.ErrorAs(t, err, &ue, "EPSG:%d %v", code, r[1])
		assert.Equal(t, code, ue.EPSG)
	}
}
