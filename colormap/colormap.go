// Package colormap holds the colour ramps of the interface specification
// (§2.6) and renders index rasters to PNG.
//
// A Colormap maps a value to a colour by linear interpolation in RGB between
// evenly spaced stops over [Start, Stop]. Values below Start take the first
// colour, values above Stop the last (±Inf included); NaN is transparent. Each
// channel is rounded to the nearest integer, halves up, so a value exactly on
// a stop yields that stop's colour.
//
// The spec's maps are returned by ForIndex. Indices without a spec entry (for
// example user-registered ones) render with New or Default.
//
// Encoder.Encode (and EncodePNG) renders a field window's values, NaN outside
// the field and on masked pixels, to a PNG at one pixel per value or an
// integer upscale. It is built for throughput (thousands of field images per
// ingestion): a paletted PNG when the colours fit in 256 entries, RGB with a
// transparent colour key otherwise, unfiltered rows, fast deflate, and
// buffers reused across calls. Image returns the same pixels as an
// image.Image.
package colormap

import (
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"math"
	"strings"
)

// ErrInvalidColormap is wrapped by errors about a malformed colormap
// (bad hex colour, fewer than two colours, empty or non-finite range).
var ErrInvalidColormap = errors.New("invalid colormap")

// Colormap is one colour ramp: the colours of Scale, evenly spaced from Start
// to Stop. Hex is the scale exactly as written in the spec (nirv's is upper
// case); Scale is Hex parsed. The JSON form is the spec's (index, scale,
// start, stop).
type Colormap struct {
	Index string       `json:"index"`
	Hex   []string     `json:"scale"`
	Scale []color.RGBA `json:"-"`
	Start float64      `json:"start"`
	Stop  float64      `json:"stop"`
}

// The spec's ramps (§2.6), kept as constant strings so the package holds no
// mutable table: every call of ForIndex parses a fresh copy.
const (
	// rdYlGn is the 11-colour scale of ndvi, chi, ndre, savi, lai and evi.
	rdYlGn = "#a50026 #d3322b #f16d43 #fcab63 #fedc8c #f9f7ae #d7ee8e #a4d86f #64bc61 #23964f #23964f"
	// ndwiScale is the 10-colour scale of ndwi.
	ndwiScale = "#d3322b #f16d43 #fcab64 #fedc90 #faf8c0 #dcf1ec #abd6e8 #76abd0 #4a74b4 #4a74b4"
)

// specMap is one row of the §2.6 table.
type specMap struct {
	index       string
	scale       string
	start, stop float64
}

// specTable returns the §2.6 table in the spec's order.
func specTable() []specMap {
	return []specMap{
		{"ndvi", rdYlGn, 0, 1},
		{"ndwi", ndwiScale, 0, 1},
		{"chi", rdYlGn, 0, 3},
		{"ndre", rdYlGn, 0, 1},
		{"savi", rdYlGn, 0, 1},
		{"lai", rdYlGn, 1, 7},
		{"evi", rdYlGn, 0, 1},
		// nirv: the same colours, written in upper case in the spec.
		{"nirv", strings.ToUpper(rdYlGn), 100, 2000},
	}
}

// Names returns the indices that have a spec colormap, in the spec's order.
func Names() []string { return indexNames(specTable()) }

// indexNames lists the indices of a table, in its order.
func indexNames(t []specMap) []string {
	names := make([]string, len(t))
	for i, m := range t {
		names[i] = m.index
	}
	return names
}

// ForIndex returns the spec colormap of an index (case-sensitive, lower case
// as in the spec) and whether it exists.
func ForIndex(name string) (Colormap, bool) { return lookup(specTable(), name) }

// lookup builds the colormap of index name from a table.
func lookup(t []specMap, name string) (Colormap, bool) {
	for _, m := range t {
		if m.index == name {
			c, err := New(m.index, strings.Fields(m.scale), m.start, m.stop)
			if err != nil {
				return Colormap{}, false // unreachable: the table is valid and tested
			}
			return c, true
		}
	}
	return Colormap{}, false
}

// Default returns a colormap for an index without a spec entry: the spec's
// red-yellow-green ndvi scale spread over [start, stop], which the caller
// chooses to fit the index's usual range.
func Default(index string, start, stop float64) (Colormap, error) {
	return New(index, strings.Fields(rdYlGn), start, stop)
}

// New builds a colormap from "#rrggbb" colours (either case), low to high,
// spread evenly over [start, stop]. It needs at least two colours and finite
// start < stop.
func New(index string, hex []string, start, stop float64) (Colormap, error) {
	c := Colormap{Index: index, Hex: append([]string(nil), hex...), Start: start, Stop: stop}
	c.Scale = make([]color.RGBA, len(hex))
	for i, h := range hex {
		rgba, err := ParseHex(h)
		if err != nil {
			return Colormap{}, fmt.Errorf("colormap %q colour %d: %w", index, i, err)
		}
		c.Scale[i] = rgba
	}
	if err := c.Validate(); err != nil {
		return Colormap{}, err
	}
	return c, nil
}

