package colormap

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fieldImage is one field raster as cropkit index renders it: the field's
// bounding window, NaN outside its outline.
type fieldImage struct {
	values     []float64
	cols, rows int
	c          Colormap
}

// noisyFieldImages returns n field rasters like those of a full
// Sentinel-2-like tile (the peers' inputs): 60 to 300 px a side, an
// irregular outline (radius 0.6–1.0 of the half-size at 9 angles, so about
// 40 % of the window is NaN), values a smooth gradient of the index's usual
// range with per-pixel noise of ±0.05, coloured with ndvi, ndre, ndwi or evi
// in turn. Nearly all of them have more than 256 colours (the keyed RGB path).
func noisyFieldImages(n int, seed uint64) []fieldImage {
	rnd := rand.New(rand.NewPCG(seed, 2))
	names := []string{"ndvi", "ndre", "ndwi", "evi"}
	// Usual values of each index over crops: low, high.
	ranges := [][2]float64{{0.3, 0.9}, {0.15, 0.55}, {-0.1, 0.4}, {0.2, 0.8}}
	images := make([]fieldImage, n)
	for i := range images {
		cols, rows := 60+rnd.IntN(241), 60+rnd.IntN(241)
		var radius [9]float64
		for k := range radius {
			radius[k] = 0.6 + 0.4*rnd.Float64()
		}
		lo, hi := ranges[i%4][0], ranges[i%4][1]
		gx, gy := rnd.Float64(), rnd.Float64()
		values := make([]float64, cols*rows)
		for y := range rows {
			for x := range cols {
				dx := (float64(x) + 0.5 - float64(cols)/2) / (float64(cols) / 2)
				dy := (float64(y) + 0.5 - float64(rows)/2) / (float64(rows) / 2)
				a := (math.Atan2(dy, dx) + math.Pi) / (2 * math.Pi) * float64(len(radius))
				k := int(a) % len(radius)
				f := a - math.Floor(a)
				edge := radius[k]*(1-f) + radius[(k+1)%len(radius)]*f
				if math.Hypot(dx, dy) > edge {
					values[y*cols+x] = math.NaN()
					continue
				}
				s := (gx*float64(x)/float64(cols) + gy*float64(y)/float64(rows)) / (gx + gy)
				values[y*cols+x] = lo + (hi-lo)*s + 0.1*(rnd.Float64()-0.5)
			}
		}
		c, _ := ForIndex(names[i%4])
		images[i] = fieldImage{values: values, cols: cols, rows: rows, c: c}
	}
	return images
}

// BenchmarkEncodeFieldImages encodes 24 noisy field rasters (noisyFieldImages)
// per iteration with one Encoder, as cropkit index does; it reports the time
// and the PNG bytes per image.
func BenchmarkEncodeFieldImages(b *testing.B) {
	images := noisyFieldImages(24, 1)
	enc := NewEncoder()
	var buf bytes.Buffer
	pixels := 0
	for _, im := range images {
		pixels += len(im.values)
	}
	b.ReportAllocs()
	total := 0
	for b.Loop() {
		total = 0
		for _, im := range images {
			buf.Reset()
			if err := enc.Encode(&buf, im.values, im.cols, im.rows, im.c, PNGOptions{}); err != nil {
				b.Fatal(err)
			}
			total += buf.Len()
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(images)), "ns/image")
	b.ReportMetric(float64(total)/float64(len(images)), "bytes/image")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(pixels), "ns/pixel")
}

// BenchmarkRenderFieldImages is the colouring part of
// BenchmarkEncodeFieldImages: the rasters rendered into palette indices or
// RGB scanlines, nothing deflated.
func BenchmarkRenderFieldImages(b *testing.B) {
	images := noisyFieldImages(24, 1)
	var s scratch
	var tables colourTables
	for b.Loop() {
		for _, im := range images {
			if err := s.render(im.values, im.cols, im.rows, im.c, 1, &tables); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(images)), "ns/image")
}

// TestEncodeRandomRastersDecodeToColor renders many random rasters, decodes
// each PNG and checks every pixel against Colormap.Color (NaN transparent):
// the colours the PNG writer has always produced, whatever path (table or
// interpolation, palette or RGB with or without a colour key, RGBA) and
// upscale the image takes. Values mix NaN runs, ±Inf, values beyond either
// end of the ramp, exact stops and noise at two scales (few colours:
// paletted; many: RGB).
func TestEncodeRandomRastersDecodeToColor(t *testing.T) {
	rnd := rand.New(rand.NewPCG(22, 1))
	var maps []Colormap
	for _, name := range Names() {
		c, _ := ForIndex(name)
		maps = append(maps, c)
	}
	// dark has black and blues, so NaN needs a key other than black; many
	// has more stops than a colour table takes.
	dark, err := New("dark", []string{"#000000", "#0000ff", "#00ff80", "#000010"}, -1, 1)
	require.NoError(t, err)
	hex := make([]string, maxTableStops+3)
	for i := range hex {
		hex[i] = fmt.Sprintf("#%02x%02x%02x", 13*i, 255-11*i, 7*i*i%256)
	}
	many, err := New("many", hex, 0, 1)
	require.NoError(t, err)
	maps = append(maps, dark, many)

	enc := NewEncoder()
	kinds := map[uint8]int{}
	for n := range 300 {
		c := maps[n%len(maps)]
		cols, rows := 1+rnd.IntN(90), 1+rnd.IntN(70)
		spread := []float64{0.002, 0.05, 1}[rnd.IntN(3)] * (c.Stop - c.Start)
		mid := c.Start + rnd.Float64()*(c.Stop-c.Start)
		values := make([]float64, cols*rows)
		for i := range values {
			switch k := rnd.IntN(40); {
			case k < 8 || (i > 0 && values[i-1] != values[i-1] && k < 30):
				values[i] = math.NaN()
			case k == 30:
				values[i] = math.Inf(1 - 2*rnd.IntN(2))
			case k == 31:
				values[i] = c.Start - rnd.Float64()*(c.Stop-c.Start)
			case k == 32:
				values[i] = c.Stop + rnd.Float64()*(c.Stop-c.Start)
			case k == 33:
				values[i] = c.Start + float64(rnd.IntN(len(c.Scale)))*(c.Stop-c.Start)/float64(len(c.Scale)-1)
			default:
				values[i] = mid + spread*(rnd.Float64()-0.5)
			}
		}
		upscale := 1 + rnd.IntN(2)
		var buf bytes.Buffer
		require.NoError(t, enc.Encode(&buf, values, cols, rows, c, PNGOptions{Upscale: upscale}))
		kinds[buf.Bytes()[25]]++
		img, err := png.Decode(&buf)
		require.NoError(t, err)
		require.Equal(t, image.Rect(0, 0, cols*upscale, rows*upscale), img.Bounds())
		for y := range rows * upscale {
			for x := range cols * upscale {
				v := values[(y/upscale)*cols+x/upscale]
				require.Equal(t, wantPixel(c, v), nrgbaAt(img, x, y), "raster %d (%s %dx%d ×%d) pixel (%d,%d) value %v", n, c.Index, cols, rows, upscale, x, y, v)
			}
		}
	}
	// Every colour type was exercised.
	assert.Greater(t, kinds[ctPaletted], 30)
	assert.Greater(t, kinds[ctRGB], 30)
	t.Logf("PNGs by colour type: %v", kinds)
}
