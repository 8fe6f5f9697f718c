package imagery

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"github.com/cropkit/cropkit/api"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"time"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/geo/crs"
)

// Report is the §2.5 JSON document of one product: where to place its PNG,
// the index per PNG pixel and the statistics. Its JSON form has a key named
// after the index (e.g. "ndvi") holding a 2-D array, rows north to south,
// null where the pixel is outside the field or not usable:
//
//	{"bounds":[[south,west],[north,east]],"ndvi":[[null,0.81,…],…],
//	 "mean":…,"median":…,"std":…,"min":…,"max":…,"p25":…,"p75":…,"num":…,
//	 "mean_variation":0,"previous_date":null,"date":"2019-06-20","field_pixels":…,"cloud_cover":…}
//
// date, field_pixels, cloud_cover and sensor go beyond the spec; statistics that are
// not finite (no usable pixel) are written as null. Statistics keep full
// float64 precision; pixel values are rounded to 6 decimals.
type Report struct {
	Index string
	// Bounds is [[south, west], [north, east]] in degrees (EPSG:4326): the
	// lat/lon box of the PNG's corners, for a Leaflet image overlay.
	Bounds [2][2]float64
	// Cols and Rows are the PNG's size; Values has Cols·Rows entries, NaN for null.
	Cols, Rows int
	Values     []float64
	Stats      Stats
	// MeanVariation is the percent change of Stats.Mean versus the previous
	// image of the same field and index; nil for the first image (written
	// as 0 with a null previous_date: the spec types it as a number).
	MeanVariation *float64
	// PreviousDate is the date of that previous image ("" when unknown or
	// for the first image: previous_date null).
	PreviousDate string
	Date         time.Time
	// Sensor is the product's sensor, written as "sensor" when set.
	Sensor Sensor
}

// NewReport builds the report of p. prevMean is the mean of the previous
// image of the same field and index, nil when p is the first.
func NewReport(p Product, prevMean *float64) (Report, error) {
	b, err := LatLonBounds(p.Grid)
	if err != nil {
		return Report{}, fmt.Errorf("report %s: %w", p.Index, err)
	}
	r := Report{Index: p.Index, Bounds: b, Cols: p.Grid.Cols, Rows: p.Grid.Rows, Values: p.Values, Stats: p.Stats, Date: p.Date, Sensor: p.Sensor}
	if prevMean != nil {
		if mv := MeanVariation(p.Stats.Mean, *prevMean); !math.IsNaN(mv) && !math.IsInf(mv, 0) {
			r.MeanVariation = &mv
		}
	}
	return r, nil
}

// LatLonBounds is the [[south, west], [north, east]] box, in degrees, of the
// four corners of g.
func LatLonBounds(g geo.Grid) ([2][2]float64, error) {
	t, err := crs.New(g.EPSG, 4326)
	if err != nil {
		return [2][2]float64{}, fmt.Errorf("bounds from EPSG:%d: %w", g.EPSG, err)
	}
	b := g.Bound()
	south, west, north, east := math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	for _, c := range [4][2]float64{{b.Min[0], b.Min[1]}, {b.Min[0], b.Max[1]}, {b.Max[0], b.Min[1]}, {b.Max[0], b.Max[1]}} {
		lon, lat := t.Transform(c[0], c[1])
		south, north = min(south, lat), max(north, lat)
		west, east = min(west, lon), max(east, lon)
	}
	return [2][2]float64{{south, west}, {north, east}}, nil
}

// MarshalJSON writes the §2.5 document with the index's name as key.
func (r Report) MarshalJSON() ([]byte, error) {
	return r.AppendJSON(nil)
}

