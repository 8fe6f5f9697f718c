package imagery

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// One synthetic vegetated pixel, reflectance per band.
var pixel = map[string]float64{"B02": 0.05, "B03": 0.08, "B04": 0.04, "B05": 0.1, "B08": 0.4, "B8A": 0.38, "B11": 0.2}

func TestBuiltinFormulas(t *testing.T) {
	// Hand-computed from the formulas with the pixel above.
	want := map[string]float64{
		"ndvi":    0.36 / 0.44,             // (0.4−0.04)/(0.4+0.04)
		"ndwi":    0.2 / 0.6,               // (0.4−0.2)/(0.4+0.2)
		"chi":     3,                       // 0.4/0.1 − 1
		"ndre":    0.6,                     // 0.3/0.5
		"savi":    1.428 * 0.36 / 0.868,    // 1.428·0.36/(0.44+0.428)
		"lai":     4.376752,                // 10.22·(0.4 − 0.0184) + 0.4768
		"evi":     0.9 / 1.265,             // 2.5·0.36/(0.4+0.24−0.375+1)
		"nirv":    0.36 / 0.44 * 0.4 * 1e4, // ndvi·B08·10000
		"gndvi":   0.32 / 0.48,             // (0.4−0.08)/(0.4+0.08)
		"msavi2":  0.6,                     // (1.8 − √(3.24 − 2.88))/2
		"osavi":   0.6,                     // 0.36/(0.44+0.16)
		"cigreen": 4,                       // 0.4/0.08 − 1
		"ndmi":    0.18 / 0.58,             // (0.38−0.2)/(0.38+0.2)
	}
	cat := NewCatalogue()
	require.ElementsMatch(t, cat.Names(), keys(want))
	for name, w := range want {
		t.Run(name, func(t *testing.T) {
			ix, ok := cat.Lookup(name)
			require.True(t, ok)
			assert.NotEmpty(t, ix.Formula)
			assert.NotEmpty(t, ix.Source)
			in := make([][]float64, len(ix.Bands))
			for k, b := range ix.Bands {
				v, ok := pixel[b]
				require.True(t, ok, "band %s", b)
				in[k] = []float64{v, math.NaN()}
			}
			out := make([]float64, 2)
			ix.Compute(in, out)
			assert.InDelta(t, w, out[0], 1e-12)
			assert.True(t, math.IsNaN(out[1]), "NaN input gives NaN")
		})
	}
}

func keys(m map[string]float64) []string {
	var k []string
	for n := range m {
		k = append(k, n)
	}
	return k
}

func TestCatalogueRegister(t *testing.T) {
	cat := NewCatalogue()
	sr := Index{
		Name: "sr", Formula: "B08/B04", Source: "simple ratio (Jordan 1969)", Bands: []string{"B08", "B04"},
		Compute: func(b [][]float64, out []float64) {
			for i := range out {
				out[i] = b[0][i] / b[1][i]
			}
		},
	}
	require.NoError(t, cat.Register(sr))
	got, ok := cat.Lookup("sr")
	require.True(t, ok)
	out := make([]float64, 1)
	got.Compute([][]float64{{0.4}, {0.04}}, out)
	assert.InDelta(t, 10, out[0], 1e-12)
	assert.Contains(t, cat.Names(), "sr")

	bad := []Index{
		{Name: "Bad Name", Bands: []string{"B04"}, Compute: sr.Compute},
		{Name: "nocompute", Bands: []string{"B04"}},
		{Name: "noband", Compute: sr.Compute},
		{Name: "badband", Bands: []string{"B13"}, Compute: sr.Compute},
	}
	for _, ix := range bad {
		assert.Error(t, cat.Register(ix), ix.Name)
	}
	var zero Catalogue
	require.NoError(t, zero.Register(sr))
	assert.Equal(t, []string{"sr"}, zero.Names())
}

func TestResolve(t *testing.T) {
	idx, bands, err := resolve(NewCatalogue(), []string{"ndvi", "evi", "ndre"})
	require.NoError(t, err)
	assert.Len(t, idx, 3)
	assert.Equal(t, []string{"B08", "B04", "B02", "B05"}, bands)
	_, _, err = resolve(NewCatalogue(), []string{"ndvi", "nope"})
	assert.ErrorIs(t, err, ErrUnknownIndex)
}

func BenchmarkIndexAndStats(b *testing.B) {
	// A 100 ha field: 100×100 pixels.
	const n = 10_000
	nir, red := make([]float64, n), make([]float64, n)
	inField, clear := make([]bool, n), make([]bool, n)
	for i := range nir {
		nir[i] = 0.3 + 0.1*math.Sin(float64(i))
		red[i] = 0.05 + 0.02*math.Cos(float64(i))
		inField[i], clear[i] = i%7 != 0, i%11 != 0
	}
	fr := &FieldRaster{Grid: gridOf(100, 100), InField: inField, Clear: clear, FieldPixels: n - n/7 - 1,
		Bands: map[string][]float64{"B08": nir, "B04": red}}
	ix, _ := NewCatalogue().Lookup("ndvi")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := fr.Product(ix); err != nil {
			b.Fatal(err)
		}
	}
}
