package colormap

import (
	"bytes"
	"flag"
	"image"
	"image/color"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden PNGs in testdata/")

// rampValues is the golden raster of a colormap: 3 rows of rampCols values.
// Row 0 runs from start−Δ to stop+Δ (Δ = a tenth of the range), so it covers
// both clamps and every stop; row 1 is the same ramp reversed with every
// fourth value NaN; row 2 is NaN except the exact start, middle and stop.
const rampCols = 25

func rampValues(c Colormap) []float64 {
	d := (c.Stop - c.Start) / 10
	lo, hi := c.Start-d, c.Stop+d
	v := make([]float64, 3*rampCols)
	for i := range rampCols {
		x := lo + (hi-lo)*float64(i)/float64(rampCols-1)
		v[i] = x
		v[rampCols+rampCols-1-i] = x
		v[2*rampCols+i] = math.NaN()
	}
	for i := 0; i < rampCols; i += 4 {
		v[rampCols+i] = math.NaN()
	}
	v[2*rampCols+2] = c.Start
	v[2*rampCols+rampCols/2] = (c.Start + c.Stop) / 2
	v[2*rampCols+rampCols-3] = c.Stop
	return v
}

// nrgbaAt is the non-premultiplied colour at (x, y), with every fully
// transparent pixel as NRGBA{}: a colour-keyed PNG decodes its transparent
// pixels with the key's RGB, which nothing displays.
func nrgbaAt(img image.Image, x, y int) color.NRGBA {
	c := color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
	if c.A == 0 {
		return color.NRGBA{}
	}
	return c
}

// wantPixel is the decoded colour of a rendered value: Color's result, with
// NaN as fully transparent.
func wantPixel(c Colormap, v float64) color.NRGBA {
	return color.NRGBA(c.Color(v))
}

func TestGoldenPNG(t *testing.T) {
	enc := NewEncoder()
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			c, _ := ForIndex(name)
			values := rampValues(c)
			var buf bytes.Buffer
			require.NoError(t, enc.Encode(&buf, values, rampCols, 3, c, PNGOptions{}))
			path := filepath.Join("testdata", name+"_ramp.png")
			if *update {
				require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
			}
			got, err := png.Decode(bytes.NewReader(buf.Bytes()))
			require.NoError(t, err)
			f, err := os.ReadFile(path)
			require.NoError(t, err, "run go test ./colormap -run Golden -update to create it")
			golden, err := png.Decode(bytes.NewReader(f))
			require.NoError(t, err)
			require.Equal(t, image.Rect(0, 0, rampCols, 3), got.Bounds())
			require.Equal(t, golden.Bounds(), got.Bounds())
			for y := range 3 {
				for x := range rampCols {
					v := values[y*rampCols+x]
					g := nrgbaAt(got, x, y)
					assert.Equal(t, nrgbaAt(golden, x, y), g, "golden pixel (%d,%d)", x, y)
					assert.Equal(t, wantPixel(c, v), g, "pixel (%d,%d) value %v", x, y, v)
				}
			}
			// The ramp's ends are the clamped end colours; NaN is transparent.
			assert.Equal(t, color.NRGBA(c.Scale[0]), nrgbaAt(got, 0, 0))
			assert.Equal(t, color.NRGBA(c.Scale[len(c.Scale)-1]), nrgbaAt(got, rampCols-1, 0))
			assert.Equal(t, color.NRGBA{}, nrgbaAt(got, 0, 1))
			assert.Equal(t, color.NRGBA(c.Scale[0]), nrgbaAt(got, 2, 2))
			assert.Equal(t, color.NRGBA(c.Scale[len(c.Scale)-1]), nrgbaAt(got, rampCols-3, 2))
			// Small fields fit a palette.
			_, paletted := got.(*image.Paletted)
			assert.True(t, paletted, "decoded %T", got)
		})
	}
}

func TestUpscale(t *testing.T) {
	c, _ := ForIndex("ndvi")
	values := []float64{0, 0.25, math.NaN(), 0.5, 0.75, 1}
	for _, k := range []int{0, 1, 2, 3, 7} {
		var buf bytes.Buffer
		require.NoError(t, EncodePNG(&buf, values, 3, 2, c, PNGOptions{Upscale: k}))
		img, err := png.Decode(&buf)
		require.NoError(t, err)
		s := max(k, 1)
		require.Equal(t, image.Rect(0, 0, 3*s, 2*s), img.Bounds(), "upscale %d", k)
		for y := range 2 * s {
			for x := range 3 * s {
				require.Equal(t, wantPixel(c, values[(y/s)*3+x/s]), nrgbaAt(img, x, y), "upscale %d pixel (%d,%d)", k, x, y)
			}
		}
	}
}