// AppendJSON appends the §2.5 document (as MarshalJSON writes it) to dst and
// returns the extended buffer. Callers writing many reports reuse one buffer:
// the pixel arrays make a document of about 10 bytes per pixel.
func (r Report) AppendJSON(dst []byte) ([]byte, error) {
	if r.Index == "" {
		return dst, fmt.Errorf("report: empty index name")
	}
	if r.Cols < 0 || r.Rows < 0 || len(r.Values) != r.Cols*r.Rows {
		return dst, fmt.Errorf("report %s: %d values for %dx%d", r.Index, len(r.Values), r.Cols, r.Rows)
	}
	// "0.123456," and nulls, plus the slack appendPixelRow reserves for a
	// row, so a reused buffer does not move for the last rows.
	b := slices.Grow(dst, 256+len(r.Values)*10+r.Cols*maxPixelLen)
	b = append(b, `{"bounds":[[`...)
	b = appendNumber(b, r.Bounds[0][0])
	b = append(b, ',')
	b = appendNumber(b, r.Bounds[0][1])
	b = append(b, `],[`...)
	b = appendNumber(b, r.Bounds[1][0])
	b = append(b, ',')
	b = appendNumber(b, r.Bounds[1][1])
	b = append(b, `]],`...)
	b = strconv.AppendQuote(b, r.Index)
	b = append(b, ":["...)
	for row := 0; row < r.Rows; row++ {
		if row > 0 {
			b = append(b, ',')
		}
		b = appendPixelRow(b, r.Values[row*r.Cols:(row+1)*r.Cols])
	}
	b = append(b, ']')
	for _, kv := range []struct {
		k string
		v float64
	}{{"mean", r.Stats.Mean}, {"median", r.Stats.Median}, {"std", r.Stats.Std}, {"min", r.Stats.Min}, {"max", r.Stats.Max}, {"p25", r.Stats.P25}, {"p75", r.Stats.P75}} {
		b = append(b, ',', '"')
		b = append(b, kv.k...)
		b = append(b, '"', ':')
		b = appendNumber(b, kv.v)
	}
	b = append(b, `,"num":`...)
	b = strconv.AppendInt(b, int64(r.Stats.Num), 10)
	b = append(b, `,"mean_variation":`...)
	if r.MeanVariation == nil {
		b = append(b, '0')
	} else {
		b = appendNumber(b, *r.MeanVariation)
	}
	b = append(b, `,"previous_date":`...)
	if r.PreviousDate == "" {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendQuote(b, r.PreviousDate)
	}
	b = append(b, `,"date":`...)
	if r.Date.IsZero() {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendQuote(b, r.Date.UTC().Format(time.DateOnly))
	}
	b = append(b, `,"field_pixels":`...)
	b = strconv.AppendInt(b, int64(r.Stats.FieldPixels), 10)
	b = append(b, `,"cloud_cover":`...)
	b = appendNumber(b, r.Stats.CloudCover)
	if r.Sensor != "" {
		b = append(b, `,"sensor":`...)
		b = strconv.AppendQuote(b, string(r.Sensor))
	}
	b = append(b, '}')
	return b, nil
}

// appendNumber writes v as encoding/json does, and null when v is not finite.
func appendNumber(b []byte, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return append(b, "null"...)
	}
	abs := math.Abs(v)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	return strconv.AppendFloat(b, v, format, -1, 64)
}

// maxPixelLen is the most text appendPixelRow writes per value of magnitude
// below pixelFixedMax, separator included, plus the slack of its 8-byte
// stores: ",-999999999" then the 8 bytes ".999999" is stored with.
const maxPixelLen = 19

// pixelFixedMax bounds the values written in fixed point; larger ones
// (never an index of reflectances, but a custom one may) go through appendNumber.
const pixelFixedMax = 1e9

// nullWords is ",null" eight times as five little-endian words: a run of
// nulls (pixels outside the field, along both ends of most rows) is written
// 8 at a time with five stores.
var nullWords = func() (w [5]uint64) {
	const text = ",null,null,null,null,null,null,null,null"
	for i := range w {
		w[i] = binary.LittleEndian.Uint64([]byte(text[8*i:]))
	}
	return w
}()

// fracText is added to the digits of "0.dddddd" (in the top six bytes of a
// little-endian word) to make the text.
const fracText = '0' | '.'<<8 | 0x303030303030<<16

