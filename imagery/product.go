package imagery

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/paulmach/orb"

	"github.com/cropkit/cropkit/geo"
)

// Product is one index over one field on one date.
type Product struct {
	Index string
	Date  time.Time
	// Sensor is the sensor of the scene the product comes from.
	Sensor Sensor
	// Grid is the field window's grid in the scene CRS; Values has Grid.Cols·Grid.Rows entries.
	Grid geo.Grid
	// Values holds the index per pixel, row-major, rows north to south; NaN
	// outside the field, where masked and where the index is not finite.
	Values []float64
	Stats  Stats
}

// FieldProducts computes the named indices over field (EPSG:4326) from one
// read of the bands they need. It returns one product per index that has at
// least one clear pixel, in the order asked; when no index has any, it
// returns an error matching ErrNoClearPixels (and ErrNoOverlap when the field
// is outside the scene). Unknown names match ErrUnknownIndex; a nil cat means
// NewCatalogue().
func (s *Scene) FieldProducts(ctx context.Context, field orb.MultiPolygon, indices []string, cat *Catalogue) ([]Product, error) {
	projected, err := s.ProjectField(field)
	if err != nil {
		return nil, err
	}
	return s.ProjectedFieldProducts(ctx, projected, indices, cat)
}

// ProjectedFieldProducts is FieldProducts for a field already projected to the
// scene's CRS (see ProjectField), for callers reusing one projection across dates.
func (s *Scene) ProjectedFieldProducts(ctx context.Context, field orb.MultiPolygon, indices []string, cat *Catalogue) ([]Product, error) {
	if cat == nil {
		cat = NewCatalogue()
	}
	idx, bands, err := resolve(cat, indices)
	if err != nil {
		return nil, err
	}
	for _, ix := range idx {
		if !ix.AppliesTo(s.sensor) {
			return nil, fmt.Errorf("%w: %s applies to %v, scene %s is %s", ErrSensorMismatch, ix.Name, ix.Sensors, s.id, s.sensor)
		}
	}
	// The bands vv and vh take in dB, as read, beside their linear power.
	var keepDecibels []string
	for _, ix := range idx {
		if ix.bandDecibels && len(ix.Bands) == 1 {
			keepDecibels = append(keepDecibels, ix.Bands[0])
		}
	}
	fr, release, err := s.readProjected(ctx, field, bands, keepDecibels, len(idx))
	if err != nil {
		return nil, fmt.Errorf("field in scene %s: %w", s.id, err)
	}
	defer release()
	defer func() {
		// The products hold arrays of their own: the bands' go back.
		for _, v := range fr.Bands {
			s.floats.put(v)
		}
		for _, v := range fr.decibels {
			s.floats.put(v)
		}
	}()
	out, err := fr.products(idx, bands, &s.floats)
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Date = s.date
		out[i].Sensor = s.sensor
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("field in scene %s: %w (%d field pixels)", s.id, ErrNoClearPixels, fr.FieldPixels)
	}
	return out, nil
}

// products computes the indices idx, which use the bands bands, over fr:
// the products with at least one clear pixel, in order. Their Date and
// Sensor are left zero. Scratch arrays come from pool (nil: allocated).
func (fr *FieldRaster) products(idx []Index, bands []string, pool *floatPool) ([]Product, error) {
	// Usually every clear field pixel has data in every band read: then
	// all the indices use the same pixels, found without working out each
	// pixel's state. Else the usable pixels of the indices go by the state
	// bits that exclude a pixel: still one set for all unless some clear
	// pixel lacks data in some bands only.
	// Radar dB indices (their mean is that of linear values) and bands
	// not read go through product's loop over every pixel.
	gatherable := func(ix Index) bool { return !ix.Decibel && fr.bandDecibels(ix) == nil && fr.bandsRead(ix) }
	shares := 0
	for _, ix := range idx {
		shares += b2i(gatherable(ix))
	}
	shared, _ := fr.usableEverywhere(bands, pool)
	if shared != nil {
		shared.shares = shares
	}
	var sets map[uint8]*usablePixels
	defer func() {
		if shared != nil {
			shared.release()
		}
		for _, u := range sets {
			u.release()
		}
	}()
	var states pixelStates
	var allBands uint8
	var otherNoData, stated bool
	out := make([]Product, 0, len(idx))
	for _, ix := range idx {
		gathered := gatherable(ix)
		if !stated && (shared == nil || !gathered) {
			states, stated = fr.pixelStates(bands), true
			allBands, otherNoData = states.noDataBits()
		}
		var p Product
		var err error
		bits, byState := uint8(0), false
		if gathered && shared == nil {
			bits, byState = states.bandBits(ix.Bands)
		}
		switch {
		case gathered && shared != nil:
			p = fr.productOfUsable(ix, shared)
		case gathered && byState:
			if !otherNoData {
				bits = allBands
			}
			u := sets[bits]
			if u == nil {
				u = fr.usable(states, bits, bands, pool)
				u.shares = shares
				if sets == nil {
					sets = make(map[uint8]*usablePixels, 1)
				}
				sets[bits] = u
			}
			p = fr.productOfUsable(ix, u)
		default:
			p, err = fr.product(ix, states)
		}
		if err != nil {
			return nil, err
		}
		if p.Stats.Num == 0 {
			continue
		}
		out = append(out, p)
	}
	return out, nil
}

