package boundary_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/boundary"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/geo/crs"
	"github.com/cropkit/cropkit/imagery"
)

// parcel is one reference polygon of ../shared/data/fields.
type parcel struct {
	name, crop string
	clipped    bool
	px         int
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
				Pixels  int    `json:"pixels_10m"`
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
		out[i] = parcel{name: p.Name, crop: p.Crop, clipped: p.Clipped, px: p.Pixels, geom: f.Geometry}
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

func median(v []float64) float64 {
	s := slices.Clone(v)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

var flanders = []string{"flanders-31UES", "flanders-31UDS"}
