package boundary

import (
	"math"
	"slices"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/imagery"
)

// reflBands are the bands whose reflectance the edge strength compares
// besides NDVI: the four 10 m bands (the 20 m ones would blur edges).
var reflBands = [nRefl]string{"B02", "B03", "B04", "B08"}

const nRefl = 4

// ndviBands are read alone from scenes that lack some of reflBands.
var ndviBands = []string{"B04", "B08"}

// reflScale quantises reflectance in refl: the products' own digital
// number step (reflectance = DN / 10,000), so nothing is lost.
const reflScale = 10_000

// profiles holds the area's NDVI and 10 m reflectances per clear date and
// pixel (12 bytes per pixel and date: 250,000 pixels and 40 dates take
// 120 MB).
type profiles struct {
	grid       geo.Grid
	cols, rows int
	in         []bool // pixel centre inside the area
	inPixels   int
	ndvi       [][]float32 // per date, per pixel; NaN where not clear
	// refl is, per band of reflBands, per date and pixel, 1 + the
	// reflectance times reflScale (clamped to 0…65534); 0 where not clear.
	refl [nRefl][][]uint16
	// alpha scales each band's reflectance difference to NDVI units and
	// weighs it (0: band not used); bandW2 is the weight squared of a used
	// band against NDVI's 1. Set by weighBands.
	alpha  [nRefl]float64
	bandW2 float64
}

func newProfiles(fr *imagery.FieldRaster) *profiles {
	return &profiles{grid: fr.Grid, cols: fr.Grid.Cols, rows: fr.Grid.Rows, in: fr.InField, inPixels: fr.FieldPixels}
}

// add appends the NDVI of fr over the pixels valid marks.
func (p *profiles) add(fr *imagery.FieldRaster, valid []bool) {
	b4, b8 := fr.Bands["B04"], fr.Bands["B08"]
	l := make([]float32, len(valid))
	for i, v := range valid {
		l[i] = float32(math.NaN())
		if v {
			l[i] = float32((b8[i] - b4[i]) / (b8[i] + b4[i]))
		}
	}
	p.ndvi = append(p.ndvi, l)
	for k, name := range reflBands {
		b := fr.Bands[name] // nil when the scene lacks the band
		q := make([]uint16, len(valid))
		for i, v := range valid {
			if v && b != nil && finite(b[i]) {
				q[i] = 1 + uint16(min(max(math.Round(b[i]*reflScale), 0), math.MaxUint16-1))
			}
		}
		p.refl[k] = append(p.refl[k], q)
	}
}

// scaleSamples bounds the neighbour pairs sampled per layer set by scale.
const scaleSamples = 100_000

// scale is the median absolute difference between horizontal neighbours
// of layers over the area and the dates (a sample of at most about
// scaleSamples pairs): the layers' typical difference inside a field,
// which is mostly noise since field borders are a small share of the
// pairs. diff returns the difference of pixels i and i+1 of a layer and
// false where one is missing.
func scale[T any](p *profiles, layers [][]T, diff func(l []T, i int) (float64, bool)) float64 {
	n := len(layers) * len(p.in)
	step := max(1, n/scaleSamples)
	ds := make([]float64, 0, min(n, 2*scaleSamples))
	for k := 0; k < n; k += step {
		l, i := layers[k/len(p.in)], k%len(p.in)
		if i%p.cols+1 >= p.cols || !p.in[i] || !p.in[i+1] {
			continue
		}
		if d, ok := diff(l, i); ok {
			ds = append(ds, math.Abs(d))
		}
	}
	if len(ds) == 0 {
		return 0
	}
	return nth(ds, len(ds)/2)
}

// nth returns the k-th smallest of v (0-based), reordering v.
func nth(v []float64, k int) float64 {
	imagery.SelectKth(v, k)
	return v[k]
}

func ndviDiff(l []float32, i int) (float64, bool) {
	a, b := l[i], l[i+1]
	return float64(a - b), a == a && b == b
}

func reflDiff(l []uint16, i int) (float64, bool) {
	a, b := l[i], l[i+1]
	return (float64(a) - float64(b)) / reflScale, a > 0 && b > 0
}