// usableEverywhere is the usable pixels of every index over bands — those
// inside the field and clear — with the bands gathered there, when fr
// holds all the bands and they have data at each of those pixels; else
// it returns false.
func (fr *FieldRaster) usableEverywhere(bands []string, pool *floatPool) (*usablePixels, bool) {
	n := fr.Grid.Cols * fr.Grid.Rows
	if len(fr.InField) != n || len(fr.Clear) != n {
		return nil, false
	}
	for _, name := range bands {
		if len(fr.Bands[name]) != n {
			return nil, false
		}
	}
	// Branchless: clouds scatter clear and masked pixels at random.
	pos := make([]int32, n+1)
	inField, clear := fr.InField[:n], fr.Clear[:n]
	m, in := 0, 0
	for i := range n {
		pos[m] = int32(i)
		m += b2i(inField[i] && clear[i])
		in += b2i(inField[i])
	}
	u := newUsablePixels(pos[:m], in, fr, bands, pool)
	for k, name := range bands {
		g, v := pool.get(m), fr.Bands[name][:n]
		u.gathered[k] = g
		noData := false
		for j, p := range u.pos {
			x := v[p]
			g[j] = x
			noData = noData || x != x
		}
		if noData {
			u.release()
			return nil, false
		}
	}
	return u, true
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// noDataBits is the state bits of all the bands, and whether some clear
// field pixel has no data in some of them (bits set) but not all.
func (ps pixelStates) noDataBits() (all uint8, some bool) {
	for k := range min(len(ps.bands), maxStateBands) {
		all |= stateBand0 << k
	}
	for _, st := range ps.state {
		if st != 0 && st&(stateOutside|stateMasked) == 0 && st != all {
			return all, true
		}
	}
	return all, false
}

// bandsRead reports whether fr holds every band of ix with a value per
// pixel of its grid (else product says what is wrong).
func (fr *FieldRaster) bandsRead(ix Index) bool {
	n := fr.Grid.Cols * fr.Grid.Rows
	if len(fr.InField) != n || len(fr.Clear) != n {
		return false
	}
	for _, name := range ix.Bands {
		if len(fr.Bands[name]) != n {
			return false
		}
	}
	return true
}

// usablePixels is the pixels an index uses (inside the field, clear,
// with data in its bands), with the bands' values there gathered on
// demand: the indices of one read mostly use the same pixels, so each is
// computed on those only, and its clear values come out in pixel order,
// ready for statsOf.
type usablePixels struct {
	pos     []int32 // the pixels, ascending
	inField int     // the pixels inside the field
	bands   []string
	source  map[string][]float64
	// gathered[k] is bands[k] at pos once gathered; values is scratch for
	// an index's values at pos; nans a NaN per pixel of the window, copied
	// to each product's values. All come from pool and go back to it.
	gathered [][]float64
	values   []float64
	nans     []float64
	pool     *floatPool
	shares   int // how many indices use these pixels (a NaN template pays from 2)
}

// newUsablePixels is the usable pixels pos of fr (of which inField inside
// the field), nothing gathered yet.
func newUsablePixels(pos []int32, inField int, fr *FieldRaster, bands []string, pool *floatPool) *usablePixels {
	u := &usablePixels{pos: pos, inField: inField, bands: bands, source: fr.Bands, gathered: make([][]float64, len(bands)), pool: pool}
	u.values = pool.get(len(pos))
	return u
}

// release gives u's arrays back to its pool.
func (u *usablePixels) release() {
	for _, g := range u.gathered {
		if g != nil {
			u.pool.put(g)
		}
	}
	u.pool.put(u.values)
	if u.nans != nil {
		u.pool.put(u.nans)
	}
}

// usable finds the pixels of fr whose states have none of stateOutside,
// stateMasked and bits.
func (fr *FieldRaster) usable(ps pixelStates, bits uint8, bands []string, pool *floatPool) *usablePixels {
	pos := make([]int32, 0, max(0, fr.FieldPixels-fr.OutsidePixels))
	inField := 0
	exclude := stateMasked | bits
	for i, st := range ps.state {
		if st&stateOutside != 0 {
			continue
		}
		inField++
		if st&exclude == 0 {
			pos = append(pos, int32(i))
		}
	}
	return newUsablePixels(pos, inField, fr, bands, pool)
}

// band is the named band's values at u's pixels.
func (u *usablePixels) band(name string) []float64 {
	k := slices.Index(u.bands, name)
	if g := u.gathered[k]; g != nil {
		return g
	}
	g, v := u.pool.get(len(u.pos)), u.source[name]
	for j, p := range u.pos {
		g[j] = v[p]
	}
	u.gathered[k] = g
	return g
}

// productOfUsable is product for an index whose bands fr holds and
// whose usable pixels are u's: the same values and statistics, the index
// computed on those pixels only.
func (fr *FieldRaster) productOfUsable(ix Index, u *usablePixels) Product {
	in := make([][]float64, len(ix.Bands))
	for k, name := range ix.Bands {
		in[k] = u.band(name)
	}
	clear := u.values
	ix.Compute(in, clear)
	nan := math.NaN()
	values := make([]float64, len(fr.InField))
	if u.nans == nil && u.shares > 1 {
		u.nans = u.pool.get(len(values))
		for i := range u.nans {
			u.nans[i] = nan
		}
	}
	if u.nans != nil {
		copy(values, u.nans) // a memmove: quicker than storing NaNs one by one
	} else {
		for i := range values {
			values[i] = nan
		}
	}
	finite := true
	for j, p := range u.pos {
		v := clear[j]
		if v-v != 0 { // NaN or ±Inf
			v, finite = nan, false
		}
		values[p] = v
	}
	if !finite {
		w := 0
		for _, v := range clear {
			if v-v == 0 {
				clear[w] = v
				w++
			}
		}
		clear = clear[:w]
	}
	st := statsOf(clear)
	st.FieldPixels = fr.FieldPixels
	if fr.FieldPixels > 0 {
		masked := fr.OutsidePixels + u.inField - len(u.pos)
		st.CloudCover = 100 * float64(masked) / float64(fr.FieldPixels)
	}
	return Product{Index: ix.Name, Grid: fr.Grid, Values: values, Stats: st}
}

// resolve looks up the indices and lists the bands they use, each once.
func resolve(cat *Catalogue, names []string) ([]Index, []string, error) {
	if len(names) == 0 {
		return nil, nil, fmt.Errorf("%w: no index given", ErrUnknownIndex)
	}
	var idx []Index
	var bands []string
	seen := map[string]bool{}
	for _, n := range names {
		ix, ok := cat.Lookup(n)
		if !ok {
			return nil, nil, fmt.Errorf("%w %q (known: %v)", ErrUnknownIndex, n, cat.Names())
		}
		idx = append(idx, ix)
		for _, b := range ix.Bands {
			if !seen[b] {
				seen[b] = true
				bands = append(bands, b)
			}
		}
	}
	return idx, bands, nil
}

// bandDecibels is the dB values as read of ix's band when ix is that band
// in dB and the scene stores it in dB, else nil.
func (fr *FieldRaster) bandDecibels(ix Index) []float64 {
	if !ix.bandDecibels || len(ix.Bands) != 1 {
		return nil
	}
	if db := fr.decibels[ix.Bands[0]]; len(db) == len(fr.Bands[ix.Bands[0]]) {
		return db
	}
	return nil
}

// Product computes ix over the field raster, which must hold ix.Bands. Its
// Date is left zero. Stats.Num is 0 when no pixel is usable.
func (fr *FieldRaster) Product(ix Index) (Product, error) {
	// Without a pool for its scratch arrays, gathering the usable pixels
	// of one index does not pay: product's loop over every pixel.
	return fr.product(ix, fr.pixelStates(ix.Bands))
}

// pixelStates is what product needs to know of each pixel, worked out once
// for all the indices of a read: bit 0 set outside the field, bit 1 where
// masked, bit 2+k where band k of bands has no data (NaN). The bits of
// bands beyond the sixth are not kept: bandBits then says to look at the
// values.
type pixelStates struct {
	bands []string
	state []uint8
}

const (
	stateOutside = 1 << iota
	stateMasked
	stateBand0
	maxStateBands = 6
)

// pixelStates works out the states of the field's pixels for bands (those
// fr holds).
func (fr *FieldRaster) pixelStates(bands []string) pixelStates {
	n := len(fr.InField)
	ps := pixelStates{bands: bands, state: make([]uint8, n)}
	if len(fr.Clear) != n {
		return ps // product refuses the raster
	}
	clear := fr.Clear[:n]
	for i, in := range fr.InField {
		var st uint8
		if !in {
			st = stateOutside
		}
		if !clear[i] {
			st |= stateMasked
		}
		ps.state[i] = st
	}
	for k, name := range bands[:min(len(bands), maxStateBands)] {
		v, ok := fr.Bands[name]
		if !ok || len(v) != n {
			continue // product reports the missing band
		}
		bit := uint8(stateBand0 << k)
		for i, x := range v {
			if x != x {
				ps.state[i] |= bit
			}
		}
	}
	return ps
}

// bandBits is the state bits of the named bands, and false when one of
// them has no bit (then product tests the band values themselves).
func (ps pixelStates) bandBits(names []string) (uint8, bool) {
	var bits uint8
	for _, name := range names {
		k := -1
		for j, b := range ps.bands {
			if b == name {
				k = j
				break
			}
		}
		if k < 0 || k >= maxStateBands {
			return 0, false
		}
		bits |= stateBand0 << k
	}
	return bits, true
}

// product is Product with the pixel states of fr worked out already, for
// any index and raster (productOfUsable is the quicker way for most).
func (fr *FieldRaster) product(ix Index, ps pixelStates) (Product, error) {
	n := fr.Grid.Cols * fr.Grid.Rows
	in := make([][]float64, len(ix.Bands))
	for k, name := range ix.Bands {
		v, ok := fr.Bands[name]
		if !ok {
			return Product{}, fmt.Errorf("index %s: %w: %s not read", ix.Name, ErrMissingBand, name)
		}
		if len(v) != n {
			return Product{}, fmt.Errorf("index %s: band %s has %d pixels, want %d", ix.Name, name, len(v), n)
		}
		in[k] = v
	}
	values := make([]float64, n)
	// A dB index's mean is that of the linear quantity, over the same pixels.
	var linear []float64
	if db := fr.bandDecibels(ix); db != nil {
		// The band in dB as read, and its linear power: no log per pixel.
		copy(values, db)
		linear = in[0]
	} else {
		ix.Compute(in, values)
	}
	if ix.Decibel && linear == nil {
		linear = make([]float64, n)
		if ix.Linear != nil {
			ix.Linear(in, linear)
		} else {
			copy(linear, values)
			toLinear(linear, linear)
		}
	}
	// The field's pixels beyond the scene have no data: not clear.
	masked := fr.OutsidePixels
	clear := make([]float64, 0, fr.FieldPixels-fr.OutsidePixels)
	var linearSum []float64
	if linear != nil {
		linearSum = make([]float64, 0, cap(clear))
	}
	if len(fr.InField) != n || len(fr.Clear) != n || len(ps.state) != n {
		return Product{}, fmt.Errorf("index %s: %d in-field and %d clear flags for %d pixels", ix.Name, len(fr.InField), len(fr.Clear), n)
	}
	bits, byState := ps.bandBits(ix.Bands)
	nan := math.NaN()
	for i, v := range values {
		st := ps.state[i]
		if st&stateOutside != 0 {
			values[i] = nan
			continue
		}
		usable := st&(stateMasked|bits) == 0
		if usable && !byState {
			for _, b := range in {
				if b[i] != b[i] {
					usable = false
					break
				}
			}
		}
		if !usable {
			masked++
			values[i] = nan
			continue
		}
		if v-v != 0 { // NaN or ±Inf
			values[i] = nan
			continue
		}
		clear = append(clear, v)
		if linear != nil {
			linearSum = append(linearSum, linear[i])
		}
	}
	st := statsOf(clear)
	if ix.Decibel && st.Num > 0 {
		st.Mean = 10 * math.Log10(pairwiseSum(linearSum)/float64(len(linearSum)))
	}
	st.FieldPixels = fr.FieldPixels
	if fr.FieldPixels > 0 {
		st.CloudCover = 100 * float64(masked) / float64(fr.FieldPixels)
	}
	return Product{Index: ix.Name, Grid: fr.Grid, Values: values, Stats: st}, nil
}
