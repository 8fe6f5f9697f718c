package boundary_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/boundary"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/geo/crs"
	"github.com/cropkit/cropkit/imagery"
	"github.com/cropkit/cropkit/internal/testenv"
)

// parcel is one reference polygon of ../shared/data/fields.
type parcel struct {
	name, crop string
	clipped    bool
	geom       orb.MultiPolygon // EPSG:4326
}

func readParcels(t testing.TB, path string) []parcel {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var fc struct {
		Features []struct {
			Properties struct {
				Name    string `json:"name"`
				Crop    string `json:"crop"`
				Clipped bool   `json:"clipped_by_image_edge"`
			} `json:"properties"`
		} `json:"features"`
	}
	require.NoError(t, json.Unmarshal(data, &fc))
	feats, err := geo.ReadFeatures(data)
	require.NoError(t, err)
	require.Len(t, feats, len(fc.Features))
	out := make([]parcel, len(feats))
	for i, f := range feats {
		p := fc.Features[i].Properties
		out[i] = parcel{name: p.Name, crop: p.Crop, clipped: p.Clipped, geom: f.Geometry}
	}
	return out
}

// openChip opens every dated scene folder of a chip, sorted by date.
func openChip(t testing.TB, dir string) []boundary.Scene {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var scenes []boundary.Scene
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		sc, err := imagery.OpenScene(context.Background(), filepath.Join(dir, e.Name()), imagery.SceneOptions{})
		require.NoError(t, err)
		t.Cleanup(func() { sc.Close() })
		scenes = append(scenes, sc)
	}
	require.NotEmpty(t, scenes)
	return scenes
}

// chipAOI is the chip's full extent as a lon/lat polygon (edges densified so
// the lon/lat straight lines stay within millimetres of the UTM ones).
func chipAOI(t testing.TB, g geo.Grid) orb.MultiPolygon {
	t.Helper()
	b := g.Bound()
	var ring orb.Ring
	corners := []orb.Point{b.Min, {b.Max[0], b.Min[1]}, b.Max, {b.Min[0], b.Max[1]}, b.Min}
	for i := 0; i+1 < len(corners); i++ {
		for k := 0; k < 16; k++ {
			f := float64(k) / 16
			a, c := corners[i], corners[i+1]
			ring = append(ring, orb.Point{a[0] + f*(c[0]-a[0]), a[1] + f*(c[1]-a[1])})
		}
	}
	ring = append(ring, ring[0])
	tr, err := crs.New(g.EPSG, 4326)
	require.NoError(t, err)
	mp, err := geo.Transform(orb.MultiPolygon{{ring}}, tr)
	require.NoError(t, err)
	return mp
}

// iouRow is one parcel's best match.
type iouRow struct {
	name, crop string
	clipped    bool
	iou        float64
	pixels     int
}

