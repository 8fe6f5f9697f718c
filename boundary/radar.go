package boundary

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/paulmach/orb"

	"github.com/cropkit/cropkit/imagery"
)

// radarBands are the Sentinel-1 polarisations Detect reads from
// Options.Radar scenes: backscatter as linear power (imagery's reading of
// a VV/VH band, whether the file holds dB or power).
var radarBands = []string{"VV", "VH"}

// centiDB quantises backscatter in dB (0.01 dB steps; a radar date takes
// 4 bytes per pixel for both polarisations).
const centiDB = 100

// noRadar marks a pixel without backscatter on a date.
const noRadar = math.MinInt16

// radar holds the season's backscatter on the optical grid: per date and
// pixel, VV and VH in centi-dB (noRadar where missing).
type radar struct {
	vv, vh [][]int16
}

func (r *radar) dates() int {
	if r == nil {
		return 0
	}
	return len(r.vv)
}

// readRadar reads the backscatter of the radar scenes dated within
// [start, end] over aoi onto the optical grid of p, each optical pixel
// taking the radar pixel under its centre (Sentinel-1 GRD is 20 m or 10 m;
// both grids must share a CRS). Scenes on another CRS or without overlap
// are skipped with a note in res.Skipped; at most maxDates, evenly spread.
func readRadar(ctx context.Context, scenes []Scene, aoi orb.MultiPolygon, start, end time.Time, p *profiles, maxDates int, res *Result) (*radar, error) {
	var order []Scene
	for _, s := range scenes {
		d := s.Date()
		if (!start.IsZero() && d.Before(start)) || (!end.IsZero() && d.After(end)) {
			continue
		}
		if s.Grid().EPSG != p.grid.EPSG {
			res.Skipped = append(res.Skipped, fmt.Sprintf("%s: radar on EPSG:%d, optical on EPSG:%d", s.ID(), s.Grid().EPSG, p.grid.EPSG))
			continue
		}
		order = append(order, s)
	}
	slices.SortStableFunc(order, func(a, b Scene) int { return a.Date().Compare(b.Date()) })
	if len(order) > maxDates {
		kept := make([]Scene, 0, maxDates)
		for k := range maxDates {
			kept = append(kept, order[k*(len(order)-1)/max(maxDates-1, 1)])
		}
		for _, s := range order {
			if !slices.Contains(kept, s) {
				res.Skipped = append(res.Skipped, s.ID()+": over MaxDates (radar)")
			}
		}
		order = kept
	}
	r := &radar{}
	n := len(p.in)
	for _, s := range order {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		fr, err := s.ReadField(ctx, aoi, radarBands)
		if errors.Is(err, imagery.ErrNoOverlap) {
			res.Skipped = append(res.Skipped, s.ID()+": no overlap")
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read radar scene %s: %w", s.ID(), err)
		}
		vv, vh := make([]int16, n), make([]int16, n)
		seen := 0
		for i := range n {
			vv[i], vh[i] = noRadar, noRadar
			if !p.in[i] {
				continue
			}
			col, row := fr.Grid.Pixel(p.grid.PixelCenter(i%p.cols, i/p.cols))
			if col < 0 || row < 0 || col >= fr.Grid.Cols || row >= fr.Grid.Rows {
				continue
			}
			j := row*fr.Grid.Cols + col
			if !fr.Clear[j] {
				continue
			}
			vv[i], vh[i] = toCentiDB(fr.Bands["VV"][j]), toCentiDB(fr.Bands["VH"][j])
			if vv[i] != noRadar && vh[i] != noRadar {
				seen++
			}
		}
		if seen < p.inPixels/2 {
			res.Skipped = append(res.Skipped, fmt.Sprintf("%s: radar over %d of %d pixels", s.ID(), seen, p.inPixels))
			continue
		}
		r.vv, r.vh = append(r.vv, vv), append(r.vh, vh)
		res.RadarDates = append(res.RadarDates, s.Date())
	}
	return r, nil
}

// toCentiDB turns linear power into centi-dB (noRadar when not positive
// or not finite).
func toCentiDB(v float64) int16 {
	if !(v > 0) || math.IsInf(v, 0) {
		return noRadar
	}
	return int16(min(max(math.Round(10*math.Log10(v)*centiDB), noRadar+1), math.MaxInt16))
}
