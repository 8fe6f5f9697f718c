package imagery

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// strconvPixel is the straightforward form of appendPixel (round to 6
// decimals with strconv, trailing zeros dropped), the reference for the
// fast writer.
func strconvPixel(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "null"
	}
	if math.Abs(v) >= 1e9 {
		return string(appendNumber(nil, v))
	}
	n := int64(math.Round(math.Abs(v) * 1e6))
	if n == 0 {
		return "0"
	}
	s := strconv.FormatInt(n/1e6, 10)
	if v < 0 {
		s = "-" + s
	}
	if frac := n % 1e6; frac != 0 {
		f := strconv.FormatInt(1e6+frac, 10)[1:] // six digits, leading zeros kept
		for f[len(f)-1] == '0' {
			f = f[:len(f)-1]
		}
		s += "." + f
	}
	return s
}

func TestAppendPixelRowMatchesStrconv(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	edge := []float64{0, math.Copysign(0, -1), 1e-7, -4e-7, 5e-7, -5e-7, 0.0000015, 0.9999995, -0.9999995,
		9.9999996, 10, 99.5, 123456.7890125, 999999999.9999996, -999999999.9999, 1e9, -1e9, 3e15, -2.5e21,
		math.NaN(), math.Inf(1), math.Inf(-1), 0.1, 0.2, 0.3, 1.0 / 3, -2.0 / 3, 0.8497542973072505}
	values := append([]float64(nil), edge...)
	for range 20000 {
		switch rng.IntN(4) {
		case 0: // an index of reflectances, the usual case
			values = append(values, 2*rng.Float64()-1)
		case 1: // DN ratios: exact multiples of 1e-4
			values = append(values, float64(rng.IntN(20001)-10000)/1e4)
		case 2: // large, up to the fixed-point limit
			values = append(values, (2*rng.Float64()-1)*math.Pow(10, float64(rng.IntN(10))))
		default:
			values = append(values, math.NaN())
		}
	}
	var want []byte
	want = append(want, '[')
	for i, v := range values {
		if i > 0 {
			want = append(want, ',')
		}
		want = append(want, strconvPixel(v)...)
	}
	want = append(want, ']')
	// A buffer with little spare room exercises the growth path.
	got := appendPixelRow(make([]byte, 0, 3), values)
	require.Equal(t, string(want), string(got))
	for _, v := range edge {
		assert.Equal(t, strconvPixel(v), string(appendPixel(nil, v)), "%v", v)
	}
}

func TestReportAppendJSON(t *testing.T) {
	nan := math.NaN()
	r := Report{
		Index: "ndvi", Bounds: [2][2]float64{{51.1, 3.2}, {51.2, 3.3}}, Cols: 3, Rows: 2,
		Values: []float64{nan, 0.123456789, -0.5, 1, 0.0000004, nan},
		Stats:  Stats{Mean: 0.5, Median: 0.5, Std: 0.1, Min: -0.5, Max: 1, P25: 0, P75: 1, Num: 4, FieldPixels: 5, CloudCover: 20},
	}
	prefix := []byte("prefix")
	b, err := r.AppendJSON(prefix)
	require.NoError(t, err)
	require.Equal(t, "prefix", string(b[:6]))
	assert.Equal(t, `{"bounds":[[51.1,3.2],[51.2,3.3]],"ndvi":[[null,0.123457,-0.5],[1,0,null]],`+
		`"mean":0.5,"median":0.5,"std":0.1,"min":-0.5,"max":1,"p25":0,"p75":1,"num":4,`+
		`"mean_variation":0,"previous_date":null,"date":null,"field_pixels":5,"cloud_cover":20}`, string(b[6:]))
	m, err := r.MarshalJSON()
	require.NoError(t, err)
	assert.Equal(t, string(b[6:]), string(m))
	var back Report
	require.NoError(t, json.Unmarshal(m, &back))
	assert.Equal(t, []float64{0.123457, -0.5, 1, 0}, []float64{back.Values[1], back.Values[2], back.Values[3], back.Values[4]})

	// Reusing the buffer: the same bytes again, no growth needed.
	again, err := r.AppendJSON(b[:0])
	require.NoError(t, err)
	assert.Equal(t, string(m), string(again))

	r.Index = ""
	_, err = r.AppendJSON(nil)
	assert.Error(t, err)
	r.Index, r.Cols = "ndvi", -3
	_, err = r.AppendJSON(nil)
	assert.Error(t, err)
}

// BenchmarkReportJSON writes the report of a 150×150 px field (the size of
// the peers' scattered fields), three quarters in the field, into a reused buffer.
func BenchmarkReportJSON(b *testing.B) {
	const cols, rows = 150, 150
	rng := rand.New(rand.NewPCG(3, 4))
	values := make([]float64, cols*rows)
	for i := range values {
		if rng.IntN(4) == 0 {
			values[i] = math.NaN()
		} else {
			values[i] = float64(rng.IntN(20001)-10000) / 12345
		}
	}
	r := Report{Index: "ndvi", Cols: cols, Rows: rows, Values: values, Stats: Stats{Mean: 0.5, Num: 1}}
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
