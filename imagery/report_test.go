package imagery

import (
	"encoding/json"
	"fmt"
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

// strconvRow is the reference form of appendPixelRow.
func strconvRow(values []float64) string {
	s := []byte{'['}
	for i, v := range values {
		if i > 0 {
			s = append(s, ',')
		}
		s = append(s, strconvPixel(v)...)
	}
	return string(append(s, ']'))
}

// TestAppendPixelRowCases checks rows shaped like a field's: runs of nulls
// of every length around the 8-at-a-time block at the start, middle and end
// of a row, all-null and empty rows, and the values where the row writer
// leaves its fast path (rounding to ±1, 1e9, infinities) or takes its zero
// branch (-0, subnormals, the rounding half of 5e-7).
func TestAppendPixelRowCases(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	nulls := func(k int) []float64 {
		s := make([]float64, k)
		for i := range s {
			s[i] = nan
		}
		return s
	}
	cat := func(parts ...[]float64) []float64 {
		var s []float64
		for _, p := range parts {
			s = append(s, p...)
		}
		return s
	}
	below1 := math.Nextafter(0.9999995, 0)
	cases := map[string][]float64{
		"empty":         {},
		"one null":      {nan},
		"one value":     {0.25},
		"one negative":  {-0.25},
		"zeros":         {0, math.Copysign(0, -1), 4e-7, -4e-7, math.Nextafter(5e-7, 0), -math.Nextafter(5e-7, 0), 5e-7, -5e-7},
		"subnormals":    {5e-324, -5e-324, math.SmallestNonzeroFloat64 * 3, 2.2250738585072014e-308, -2.2250738585072009e-308},
		"around 1":      {below1, -below1, 0.9999995, -0.9999995, math.Nextafter(1, 0), 1, -1, math.Nextafter(1, 2), 1.0000004, 1.0000005},
		"around 1e9":    {math.Nextafter(1e9, 0), -math.Nextafter(1e9, 0), 1e9, -1e9, 999999999.9999995, 1e9 + 0.5},
		"not finite":    {inf, -inf, nan, math.MaxFloat64, -math.MaxFloat64},
		"all null 150":  nulls(150),
		"null ends":     cat(nulls(37), []float64{0.5, -0.123456, 0.000001}, nulls(41)),
		"values at end": cat(nulls(16), []float64{0.75, 0.1}),
		"null in large": cat([]float64{12.5}, nulls(9), []float64{-3e12}, nulls(8), []float64{inf, 0.3}),
	}
	for k := 1; k <= 20; k++ { // every block and tail length
		cases[fmt.Sprintf("run %d", k)] = cat(nulls(k), []float64{0.2}, nulls(k), []float64{-0.9, 1.5}, nulls(k))
	}
	for name, row := range cases {
		for _, spare := range []int{0, 1000} {
			got := appendPixelRow(make([]byte, 1, 1+spare), row)
			require.Equal(t, strconvRow(row), string(got[1:]), "%s, spare %d", name, spare)
		}
	}
}

// TestAppendPixelRowEveryFraction writes every 6-decimal fraction below 1,
// both signs, and the floats next to each rounding half, as rows with a
// null between some of them: the row writer's own fast path against
// strconvPixel.
func TestAppendPixelRowEveryFraction(t *testing.T) {
	row := make([]float64, 0, 2*1000)
	var got []byte
	for hi := range 1000 {
		for _, sign := range []float64{1, -1} {
			row = row[:0]
			for lo := range 1000 {
				f := float64(hi*1000+lo) / 1e6
				half := (float64(hi*1000+lo) + 0.5) / 1e6
				row = append(row, sign*f, sign*math.Nextafter(half, 0), sign*half, sign*math.Nextafter(half, 1))
				if lo%97 == 0 {
					row = append(row, math.NaN())
				}
			}
			got = appendPixelRow(got[:0], row)
			if want := strconvRow(row); string(got) != want {
				require.Equal(t, want, string(got), "fractions %d/1000, sign %v", hi, sign)
			}
		}
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
	benchmarkAppendJSON(b, Report{Index: "ndvi", Cols: cols, Rows: rows, Values: values, Stats: Stats{Mean: 0.5, Num: 1}})
}

// TestAppendPixelRowLargeValues writes rows of many shortest-form values
// (longer than a fixed-point one), checking that the row writer keeps
// making room for them.
func TestAppendPixelRowLargeValues(t *testing.T) {
	row := []float64{-1.7976931348623157e308, 0.5, -2.2250738585072014e-308, math.NaN(), 1e9, -1.2345678901234567e300, 0.000001}
	for range 6 {
		row = append(row, row...)
	}
	var want []byte
	want = append(want, '[')
	for i, v := range row {
		if i > 0 {
			want = append(want, ',')
		}
		want = append(want, strconvPixel(v)...)
	}
	want = append(want, ']')
	for _, spare := range []int{0, 5, 100} {
		got := appendPixelRow(make([]byte, 2, 2+spare), row)
		require.Equal(t, string(want), string(got[2:]), "spare %d", spare)
	}
}

// TestAppendPixelEveryFraction checks every 6-decimal fraction, both signs,
// with a one-digit and a many-digit integer part, against strconvPixel: all
// entries of the digit table and every trailing-zero length.
func TestAppendPixelEveryFraction(t *testing.T) {
	buf := make([]byte, 0, 64)
	for _, ip := range []int64{0, 7, 123456789} {
		for frac := range int64(1e6) {
			for _, sign := range []float64{1, -1} {
				v := sign * (float64(ip) + float64(frac)/1e6)
				got := appendPixel(buf[:0], v)
				if want := strconvPixel(v); string(got) != want {
					require.Equal(t, want, string(got), "%v", v)
				}
			}
		}
	}
}

// TestAppendPixelRoundingHalves checks the floats around the rounding
// halves (5e-7, 1.5e-6, 0.9999995, …) to a few ulps, where the writer's
// x+0.5 rounding could part from math.Round.
func TestAppendPixelRoundingHalves(t *testing.T) {
	for _, half := range []float64{5e-7, 1.5e-6, 2.5e-6, 0.0000125, 0.1234565, 0.9999995, 1.0000005, 9.9999995, 123456.7890125} {
		for _, sign := range []float64{1, -1} {
			v := sign * half
			for range 64 {
				v = math.Nextafter(v, 0)
			}
			for range 128 {
				assert.Equal(t, strconvPixel(v), string(appendPixel(nil, v)), "%v", v)
				v = math.Nextafter(v, sign*math.Inf(1))
			}
		}
	}
	// Around the floats whose product with 1e6 is near the largest float64
	// below 0.5, the one input x+0.5 would round up (no float64 times 1e6
	// lands on it exactly; putFixed6 guards it anyway).
	x := math.Nextafter(0.5, 0)
	for v := math.Nextafter(x/1e6, 0); v <= math.Nextafter(x/1e6, 1); v = math.Nextafter(v, 1) {
		assert.Equal(t, strconvPixel(v), string(appendPixel(nil, v)), "%v", v)
	}
}