// bestIoU rasterizes parcels and detected fields on a 1 m grid over g (in
// g's CRS) and returns each parcel's IoU with its best-overlapping field.
func bestIoU(t testing.TB, g geo.Grid, parcels []parcel, fields []boundary.Field) []iouRow {
	t.Helper()
	const res = 1.0
	fine := geo.Grid{EPSG: g.EPSG, X0: g.X0, Y0: g.Y0, DX: res, DY: res,
		Cols: int(float64(g.Cols) * g.DX / res), Rows: int(float64(g.Rows) * g.DY / res)}
	tr, err := crs.New(4326, g.EPSG)
	require.NoError(t, err)
	det := make([]int32, fine.Cols*fine.Rows)
	for i := range det {
		det[i] = -1
	}
	detArea := make([]int, len(fields))
	for k, f := range fields {
		mp, err := geo.Transform(orb.MultiPolygon{f.Polygon}, tr)
		require.NoError(t, err)
		for i, in := range geo.Rasterize(mp, fine) {
			if in {
				det[i] = int32(k)
				detArea[k]++
			}
		}
	}
	rows := make([]iouRow, len(parcels))
	for pi, p := range parcels {
		mp, err := geo.Transform(p.geom, tr)
		require.NoError(t, err)
		inter := make([]int, len(fields))
		area := 0
		for i, in := range geo.Rasterize(mp, fine) {
			if !in {
				continue
			}
			area++
			if det[i] >= 0 {
				inter[det[i]]++
			}
		}
		best := 0.0
		for k, n := range inter {
			if n == 0 {
				continue
			}
			best = max(best, float64(n)/float64(area+detArea[k]-n))
		}
		rows[pi] = iouRow{name: p.name, crop: p.crop, clipped: p.clipped, iou: best, pixels: area / int(g.DX*g.DY/(res*res))}
	}
	return rows
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// evalChips runs Detect on both Flanders chips and returns the IoU rows.
func evalChips(t testing.TB, opts boundary.Options) (rows []iouRow, log []string) {
	return evalOpened(t, openChips(t), opts)
}

// openChips opens both Flanders chips.
func openChips(t testing.TB) map[string][]boundary.Scene {
	m := make(map[string][]boundary.Scene)
	for _, chip := range flanders {
		m[chip] = openChip(t, testenv.DataDir(t, "s2", chip))
	}
	return m
}

var flanders = []string{"flanders-31UES", "flanders-31UDS"}

func evalOpened(t testing.TB, chips map[string][]boundary.Scene, opts boundary.Options) (rows []iouRow, log []string) {
	for _, chip := range flanders {
		scenes := chips[chip]
		parcels := readParcels(t, testenv.DataDir(t, "fields", chip+".geojson"))
		g := scenes[0].Grid()
		res, err := boundary.Detect(context.Background(), scenes, chipAOI(t, g), opts)
		require.NoError(t, err)
		log = append(log, fmt.Sprintf("%s: %d dates (%s … %s), %d fields", chip, len(res.Dates),
			res.Dates[0].Format("2006-01-02"), res.Dates[len(res.Dates)-1].Format("2006-01-02"), len(res.Fields)))
		rows = append(rows, bestIoU(t, g, parcels, res.Fields)...)
	}
	return rows, log
}

// TestDetectFlandersIoU is the acceptance test of the issue: for every
// parcel lying fully inside a Flanders chip (not cut by the chip edge), the
// IoU of the best-matching detected field; median ≥ 0.75 and ≥ 80 % of the
// parcels at IoU ≥ 0.5. Parcels cut by the edge are listed for information.
func TestDetectFlandersIoU(t *testing.T) {
	rows, log := evalChips(t, boundary.Options{})
	var b strings.Builder
	for _, l := range log {
		fmt.Fprintln(&b, l)
	}
	fmt.Fprintf(&b, "| parcel | crop | pixels | inside | IoU |\n|---|---|---|---|---|\n")
	var inside, all []float64
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %d | %v | %.3f |\n", r.name, r.crop, r.pixels, !r.clipped, r.iou)
		all = append(all, r.iou)
		if !r.clipped {
			inside = append(inside, r.iou)
		}
	}
	share := func(v []float64) float64 {
		n := 0
		for _, x := range v {
			if x >= 0.5 {
				n++
			}
		}
		return float64(n) / float64(len(v))
	}
	fmt.Fprintf(&b, "inside parcels: %d, median IoU %.3f, share IoU≥0.5 %.0f%%\n", len(inside), median(inside), 100*share(inside))
	fmt.Fprintf(&b, "all parcels (cut ones against their in-chip part): %d, median IoU %.3f, share IoU≥0.5 %.0f%%\n", len(all), median(all), 100*share(all))
	t.Log("\n" + b.String())
	require.Len(t, inside, 8, "parcels fully inside the chips")
	require.GreaterOrEqual(t, median(inside), 0.75, "median IoU")
	require.GreaterOrEqual(t, share(inside), 0.8, "share of parcels at IoU ≥ 0.5")
}
