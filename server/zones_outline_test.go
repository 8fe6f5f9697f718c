package server_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/geo/crs"
	"github.com/cropkit/cropkit/internal/outlinetest"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/server"
	"github.com/cropkit/cropkit/server/servertest"
)

// TestZonesRandomOutlines: fields of random small, thin and triangular
// outlines over the 640 m chip of flanders-31UES, some reaching beyond it,
// never get a 500 from either zone route: 200 with zones tiling the field
// (areas within 0.1 %), or a 4xx naming the reason (no usable image, fewer
// usable pixels than zones).
func TestZonesRandomOutlines(t *testing.T) {
	const date = "2019-07-05"
	scene := filepath.Join(testenv.DataDir(t, "s2", "flanders-31UES"), date)
	env := servertest.New(t, server.Config{})
	tok := env.AddUser(t, "farmer", nil)
	back, err := crs.New(32631, 4326)
	require.NoError(t, err)
	// The chip: 64×64 pixels of 10 m from (574680, 5622440).
	chip := geo.Grid{EPSG: 32631, X0: 574680, Y0: 5622440, DX: 10, DY: 10, Cols: 64, Rows: 64}
	rng := rand.New(rand.NewPCG(3, 5))
	type field struct {
		name, kind string
		utm        orb.Ring
	}
	var fields []field
	for i := range 36 {
		kind, ring := outlinetest.Random(rng, chip, 60, i)
		ll, err := geo.Transform(orb.MultiPolygon{{ring}}, back)
		require.NoError(t, err)
		name := fmt.Sprintf("f%02d-%s", i, kind)
		r := do(t, env.Handler, "POST", "/fields/register", tok, map[string]any{
			"field_name": name, "indices": "ndvi",
			"geometry": map[string]any{"type": "Polygon", "coordinates": ll[0]},
		})
		if r.Status == 400 {
			continue // refused at registration (e.g. below the minimum area)
		}
		require.Equal(t, 201, r.Status, "%s", r.Body)
		fields = append(fields, field{name, kind, ring})
	}
	_, err = env.Archive.Ingest(context.Background(), scene, archive.IngestOptions{})
	require.NoError(t, err)

	ok := 0
	for i, f := range fields {
		k := 1 + i%3
		area := geo.Area(orb.MultiPolygon{{f.utm}})
		check := func(t *testing.T, r response) {
			require.NotEqual(t, 500, r.Status, "%s", r.Body)
			if r.Status != 200 {
				require.Contains(t, []int{400, 404}, r.Status, "%s", r.Body)
				assert.Contains(t, []string{"no_imagery", "bad_request", "not_found"}, r.ErrorCode(t), "%s", r.Body)
				return
			}
			ok++
			var sum float64
			for _, z := range decodeZones(t, r).Features {
				sum += geo.Area(orb.MultiPolygon{z.Geometry.Coordinates})
			}
			assert.InDelta(t, area, sum, 1e-3*area, "the zones tile the field")
		}
		t.Run(f.name+"/get_zones", func(t *testing.T) {
			v := url.Values{"field_name": {f.name}, "type": {"n_fertilizer"}, "index": {"ndvi"}, "n_zones": {itoa(k)}, "dst_crs": {"32631"}}
			check(t, do(t, env.Handler, "POST", "/prescription_maps/get_zones?"+v.Encode(), tok, nil))
		})
		t.Run(f.name+"/variable-rate-zones", func(t *testing.T) {
			check(t, postForm(t, env, "/v1/variable-rate-zones", tok,
				map[string]string{"field_name": f.name, "n_zones": itoa(k), "layers": ndviLayer(date), "dst_crs": "32631"}, nil))
		})
	}
	t.Logf("%d fields registered, %d zone answers of 200", len(fields), ok)
	assert.Greater(t, ok, len(fields)/2, "most fields reach zoning")
}

// TestFieldBeyondChipUnusable: a field the scene covers only in part has
// its pixels beyond the scene counted as not clear, so with the default
// minimum clear share the image is unusable: 404 no_imagery from the
// download and the zone routes, never the covered part's statistics.
func TestFieldBeyondChipUnusable(t *testing.T) {
	const date = "2019-07-05"
	scene := filepath.Join(testenv.DataDir(t, "s2", "flanders-31UES"), date)
	env := servertest.New(t, server.Config{})
	tok := env.AddUser(t, "farmer", nil)
	tests := []struct {
		name string
		ring [][2]float64
	}{
		{"t_edge", [][2]float64{{4.0094016, 50.746340065}, {4.0595016, 50.746340065}, {4.0595016, 50.747340065},
			{4.0094016, 50.747340065}, {4.0094016, 50.746340065}}},
		{"t_huge", [][2]float64{{3.9, 50.6}, {4.25, 50.6}, {4.25, 50.85}, {3.9, 50.85}, {3.9, 50.6}}},
	}
	for _, tc := range tests {
		r := do(t, env.Handler, "POST", "/fields/register", tok, map[string]any{
			"field_name": tc.name, "indices": "ndvi",
			"geometry": map[string]any{"type": "Polygon", "coordinates": [][][2]float64{tc.ring}},
		})
		require.Equal(t, 201, r.Status, "%s", r.Body)
	}
	_, err := env.Archive.Ingest(context.Background(), scene, archive.IngestOptions{})
	require.NoError(t, err)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, env.Handler, "GET", "/download/ndvi/json?field_name="+tc.name+"&date="+date, tok, nil)
			assert.Equal(t, 404, r.Status, "%s", r.Body)
			assert.Equal(t, "no_imagery", r.ErrorCode(t))
			v := url.Values{"field_name": {tc.name}, "type": {"n_fertilizer"}, "index": {"ndvi"}, "n_zones": {"2"}}
			r = do(t, env.Handler, "POST", "/prescription_maps/get_zones?"+v.Encode(), tok, nil)
			assert.Equal(t, 404, r.Status, "%s", r.Body)
			assert.Equal(t, "no_imagery", r.ErrorCode(t))
		})
	}
}
