package imagery

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// One synthetic vegetated pixel, reflectance per band.
// VV and VH are linear backscatter power (−10 dB and −20 dB).
var pixel = map[string]float64{"B02": 0.05, "B03": 0.08, "B04": 0.04, "B05": 0.1, "B08": 0.4, "B8A": 0.38, "B11": 0.2,
	"VV": 0.1, "VH": 0.01}

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
		"vv":      -10,                     // 10·log10(0.1)
		"vh":      -20,                     // 10·log10(0.01)
		"vh_vv":   -10,                     // 10·log10(0.01/0.1)
		"rvi":     0.04 / 0.11,             // 4·0.01/(0.1+0.01)
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

func TestIndexSensors(t *testing.T) {
	cat := NewCatalogue()
	for _, tt := range []struct {
		index   string
		sensors []Family
		decibel bool
	}{
		{"ndvi", []Family{FamilySentinel2, FamilyLandsat}, false},
		{"ndmi", []Family{FamilySentinel2, FamilyLandsat}, false},
		{"chi", []Family{FamilySentinel2}, false},
		{"ndre", []Family{FamilySentinel2}, false},
		{"vv", []Family{FamilySentinel1}, true},
		{"vh", []Family{FamilySentinel1}, true},
		{"vh_vv", []Family{FamilySentinel1}, true},
		{"rvi", []Family{FamilySentinel1}, false},
	} {
		ix, ok := cat.Lookup(tt.index)
		require.True(t, ok)
		assert.Equal(t, tt.sensors, ix.Sensors, tt.index)
		assert.Equal(t, tt.decibel, ix.Decibel, tt.index)
	}
	noop := func([][]float64, []float64) {}
	require.NoError(t, cat.Register(Index{Name: "red_edge2", Bands: []string{"B06"}, Compute: noop}))
	ix, _ := cat.Lookup("red_edge2")
	assert.Equal(t, []Family{FamilySentinel2}, ix.Sensors, "a band Landsat lacks: Sentinel-2 only")
	require.NoError(t, cat.Register(Index{Name: "green_red", Bands: []string{"B03", "B04"}, Compute: noop}))
	ix, _ = cat.Lookup("green_red")
	assert.Equal(t, []Family{FamilySentinel2, FamilyLandsat}, ix.Sensors)
	require.NoError(t, cat.Register(Index{Name: "vh_lin", Bands: []string{"VH"}, Compute: noop}))
	ix, _ = cat.Lookup("vh_lin")
	assert.Equal(t, []Family{FamilySentinel1}, ix.Sensors)
	assert.ErrorContains(t, cat.Register(Index{Name: "mixed", Bands: []string{"VH", "B04"}, Compute: noop}), "mix radar and optical")
	assert.ErrorContains(t, cat.Register(Index{Name: "bad", Bands: []string{"B05"}, Sensors: []Family{FamilyLandsat}, Compute: noop}), "no equivalent")
	assert.ErrorContains(t, cat.Register(Index{Name: "bad", Bands: []string{"VV"}, Sensors: []Family{FamilySentinel2}, Compute: noop}), "cannot serve")
}

