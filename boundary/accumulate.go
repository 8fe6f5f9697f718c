package boundary

import (
	"math"
	"slices"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/imagery"
)

// accumulator keeps, over the dates added, running sums per pixel and per
// pair of 4-adjacent pixels: O(pixels) whatever the number of dates.
type accumulator struct {
	grid       geo.Grid
	cols, rows int
	in         []bool // pixel centre inside the area
	inPixels   int
	// Edge sums of squared feature differences and their date counts:
	// right[i] pairs pixel i with i+1, down[i] with i+cols.
	rightSum, downSum []float64
	rightN, downN     []int32
	// Per pixel NDVI: highest clear value, sum, sum of squares, count.
	ndviMax         []float32
	ndviSum, ndviSq []float64
	ndviN           []int32
	feat            []float64 // scratch: per-date features, pixel-major
	valid           []bool    // scratch: per-date usable pixels
}

// nFeat features per pixel and date: NDVI then the 10 m reflectances.
const nFeat = 5

// reflWeight scales squared reflectance differences relative to squared
// NDVI differences: a reflectance step of 0.2 weighs like an NDVI step of 1.
const reflWeight = 0.0

func newAccumulator(fr *imagery.FieldRaster) *accumulator {
	n := fr.Grid.Cols * fr.Grid.Rows
	a := &accumulator{
		grid: fr.Grid, cols: fr.Grid.Cols, rows: fr.Grid.Rows,
		in: fr.InField, inPixels: fr.FieldPixels,
		rightSum: make([]float64, n), downSum: make([]float64, n),
		rightN: make([]int32, n), downN: make([]int32, n),
		ndviMax: make([]float32, n), ndviN: make([]int32, n),
		feat: make([]float64, n*nFeat), valid: make([]bool, n),
	}
	for i := range a.ndviMax {
		a.ndviMax[i] = float32(math.Inf(-1))
	}
	return a
}

// add accumulates one date over the pixels valid marks.
func (a *accumulator) add(fr *imagery.FieldRaster, valid []bool) {
	b2, b3, b4, b8 := fr.Bands["B02"], fr.Bands["B03"], fr.Bands["B04"], fr.Bands["B08"]
	copy(a.valid, valid)
	for i, v := range a.valid {
		if !v {
			continue
		}
		ndvi := (b8[i] - b4[i]) / (b8[i] + b4[i])
		f := a.feat[i*nFeat : (i+1)*nFeat]
		f[0], f[1], f[2], f[3], f[4] = ndvi, b2[i], b3[i], b4[i], b8[i]
		a.ndviMax[i] = max(a.ndviMax[i], float32(ndvi))
		a.ndviN[i]++
	}
	for r := 0; r < a.rows; r++ {
		for c := 0; c < a.cols; c++ {
			i := r*a.cols + c
			if !a.valid[i] {
				continue
			}
			if c+1 < a.cols && a.valid[i+1] {
				a.rightSum[i] += a.dist(i, i+1)
				a.rightN[i]++
			}
			if r+1 < a.rows && a.valid[i+a.cols] {
				a.downSum[i] += a.dist(i, i+a.cols)
				a.downN[i]++
			}
		}
	}
}

// dist is the weighted squared feature difference of pixels i and j.
func (a *accumulator) dist(i, j int) float64 {
	p, q := a.feat[i*nFeat:(i+1)*nFeat], a.feat[j*nFeat:(j+1)*nFeat]
	d0 := p[0] - q[0]
	s := 0.0
	for k := 1; k < nFeat; k++ {
		d := p[k] - q[k]
		s += d * d
	}
	return d0*d0 + reflWeight*s
}

// edges returns the area's edges with their multi-temporal strength (RMS
// over the dates both pixels were clear). Pairs never clear together get
// the median strength: no evidence either way.
func (a *accumulator) edges() []edge {
	es := make([]edge, 0, 2*a.inPixels)
	var unknown []int
	add := func(i, j int, sum float64, n int32) {
		if n == 0 {
			unknown = append(unknown, len(es))
			es = append(es, edge{a: int32(i), b: int32(j)})
			return
		}
		es = append(es, edge{a: int32(i), b: int32(j), w: float32(math.Sqrt(sum / float64(n)))})
	}
	for r := 0; r < a.rows; r++ {
		for c := 0; c < a.cols; c++ {
			i := r*a.cols + c
			if !a.in[i] {
				continue
			}
			if c+1 < a.cols && a.in[i+1] {
				add(i, i+1, a.rightSum[i], a.rightN[i])
			}
			if r+1 < a.rows && a.in[i+a.cols] {
				add(i, i+a.cols, a.downSum[i], a.downN[i])
			}
		}
	}
	if len(unknown) > 0 && len(unknown) < len(es) {
		ws := make([]float32, 0, len(es))
		for _, e := range es {
			ws = append(ws, e.w)
		}
		for _, k := range unknown {
			ws[k] = float32(math.NaN())
		}
		ws = slices.DeleteFunc(ws, func(v float32) bool { return v != v })
		slices.Sort(ws)
		med := ws[len(ws)/2]
		for _, k := range unknown {
			es[k].w = med
		}
	}
	return es
}

// edge joins 4-adjacent pixels a and b of the area with strength w.
type edge struct {
	a, b int32
	w    float32
}
