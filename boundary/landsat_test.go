package boundary_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/boundary"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/geo/crs"
	"github.com/cropkit/cropkit/imagery"
	"github.com/cropkit/cropkit/imagery/geotiff"
	"github.com/cropkit/cropkit/internal/testenv"
)

// l8Scene is one Landsat 8 Collection 1 date of ../shared/data/landsat8
// (30 m resampled by WorldCereal onto the 10 m Sentinel-2 grid) served
// under the Sentinel-2 names of the matching bands (B02 blue, B03 green,
// B04 red, B08 from OLI B05 NIR), reflectance DN × 0.0001; clear where
// pixel_qa has bit 1 (clear) set.
type l8Scene struct {
	dir  string
	date time.Time
	grid geo.Grid
}

func (s *l8Scene) ID() string      { return "L8 " + s.date.Format(time.DateOnly) }
func (s *l8Scene) Date() time.Time { return s.date }
func (s *l8Scene) Grid() geo.Grid  { return s.grid }

var l8Names = map[string]string{"B02": "B02", "B03": "B03", "B04": "B04", "B08": "B05"}

func (s *l8Scene) ReadField(ctx context.Context, field orb.MultiPolygon, bands []string) (*imagery.FieldRaster, error) {
	tr, err := crs.New(4326, s.grid.EPSG)
	if err != nil {
		return nil, err
	}
	mp, err := geo.Transform(field, tr)
	if err != nil {
		return nil, err
	}
	win := s.grid.WindowFor(mp.Bound())
	if win.Empty() {
		return nil, imagery.ErrNoOverlap
	}
	read := func(name string) ([]float64, error) {
		f, err := geotiff.OpenFile(filepath.Join(s.dir, name+".tif"))
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r, err := f.ReadWindow(ctx, win)
		if err != nil {
			return nil, err
		}
		v := make([]float64, r.Len())
		for i := range v {
			v[i] = r.At(i)
		}
		return v, nil
	}
	sub := s.grid.Sub(win)
	in := geo.Rasterize(mp, sub)
	fr := &imagery.FieldRaster{Grid: sub, Window: win, InField: in, Clear: make([]bool, len(in)), Bands: map[string][]float64{}}
	qa, err := read("QA_PIXEL_C1")
	if err != nil {
		return nil, err
	}
	for i, v := range in {
		fr.Clear[i] = int(qa[i])&2 != 0
		if v {
			fr.FieldPixels++
		}
	}
	for _, b := range bands {
		name, ok := l8Names[b]
		if !ok {
			return nil, fmt.Errorf("%w: %s", imagery.ErrMissingBand, b)
		}
		v, err := read(name)
		if err != nil {
			return nil, err
		}
		for i := range v {
			if v[i] == 0 {
				v[i] = math.NaN()
			} else {
				v[i] *= 0.0001
			}
		}
		fr.Bands[b] = v
	}
	return fr, nil
}

// TestLandsatAsMoreOpticalDates measures (opt-in: BOUNDARY_TUNE=landsat)
// the 31UDS scores with the chip's Landsat 8 dates added to the
// Sentinel-2 ones as further optical dates.
func TestLandsatAsMoreOpticalDates(t *testing.T) {
	if os.Getenv("BOUNDARY_TUNE") != "landsat" {
		t.Skip("set BOUNDARY_TUNE=landsat to run")
	}
	chips := openCoregistered(t)
	uds := chips[1]
	require.Equal(t, "flanders-31UDS", uds.name)
	root := testenv.DataDir(t, "landsat8", uds.name)
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	var l8 []boundary.Scene
	for _, e := range entries {
		if d, err := time.Parse(time.DateOnly, e.Name()); err == nil {
			l8 = append(l8, &l8Scene{dir: filepath.Join(root, e.Name()), date: d, grid: uds.grid})
		}
	}
	for _, run := range []struct {
		name   string
		scenes []boundary.Scene
	}{{"Sentinel-2", uds.scenes}, {"Sentinel-2 + Landsat 8", append(append([]boundary.Scene{}, uds.scenes...), l8...)}} {
		for _, radar := range []bool{false, true} {
			cd := uds
			cd.scenes = run.scenes
			opts := boundary.Options{Radar: []boundary.Scene{}}
			if radar {
				opts.Radar = nil
			}
			own, _, log := detectScored(t, []chipData{cd}, opts)
			var s summary
			s.add(own[0])
			fmt.Printf("%s, radar %v: %s; %v\n", run.name, radar, log[0], s)
		}
	}
}