func TestParseSensor(t *testing.T) {
	for in, want := range map[string]Sensor{
		"sentinel-2a": Sentinel2A, "Sentinel-2B": Sentinel2B, "S2C": Sentinel2C, "SENTINEL_1A": Sentinel1A,
		"sentinel-1": Sentinel1, "LANDSAT_8": Landsat8, "landsat-9": Landsat9, "LC09": Landsat9, "LC08": Landsat8, "landsat": Landsat,
	} {
		got, ok := ParseSensor(in)
		assert.True(t, ok, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "sentinel-3a", "landsat-7", "modis"} {
		_, ok := ParseSensor(bad)
		assert.False(t, ok, bad)
	}
	for in, want := range map[string]Sensor{
		"Sentinel-1 GRD IW sigma0 (Google Earth Engine COPERNICUS/S1_GRD) via WorldCereal": Sentinel1,
		"Landsat 8 Collection 1 Tier 1 surface reflectance":                                Landsat8,
		"S2B_MSIL2A_20240419T095549_R122_T47XML_20240419T123458":                           Sentinel2B,
		"LC09_L2SP_089090_20240417_02_T1":                                                  Landsat9,
		"S1A_IW_GRDH_1SDV_20240419T045904":                                                 Sentinel1A,
		"Sentinel-2 L2A (Sen2Cor BOA) via Google Earth Engine":                             Sentinel2,
	} {
		assert.Equal(t, want, sensorFromText(in), in)
	}
}

// benchFieldRaster is a 150×120 px field window like the peers' scattered
// fields: a diamond-shaped field (half the window outside it, in runs
// along the rows), 15 % of its pixels masked at random (scattered
// clouds), and the five bands of ndvi, ndre, ndwi and evi.
func benchFieldRaster() (*FieldRaster, []string) {
	const cols, rows = 150, 120
	n := cols * rows
	seed := uint64(11)
	rnd := func() float64 { // xorshift in [0, 1)
		seed ^= seed << 13
		seed ^= seed >> 7
		seed ^= seed << 17
		return float64(seed>>11) / (1 << 53)
	}
	fr := &FieldRaster{Grid: gridOf(cols, rows), InField: make([]bool, n), Clear: make([]bool, n), Bands: map[string][]float64{}}
	bands := []string{"B08", "B04", "B05", "B11", "B02"}
	base := map[string]float64{"B08": 0.3, "B04": 0.05, "B05": 0.1, "B11": 0.15, "B02": 0.04}
	for _, b := range bands {
		v := make([]float64, n)
		for i := range v {
			v[i] = base[b] * (0.8 + 0.4*rnd())
		}
		fr.Bands[b] = v
	}
	for r := range rows {
		for c := range cols {
			i := r*cols + c
			dx, dy := math.Abs(float64(c)-cols/2)/(cols/2), math.Abs(float64(r)-rows/2)/(rows/2)
			fr.InField[i] = dx+dy <= 1
			fr.Clear[i] = rnd() >= 0.15
			if fr.InField[i] {
				fr.FieldPixels++
			}
		}
	}
	return fr, bands
}

// BenchmarkReadProducts is the products of ndvi, ndre, ndwi and evi, and
// of ndvi alone, from one read of a field (ProjectedFieldProducts without
// the read): "gathered" as products computes them, "pixel-loop" with
// product's loop over every pixel (the way before, kept for radar dB
// indices and reads where some band alone lacks data).
func BenchmarkReadProducts(b *testing.B) {
	fr, _ := benchFieldRaster()
	for _, names := range [][]string{{"ndvi", "ndre", "ndwi", "evi"}, {"ndvi"}} {
		idx, bands, err := resolve(NewCatalogue(), names)
		require.NoError(b, err)
		b.Run(fmt.Sprintf("%d-indices/gathered", len(idx)), func(b *testing.B) {
			b.ReportAllocs()
			var pool floatPool
			for b.Loop() {
				if _, err := fr.products(idx, bands, &pool); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(idx)*len(fr.InField)), "ns/pixel")
		})
		b.Run(fmt.Sprintf("%d-indices/pixel-loop", len(idx)), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				states := fr.pixelStates(bands)
				for _, ix := range idx {
					if _, err := fr.product(ix, states); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(idx)*len(fr.InField)), "ns/pixel")
		})
	}
}

