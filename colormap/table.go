package colormap

import (
	"image/color"
	"math"
	"sync"
)

// colourTable gives the colour of most values of a ramp with one load
// instead of an interpolation, exactly: the stop positions t are cut into
// bucketsPerStop buckets per pair of stops, and a bucket holds a colour only
// when the ramp's colours at its first and last float64 are the same. Every
// channel is monotonic in t between two stops (ramp.interpolate), so every t
// in such a bucket has that very colour; the other buckets ("mixed", where
// a channel steps) fall back to ramp.color. With 2,048 buckets per pair of
// stops and channels changing by fewer than ~100 levels between stops,
// about 95 % of buckets hold a colour.
//
// A paletted render also needs the palette index of each value's colour:
// ids numbers the distinct colours of the buckets, so that a render can
// keep the index of each colour it met in a small array (scratch.idIndex)
// instead of hashing the colour of every value.
type colourTable struct {
	buckets []uint32  // packColour of the bucket's colour, or mixedBucket
	ids     []uint16  // per bucket, its colour's number, 0 to colours−1
	colours int       // the distinct colours of the buckets
	limit   float64   // the ramp's last stop position; 0 without buckets
	ends    [2]uint32 // the packed first and last colours; 0 without buckets
}

const (
	// bucketsPerStop is a power of two, so that t·bucketsPerStop and
	// k/bucketsPerStop are exact and bucket k holds exactly the t in
	// [k/bucketsPerStop, (k+1)/bucketsPerStop).
	bucketsPerStop = 2048
	// mixedBucket marks a bucket with more than one colour; no opaque colour
	// packs to it.
	mixedBucket = 0
	// maxTableStops bounds the ramps given a table (the spec's have ≤ 11).
	maxTableStops = 16
	// maxTables bounds the tables an Encoder keeps (one per distinct ramp).
	maxTables = 32
)

// packColour packs a colour as the table, the palette lookup and the RGB
// scanlines hold it: R, G, B, A from the low byte up, so that a
// little-endian 32-bit store writes R, G, B in scanline order. Transparent
// packs to 0, every opaque colour to non-zero.
func packColour(c color.RGBA) uint32 {
	return uint32(c.R) | uint32(c.G)<<8 | uint32(c.B)<<16 | uint32(c.A)<<24
}

func unpackColour(p uint32) color.NRGBA {
	return color.NRGBA{R: uint8(p), G: uint8(p >> 8), B: uint8(p >> 16), A: uint8(p >> 24)}
}

// newColourTable builds the table of r.
func newColourTable(r *ramp) *colourTable {
	n := int(r.last) * bucketsPerStop
	tab := &colourTable{buckets: make([]uint32, n), ids: make([]uint16, n), limit: r.last}
	ids := map[uint32]uint16{}
	for k := range tab.buckets {
		first := float64(k) / bucketsPerStop
		last := math.Nextafter(float64(k+1)/bucketsPerStop, 0)
		if a := r.interpolate(first); a == r.interpolate(last) {
			p := packColour(a)
			id, ok := ids[p]
			if !ok {
				// At most 766 colours between two stops (each channel
				// monotonic), so fewer than 2¹⁶ in all.
				id = uint16(len(ids))
				ids[p] = id
			}
			tab.buckets[k], tab.ids[k] = p, id
		}
	}
	tab.colours = len(ids)
	tab.ends = [2]uint32{packColour(r.scale[0]), packColour(r.scale[len(r.scale)-1])}
	return tab
}

// lookup returns packColour(r.color(v)) and true when the table settles it
// (a value in a bucket of one colour or beyond either end of the ramp) or v
// is NaN (transparent, 0), and false otherwise (mixed buckets, no table):
// then the colour is r.packed(v). tab is r's table, or the zero colourTable
// for any ramp. It is small enough to be inlined into the colouring loops.
func (tab *colourTable) lookup(r *ramp, v float64) (uint32, bool) {
	t := (v - r.start) * r.perV
	switch {
	case t > 0 && t < tab.limit:
		p := tab.buckets[int(t*bucketsPerStop)]
		return p, p != mixedBucket
	case v != v:
		return 0, true
	case t > 0: // t ≥ r.last, or any t without a table
		return tab.ends[1], tab.ends[1] != 0
	}
	return tab.ends[0], tab.ends[0] != 0 // t ≤ 0, or NaN from an infinite perV
}

// bucket returns the bucket of v and true when that bucket holds a colour.
func (tab *colourTable) bucket(r *ramp, v float64) (int, bool) {
	if t := (v - r.start) * r.perV; t > 0 && t < tab.limit {
		b := int(t * bucketsPerStop)
		return b, tab.buckets[b] != mixedBucket
	}
	return 0, false
}

// rampKey identifies a ramp: its stops, start and scale factor.
type rampKey struct {
	start, perV float64
	stops       int
	scale       [maxTableStops]color.RGBA
}

// colourTables holds an Encoder's tables, built on first use of a ramp.
type colourTables struct {
	mu sync.Mutex
	m  map[rampKey]*colourTable
}

// get returns r's table, or nil for a ramp with too many stops or when the
// cache is full (those render through ramp.color).
func (c *colourTables) get(r *ramp) *colourTable {
	if len(r.scale) > maxTableStops {
		return nil
	}
	k := rampKey{start: r.start, perV: r.perV, stops: len(r.scale)}
	copy(k.scale[:], r.scale)
	c.mu.Lock()
	defer c.mu.Unlock()
	if tab, ok := c.m[k]; ok {
		return tab
	}
	if len(c.m) >= maxTables {
		return nil
	}
	if c.m == nil {
		c.m = map[rampKey]*colourTable{}
	}
	tab := newColourTable(r)
	c.m[k] = tab
	return tab
}
