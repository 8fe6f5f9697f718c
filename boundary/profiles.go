package boundary

import (
	"math"
	"slices"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/imagery"
)

// profiles holds the area's NDVI per clear date and pixel (4 bytes per
// pixel and date: 250,000 pixels and 40 dates take 40 MB).
type profiles struct {
	grid       geo.Grid
	cols, rows int
	in         []bool // pixel centre inside the area
	inPixels   int
	ndvi       [][]float32 // per date, per pixel; NaN where not clear
}

func newProfiles(fr *imagery.FieldRaster) *profiles {
	return &profiles{grid: fr.Grid, cols: fr.Grid.Cols, rows: fr.Grid.Rows, in: fr.InField, inPixels: fr.FieldPixels}
}

// add appends the NDVI of fr over the pixels valid marks.
func (p *profiles) add(fr *imagery.FieldRaster, valid []bool) {
	b4, b8 := fr.Bands["B04"], fr.Bands["B08"]
	l := make([]float32, len(valid))
	for i, v := range valid {
		l[i] = float32(math.NaN())
		if v {
			l[i] = float32((b8[i] - b4[i]) / (b8[i] + b4[i]))
		}
	}
	p.ndvi = append(p.ndvi, l)
}

// neighbours calls fn for each 4-neighbour j of pixel i inside the raster.
func (p *profiles) neighbours(i int, fn func(j int)) {
	r, c := i/p.cols, i%p.cols
	if r > 0 {
		fn(i - p.cols)
	}
	if c > 0 {
		fn(i - 1)
	}
	if c+1 < p.cols {
		fn(i + 1)
	}
	if r+1 < p.rows {
		fn(i + p.cols)
	}
}

// edges returns the area's edges with their multi-temporal strength: the
// root mean square of the NDVI difference over the dates both pixels were
// clear. Pairs never clear together get the median strength.
func (p *profiles) edges() []edge {
	es := make([]edge, 0, 2*p.inPixels)
	var unknown []int
	add := func(i, j int) {
		sum, n := 0.0, 0
		for _, l := range p.ndvi {
			a, b := l[i], l[j]
			if a == a && b == b {
				d := float64(a - b)
				sum += d * d
				n++
			}
		}
		if n == 0 {
			unknown = append(unknown, len(es))
			es = append(es, edge{a: int32(i), b: int32(j), w: float32(math.NaN())})
			return
		}
		es = append(es, edge{a: int32(i), b: int32(j), w: float32(math.Sqrt(sum / float64(n)))})
	}
	for r := 0; r < p.rows; r++ {
		for c := 0; c < p.cols; c++ {
			i := r*p.cols + c
			if !p.in[i] {
				continue
			}
			if c+1 < p.cols && p.in[i+1] {
				add(i, i+1)
			}
			if r+1 < p.rows && p.in[i+p.cols] {
				add(i, i+p.cols)
			}
		}
	}
	if len(unknown) == len(es) {
		for k := range es {
			es[k].w = 0
		}
	} else if len(unknown) > 0 {
		ws := make([]float32, 0, len(es))
		for _, e := range es {
			if e.w == e.w {
				ws = append(ws, e.w)
			}
		}
		slices.Sort(ws)
		for _, k := range unknown {
			es[k].w = ws[len(ws)/2]
		}
	}
	return es
}

// greenest is pixel i's highest clear NDVI of the season (−Inf when never clear).
func (p *profiles) greenest(i int) float64 {
	g := math.Inf(-1)
	for _, l := range p.ndvi {
		if v := float64(l[i]); v == v {
			g = max(g, v)
		}
	}
	return g
}

// edge joins 4-adjacent pixels a and b of the area with strength w.
type edge struct {
	a, b int32
	w    float32
}
