package zoning

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/paulmach/orb"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/geo/crs"
	"github.com/cropkit/cropkit/imagery/geotiff"
)

// DefaultRasterCells bounds the source cells ResampleRaster reads for one
// field (a 0.5 m yield map over 600 ha).
const DefaultRasterCells = 24_000_000

// ErrRaster is matched by the errors of an uploaded raster layer.
var ErrRaster = errors.New("raster layer")

// ResampleRaster puts band 1 of a GeoTIFF (a yield map, soil EC,
// elevation, … in any CRS geo/crs supports) on grid, row-major, NaN where
// the raster gives no value:
//
//   - a grid pixel holding source cell centres takes their mean (the source
//     is finer than the grid: averaging keeps the whole signal);
//   - a pixel holding none takes the cell under its centre (the source is as
//     coarse as the grid or coarser: nearest neighbour).
//
// Nodata and NaN cells count as no value. Only the source window under the
// grid is read, at most maxCells cells (0: DefaultRasterCells).
func ResampleRaster(ctx context.Context, f *geotiff.File, grid geo.Grid, maxCells int) ([]float64, error) {
	if maxCells <= 0 {
		maxCells = DefaultRasterCells
	}
	src := f.Grid()
	toSrc, err := crs.New(grid.EPSG, src.EPSG)
	if err != nil {
		return nil, fmt.Errorf("%w: reproject to the raster's CRS: %w", ErrRaster, err)
	}
	toGrid, err := crs.New(src.EPSG, grid.EPSG)
	if err != nil {
		return nil, fmt.Errorf("%w: reproject the raster: %w", ErrRaster, err)
	}
	sb := geo.TransformBound(grid.Bound(), toSrc)
	w := src.WindowFor(sb.Pad(math.Max(src.DX, src.DY)))
	if w.Empty() {
		return nil, fmt.Errorf("%w: the raster does not cover the field", ErrRaster)
	}
	if w.Len() > maxCells {
		return nil, fmt.Errorf("%w: %d raster cells under the field, at most %d (resample the raster coarser)", ErrRaster, w.Len(), maxCells)
	}
	r, err := f.ReadWindow(ctx, w)
	if err != nil {
		return nil, fmt.Errorf("%w: read: %w", ErrRaster, err)
	}
	nodata, hasNoData := f.NoData()
	valid := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && !(hasNoData && v == nodata) }
	n := grid.Cols * grid.Rows
	sum := make([]float64, n)
	count := make([]int32, n)
	for row := 0; row < w.Rows; row++ {
		for col := 0; col < w.Cols; col++ {
			v := r.At(row*w.Cols + col)
			if !valid(v) {
				continue
			}
			c := src.PixelCenter(w.Col+col, w.Row+row)
			gx, gy := toGrid.Transform(c[0], c[1])
			gc, gr := grid.Pixel(orb.Point{gx, gy})
			if gc < 0 || gr < 0 || gc >= grid.Cols || gr >= grid.Rows {
				continue
			}
			sum[gr*grid.Cols+gc] += v
			count[gr*grid.Cols+gc]++
		}
	}
	out := make([]float64, n)
	for i := range out {
		if count[i] > 0 {
			out[i] = sum[i] / float64(count[i])
			continue
		}
		out[i] = math.NaN()
		c := grid.PixelCenter(i%grid.Cols, i/grid.Cols)
		sx, sy := toSrc.Transform(c[0], c[1])
		sc, sr := src.Pixel(orb.Point{sx, sy})
		sc, sr = sc-w.Col, sr-w.Row
		if sc < 0 || sr < 0 || sc >= w.Cols || sr >= w.Rows {
			continue
		}
		if v := r.At(sr*w.Cols + sc); valid(v) {
			out[i] = v
		}
	}
	return out, nil
}
