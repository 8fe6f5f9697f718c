package zoning

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/geo/crs"
	"github.com/cropkit/cropkit/internal/testenv"
)

// tilingStats measures, with shapely, how a zone collection tiles an
// outline given in the same CRS: the areas of the zones outside the
// outline, of the outline in no zone, of overlaps between zones, and the
// outline's area, plus the invalid polygons' reasons.
type tilingStats struct {
	Outside, Uncovered, Overlap, Area float64
	Invalid                           []string
}

func shapelyTiling(t *testing.T, c *Collection, outline orb.MultiPolygon) tilingStats {
	t.Helper()
	py := "/usr/bin/python3"
	if exec.Command(py, "-c", "import shapely").Run() != nil {
		if testenv.InCI() {
			t.Fatal("python3-shapely is missing (apt-get install python3-shapely)")
		}
		t.Skip("python3-shapely missing")
	}
	var in struct {
		Zones   [][][][2]float64 `json:"zones"`
		Outline [][][][2]float64 `json:"outline"`
	}
	conv := func(p orb.Polygon) [][][2]float64 {
		var out [][][2]float64
		for _, r := range p {
			ring := make([][2]float64, len(r))
			for i, q := range r {
				ring[i] = [2]float64{q[0], q[1]}
			}
			out = append(out, ring)
		}
		return out
	}
	for _, f := range c.Features {
		in.Zones = append(in.Zones, conv(f.Polygon))
	}
	for _, p := range outline {
		in.Outline = append(in.Outline, conv(p))
	}
	data, err := json.Marshal(in)
	require.NoError(t, err)
	const script = `
import json, sys
from shapely.geometry import Polygon, MultiPolygon
from shapely.ops import unary_union
from shapely.validation import explain_validity
d = json.load(sys.stdin)
zones = [Polygon(p[0], p[1:]) for p in d["zones"]]
outline = MultiPolygon([Polygon(p[0], p[1:]) for p in d["outline"]]).buffer(0)
bad = [explain_validity(z) for z in zones if not z.is_valid]
u = unary_union(zones)
overlap = sum(z.area for z in zones) - u.area
print(json.dumps({"Outside": u.difference(outline).area, "Uncovered": outline.difference(u).area,
                  "Overlap": overlap, "Area": outline.area, "Invalid": bad}))
`
	cmd := exec.Command(py, "-c", script)
	cmd.Stdin = strings.NewReader(string(data))
	out, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		t.Fatalf("shapely: %v: %s", err, ee.Stderr)
	}
	require.NoError(t, err)
	var st tilingStats
	require.NoError(t, json.Unmarshal(out, &st))
	return st
}

// TestRealTiling: on the Slovenian fields, whose outlines are not aligned
// with the pixels, and on a parcel cut across pixels, the zones tile the
// outline: area outside and area uncovered each at most 0.1 % of the
// outline's (in fact nanometres), no overlap, valid polygons, in the
// grid's UTM zone and in EPSG:4326 — and, for comparison, the pixel
// staircase of Compute alone misses by far more.
func TestRealTiling(t *testing.T) {
	scene := testenv.DataDir(t, "s2", "slovenia-eolearn", "2015-07-11")
	type tc struct {
		name    string
		outline func(t *testing.T) orb.MultiPolygon
	}
	var cases []tc
	for _, n := range []string{"SI-01", "SI-02", "SI-03", "SI-04", "SI-05", "SI-06", "SI-07"} {
		cases = append(cases, tc{n, func(t *testing.T) orb.MultiPolygon { return realField(t, "slovenia-eolearn", n) }})
	}
	cases = append(cases, tc{"SI-01 parcel", func(t *testing.T) orb.MultiPolygon {
		field := realField(t, "slovenia-eolearn", "SI-01")
		return slantedParcel(t, field)
	}})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			outline := c.outline(t)
			field := outline
			if strings.HasSuffix(c.name, "parcel") {
				field = realField(t, "slovenia-eolearn", "SI-01")
			}
			p := realIndex(t, scene, field, "ndvi")
			layers := []Layer{{Name: "ndvi", Type: CropHealth, Values: p.Values, Weight: 1}}
			for _, k := range []int{2, 4} {
				for _, dst := range []int{p.Grid.EPSG, 4326} {
					col, err := Run(context.Background(), Request{Grid: p.Grid, Outline: outline, Layers: layers,
						Options: Options{Zones: k, Seed: 1}, Prescription: Prescription{Type: NFertilizer}, DstEPSG: dst})
					require.NoError(t, err)
					tr, err := crs.New(4326, dst)
					require.NoError(t, err)
					o, err := geo.Transform(outline, tr)
					require.NoError(t, err)
					st := shapelyTiling(t, col, o)
					assert.Empty(t, st.Invalid, "k=%d EPSG:%d", k, dst)
					assert.LessOrEqual(t, st.Outside, 1e-3*st.Area, "k=%d EPSG:%d outside", k, dst)
					assert.LessOrEqual(t, st.Uncovered, 1e-3*st.Area, "k=%d EPSG:%d uncovered", k, dst)
					assert.LessOrEqual(t, st.Overlap, 1e-6*st.Area, "k=%d EPSG:%d overlap", k, dst)
					require.NotNil(t, col.Quality)
					assert.Equal(t, len(col.Features), col.Quality.Polygons)
					if dst == p.Grid.EPSG {
						t.Logf("k=%d: outside %.4g m², uncovered %.4g m² of %.0f m²; VR %.3f, %d polygons",
							k, st.Outside, st.Uncovered, st.Area, col.Quality.VarianceReduction, col.Quality.Polygons)
						// The staircase alone (before this change) misses.
						mask, err := FieldMask(outline, p.Grid)
						require.NoError(t, err)
						res, err := Compute(context.Background(), p.Grid, mask, layers, Options{Zones: k, Seed: 1})
						require.NoError(t, err)
						stair, err := res.Collection(dst)
						require.NoError(t, err)
						s0 := shapelyTiling(t, stair, o)
						assert.Greater(t, s0.Outside+s0.Uncovered, 10*(st.Outside+st.Uncovered)+1, "staircase misses more")
					}
				}
			}
		})
	}
}

// slantedParcel is a quadrilateral inside field, its corners 30 % and 70 %
// of the way across the field's UTM bounding box, rotated off the pixel grid.
func slantedParcel(t *testing.T, field orb.MultiPolygon) orb.MultiPolygon {
	t.Helper()
	to, err := crs.New(4326, 32633)
	require.NoError(t, err)
	back, err := crs.New(32633, 4326)
	require.NoError(t, err)
	utm, err := geo.Transform(field, to)
	require.NoError(t, err)
	b := utm.Bound()
	at := func(fx, fy float64) orb.Point {
		return orb.Point{b.Min[0] + fx*(b.Max[0]-b.Min[0]) + 0.37, b.Min[1] + fy*(b.Max[1]-b.Min[1]) + 0.61}
	}
	ring := orb.Ring{at(0.35, 0.3), at(0.7, 0.35), at(0.65, 0.7), at(0.3, 0.65), at(0.35, 0.3)}
	mp, err := geo.Transform(orb.MultiPolygon{{ring}}, back)
	require.NoError(t, err)
	data, err := json.Marshal(map[string]any{"type": "Polygon", "coordinates": mp[0]})
	require.NoError(t, err)
	parcel, err := ParseParcel(data, field)
	require.NoError(t, err, "the parcel lies inside the field")
	return parcel
}
