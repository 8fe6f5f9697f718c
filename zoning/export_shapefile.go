package zoning

import (
	"archive/zip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	shp "github.com/jonas-p/go-shp"
	"github.com/paulmach/orb"
)

// ErrTooManyZones is returned by WriteShapefileZip when a prescription has
// more zones than terminals accept (MaxShapefileZones).
var ErrTooManyZones = errors.New("too many zones for a prescription shapefile")

// MaxShapefileZones is the most zones a prescription shapefile may hold:
// Climate FieldView and John Deere Operations Center reject larger
// prescriptions.
const MaxShapefileZones = 100

// wgs84PRJ is the ESRI WKT of EPSG:4326, as ArcGIS and GDAL write it.
const wgs84PRJ = `GEOGCS["GCS_WGS_1984",DATUM["D_WGS_1984",SPHEROID["WGS_1984",6378137.0,298.257223563]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]]`

// ShapefileOptions tunes WriteShapefileZip.
type ShapefileOptions struct {
	// Name is the base name of the files in the zip (default "zones").
	Name string
	// NoZoneLimit lifts MaxShapefileZones (for plain format conversion).
	NoZoneLimit bool
	// Modified is the files' modification time in the zip and the .dbf's
	// last-update date (default time.Now().UTC(); pass a fixed time for
	// reproducible output).
	Modified time.Time
}

// WriteShapefileZip writes c as a zipped ESRI shapefile (.shp, .shx, .dbf,
// .prj) in EPSG:4326. A Plain collection (not zones, see ParseCollection)
// is written one record per source feature with the features' own
// properties as attributes (see writePlainShapefile) and a .cpg; zones are
// written written with github.com/jonas-p/go-shp: one Polygon
// record per zone (a zone in several parts is one multi-part record, so a
// prescription has at most MaxShapefileZones records), attributes ZONE,
// RATE (the dose, the rate column Climate FieldView and John Deere
// Operations Center import) and RASTER_VAL. Rings follow the shapefile
// rule: outer rings clockwise, holes counter-clockwise. Every file carries
// opts.Modified as its zip modification time, and the .dbf header as its
// last-update date.
func WriteShapefileZip(w io.Writer, c *Collection, opts ShapefileOptions) error {
	if opts.Name == "" {
		opts.Name = "zones"
	}
	if opts.Modified.IsZero() {
		opts.Modified = time.Now().UTC()
	}
	if strings.ContainsAny(opts.Name, `/\:`) || opts.Name == "." || opts.Name == ".." {
		return fmt.Errorf("shapefile name %q must be a plain file name", opts.Name)
	}
	c, err := c.Reproject(4326)
	if err != nil {
		return err
	}
	zones := c.Zones()
	if !opts.NoZoneLimit && len(zones) > MaxShapefileZones {
		return fmt.Errorf("%d zones, at most %d: %w", len(zones), MaxShapefileZones, ErrTooManyZones)
	}
	dir, err := os.MkdirTemp("", "cropkit-shp-")
	if err != nil {
		return fmt.Errorf("write shapefile: %w", err)
	}
	defer os.RemoveAll(dir)
	base := filepath.Join(dir, opts.Name)
	exts := []string{".shp", ".shx", ".dbf", ".prj"}
	if c.Plain {
		if err := writePlainShapefile(base, c, zones); err != nil {
			return err
		}
		// Attribute text is written as UTF-8; the .cpg tells readers so.
		if err := os.WriteFile(base+".cpg", []byte("UTF-8"), 0o600); err != nil {
			return fmt.Errorf("write shapefile: %w", err)
		}
		exts = append(exts, ".cpg")
	} else if err := writeShapefile(base, c, zones); err != nil {
		return err
	}
	if err := os.WriteFile(base+".prj", []byte(wgs84PRJ), 0o600); err != nil {
		return fmt.Errorf("write shapefile: %w", err)
	}
	zw := zip.NewWriter(w)
	for _, ext := range exts {
		data, err := os.ReadFile(base + ext)
		if err != nil {
			return fmt.Errorf("write shapefile: %w", err)
		}
		if ext == ".dbf" {
			if err := setDBFDate(data, opts.Modified); err != nil {
				return fmt.Errorf("write shapefile: %w", err)
			}
		}
		f, err := zw.CreateHeader(&zip.FileHeader{Name: opts.Name + ext, Method: zip.Deflate, Modified: opts.Modified})
		if err != nil {
			return fmt.Errorf("zip %s: %w", ext, err)
		}
		if _, err := f.Write(data); err != nil {
			return fmt.Errorf("zip %s: %w", ext, err)
		}
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("zip shapefile: %w", err)
	}
	return nil
}