// TestProductsSameAsPixelLoop: the products of one read computed on the
// gathered usable pixels are bit for bit those of the pixel-by-pixel loop
// (product) — values and statistics — with scattered masks, no data in
// some bands only, infinite and NaN index values, one usable pixel, all
// equal values, nothing usable, and no field pixel at all.
func TestProductsSameAsPixelLoop(t *testing.T) {
	nan := math.NaN()
	cases := map[string]func(fr *FieldRaster){
		"as read": func(*FieldRaster) {},
		"no data in B05": func(fr *FieldRaster) {
			for i := 5; i < len(fr.InField); i += 997 {
				fr.Bands["B05"][i] = nan
			}
		},
		"no data everywhere": func(fr *FieldRaster) { fillBand(fr, "B04", nan) },
		"no data in all bands at a pixel": func(fr *FieldRaster) {
			for _, v := range fr.Bands {
				v[9075] = nan
			}
		},
		"infinite and NaN values": func(fr *FieldRaster) {
			for i := 0; i < len(fr.InField); i += 13 {
				fr.Bands["B04"][i] = -fr.Bands["B08"][i] // x/0: ±Inf, 0/0: NaN
			}
			fr.Bands["B08"][9075], fr.Bands["B04"][9075] = 0, 0
		},
		"all equal": func(fr *FieldRaster) {
			fillBand(fr, "B08", 0.3)
			fillBand(fr, "B04", 0.1)
		},
		"one usable pixel": func(fr *FieldRaster) {
			for i := range fr.Clear {
				fr.Clear[i] = i == 9075
			}
		},
		"all masked": func(fr *FieldRaster) { clear(fr.Clear) },
		"no field pixel": func(fr *FieldRaster) {
			clear(fr.InField)
			fr.FieldPixels = 0
		},
	}
	names := []string{"ndvi", "ndre", "ndwi", "evi", "savi", "msavi2"}
	same := func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			fr, _ := benchFieldRaster()
			change(fr)
			idx, bands, err := resolve(NewCatalogue(), names)
			require.NoError(t, err)
			states := fr.pixelStates(bands)
			var want []Product
			for _, ix := range idx {
				p, err := fr.product(ix, states)
				require.NoError(t, err)
				if p.Stats.Num > 0 {
					want = append(want, p)
				}
			}
			var pool floatPool
			got, err := fr.products(idx, bands, &pool)
			require.NoError(t, err)
			require.Len(t, got, len(want))
			for k, w := range want {
				g := got[k]
				require.Equal(t, w.Index, g.Index)
				require.Equal(t, w.Grid, g.Grid)
				require.Len(t, g.Values, len(w.Values))
				for i := range w.Values {
					require.True(t, same(w.Values[i], g.Values[i]), "%s pixel %d: %v, want %v", w.Index, i, g.Values[i], w.Values[i])
				}
				ws, gs := w.Stats, g.Stats
				require.Equal(t, [2]int{ws.Num, ws.FieldPixels}, [2]int{gs.Num, gs.FieldPixels}, w.Index)
				for f, pair := range [][2]float64{{ws.Mean, gs.Mean}, {ws.Median, gs.Median}, {ws.Std, gs.Std}, {ws.Min, gs.Min},
					{ws.Max, gs.Max}, {ws.P25, gs.P25}, {ws.P75, gs.P75}, {ws.CloudCover, gs.CloudCover}} {
					require.True(t, same(pair[0], pair[1]), "%s statistic %d: %v, want %v", w.Index, f, pair[1], pair[0])
				}
			}
			// Without a pool (the scratch arrays allocated).
			single, err := fr.products(idx[:1], idx[0].Bands, nil)
			require.NoError(t, err)
			want0, err := fr.product(idx[0], fr.pixelStates(idx[0].Bands))
			require.NoError(t, err)
			if want0.Stats.Num == 0 {
				assert.Empty(t, single)
				return
			}
			require.Len(t, single, 1)
			assert.True(t, same(want0.Stats.Mean, single[0].Stats.Mean) && same(want0.Stats.P75, single[0].Stats.P75))
			assert.Equal(t, want0.Stats.Num, single[0].Stats.Num)
		})
	}
}

func fillBand(fr *FieldRaster, name string, x float64) {
	for i := range fr.Bands[name] {
		fr.Bands[name][i] = x
	}
}

// BenchmarkProductPixels: one index over a 200×200 field window whose
// polygon leaves the corners out and whose mask flags scattered pixels (the
// loop that sorts pixels into outside, masked and kept), pixel states
// worked out once as FieldProducts does.
func BenchmarkProductPixels(b *testing.B) {
	const side = 200
	n := side * side
	nir, red := make([]float64, n), make([]float64, n)
	inField, clear := make([]bool, n), make([]bool, n)
	rnd := uint64(1)
	inside := 0
	for i := range nir {
		rnd = rnd*6364136223846793005 + 1442695040888963407
		r, c := i/side, i%side
		nir[i] = 0.3 + 0.1*float64(rnd>>40&1023)/1024
		red[i] = 0.05 + 0.02*float64(rnd>>20&1023)/1024
		inField[i] = (r-side/2)*(r-side/2)+(c-side/2)*(c-side/2) < side*side/4
		clear[i] = rnd>>60 != 0 // 1 in 16 masked
		if inField[i] {
			inside++
		}
	}
	fr := &FieldRaster{Grid: gridOf(side, side), InField: inField, Clear: clear, FieldPixels: inside,
		Bands: map[string][]float64{"B08": nir, "B04": red}}
	ix, _ := NewCatalogue().Lookup("ndvi")
	ps := fr.pixelStates([]string{"B08", "B04"})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := fr.product(ix, ps); err != nil {
			b.Fatal(err)
		}
	}
}