// UnmarshalJSON reads the spec's JSON form ({"index", "scale", "start",
// "stop"}) and parses and validates it as New does.
func (c *Colormap) UnmarshalJSON(b []byte) error {
	var w struct {
		Index       string   `json:"index"`
		Scale       []string `json:"scale"`
		Start, Stop float64
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("colormap: %w", err)
	}
	parsed, err := New(w.Index, w.Scale, w.Start, w.Stop)
	if err != nil {
		return err
	}
	*c = parsed
	return nil
}

// Validate reports whether c can render: at least two colours, all opaque,
// and a finite range with Start < Stop.
func (c Colormap) Validate() error {
	if len(c.Scale) < 2 {
		return fmt.Errorf("colormap %q: %w: %d colours, need at least 2", c.Index, ErrInvalidColormap, len(c.Scale))
	}
	for i, s := range c.Scale {
		if s.A != 0xff {
			return fmt.Errorf("colormap %q colour %d: %w: not opaque", c.Index, i, ErrInvalidColormap)
		}
	}
	if math.IsNaN(c.Start) || math.IsInf(c.Start, 0) || math.IsNaN(c.Stop) || math.IsInf(c.Stop, 0) || !(c.Start < c.Stop) {
		return fmt.Errorf("colormap %q: %w: range [%v, %v] must be finite with start < stop", c.Index, ErrInvalidColormap, c.Start, c.Stop)
	}
	return nil
}

// ParseHex parses an opaque "#rrggbb" colour (hex digits of either case).
func ParseHex(s string) (color.RGBA, error) {
	if len(s) != 7 || s[0] != '#' {
		return color.RGBA{}, fmt.Errorf("%w: colour %q is not #rrggbb", ErrInvalidColormap, s)
	}
	var v [3]uint8
	for i := range v {
		hi, ok1 := hexDigit(s[1+2*i])
		lo, ok2 := hexDigit(s[2+2*i])
		if !ok1 || !ok2 {
			return color.RGBA{}, fmt.Errorf("%w: colour %q is not #rrggbb", ErrInvalidColormap, s)
		}
		v[i] = hi<<4 | lo
	}
	return color.RGBA{R: v[0], G: v[1], B: v[2], A: 0xff}, nil
}

func hexDigit(b byte) (uint8, bool) {
	switch {
	case '0' <= b && b <= '9':
		return b - '0', true
	case 'a' <= b && b <= 'f':
		return b - 'a' + 10, true
	case 'A' <= b && b <= 'F':
		return b - 'A' + 10, true
	}
	return 0, false
}

// Color returns the colour of v: linear interpolation between the two nearest
// stops, clamped to the end colours outside [Start, Stop]; NaN, and any value
// of a colormap that fails Validate, is transparent (all zero).
func (c Colormap) Color(v float64) color.RGBA {
	if c.Validate() != nil {
		return color.RGBA{}
	}
	r := newRamp(c)
	return r.color(v)
}

// ramp is a validated Colormap prepared for many lookups: the factor from
// value to stop position is computed once.
type ramp struct {
	scale []color.RGBA
	start float64
	perV  float64 // stops per unit of value
	last  float64 // index of the last stop
}

// newRamp prepares a validated colormap.
func newRamp(c Colormap) ramp {
	last := float64(len(c.Scale) - 1)
	return ramp{scale: c.Scale, start: c.Start, perV: last / (c.Stop - c.Start), last: last}
}

func (r *ramp) color(v float64) color.RGBA {
	if v != v { // NaN
		return color.RGBA{}
	}
	t := (v - r.start) * r.perV
	if !(t > 0) {
		return r.scale[0]
	}
	if t >= r.last {
		return r.scale[len(r.scale)-1]
	}
	return r.interpolate(t)
}

// packed is packColour(r.color(v)): the colours colourTable.lookup leaves
// to the ramp, out of line so that the colouring loops stay small.
func (r *ramp) packed(v float64) uint32 { return packColour(r.color(v)) }

// mayHaveZeroRG reports whether some colour of r may have R = G = 0 (black
// or a blue, the candidates for an RGB PNG's colour key): every channel of
// an interpolated colour lies between the two stops' (lerp), so only a ramp
// with a stop of R = 0 and a stop of G = 0 can have one.
func (r *ramp) mayHaveZeroRG() bool {
	zeroR, zeroG := false, false
	for _, c := range r.scale {
		zeroR = zeroR || c.R == 0
		zeroG = zeroG || c.G == 0
	}
	return zeroR && zeroG
}

// interpolate is the colour at stop position t, 0 ≤ t < r.last. Each
// channel is a non-decreasing or non-increasing function of t between two
// stops (every step, the rounding of float64 arithmetic included, is
// monotonic), which is what makes colourTable exact.
func (r *ramp) interpolate(t float64) color.RGBA {
	i := int(t)
	f := t - float64(i)
	a, b := r.scale[i], r.scale[i+1]
	return color.RGBA{R: lerp(a.R, b.R, f), G: lerp(a.G, b.G, f), B: lerp(a.B, b.B, f), A: 0xff}
}

// lerp interpolates two channel values, rounding halves up.
func lerp(a, b uint8, f float64) uint8 {
	fa := float64(a)
	return uint8(fa + (float64(b)-fa)*f + 0.5)
}
