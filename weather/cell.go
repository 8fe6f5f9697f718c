package weather

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// DefaultCellDegrees is the weather grid's spacing used when a source
// names none: 0.1°, the ERA5-Land grid behind Open-Meteo's reanalysis, the
// finest its archive serves everywhere.
const DefaultCellDegrees = 0.1

// Cell is one weather-grid cell: indices of the cell on a grid of Size
// degrees whose cell centres are the multiples of Size.
type Cell struct {
	Size     float64
	Row, Col int64 // round(lat/Size), round(lon/Size)
}

// CellOf is the cell of a point on a grid of size degrees (size ≤ 0 means
// DefaultCellDegrees): the cell whose centre, a multiple of size in
// latitude and longitude, is nearest (math.Floor(x/size+0.5) in float64:
// a point on an edge goes to the side its floating-point quotient falls on).
func CellOf(lat, lon, size float64) Cell {
	if !(size > 0) {
		size = DefaultCellDegrees
	}
	return Cell{Size: size, Row: int64(math.Floor(lat/size + 0.5)), Col: int64(math.Floor(lon/size + 0.5))}
}

// Centre is the cell's centre, the point whose weather every point of the
// cell gets, rounded to 6 decimals so its text form is stable.
func (c Cell) Centre() (lat, lon float64) {
	r := func(x float64) float64 { return math.Round(x*1e6) / 1e6 }
	return r(float64(c.Row) * c.Size), r(float64(c.Col) * c.Size)
}

// Key names the cell in storage: "<size>:<lat>:<lon>" of its centre.
func (c Cell) Key() string {
	lat, lon := c.Centre()
	return fmt.Sprintf("%g:%g:%g", c.Size, lat, lon)
}

func sortDays(days []Day) {
	slices.SortFunc(days, func(a, b Day) int { return strings.Compare(a.Date, b.Date) })
}