// appendPixelRow writes one row of the pixel array, "[v,v,…]", each value
// as appendPixel does. The pixel arrays are most of a report and this is
// its hot loop: it reserves room for the whole row once, then writes into
// it by position, whole words at a time. Every value is written after its
// separator ','; the first one's becomes the '['. putPixelsBelow1 writes
// the nulls and the values below 1 in magnitude (every usual index); this
// loop takes the rest, one value each time that loop stops.
func appendPixelRow(b []byte, row []float64) []byte {
	if len(row) == 0 {
		return append(b, '[', ']')
	}
	b = slices.Grow(b, 2+len(row)*maxPixelLen)
	start := len(b)
	out := b[:cap(b)]
	n, c := putPixelsBelow1(out, start, row)
	for c < len(row) {
		v := row[c]
		c++
		out[n] = ','
		n++
		if a := math.Abs(v); !(a < pixelFixedMax) { // ±Inf and large values
			if a > math.MaxFloat64 {
				binary.LittleEndian.PutUint32(out[n:], 'n'|'u'<<8|'l'<<16|'l'<<24)
				n += 4
			} else {
				// Shortest form, up to 24 bytes: make room again for the rest.
				b = slices.Grow(appendNumber(out[:n], v), 2+(len(row)-c)*maxPixelLen)
				n, out = len(b), b[:cap(b)]
			}
		} else {
			n = putFixed6(out, n, v)
		}
		var k int
		n, k = putPixelsBelow1(out, n, row[c:])
		c += k
	}
	out[start] = '['
	out[n] = ']'
	return out[:n+1]
}

// putPixelsBelow1 writes the values of row from its start, each after its
// separator, as long as they are null or round below 1 in magnitude (every
// usual index), and returns the new end and how many it wrote. out needs
// maxPixelLen bytes per value after n. It makes no calls, so its loop keeps
// everything in registers. A run of nulls is written 8 at a time with five
// word stores; a value is a 2-byte store of ",-" kept or not by the sign bit
// and "0.dddddd" as one 8-byte store whose length is 8 less the digits'
// leading zero bytes (one per trailing zero digit, plus the unused top one).
func putPixelsBelow1(out []byte, n int, row []float64) (int, int) {
	c := 0
	for c < len(row) {
		v := row[c]
		// x+0.5 truncated is math.Round(x) for 0.5 ≤ x < 2⁵²; below 0.5
		// (where the largest float64 under 0.5 would round up) it is 0.
		x := math.Abs(v) * 1e6
		if !(x < 999999.5) {
			if v == v {
				break // rounds to 1 or more in magnitude, or infinite
			}
			// A run of NaN: nulls.
			end := c + 1
			for end < len(row) && row[end] != row[end] {
				end++
			}
			k := end - c
			for ; k >= 8; k -= 8 {
				w := out[n : n+40 : n+40]
				binary.LittleEndian.PutUint64(w, nullWords[0])
				binary.LittleEndian.PutUint64(w[8:], nullWords[1])
				binary.LittleEndian.PutUint64(w[16:], nullWords[2])
				binary.LittleEndian.PutUint64(w[24:], nullWords[3])
				binary.LittleEndian.PutUint64(w[32:], nullWords[4])
				n += 40
			}
			for ; k > 0; k-- {
				// 8 bytes for 5: the 3 past them are within this null's room.
				binary.LittleEndian.PutUint64(out[n:], nullWords[0])
				n += 5
			}
			c = end
			continue
		}
		c++
		if x < 0.5 {
			binary.LittleEndian.PutUint16(out[n:], ','|'0'<<8)
			n += 2
			continue
		}
		u := uint32(x + 0.5) // 1 to 999999
		neg := uint(math.Float64bits(v) >> 63)
		d := uint64(digits3[u/1000])<<16 | uint64(digits3[u%1000])<<40
		w := out[n : n+10 : n+10]
		binary.LittleEndian.PutUint16(w, ','|'-'<<8)
		binary.LittleEndian.PutUint64(w[1+neg&1:], d+fracText) // &1: no bounds check
		n += 9 + int(neg) - bits.LeadingZeros64(d)>>3
	}
	return n, c
}

