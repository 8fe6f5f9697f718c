package imagery

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

// fieldReport is the report of a realistic 150×150 px field window: an
// ellipse-shaped field covering ≈ 54 % of it, so each row starts and ends
// with a run of nulls (and rows above and below the field are all null);
// inside, NDVI-like values of 16-bit DNs, ≈ 0.2–0.9 with noise and a few
// negative (water, bare soil) pixels.
func fieldReport() Report {
	const cols, rows = 150, 150
	rng := rand.New(rand.NewPCG(5, 6))
	values := make([]float64, cols*rows)
	for y := range rows {
		for x := range cols {
			dx, dy := (float64(x)-74.5)/64, (float64(y)-76)/60
			if dx*dx+dy*dy > 1 {
				values[y*cols+x] = math.NaN()
				continue
			}
			base := 0.55 + 0.3*math.Sin(float64(x)/17)*math.Cos(float64(y)/23)
			red := 400 + rng.IntN(200)
			nir := float64(red) * (1 + base) / (1 - base) * (1 + 0.1*rng.NormFloat64())
			if rng.IntN(40) == 0 { // water: NIR below red
				nir = float64(red) * (0.6 + 0.3*rng.Float64())
			}
			n := math.Round(max(nir, 1))
			values[y*cols+x] = (n - float64(red)) / (n + float64(red))
		}
	}
	return Report{Index: "ndvi", Cols: cols, Rows: rows, Values: values, Stats: Stats{Mean: 0.5, Num: 1}}
}

// BenchmarkReportJSONField writes fieldReport's document into a reused buffer.
func BenchmarkReportJSONField(b *testing.B) { benchmarkAppendJSON(b, fieldReport()) }

// benchmarkAppendJSON writes r's document into a reused buffer.
func benchmarkAppendJSON(b *testing.B, r Report) {
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = r.AppendJSON(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
}

// TestFieldReportShape keeps the benchmark's field what its comment says.
func TestFieldReportShape(t *testing.T) {
	r := fieldReport()
	nulls, neg := 0, 0
	for _, v := range r.Values {
		if v != v {
			nulls++
		} else if v < 0 {
			neg++
		}
	}
	assert.InDelta(t, 0.46, float64(nulls)/float64(len(r.Values)), 0.02)
	assert.InDelta(t, 0.013, float64(neg)/float64(len(r.Values)), 0.005)
	for y := range r.Rows {
		row := r.Values[y*r.Cols : (y+1)*r.Cols]
		assert.True(t, math.IsNaN(row[0]) && math.IsNaN(row[len(row)-1]), "row %d ends", y)
	}
}
