// Package geo holds what imagery and zoning share: raster grids and
// windows, polygon checks, rasterization, polygonization and sieving.
// Geometry is github.com/paulmach/orb everywhere.
//
// The usual path of a field: ParseGeometry (GeoJSON in EPSG:4326),
// ValidateLonLat (an *InvalidGeometryError names the problem), Transform to
// the scene CRS with a geo/crs Transformer, Grid.WindowFor and Grid.Sub,
// then Rasterize (pixel-centre rule, like gdal_rasterize). Zones go the
// other way: Sieve a label raster, then Polygonize it into valid polygons
// that tile the labelled pixels exactly.
package geo

import (
	"fmt"
	"math"

	"github.com/paulmach/orb"
)

// Grid is a north-up raster grid in a projected or geographic CRS.
// Pixel (col, row) covers [X0+col·DX, X0+(col+1)·DX] × [Y0−(row+1)·DY, Y0−row·DY]:
// X0, Y0 is the outer upper-left corner and DX, DY are positive pixel sizes.
type Grid struct {
	EPSG   int
	X0, Y0 float64
	DX, DY float64
	Cols   int
	Rows   int
}

// Window is a rectangle of pixels of a grid; Col and Row are its upper-left pixel.
type Window struct {
	Col, Row   int
	Cols, Rows int
}

// Empty reports whether the window holds no pixel.
func (w Window) Empty() bool { return w.Cols <= 0 || w.Rows <= 0 }

// Len is the number of pixels in the window.
func (w Window) Len() int {
	if w.Empty() {
		return 0
	}
	return w.Cols * w.Rows
}

// Intersect returns the pixels w and o have in common (an empty window when none).
func (w Window) Intersect(o Window) Window {
	c0, r0 := max(w.Col, o.Col), max(w.Row, o.Row)
	c1, r1 := min(w.Col+w.Cols, o.Col+o.Cols), min(w.Row+w.Rows, o.Row+o.Rows)
	if c1 <= c0 || r1 <= r0 {
		return Window{}
	}
	return Window{Col: c0, Row: r0, Cols: c1 - c0, Rows: r1 - r0}
}

func (w Window) String() string {
	return fmt.Sprintf("%dx%d+%d+%d", w.Cols, w.Rows, w.Col, w.Row)
}

// Full is the window covering the whole grid.
func (g Grid) Full() Window { return Window{Cols: g.Cols, Rows: g.Rows} }

// Bound is the grid's extent in its CRS.
func (g Grid) Bound() orb.Bound {
	return orb.Bound{
		Min: orb.Point{g.X0, g.Y0 - float64(g.Rows)*g.DY},
		Max: orb.Point{g.X0 + float64(g.Cols)*g.DX, g.Y0},
	}
}

// PixelCenter is the CRS coordinate of the centre of pixel (col, row).
func (g Grid) PixelCenter(col, row int) orb.Point {
	return orb.Point{g.X0 + (float64(col)+0.5)*g.DX, g.Y0 - (float64(row)+0.5)*g.DY}
}

// Pixel returns the pixel holding CRS point p (which may lie outside the grid).
func (g Grid) Pixel(p orb.Point) (col, row int) {
	return int(math.Floor((p[0] - g.X0) / g.DX)), int(math.Floor((g.Y0 - p[1]) / g.DY))
}

// Sub is the grid of window w: same CRS and pixel size, origin at the window's corner.
func (g Grid) Sub(w Window) Grid {
	return Grid{
		EPSG: g.EPSG,
		X0:   g.X0 + float64(w.Col)*g.DX,
		Y0:   g.Y0 - float64(w.Row)*g.DY,
		DX:   g.DX, DY: g.DY,
		Cols: w.Cols, Rows: w.Rows,
	}
}

// WindowFor is the smallest window of whole pixels covering bound b, clipped to the grid.
func (g Grid) WindowFor(b orb.Bound) Window {
	c0 := int(math.Floor((b.Min[0] - g.X0) / g.DX))
	c1 := int(math.Ceil((b.Max[0] - g.X0) / g.DX))
	r0 := int(math.Floor((g.Y0 - b.Max[1]) / g.DY))
	r1 := int(math.Ceil((g.Y0 - b.Min[1]) / g.DY))
	return Window{Col: c0, Row: r0, Cols: c1 - c0, Rows: r1 - r0}.Intersect(g.Full())
}

// PixelArea is the area of one pixel in square CRS units.
func (g Grid) PixelArea() float64 { return g.DX * g.DY }