// steps maps each integer v in [0, 510] to its own colour: (v, 0, 0) up to
// 255, then (255, v−255, 0), so the test controls the number of distinct
// colours.
func steps(t testing.TB) Colormap {
	c, err := New("steps", []string{"#000000", "#ff0000", "#ffff00"}, 0, 510)
	require.NoError(t, err)
	return c
}

func TestPaletteOrNRGBA(t *testing.T) {
	c := steps(t)
	seq := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(i)
		}
		return v
	}
	repeated := func(n int) []float64 {
		v := seq(n)
		for i := range v {
			v[i] = float64(i % 256)
		}
		return v
	}
	withNaN := func(v []float64) []float64 { v[len(v)-1] = math.NaN(); return v }
	tests := []struct {
		name         string
		values       []float64
		cols, rows   int
		wantPaletted bool
		wantPalette  int
	}{
		{"one colour", []float64{7, 7, 7, 7}, 2, 2, true, 1},
		{"256 colours", seq(256), 16, 16, true, 256},
		{"255 colours and NaN", withNaN(seq(256)), 16, 16, true, 256},
		{"256 colours and NaN", withNaN(seq(257)), 257, 1, false, 0},
		{"256 colours repeated", repeated(1024), 32, 32, true, 256},
		{"257 colours", seq(257), 257, 1, false, 0},
		{"511 colours", seq(511), 511, 1, false, 0},
		{"all NaN", []float64{math.NaN(), math.NaN()}, 1, 2, true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			img, err := Image(tt.values, tt.cols, tt.rows, c, 2)
			require.NoError(t, err)
			if tt.wantPaletted {
				p, ok := img.(*image.Paletted)
				require.True(t, ok, "got %T", img)
				assert.Len(t, p.Palette, tt.wantPalette)
			} else {
				_, ok := img.(*image.NRGBA)
				require.True(t, ok, "got %T", img)
			}
			// Both forms hold the same pixels, and so does the PNG.
			var buf bytes.Buffer
			require.NoError(t, EncodePNG(&buf, tt.values, tt.cols, tt.rows, c, PNGOptions{Upscale: 2}))
			dec, err := png.Decode(&buf)
			require.NoError(t, err)
			for y := range 2 * tt.rows {
				for x := range 2 * tt.cols {
					want := wantPixel(c, tt.values[(y/2)*tt.cols+x/2])
					require.Equal(t, want, nrgbaAt(img, x, y), "image pixel (%d,%d)", x, y)
					require.Equal(t, want, nrgbaAt(dec, x, y), "png pixel (%d,%d)", x, y)
				}
			}
		})
	}
}

func TestCompressionLevels(t *testing.T) {
	c, _ := ForIndex("ndvi")
	values := fieldValues(64, 64, 1)
	for i := range values {
		values[i] += 0.25 * math.Sin(float64(i)) // more than 256 colours: the keyed RGB path
	}
	sizes := map[png.CompressionLevel]int{}
	var first image.Image
	for _, level := range []png.CompressionLevel{png.DefaultCompression, png.BestSpeed, png.BestCompression, png.NoCompression} {
		var buf bytes.Buffer
		require.NoError(t, EncodePNG(&buf, values, 64, 64, c, PNGOptions{CompressionLevel: level}))
		sizes[level] = buf.Len()
		img, err := png.Decode(&buf)
		require.NoError(t, err)
		assert.Equal(t, wantPixel(c, values[64*32+32]), nrgbaAt(img, 32, 32))
		if first == nil {
			first = img
			continue
		}
		for y := range 64 { // every level, the same pixels
			for x := range 64 {
				require.Equal(t, nrgbaAt(first, x, y), nrgbaAt(img, x, y), "level %d pixel (%d,%d)", level, x, y)
			}
		}
	}
	assert.Equal(t, sizes[png.BestSpeed], sizes[png.DefaultCompression], "zero value selects BestSpeed")
	assert.Less(t, sizes[png.BestCompression], sizes[png.NoCompression])
}

