package imagery

import (
	"context"
	"testing"

	"github.com/paulmach/orb"

	"github.com/cropkit/cropkit/geo/crs"
	"github.com/cropkit/cropkit/internal/testenv"
)

// BenchmarkFieldStatsBySensor measures a field's products on each
// sensor's scene of the UDS chip in July 2018 (cached tiles: the compute
// per pixel, not the disk), reported per field pixel so the sensors'
// different grids (Sentinel-1 at 20 m) compare. The field is the whole
// chip (4,096 pixels at 10 m, 1,024 at 20 m), so the per-field fixed cost
// (window, rasterisation, budget) weighs as little as it does on a real field.
func BenchmarkFieldStatsBySensor(b *testing.B) {
	// The chip 501360–502000 E, 5629040–5629680 N (EPSG:32631) in lon/lat, inset 1 m.
	s2, err := OpenScene(context.Background(), testenv.DataDir(b, "s2", "flanders-31UDS", "2018-07-05"), SceneOptions{})
	if err != nil {
		b.Fatal(err)
	}
	g := s2.Grid()
	s2.Close()
	t, err := crs.New(g.EPSG, 4326)
	if err != nil {
		b.Fatal(err)
	}
	var ring orb.Ring
	for _, c := range [][2]float64{{g.X0 + 1, g.Y0 - 1}, {g.X0 + 639, g.Y0 - 1}, {g.X0 + 639, g.Y0 - 639}, {g.X0 + 1, g.Y0 - 639}, {g.X0 + 1, g.Y0 - 1}} {
		lon, lat := t.Transform(c[0], c[1])
		ring = append(ring, orb.Point{lon, lat})
	}
	field := orb.MultiPolygon{{ring}}
	for _, tt := range []struct {
		name, kind, date string
		indices          []string
	}{
		{"sentinel-2/ndvi", "s2", "2018-07-05", []string{"ndvi"}},
		{"landsat/ndvi", "landsat8", "2018-07-17", []string{"ndvi"}},
		{"sentinel-1/vv", "s1", "2018-07-15", []string{"vv"}},
		{"sentinel-1/rvi", "s1", "2018-07-15", []string{"rvi"}},
		{"sentinel-2/4", "s2", "2018-07-05", []string{"ndvi", "ndwi", "evi", "gndvi"}},
		{"landsat/4", "landsat8", "2018-07-17", []string{"ndvi", "ndwi", "evi", "gndvi"}},
		{"sentinel-1/4", "s1", "2018-07-15", []string{"vv", "vh", "vh_vv", "rvi"}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			s, err := OpenScene(context.Background(), testenv.DataDir(b, tt.kind, "flanders-31UDS", tt.date), SceneOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			projected, err := s.ProjectField(field)
			if err != nil {
				b.Fatal(err)
			}
			cat := NewCatalogue()
			var pixels int
			for b.Loop() {
				ps, err := s.ProjectedFieldProducts(context.Background(), projected, tt.indices, cat)
				if err != nil {
					b.Fatal(err)
				}
				pixels = ps[0].Stats.FieldPixels
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(pixels), "ns/pixel")
		})
	}
}
