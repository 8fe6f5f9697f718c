package timeseries

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"github.com/paulmach/orb"
	"golang.org/x/sync/errgroup"

	"github.com/cropkit/cropkit/imagery"
)

// SceneOptions tune SceneObservations.
type SceneOptions struct {
	// Catalogue resolves the index; nil means imagery.NewCatalogue().
	Catalogue *imagery.Catalogue
	// Workers bounds the scenes read concurrently; 0 means GOMAXPROCS.
	Workers int
	// Sensor names the sensor of a scene; nil means SensorOf.
	Sensor func(*imagery.Scene) string
}

// SensorOf is the sensor name of a scene ("sentinel-2a", "landsat-8",
// "sentinel-1", …), "sentinel-2" when the scene does not say.
func SensorOf(s *imagery.Scene) string {
	if s == nil || s.Sensor() == "" {
		return string(imagery.Sentinel2)
	}
	return string(s.Sensor())
}

// SceneObservations measures index over every field (EPSG:4326) in every
// scene, as the archive's ingestion does (imagery's field windows, its mask
// and pixel-centre rule, the mean over clear pixels): the result holds, per
// field, one observation per scene where the field has a clear pixel, with
// Clear = clear pixels / field pixels. Scenes the field lies outside of are
// skipped. Keep the usable ones with Usable.
func SceneObservations(ctx context.Context, scenes []*imagery.Scene, fields []orb.MultiPolygon, index string, opts SceneOptions) ([][]Observation, error) {
	cat := opts.Catalogue
	if cat == nil {
		cat = imagery.NewCatalogue()
	}
	sensor := opts.Sensor
	if sensor == nil {
		sensor = SensorOf
	}
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	// per scene, per field: the observation (Date zero when none).
	got := make([][]Observation, len(scenes))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for si, s := range scenes {
		g.Go(func() error {
			row := make([]Observation, len(fields))
			name := sensor(s)
			s.PlanFields(fields) // tiles decode only as deep as the fields reach
			for fi, f := range fields {
				if err := gctx.Err(); err != nil {
					return err
				}
				ps, err := s.FieldProducts(gctx, f, []string{index}, cat)
				switch {
				case errors.Is(err, imagery.ErrNoOverlap), errors.Is(err, imagery.ErrNoClearPixels):
					continue
				case err != nil:
					return fmt.Errorf("scene %s, field %d: %w", s.ID(), fi, err)
				}
				st := ps[0].Stats
				if st.FieldPixels == 0 {
					continue
				}
				row[fi] = Observation{Date: s.Date(), Value: st.Mean, Sensor: name, Clear: float64(st.Num) / float64(st.FieldPixels)}
			}
			got[si] = row
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	out := make([][]Observation, len(fields))
	for _, row := range got {
		for fi, o := range row {
			if !o.Date.IsZero() {
				out[fi] = append(out[fi], o)
			}
		}
	}
	return out, nil
}

// Usable keeps the observations at least minClear clear (the archive's
// usability rule, archive.DefaultMinClear).
func Usable(obs []Observation, minClear float64) []Observation {
	var out []Observation
	for _, o := range obs {
		if o.Clear >= minClear {
			out = append(out, o)
		}
	}
	return out
}

// PossibleRange is the range an index's values cannot leave, for
// Options.Range: [-1, 1] for a normalised difference (X−Y)/(X+Y), else
// none (Index.Range is a colour stretch, not a bound).
func PossibleRange(ix imagery.Index) [2]float64 {
	if len(ix.Bands) == 2 && ix.Formula == fmt.Sprintf("(%[1]s−%[2]s)/(%[1]s+%[2]s)", ix.Bands[0], ix.Bands[1]) {
		return [2]float64{-1, 1}
	}
	return [2]float64{}
}