// neighbours calls fn for each 4-neighbour j of pixel i inside the raster.
func (p *profiles) neighbours(i int, fn func(j int)) {
	r, c := i/p.cols, i%p.cols
	if r > 0 {
		fn(i - p.cols)
	}
	if c > 0 {
		fn(i - 1)
	}
	if c+1 < p.cols {
		fn(i + 1)
	}
	if r+1 < p.rows {
		fn(i + p.cols)
	}
}

// weighBands sets alpha and bandW2 for bandWeight (see edges); bands
// without spatial variation (or a weight ≤ 0) are not used.
func (p *profiles) weighBands(bandWeight float64) {
	p.alpha, p.bandW2 = [nRefl]float64{}, bandWeight*bandWeight
	sn := scale(p, p.ndvi, ndviDiff)
	if sn <= 0 || bandWeight <= 0 {
		return
	}
	for k, l := range p.refl {
		if s := scale(p, l, reflDiff); s > 0 {
			p.alpha[k] = bandWeight * sn / s / reflScale
		}
	}
}

// edges returns the area's edges with their multi-temporal strength: the
// root mean square, over the dates both pixels were clear, of their NDVI
// difference and of their reflectance differences in the four 10 m bands,
// each band scaled to NDVI's typical in-field difference (see scale) and
// weighted Options.BandWeight relative to NDVI (weighBands). The weights are normalised per
// date, so in-field noise gives about the same strength as with NDVI alone
// and a date without some bands counts as much as one with all. NDVI sees
// the crop calendar; the reflectances also tell apart crops of similar
// greenness (in the Flanders test data, grass next to a leguminous crop
// differs about as much in the blue and green bands as in NDVI, and two
// halves of one maize field much less). Pairs never clear together get
// the median strength.
func (p *profiles) edges() []edge {
	es := make([]edge, 0, 2*p.inPixels)
	var unknown []int
	alpha, w2 := p.alpha, p.bandW2
	add := func(i, j int) {
		sum, n := 0.0, 0
		for d, l := range p.ndvi {
			a, b := l[i], l[j]
			if a == a && b == b {
				x := float64(a - b)
				num, den := x*x, 1.0
				for k, r := range p.refl {
					if ra, rb := r[d][i], r[d][j]; alpha[k] > 0 && ra > 0 && rb > 0 {
						x = alpha[k] * (float64(ra) - float64(rb))
						num += x * x
						den += w2
					}
				}
				sum += num / den
				n++
			}
		}
		if n == 0 {
			unknown = append(unknown, len(es))
			es = append(es, edge{a: int32(i), b: int32(j), w: float32(math.NaN())})
			return
		}
		es = append(es, edge{a: int32(i), b: int32(j), w: float32(math.Sqrt(sum / float64(n)))})
	}
	for r := 0; r < p.rows; r++ {
		for c := 0; c < p.cols; c++ {
			i := r*p.cols + c
			if !p.in[i] {
				continue
			}
			if c+1 < p.cols && p.in[i+1] {
				add(i, i+1)
			}
			if r+1 < p.rows && p.in[i+p.cols] {
				add(i, i+p.cols)
			}
		}
	}
	if len(unknown) == len(es) {
		for k := range es {
			es[k].w = 0
		}
	} else if len(unknown) > 0 {
		ws := make([]float32, 0, len(es))
		for _, e := range es {
			if e.w == e.w {
				ws = append(ws, e.w)
			}
		}
		slices.Sort(ws)
		for _, k := range unknown {
			es[k].w = ws[len(ws)/2]
		}
	}
	return es
}

// greenest is pixel i's highest clear NDVI of the season (−Inf when never clear).
func (p *profiles) greenest(i int) float64 {
	g := math.Inf(-1)
	for _, l := range p.ndvi {
		if v := float64(l[i]); v == v {
			g = max(g, v)
		}
	}
	return g
}

// edge joins 4-adjacent pixels a and b of the area with strength w.
type edge struct {
	a, b int32
	w    float32
}