func TestRenderErrors(t *testing.T) {
	c, _ := ForIndex("ndvi")
	tests := []struct {
		name       string
		n          int
		cols, rows int
		upscale    int
		c          Colormap
		want       error
	}{
		{"too few values", 5, 2, 3, 1, c, ErrInvalidRaster},
		{"too many values", 7, 2, 3, 1, c, ErrInvalidRaster},
		{"zero cols", 0, 0, 3, 1, c, ErrInvalidRaster},
		{"negative rows", 6, -2, -3, 1, c, ErrInvalidRaster},
		{"negative upscale", 6, 2, 3, -1, c, ErrInvalidRaster},
		{"upscale too large", 6, 2, 3, MaxUpscale + 1, c, ErrInvalidRaster},
		{"valid with default upscale", 4, 2, 2, 0, c, nil},
		{"huge", 1, 1 << 20, 1 << 20, 1, c, ErrInvalidRaster},
		{"overflowing", 1, math.MaxInt / 2, 4, 1, c, ErrInvalidRaster},
		{"output beyond MaxPixels", 1 << 20, 1 << 10, 1 << 10, 64, c, ErrInvalidRaster},
		{"zero colormap", 6, 2, 3, 1, Colormap{}, ErrInvalidColormap},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			values := make([]float64, tt.n)
			_, err := Image(values, tt.cols, tt.rows, tt.c, tt.upscale)
			var buf bytes.Buffer
			err2 := EncodePNG(&buf, values, tt.cols, tt.rows, tt.c, PNGOptions{Upscale: tt.upscale})
			if tt.want == nil {
				require.NoError(t, err)
				require.NoError(t, err2)
				return
			}
			require.ErrorIs(t, err, tt.want)
			require.ErrorIs(t, err2, tt.want)
			assert.Zero(t, buf.Len(), "nothing written on error")
		})
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, os.ErrClosed }

func TestEncodeWriteError(t *testing.T) {
	c, _ := ForIndex("ndvi")
	err := EncodePNG(failingWriter{}, []float64{0.5}, 1, 1, c, PNGOptions{})
	require.ErrorIs(t, err, os.ErrClosed)
}

func TestEncoderConcurrentReuse(t *testing.T) {
	enc := NewEncoder()
	names := Names()
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for g := range errs {
		wg.Go(func() {
			c, _ := ForIndex(names[g%len(names)])
			size := 8 + 8*(g%4)
			values := fieldValues(size, size, uint64(g))
			for range 20 {
				var buf bytes.Buffer
				if err := enc.Encode(&buf, values, size, size, c, PNGOptions{Upscale: 1 + g%3}); err != nil {
					errs[g] = err
					return
				}
				img, err := png.Decode(&buf)
				if err != nil {
					errs[g] = err
					return
				}
				k := 1 + g%3
				for _, p := range [][2]int{{0, 0}, {size / 2, size / 2}, {size - 1, size - 1}} {
					if got, want := nrgbaAt(img, p[0]*k, p[1]*k), wantPixel(c, values[p[1]*size+p[0]]); got != want {
						errs[g] = assert.AnError
						return
					}
				}
			}
		})
	}
	wg.Wait()
	for g, err := range errs {
		require.NoError(t, err, "goroutine %d", g)
	}
}

// fieldValues is a synthetic NDVI field: a smooth gradient with noise inside
// an ellipse, NaN outside it (the field window's corners).
func fieldValues(cols, rows int, seed uint64) []float64 {
	r := rand.New(rand.NewPCG(seed, 1))
	v := make([]float64, cols*rows)
	for y := range rows {
		for x := range cols {
			dx := (float64(x) + 0.5 - float64(cols)/2) / (float64(cols) / 2)
			dy := (float64(y) + 0.5 - float64(rows)/2) / (float64(rows) / 2)
			if dx*dx+dy*dy > 1 {
				v[y*cols+x] = math.NaN()
				continue
			}
			v[y*cols+x] = 0.55 + 0.3*float64(x)/float64(cols) + 0.05*r.NormFloat64()
		}
	}
	return v
}

func benchmarkEncode(b *testing.B, cols, rows int) {
	c, _ := ForIndex("ndvi")
	values := fieldValues(cols, rows, 1)
	enc := NewEncoder()
	var buf bytes.Buffer
	b.SetBytes(int64(8 * len(values)))
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := enc.Encode(&buf, values, cols, rows, c, PNGOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(buf.Len()), "png-bytes")
}

func BenchmarkEncodePNG64(b *testing.B)   { benchmarkEncode(b, 64, 64) }
func BenchmarkEncodePNG1000(b *testing.B) { benchmarkEncode(b, 1000, 1000) }

// BenchmarkEncodePNG1000Wide has more than 256 colours (a full-range ramp),
// so it takes the NRGBA path.
func BenchmarkEncodePNG1000Wide(b *testing.B) {
	c, _ := ForIndex("ndvi")
	values := make([]float64, 1000*1000)
	for i := range values {
		values[i] = float64(i%1000) / 1000
	}
	img, err := Image(values, 1000, 1000, c, 1)
	if err != nil {
		b.Fatal(err)
	}
	if _, ok := img.(*image.NRGBA); !ok {
		b.Fatalf("want the NRGBA path, got %T", img)
	}
	enc := NewEncoder()
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := enc.Encode(&buf, values, 1000, 1000, c, PNGOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(buf.Len()), "png-bytes")
}

