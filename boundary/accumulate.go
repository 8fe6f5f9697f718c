package boundary

import (
	"math"

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

func newAccumulator(fr *imagery.FieldRaster) *accumulator {
	n := fr.Grid.Cols * fr.Grid.Rows
	a := &accumulator{
		grid: fr.Grid, cols: fr.Grid.Cols, rows: fr.Grid.Rows,
		in: fr.InField, inPixels: fr.FieldPixels,
		rightSum: make([]float64, n), downSum: make([]float64, n),
		rightN: make([]int32, n), downN: make([]int32, n),
		ndviMax: make([]float32, n), ndviSum: make([]float64, n), ndviSq: make([]float64, n), ndviN: make([]int32, n),
		feat: make([]float64, n*nFeat), valid: make([]bool, n),
	}
	for i := range a.ndviMax {
		a.ndviMax[i] = float32(math.Inf(-1))
	}
	return a
}

// add accumulates one date when at least minClear of the area's pixels are
// clear and have every band; it returns that clear fraction either way.
func (a *accumulator) add(fr *imagery.FieldRaster, minClear float64) float64 {
	b2, b3, b4, b8 := fr.Bands["B02"], fr.Bands["B03"], fr.Bands["B04"], fr.Bands["B08"]
	ok := 0
	for i := range a.valid {
		v := a.in[i] && fr.Clear[i] && finite(b2[i]) && finite(b3[i]) && finite(b4[i]) && finite(b8[i]) && b4[i]+b8[i] > 0
		a.valid[i] = v
		if v {
			ok++
		}
	}
	frac := float64(ok) / float64(max(a.inPixels, 1))
	if frac < minClear {
		return frac
	}
	for i, v := range a.valid {
		if !v {
			continue
		}
		ndvi := (b8[i] - b4[i]) / (b8[i] + b4[i])
		f := a.feat[i*nFeat : (i+1)*nFeat]
		f[0], f[1], f[2], f[3], f[4] = ndvi, b2[i], b3[i], b4[i], b8[i]
		a.ndviMax[i] = max(a.ndviMax[i], float32(ndvi))
		a.ndviSum[i] += ndvi
		a.ndviSq[i] += ndvi * ndvi
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
	return frac
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

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