// appendPixel writes a pixel value rounded to 6 decimals (the tolerance the
// statistics are verified to; the inputs are 16-bit DNs), trailing zeros
// dropped, and null when it is not finite.
func appendPixel(b []byte, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return append(b, "null"...)
	}
	if math.Abs(v) >= pixelFixedMax {
		return appendNumber(b, v)
	}
	b = slices.Grow(b, maxPixelLen)
	return b[:putFixed6(b[:cap(b)], len(b), v)]
}

// digits3 holds, for 0 to 999, the three decimal digits as byte values 0–9
// (not text: a word of them has a leading zero byte per trailing zero
// digit), little-endian in the low 24 bits.
var digits3 = func() (t [1000]uint32) {
	for i := range t {
		t[i] = uint32(i/100) | uint32(i/10%10)<<8 | uint32(i%10)<<16
	}
	return t
}()

// putFixed6 writes v, finite with |v| < pixelFixedMax, at out[n:], rounded
// to 6 decimals with trailing zeros dropped ("0.849754", "-0.25", "1", and
// "0" for values that round to zero), and returns the new end. out needs
// maxPixelLen-1 bytes after n. Integer arithmetic with a 3-digit table and one
// 8-byte store for the fraction is several times faster than shortest-float
// formatting.
func putFixed6(out []byte, n int, v float64) int {
	// x+0.5 truncated is math.Round(x) for 0 ≤ x < 2⁵² except for the
	// largest float64 below 0.5, where the sum rounds up to 1.
	x := math.Abs(v) * 1e6
	u := uint64(x + 0.5)
	if x < 0.5 {
		u = 0
	}
	if u == 0 {
		out[n] = '0'
		return n + 1
	}
	if v < 0 {
		out[n] = '-'
		n++
	}
	var frac uint32
	if u < 1e6 { // |v| < 1, the usual index: 32-bit arithmetic
		out[n] = '0'
		n++
		frac = uint32(u)
	} else {
		ip := u / 1e6
		frac = uint32(u - ip*1e6)
		if ip < 10 {
			out[n] = byte('0' + ip)
			n++
		} else {
			n = len(strconv.AppendUint(out[:n], ip, 10))
		}
		if frac == 0 {
			return n
		}
	}
	// ".dddddd" with the digits in bytes 1 to 6: as many of the word's top
	// bytes are zero as the fraction has trailing zeros, plus one.
	d := uint64(digits3[frac/1000])<<8 | uint64(digits3[frac%1000])<<32
	binary.LittleEndian.PutUint64(out[n:], d+('.'|0x303030303030<<8))
	return n + 8 - bits.LeadingZeros64(d)>>3
}

// UnmarshalJSON reads a §2.5 document with the one decoder of the wire
// type (api.Report): the index is the one key that is not a known member;
// null statistics become NaN; a document without a previous_date (the
// first image) has a nil MeanVariation.
func (r *Report) UnmarshalJSON(data []byte) error {
	var doc api.Report
	if err := json.Unmarshal(data, &doc); err != nil {
		return err
	}
	*r = Report{Index: doc.Index, Bounds: doc.Bounds, Cols: doc.Cols, Rows: doc.Rows, Values: doc.Values,
		Stats: Stats{Mean: doc.Mean, Median: doc.Median, Std: doc.Std, Min: doc.Min, Max: doc.Max, P25: doc.P25, P75: doc.P75,
			Num: doc.Num, FieldPixels: doc.FieldPixels, CloudCover: doc.CloudCover}, Sensor: Sensor(doc.Sensor)}
	if doc.Date != "" {
		t, err := time.Parse(time.DateOnly, doc.Date)
		if err != nil {
			return fmt.Errorf("report date: %w", err)
		}
		r.Date = t
	}
	if doc.PreviousDate != nil {
		r.PreviousDate = *doc.PreviousDate
	}
	if r.PreviousDate != "" && !math.IsNaN(doc.MeanVariation) {
		r.MeanVariation = &doc.MeanVariation
	}
	return nil
}