// BenchmarkEncodePNG64Upscale4 is the 64×64 field rendered at 4× (256×256).
func BenchmarkEncodePNG64Upscale4(b *testing.B) {
	c, _ := ForIndex("ndvi")
	values := fieldValues(64, 64, 1)
	enc := NewEncoder()
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := enc.Encode(&buf, values, 64, 64, c, PNGOptions{Upscale: 4}); err != nil {
			b.Fatal(err)
		}
	}
}

// benchmarkStdlib is the reference: the same render encoded by image/png at
// BestSpeed with a buffer pool.
func benchmarkStdlib(b *testing.B, cols, rows int) {
	c, _ := ForIndex("ndvi")
	values := fieldValues(cols, rows, 1)
	enc := png.Encoder{CompressionLevel: png.BestSpeed, BufferPool: &stdPool{}}
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		img, err := Image(values, cols, rows, c, 1)
		if err != nil {
			b.Fatal(err)
		}
		if err := enc.Encode(&buf, img); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(buf.Len()), "png-bytes")
}

type stdPool struct{ b *png.EncoderBuffer }

func (p *stdPool) Get() *png.EncoderBuffer  { return p.b }
func (p *stdPool) Put(b *png.EncoderBuffer) { p.b = b }

func BenchmarkStdlibPNG64(b *testing.B)   { benchmarkStdlib(b, 64, 64) }
func BenchmarkStdlibPNG1000(b *testing.B) { benchmarkStdlib(b, 1000, 1000) }

func TestPNGColourTypes(t *testing.T) {
	c := steps(t)
	// keyed maps v in [0, 255] to (0, 0, v): every candidate colour key.
	keyed, err := New("keyed", []string{"#000000", "#0000ff"}, 0, 255)
	require.NoError(t, err)
	seq := func(n int, nan bool) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(i)
		}
		if nan {
			v = append(v, math.NaN())
		}
		return v
	}
	tests := []struct {
		name     string
		c        Colormap
		values   []float64
		wantType uint8
		wantTRNS bool
	}{
		{"paletted", c, seq(100, false), ctPaletted, false},
		{"paletted with transparent", c, seq(99, true), ctPaletted, true},
		{"RGB", c, seq(400, false), ctRGB, false},
		{"RGB with colour key", c, seq(399, true), ctRGB, true},
		{"RGBA when every key is in use", keyed, seq(299, true), ctRGBA, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			n := len(tt.values)
			require.NoError(t, EncodePNG(&buf, tt.values, n, 1, tt.c, PNGOptions{}))
			b := buf.Bytes()
			require.Equal(t, tt.wantType, b[25], "colour type")
			assert.Equal(t, tt.wantTRNS, bytes.Contains(b, []byte("tRNS")))
			img, err := png.Decode(&buf)
			require.NoError(t, err)
			for i, v := range tt.values {
				require.Equal(t, wantPixel(tt.c, v), nrgbaAt(img, i, 0), "pixel %d value %v", i, v)
			}
		})
	}
}

func TestLargeImageSpansIDATChunks(t *testing.T) {
	c, _ := ForIndex("ndvi")
	values := fieldValues(300, 300, 7) // RGB, > idatMax bytes compressed
	var buf bytes.Buffer
	require.NoError(t, EncodePNG(&buf, values, 300, 300, c, PNGOptions{Upscale: 2}))
	assert.Greater(t, bytes.Count(buf.Bytes(), []byte("IDAT")), 1)
	img, err := png.Decode(&buf)
	require.NoError(t, err)
	for _, p := range [][2]int{{0, 0}, {150, 150}, {299, 10}, {10, 299}, {299, 299}, {77, 201}} {
		assert.Equal(t, wantPixel(c, values[p[1]*300+p[0]]), nrgbaAt(img, 2*p[0]+1, 2*p[1]+1))
	}
}

// BenchmarkEncodePNGField150 is a field the size of the peers' scattered
// fields (150×150 px, a disc with noisy values: more than 256 colours, the
// keyed RGB path), the typical image of cropkit index.
func BenchmarkEncodePNGField150(b *testing.B) {
	c, _ := ForIndex("ndvi")
	values := fieldValues(150, 150, 1)
	for i := range values {
		values[i] += 0.25 * math.Sin(float64(i)) // real fields are noisier than fieldValues
	}
	img, err := Image(values, 150, 150, c, 1)
	require.NoError(b, err)
	if _, ok := img.(*image.NRGBA); !ok {
		b.Fatalf("want the NRGBA path, got %T", img)
	}
	enc := NewEncoder()
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := enc.Encode(&buf, values, 150, 150, c, PNGOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(buf.Len()), "png-bytes")
}
