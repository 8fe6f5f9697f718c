package imagery

import (
	"math"
	"math/rand/v2"
	"testing"
)

// BenchmarkStages measures each per-pixel stage of an index product of a
// 150×150 px field (the size of the peers' scattered fields) in ns per
// pixel, beside its floor: "copy" moves the same float64s (a read and a
// write per pixel, the memory-bandwidth bound of the index arithmetic).
// docs/performance.md (Row 1) lists the results.
func BenchmarkStages(b *testing.B) {
	const n = 150 * 150
	rng := rand.New(rand.NewPCG(5, 6))
	nir, red, out := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range nir {
		nir[i] = 0.25 + 0.2*rng.Float64()
		red[i] = 0.03 + 0.05*rng.Float64()
	}
	normalizedDifference([][]float64{nir, red}, out)
	scratch := make([]float64, n)
	report := Report{Index: "ndvi", Cols: 150, Rows: 150, Values: out, Stats: statsOf(append(scratch[:0], out...))}
	var buf []byte
	stages := []struct {
		name string
		run  func()
	}{
		{"copy", func() { copy(out, nir) }},
		{"ndvi", func() { normalizedDifference([][]float64{nir, red}, out) }},
		{"stats", func() { statsOf(append(scratch[:0], out...)) }},
		{"json", func() { buf, _ = report.AppendJSON(buf[:0]) }},
	}
	for _, s := range stages {
		b.Run(s.name, func(b *testing.B) {
			for b.Loop() {
				s.run()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/pixel")
		})
	}
	if math.IsNaN(out[0]) {
		b.Fatal("no index")
	}
}
