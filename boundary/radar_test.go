package boundary_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
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

// s1Scene is one Sentinel-1 date of ../shared/data/s1 (VV.tif and VH.tif,
// int32 sigma0 in dB × VALUE_SCALE, nodata 0) read through imagery/geotiff
// and served as linear power, as imagery reads a radar band.
type s1Scene struct {
	dir  string
	date time.Time
	grid geo.Grid
}

func (s *s1Scene) ID() string      { return "S1 " + s.date.Format(time.DateOnly) }
func (s *s1Scene) Date() time.Time { return s.date }
func (s *s1Scene) Grid() geo.Grid  { return s.grid }

func (s *s1Scene) ReadField(ctx context.Context, field orb.MultiPolygon, bands []string) (*imagery.FieldRaster, error) {
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
	sub := s.grid.Sub(win)
	in := geo.Rasterize(mp, sub)
	fr := &imagery.FieldRaster{Grid: sub, Window: win, InField: in, Clear: make([]bool, len(in)), Bands: map[string][]float64{}}
	for i, v := range in {
		fr.Clear[i] = true
		if v {
			fr.FieldPixels++
		}
	}
	for _, b := range bands {
		f, err := geotiff.OpenFile(filepath.Join(s.dir, b+".tif"))
		if err != nil {
			return nil, err
		}
		scale := 1.0
		if v, ok := f.Metadata()["VALUE_SCALE"]; ok {
			if scale, err = strconv.ParseFloat(v, 64); err != nil {
				return nil, fmt.Errorf("%s VALUE_SCALE: %w", b, err)
			}
		}
		r, err := f.ReadWindow(ctx, win)
		f.Close()
		if err != nil {
			return nil, err
		}
		v := make([]float64, r.Len())
		for i := range v {
			v[i] = math.NaN()
			if x := r.At(i); x != 0 {
				v[i] = math.Pow(10, x*scale/10)
			}
		}
		fr.Bands[b] = v
	}
	return fr, nil
}

// openRadar opens the Sentinel-1 dates of a chip.
func openRadar(t testing.TB, chip string) []boundary.Scene {
	t.Helper()
	root := testenv.DataDir(t, "s1", chip)
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	var out []boundary.Scene
	for _, e := range entries {
		d, err := time.Parse(time.DateOnly, e.Name())
		if err != nil || !e.IsDir() {
			continue
		}
		f, err := geotiff.OpenFile(filepath.Join(root, e.Name(), "VV.tif"))
		require.NoError(t, err)
		g := f.Grid()
		f.Close()
		out = append(out, &s1Scene{dir: filepath.Join(root, e.Name()), date: d, grid: g})
	}
	require.NotEmpty(t, out)
	return out
}