func writeShapefile(base string, c *Collection, zones []int) (err error) {
	sw, err := shp.Create(base+".shp", shp.POLYGON)
	if err != nil {
		return fmt.Errorf("write shapefile: %w", err)
	}
	fields := []shp.Field{shp.NumberField("ZONE", 10), shp.FloatField("RATE", 19, 4), shp.FloatField("RASTER_VAL", 19, 6)}
	if err := sw.SetFields(fields); err != nil {
		sw.Close()
		return fmt.Errorf("write shapefile: %w", err)
	}
	defer sw.Close()
	for _, z := range zones {
		var parts [][]shp.Point
		var rate, val float64
		for _, f := range c.Features {
			if f.Zone != z {
				continue
			}
			rate, val = f.Dose, f.RasterVal
			for i, r := range f.Polygon {
				parts = append(parts, shpRing(r, i == 0))
			}
		}
		poly := shp.Polygon(*shp.NewPolyLine(parts))
		row := int(sw.Write(&poly))
		for j, v := range []string{strconv.Itoa(z), dbfFloat(rate, 4), dbfFloat(val, 6)} {
			if err := sw.WriteAttribute(row, j, pad(v, int(fields[j].Size))); err != nil {
				return fmt.Errorf("write zone %d: %w", z, err)
			}
		}
	}
	return nil
}

// setDBFDate sets the last-update date of a dBASE header (bytes 1..3: years
// since 1900, month, day), which go-shp writes as a fixed 24/05/03 that
// readers show as 1924-05-03.
func setDBFDate(dbf []byte, t time.Time) error {
	if len(dbf) < 32 {
		return fmt.Errorf("dbf header of %d bytes", len(dbf))
	}
	y := t.Year() - 1900
	if y < 0 || y > 255 {
		return fmt.Errorf("dbf date: year %d outside 1900..2155", t.Year())
	}
	dbf[1], dbf[2], dbf[3] = byte(y), byte(t.Month()), byte(t.Day())
	return nil
}

