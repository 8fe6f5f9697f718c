package zoning

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/imagery"
)

// peerTileField returns the NDVI grid and the outline of the peers' field
// of size ha ("100", "1000", "10000") on their full-size 10980² tile (see
// ../shared/bench/peers/README.md: make_inputs.py; PEERS_DATA overrides
// /tmp/peers-data), skipping when the inputs are absent: the chain
// `cropkit zones` runs on, minus the band reads.
func peerTileField(tb testing.TB, ha string) (imagery.Product, orb.MultiPolygon) {
	tb.Helper()
	dir := os.Getenv("PEERS_DATA")
	if dir == "" {
		dir = "/tmp/peers-data"
	}
	dir = filepath.Join(dir, "tile")
	data, err := os.ReadFile(filepath.Join(dir, "field_"+ha+"ha.geojson"))
	if err != nil {
		tb.Skipf("peers' inputs absent: %v", err)
	}
	feats, err := geo.ReadFeatures(data)
	require.NoError(tb, err)
	s, err := imagery.OpenScene(context.Background(), dir, imagery.SceneOptions{CacheBytes: -1, Date: time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)})
	require.NoError(tb, err)
	defer s.Close()
	ps, err := s.FieldProducts(context.Background(), feats[0].Geometry, []string{"ndvi"}, nil)
	require.NoError(tb, err)
	return ps[0], feats[0].Geometry
}

// BenchmarkRunPeerTile10000ha is the zone chain of `cropkit zones` on the
// peers' 10,000 ha field (~1M pixels, k = 5, n_fertilizer doses), from the
// NDVI grid to the EPSG:4326 collection (bench/compare_zones.sh times the
// whole process, reads included).
func BenchmarkRunPeerTile10000ha(b *testing.B) {
	p, outline := peerTileField(b, "10000")
	req := Request{Grid: p.Grid, Outline: outline,
		Layers:  []Layer{{Name: "ndvi", Type: CropHealth, Values: p.Values, Weight: 1}},
		Options: Options{Zones: 5}, Prescription: Prescription{Type: NFertilizer}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Run(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}
