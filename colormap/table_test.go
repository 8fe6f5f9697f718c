package colormap

import (
	"bytes"
	"image/png"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestColourTableSameAsRamp checks the table against ramp.color for every
// colormap of the package and two default ones: at and around (±3 ulps)
// every bucket boundary, where a bucket with a wrongly shared colour would
// show, at random values over and beyond the range, and at the 16-bit DN
// ratios indices are made of.
func TestColourTableSameAsRamp(t *testing.T) {
	var maps []Colormap
	for _, name := range Names() {
		c, _ := ForIndex(name)
		maps = append(maps, c)
	}
	for _, name := range RadarNames() {
		c, _ := ForRadarIndex(name)
		maps = append(maps, c)
	}
	for _, rng := range [][2]float64{{-1, 1}, {0.1, 0.37}} {
		c, err := Default("custom", rng[0], rng[1])
		require.NoError(t, err)
		maps = append(maps, c)
	}
	rnd := rand.New(rand.NewPCG(5, 6))
	for _, c := range maps {
		t.Run(c.Index, func(t *testing.T) {
			r := newRamp(c)
			var tables colourTables
			tab := tables.get(&r)
			require.NotNil(t, tab)
			require.Same(t, tab, tables.get(&r), "built once")
			mismatches, checked, shared := 0, 0, 0
			check := func(v float64) {
				checked++
				got, ok := tab.lookup(&r, v)
				if !ok {
					got = r.packed(v)
				}
				if want := packColour(r.color(v)); got != want {
					if mismatches++; mismatches < 5 {
						assert.Equal(t, want, got, "value %v", v)
					}
				}
			}
			for k, p := range tab.buckets {
				if p != mixedBucket {
					shared++
				}
				v := r.start + float64(k)/bucketsPerStop/r.perV
				for range 3 {
					v = math.Nextafter(v, math.Inf(-1))
				}
				for range 7 {
					check(v)
					v = math.Nextafter(v, math.Inf(1))
				}
			}
			span := c.Stop - c.Start
			for range 200000 {
				check(c.Start - 0.1*span + 1.2*span*rnd.Float64())
			}
			for dn := -10000; dn <= 10000; dn++ {
				check(float64(dn) / 1e4)
				check(c.Start + span*float64(dn)/1e4)
			}
			for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), c.Start, c.Stop, math.Nextafter(c.Stop, 0)} {
				check(v)
			}
			assert.Zero(t, mismatches, "of %d values", checked)
			// Most buckets hold one colour, or the table would not pay.
			assert.Greater(t, float64(shared)/float64(len(tab.buckets)), 0.9)
		})
	}
}

func TestColourTablesBounded(t *testing.T) {
	var tables colourTables
	for i := range maxTables + 3 {
		c, err := Default("custom", 0, float64(i+1))
		require.NoError(t, err)
		r := newRamp(c)
		if i < maxTables {
			assert.NotNil(t, tables.get(&r))
		} else {
			assert.Nil(t, tables.get(&r), "cache full: render without a table")
		}
	}
	long := make([]string, maxTableStops+1)
	for i := range long {
		long[i] = "#102030"
	}
	c, err := New("long", long, 0, 1)
	require.NoError(t, err)
	r := newRamp(c)
	assert.Nil(t, tables.get(&r))
}

// BenchmarkRampColour and BenchmarkTableColour colour the noisy 150×150 px
// field of BenchmarkEncodePNGField150, without and with the table.
func BenchmarkRampColour(b *testing.B)  { benchmarkColour(b, false) }
func BenchmarkTableColour(b *testing.B) { benchmarkColour(b, true) }

func benchmarkColour(b *testing.B, table bool) {
	c, _ := ForIndex("ndvi")
	values := fieldValues(150, 150, 1)
	for i := range values {
		values[i] += 0.25 * math.Sin(float64(i))
	}
	r := newRamp(c)
	var tables colourTables
	tab := tables.get(&r)
	var sum uint32
	for b.Loop() {
		for _, v := range values {
			if table {
				p, ok := tab.lookup(&r, v)
				if !ok {
					p = r.packed(v)
				}
				sum += p
			} else {
				sum += packColour(r.color(v))
			}
		}
	}
	b.ReportMetric(float64(sum%2), "x")
}

// TestExpandRowSameAsBytewise pins expandRow to a byte-by-byte reference.
func TestExpandRowSameAsBytewise(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 8))
	for _, tc := range []struct{ bpp, k int }{{3, 1}, {3, 2}, {4, 1}, {4, 3}, {1, 1}, {1, 4}} {
		for _, cols := range []int{1, 2, 3, 17} {
			src := make([]uint8, cols*tc.bpp)
			for i := range src {
				src[i] = uint8(rnd.Uint32())
			}
			want := make([]uint8, 0, cols*tc.bpp*tc.k)
			for x := range cols {
				for range tc.k {
					want = append(want, src[x*tc.bpp:(x+1)*tc.bpp]...)
				}
			}
			got := make([]uint8, len(want))
			expandRow(got, src, tc.bpp, tc.k)
			assert.Equal(t, want, got, "%+v, %d cols", tc, cols)
		}
	}
}

// TestRGBKeyWhenBlackIsAColour renders a many-row RGB image whose values
// include black, so that NaN takes the next free key (0, 0, 1) and the
// scanlines are patched where the values are NaN, at upscales 1 and 3.
func TestRGBKeyWhenBlackIsAColour(t *testing.T) {
	c, err := New("dark", []string{"#000000", "#ff0000", "#00ff80"}, 0, 1)
	require.NoError(t, err)
	const cols, rows = 40, 20
	rnd := rand.New(rand.NewPCG(9, 10))
	values := make([]float64, cols*rows)
	for i := range values {
		switch rnd.IntN(5) {
		case 0:
			values[i] = math.NaN()
		case 1:
			values[i] = 0 // black
		default:
			values[i] = rnd.Float64()
		}
	}
	for _, k := range []int{1, 3} {
		var buf bytes.Buffer
		require.NoError(t, NewEncoder().Encode(&buf, values, cols, rows, c, PNGOptions{Upscale: k}))
		b := buf.Bytes()
		require.Equal(t, uint8(ctRGB), b[25], "colour type")
		assert.True(t, bytes.Contains(b, []byte("tRNS\x00\x00\x00\x00\x00\x01")), "key (0, 0, 1)")
		img, err := png.Decode(&buf)
		require.NoError(t, err)
		for y := range rows * k {
			for x := range cols * k {
				v := values[(y/k)*cols+x/k]
				require.Equal(t, wantPixel(c, v), nrgbaAt(img, x, y), "upscale %d pixel (%d,%d) value %v", k, x, y, v)
			}
		}
	}
}