func dbfFloat(v float64, prec int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return ""
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

// pad right-aligns a numeric DBF value in its field, as dBASE does.
func pad(s string, size int) string {
	if len(s) >= size {
		return s
	}
	return strings.Repeat(" ", size-len(s)) + s
}

// shpRing converts a ring to shapefile points, closed, clockwise for an
// outer ring and counter-clockwise for a hole.
func shpRing(r orb.Ring, outer bool) []shp.Point {
	pts := make([]shp.Point, 0, len(r)+1)
	for _, p := range r {
		pts = append(pts, shp.Point{X: p[0], Y: p[1]})
	}
	if len(r) > 0 && r[0] != r[len(r)-1] {
		pts = append(pts, shp.Point{X: r[0][0], Y: r[0][1]})
	}
	ccw := signedArea(r) > 0
	if ccw == outer {
		slices.Reverse(pts)
	}
	return pts
}

// signedArea is the shoelace area, positive for counter-clockwise rings.
func signedArea(r orb.Ring) float64 {
	if len(r) < 3 {
		return 0
	}
	x0, y0 := r[0][0], r[0][1]
	var s float64
	for i := range r {
		a, b := r[i], r[(i+1)%len(r)]
		s += (a[0]-x0)*(b[1]-y0) - (b[0]-x0)*(a[1]-y0)
	}
	return s / 2
}

// GeoJSONToShapefileZip converts a GeoJSON FeatureCollection of polygons
// (see ParseCollection) to a zipped shapefile in EPSG:4326 (§4.6 "GeoJSON
// to shapefile"), with no limit on the number of zones: a zone collection
// gets the zone columns, any other collection its own properties.
func GeoJSONToShapefileZip(geojson []byte, w io.Writer) error {
	c, err := ParseCollection(geojson)
	if err != nil {
		return err
	}
	if len(c.Features) == 0 {
		return fmt.Errorf("%w: no features", ErrInvalidCollection)
	}
	return WriteShapefileZip(w, c, ShapefileOptions{NoZoneLimit: true})
}

// DBF limits the plain conversion keeps to: a dBASE field name holds 10
// characters, a character field 254 bytes; numbers are written at most
// 24 characters wide (GDAL's own width for reals), and a .dbf has at most
// 255 fields in dBASE III readers.
const (
	dbfNameLen   = 10
	dbfMaxChar   = 254
	dbfMaxNumber = 24
	dbfMaxFields = 255
	dbfMaxDigits = 15 // decimals of a real column
)

// dbfColumn is one attribute column of a plain conversion: its field
// descriptor and each record's value, already formatted to the field.
type dbfColumn struct {
	field  shp.Field
	values []string
}

// writePlainShapefile writes a Plain collection: one Polygon record per
// source feature (its Zone number), the features' properties as columns
// in first-seen order. A column of booleans is Logical (T/F), of integers
// N, of other numbers N with decimals (the most any value needs, 1 to 15),
// anything else C (text as is, numbers and booleans as their JSON text,
// objects and arrays as JSON), truncated to 254 bytes on a character
// boundary; a missing or null value is blank. Names are cut to 10
// characters, a clash (case-insensitive, as readers compare them) taking a
// numbered suffix as GDAL does ("clipped_by", "clipped__1"). A collection
// without properties gets GDAL's default FID column.
func writePlainShapefile(base string, c *Collection, zones []int) error {
	if len(c.Attributes) > dbfMaxFields {
		return fmt.Errorf("%w: %d properties, a shapefile holds at most %d attributes", ErrInvalidCollection, len(c.Attributes), dbfMaxFields)
	}
	recs := make([]map[string]any, len(zones))
	for i, z := range zones {
		for _, f := range c.Features {
			if f.Zone == z {
				recs[i] = f.Properties
				break
			}
		}
	}
	var cols []dbfColumn
	used := map[string]bool{}
	for _, key := range c.Attributes {
		vals := make([]any, len(recs))
		for i, r := range recs {
			vals[i] = r[key]
		}
		col := plainColumn(vals)
		name := dbfFieldName(key, used)
		copy(col.field.Name[:], name)
		cols = append(cols, col)
	}
	if len(cols) == 0 {
		col := dbfColumn{field: shp.NumberField("FID", 10)}
		for i := range recs {
			col.values = append(col.values, pad(strconv.Itoa(i), 10))
		}
		cols = append(cols, col)
	}
	sw, err := shp.Create(base+".shp", shp.POLYGON)
	if err != nil {
		return fmt.Errorf("write shapefile: %w", err)
	}
	fields := make([]shp.Field, len(cols))
	for i, col := range cols {
		fields[i] = col.field
	}
	if err := sw.SetFields(fields); err != nil {
		sw.Close()
		return fmt.Errorf("write shapefile: %w", err)
	}
	defer sw.Close()
	for i, z := range zones {
		var parts [][]shp.Point
		for _, f := range c.Features {
			if f.Zone == z {
				for j, r := range f.Polygon {
					parts = append(parts, shpRing(r, j == 0))
				}
			}
		}
		poly := shp.Polygon(*shp.NewPolyLine(parts))
		row := int(sw.Write(&poly))
		for j, col := range cols {
			if err := sw.WriteAttribute(row, j, col.values[i]); err != nil {
				return fmt.Errorf("write feature %d attribute %s: %w", i+1, c.Attributes[j], err)
			}
		}
	}
	return nil
}

// plainColumn picks the type of a column from its values (nil = null) and
// formats every value to the field's width.
func plainColumn(vals []any) dbfColumn {
	allBool, allNum, allInt := true, true, true
	for _, v := range vals {
		switch x := v.(type) {
		case nil:
		case bool:
			allNum, allInt = false, false
		case json.Number:
			allBool = false
			if strings.ContainsAny(x.String(), ".eE") || len(x.String()) > 18 {
				allInt = false
			}
			if _, err := x.Float64(); err != nil {
				allNum = false
			}
		case float64:
			allBool = false
			if x != math.Trunc(x) || math.Abs(x) >= 1e15 {
				allInt = false
			}
		default:
			allBool, allNum, allInt = false, false, false
		}
	}
	switch {
	case allBool:
		out := make([]string, len(vals))
		for i, v := range vals {
			out[i] = " "
			if b, ok := v.(bool); ok {
				out[i] = map[bool]string{true: "T", false: "F"}[b]
			}
		}
		return dbfColumn{field: shp.Field{Fieldtype: 'L', Size: 1}, values: out}
	case allNum && allInt:
		out := make([]string, len(vals))
		width := 1
		for i, v := range vals {
			if v != nil {
				out[i] = numberText(v)
				width = max(width, len(out[i]))
			}
		}
		return dbfColumn{field: shp.Field{Fieldtype: 'N', Size: uint8(width)}, values: padAll(out, width, true)}
	case allNum:
		if col, ok := realColumn(vals); ok {
			return col
		}
	}
	out := make([]string, len(vals))
	width := 1
	for i, v := range vals {
		out[i] = truncateUTF8(textValue(v), dbfMaxChar)
		width = max(width, len(out[i]))
	}
	return dbfColumn{field: shp.Field{Fieldtype: 'C', Size: uint8(width)}, values: padAll(out, width, false)}
}

// realColumn formats numbers with the decimals the most precise value
// needs (at least 1, at most 15), fewer when that would pass 24 characters; ok is
// false when even no decimals do not fit (the column is then text).
func realColumn(vals []any) (dbfColumn, bool) {
	fs := make([]float64, len(vals))
	decimals := 0
	for i, v := range vals {
		if v == nil {
			continue
		}
		fs[i] = numberValue(v)
		s := strconv.FormatFloat(fs[i], 'f', -1, 64)
		if dot := strings.IndexByte(s, '.'); dot >= 0 {
			decimals = max(decimals, len(s)-dot-1)
		}
	}
	// At least one decimal, so readers type the column Real even when
	// every value is whole (62800.0 in the source).
	decimals = min(max(decimals, 1), dbfMaxDigits)
	for ; decimals >= 0; decimals-- {
		out := make([]string, len(vals))
		width := 1
		for i, v := range vals {
			if v != nil {
				out[i] = strconv.FormatFloat(fs[i], 'f', decimals, 64)
				width = max(width, len(out[i]))
			}
		}
		if width <= dbfMaxNumber {
			return dbfColumn{field: shp.Field{Fieldtype: 'N', Size: uint8(width), Precision: uint8(decimals)}, values: padAll(out, width, true)}, true
		}
	}
	return dbfColumn{}, false
}

func numberValue(v any) float64 {
	switch x := v.(type) {
	case json.Number:
		f, _ := x.Float64()
		return f
	case float64:
		return x
	}
	return 0
}

func numberText(v any) string {
	switch x := v.(type) {
	case json.Number:
		return x.String()
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return ""
}

// textValue is a property as text: strings as they are, null as "", the
// rest as JSON.
func textValue(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case json.Number:
		return x.String()
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// padAll pads every value to width: numbers right-aligned, text
// left-aligned, as dBASE does; a null is all blanks.
func padAll(vals []string, width int, right bool) []string {
	for i, v := range vals {
		fill := strings.Repeat(" ", width-len(v))
		if right {
			vals[i] = fill + v
		} else {
			vals[i] = v + fill
		}
	}
	return vals
}

// truncateUTF8 cuts s to at most n bytes without splitting a character.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// dbfFieldName cuts name to a dBASE field name (10 bytes, NUL-free) not in
// used (compared case-insensitively), adding _1, _2… to a clash, and
// records it.
func dbfFieldName(name string, used map[string]bool) string {
	name = strings.ReplaceAll(name, "\x00", "")
	if name == "" {
		name = "FIELD"
	}
	cand := truncateUTF8(name, dbfNameLen)
	for n := 1; used[strings.ToUpper(cand)]; n++ {
		suffix := "_" + strconv.Itoa(n)
		cand = truncateUTF8(name, dbfNameLen-len(suffix)) + suffix
	}
	used[strings.ToUpper(cand)] = true
	return cand
}
