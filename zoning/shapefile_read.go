package zoning

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"path"
	"regexp"
	"strings"

	"github.com/paulmach/orb"
	"github.com/twpayne/go-geom"
	"github.com/twpayne/go-shapefile"

	"github.com/cropkit/cropkit/geo/crs"
)

// This file is the only one that sees go-geom: shapes are converted to orb
// right here.

// Errors callers branch on (match with errors.Is); a server answers 400.
var (
	// ErrShapefile: the files do not make a readable shapefile (missing
	// part, corrupt content, a limit exceeded).
	ErrShapefile = errors.New("invalid shapefile")
	// ErrUnknownPRJ: the .prj names no coordinate system cropkit knows.
	ErrUnknownPRJ = errors.New("unknown shapefile coordinate system")
	// ErrNoPRJ: there is no .prj and the coordinates are not longitude and
	// latitude, so the coordinate system is unknown (errors matching it
	// also match ErrShapefile).
	ErrNoPRJ = errors.New("no .prj")
	// ErrAttribute: the attribute is missing or not numeric.
	ErrAttribute = errors.New("invalid shapefile attribute")
)

// ShapefileLimits bounds what ReadShapefile accepts, so a corrupted or
// hostile file cannot exhaust memory. Zero fields take the defaults.
type ShapefileLimits struct {
	MaxFileBytes   int64 // per file (default 64 MiB)
	MaxRecords     int   // shapes and attribute rows (default 100,000)
	MaxParts       int   // parts of one shape (default 10,000)
	MaxPoints      int   // points of one shape (default 1,000,000)
	MaxTotalPoints int   // points of all shapes (default 5,000,000)
}

func (l ShapefileLimits) withDefaults() ShapefileLimits {
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = 64 << 20
	}
	if l.MaxRecords <= 0 {
		l.MaxRecords = 100_000
	}
	if l.MaxParts <= 0 {
		l.MaxParts = 10_000
	}
	if l.MaxPoints <= 0 {
		l.MaxPoints = 1_000_000
	}
	if l.MaxTotalPoints <= 0 {
		l.MaxTotalPoints = 5_000_000
	}
	return l
}

// Shapes is a shapefile read into orb geometries.
type Shapes struct {
	// EPSG is the coordinate system from the .prj; 4326 when there is no
	// .prj, which ReadShapefile accepts only when every coordinate is a
	// longitude and latitude.
	EPSG int
	// Fields lists the attribute names in file order.
	Fields   []string
	Features []Shape
}

// Shape is one record: an orb.MultiPolygon, orb.MultiLineString,
// orb.Point or orb.MultiPoint (nil for a null shape), and its attributes
// (string, float64, int64, bool or time.Time values, as go-shapefile decodes them).
type Shape struct {
	Geometry   orb.Geometry
	Attributes map[string]any
}

// ShapefileParts picks the files of the shapefile shpName (case-insensitive
// extensions .shp, .shx, .dbf, .prj, .cpg with the same base name) out of
// named files, e.g. the files parts of a §4.1 request. When shpName is
// empty, the only .shp present is used.
func ShapefileParts(files map[string][]byte, shpName string) (map[string][]byte, error) {
	if shpName == "" {
		for name := range files {
			if strings.EqualFold(path.Ext(name), ".shp") {
				if shpName != "" {
					return nil, fmt.Errorf("%w: several .shp files, name one", ErrShapefile)
				}
				shpName = name
			}
		}
		if shpName == "" {
			return nil, fmt.Errorf("%w: no .shp file", ErrShapefile)
		}
	}
	base := strings.TrimSuffix(path.Base(shpName), path.Ext(shpName))
	parts := map[string][]byte{}
	for name, data := range files {
		b := path.Base(strings.ReplaceAll(name, `\`, "/"))
		ext := strings.ToLower(path.Ext(b))
		if strings.EqualFold(strings.TrimSuffix(b, path.Ext(b)), base) {
			switch ext {
			case ".shp", ".shx", ".dbf", ".prj", ".cpg":
				parts[ext] = data
			}
		}
	}
	if parts[".shp"] == nil {
		return nil, fmt.Errorf("%w: %s not found among the files", ErrShapefile, shpName)
	}
	return parts, nil
}

// ReadShapefile reads a shapefile from its parts, keyed by extension
// (".shp" and ".dbf" required, ".prj", ".shx" and ".cpg" optional; see
// ShapefileParts) with github.com/twpayne/go-shapefile under explicit limits.
// Without a .prj the shapes are taken as EPSG:4326, but only when every
// coordinate is within longitude and latitude ranges: projected metres
// read as degrees would put the shapes nowhere (ErrNoPRJ).
// Every error matches ErrShapefile or ErrUnknownPRJ.
func ReadShapefile(parts map[string][]byte, limits ShapefileLimits) (s *Shapes, err error) {
	limits = limits.withDefaults()
	for ext, data := range parts {
		if int64(len(data)) > limits.MaxFileBytes {
			return nil, fmt.Errorf("%w: %s file of %d bytes exceeds %d", ErrShapefile, ext, len(data), limits.MaxFileBytes)
		}
	}
	shpData, dbfData := parts[".shp"], parts[".dbf"]
	if shpData == nil {
		return nil, fmt.Errorf("%w: .shp missing", ErrShapefile)
	}
	if dbfData == nil {
		return nil, fmt.Errorf("%w: .dbf missing (attributes are needed)", ErrShapefile)
	}
	// The parser is third-party code fed untrusted bytes: a panic in it is
	// a corrupt file, not a crash.
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("%w: corrupt content (%v)", ErrShapefile, r)
		}
	}()

	// go-shapefile requires the M part of Z records, which the ESRI spec
	// makes optional and GDAL omits for XYZ data: add it before parsing.
	shpData = addOptionalM(shpData)
	shp, err := shapefile.ReadSHP(bytes.NewReader(shpData), int64(len(shpData)), &shapefile.ReadSHPOptions{
		MaxParts:      limits.MaxParts,
		MaxPoints:     limits.MaxPoints,
		MaxRecordSize: min(len(shpData), 8+limits.MaxPoints*40+limits.MaxParts*4+64),
	})
	if err != nil {
		return nil, fmt.Errorf("%w: .shp: %v", ErrShapefile, err)
	}
	if len(shp.Records) > limits.MaxRecords {
		return nil, fmt.Errorf("%w: %d shapes exceed %d", ErrShapefile, len(shp.Records), limits.MaxRecords)
	}
	// go-shapefile trusts the .dbf header: it reads descriptors up to any
	// 0x0D, accepts zero-length fields and allocates a value per field per
	// record, so a small hostile file costs gigabytes. Check the layout
	// against the bytes present and the .shp first.
	if err := checkDBFLayout(dbfData, len(shp.Records), limits.MaxRecords); err != nil {
		return nil, fmt.Errorf("%w: .dbf: %v", ErrShapefile, err)
	}
	charset := ""
	if cpg := parts[".cpg"]; len(cpg) > 0 && len(cpg) < 64 {
		charset = strings.TrimSpace(string(cpg))
	}
	dbfOpts := &shapefile.ReadDBFOptions{
		MaxHeaderSize:    min(len(dbfData), 65535),
		MaxRecordSize:    min(len(dbfData), 65535),
		MaxRecords:       limits.MaxRecords,
		SkipBrokenFields: true,
		Charset:          charset,
	}
	dbf, err := shapefile.ReadDBF(bytes.NewReader(dbfData), int64(len(dbfData)), dbfOpts)
	if err != nil && charset != "" {
		dbfOpts.Charset = "" // an unknown code page name: fall back to ISO 8859-1
		dbf, err = shapefile.ReadDBF(bytes.NewReader(dbfData), int64(len(dbfData)), dbfOpts)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: .dbf: %v", ErrShapefile, err)
	}
	if len(dbf.Records) != len(shp.Records) {
		return nil, fmt.Errorf("%w: %d shapes but %d attribute rows", ErrShapefile, len(shp.Records), len(dbf.Records))
	}

	s = &Shapes{EPSG: 4326}
	prj := parts[".prj"]
	if len(prj) > 0 {
		if s.EPSG, err = EPSGFromPRJ(string(prj)); err != nil {
			return nil, err
		}
	}
	for _, fd := range dbf.FieldDescriptors {
		s.Fields = append(s.Fields, fd.Name)
	}
	total := 0
	for i, rec := range shp.Records {
		var g orb.Geometry
		if rec.Geom != nil {
			total += len(rec.Geom.FlatCoords()) / max(rec.Geom.Stride(), 1)
			if total > limits.MaxTotalPoints {
				return nil, fmt.Errorf("%w: more than %d points in all", ErrShapefile, limits.MaxTotalPoints)
			}
			if g, err = toOrb(rec.Geom); err != nil {
				return nil, fmt.Errorf("%w: shape %d: %v", ErrShapefile, i+1, err)
			}
			if len(prj) == 0 {
				if b := g.Bound(); b.Min[0] < -180 || b.Max[0] > 180 || b.Min[1] < -90 || b.Max[1] > 90 {
					return nil, fmt.Errorf("%w: %w and shape %d spans x %.2f..%.2f, y %.2f..%.2f, not longitude/latitude: send the .prj naming the coordinate system",
						ErrShapefile, ErrNoPRJ, i+1, b.Min[0], b.Max[0], b.Min[1], b.Max[1])
				}
			}
		}
		s.Features = append(s.Features, Shape{Geometry: g, Attributes: dbf.Record(i)})
	}
	return s, nil
}

// Shape types with Z values (ESRI Shapefile Technical Description).
const (
	shpPointZ      = 11
	shpPolyLineZ   = 13
	shpPolygonZ    = 15
	shpMultiPointZ = 18
)

// mNoData is the ESRI "no data" measure (any value below -1e38).
const mNoData = -1e39

// addOptionalM returns the .shp data with the M part (range and one value
// per point, all "no data") added to every Z record written without it,
// fixing the record lengths and the file length in the headers. The ESRI
// spec makes that part optional (GDAL writes XYZ data so), but go-shapefile
// only reads Z records that carry it. Data that is not a Z shapefile, needs
// no change or does not parse is returned unchanged, so the parser reports
// its own errors; the result grows by at most 8 bytes per point plus 16 per
// record, within the size the limits already allow.
func addOptionalM(data []byte) []byte {
	const header = 100
	if len(data) < header {
		return data
	}
	switch binary.LittleEndian.Uint32(data[32:36]) {
	case shpPointZ, shpPolyLineZ, shpPolygonZ, shpMultiPointZ:
	default:
		return data
	}
	type fix struct{ at, points int } // record header offset, points
	var fixes []fix
	for off := header; off+8 <= len(data); {
		length := 2 * int64(binary.BigEndian.Uint32(data[off+4:off+8]))
		end := int64(off) + 8 + length
		if length < 4 || end > int64(len(data)) {
			return data
		}
		rec := data[off+8 : end]
		if n, ok := pointsWithoutM(rec); ok {
			fixes = append(fixes, fix{off, n})
		}
		off = int(end)
	}
	if len(fixes) == 0 {
		return data
	}
	out := make([]byte, 0, len(data)+len(fixes)*16)
	prev := 0
	var m [8]byte
	binary.LittleEndian.PutUint64(m[:], math.Float64bits(mNoData))
	for _, f := range fixes {
		length := 2 * int(binary.BigEndian.Uint32(data[f.at+4:f.at+8]))
		end := f.at + 8 + length
		out = append(out, data[prev:end]...)
		added := 8 * f.points
		if binary.LittleEndian.Uint32(data[f.at+8:f.at+12]) != shpPointZ {
			added += 16 // the M range before the values
		}
		for range added / 8 {
			out = append(out, m[:]...)
		}
		// Record lengths are counted in 16-bit words.
		binary.BigEndian.PutUint32(out[len(out)-length-added-4:], uint32((length+added)/2))
		prev = end
	}
	out = append(out, data[prev:]...)
	binary.BigEndian.PutUint32(out[24:28], uint32(len(out)/2))
	return out
}

// pointsWithoutM reports whether rec (a record's content) is a Z shape
// whose length is exactly that of its X, Y and Z parts, and its number of
// points.
func pointsWithoutM(rec []byte) (int, bool) {
	if len(rec) < 4 {
		return 0, false
	}
	typ := binary.LittleEndian.Uint32(rec[0:4])
	var fixed, points int64
	switch typ {
	case shpPointZ:
		return 1, len(rec) == 4+3*8
	case shpMultiPointZ:
		if len(rec) < 40 {
			return 0, false
		}
		fixed, points = 4+32+4, int64(binary.LittleEndian.Uint32(rec[36:40]))
	case shpPolyLineZ, shpPolygonZ:
		if len(rec) < 44 {
			return 0, false
		}
		parts := int64(binary.LittleEndian.Uint32(rec[36:40]))
		fixed, points = 4+32+8+4*parts, int64(binary.LittleEndian.Uint32(rec[40:44]))
	default:
		return 0, false
	}
	// X, Y, then the Z range and values.
	return int(points), int64(len(rec)) == fixed+16*points+16+8*points
}

// maxDBFCells bounds records × fields of a .dbf: go-shapefile holds every
// cell as an interface value (16 bytes plus the value), so 5M cells stay
// well under a gigabyte while allowing e.g. 100,000 records of 50 fields.
const maxDBFCells = 5_000_000

// checkDBFLayout validates a dBase III header before go-shapefile parses
// it: the header size must hold exactly the field descriptors followed by
// the 0x0D terminator, every field must have a length, the lengths must
// add up to the record size, the records must fit in the bytes present,
// their count must equal the .shp's, and records × fields must stay under
// maxDBFCells.
func checkDBFLayout(data []byte, shpRecords, maxRecords int) error {
	const head, desc = 32, 32
	if len(data) < head+1 {
		return fmt.Errorf("%d bytes is too short for a header", len(data))
	}
	records := int64(binary.LittleEndian.Uint32(data[4:8]))
	headerSize := int(binary.LittleEndian.Uint16(data[8:10]))
	recordSize := int64(binary.LittleEndian.Uint16(data[10:12]))
	if records > int64(maxRecords) {
		return fmt.Errorf("%d records exceed %d", records, maxRecords)
	}
	if records != int64(shpRecords) {
		return fmt.Errorf("%d attribute rows but %d shapes", records, shpRecords)
	}
	if headerSize < head+1 || (headerSize-head-1)%desc != 0 || headerSize > len(data) {
		return fmt.Errorf("header size %d does not hold whole field descriptors in %d bytes", headerSize, len(data))
	}
	if data[headerSize-1] != 0x0D {
		return fmt.Errorf("no field terminator at header end (offset %d)", headerSize-1)
	}
	fields := (headerSize - head - 1) / desc
	sum := int64(1) // the deletion flag
	for i := range fields {
		d := data[head+i*desc : head+(i+1)*desc]
		if d[0] == 0x0D {
			return fmt.Errorf("field terminator inside the descriptors (field %d of %d)", i+1, fields)
		}
		if d[16] == 0 {
			return fmt.Errorf("field %d has length 0", i+1)
		}
		sum += int64(d[16])
	}
	if sum != recordSize {
		return fmt.Errorf("field lengths add up to %d bytes but records are %d", sum, recordSize)
	}
	if records*int64(fields) > maxDBFCells {
		return fmt.Errorf("%d records of %d fields exceed %d cells", records, fields, maxDBFCells)
	}
	if int64(headerSize)+records*recordSize > int64(len(data)) {
		return fmt.Errorf("%d records of %d bytes do not fit in %d bytes", records, recordSize, len(data))
	}
	return nil
}

// toOrb converts a go-geom geometry (2-D part only) to orb.
func toOrb(g geom.T) (orb.Geometry, error) {
	stride := g.Stride()
	flat := g.FlatCoords()
	pts := func(from, to int) []orb.Point {
		out := make([]orb.Point, 0, (to-from)/stride)
		for i := from; i+1 < to; i += stride {
			out = append(out, orb.Point{flat[i], flat[i+1]})
		}
		return out
	}
	for _, v := range flat {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, errors.New("coordinate not finite")
		}
	}
	switch g := g.(type) {
	case *geom.Point:
		return orb.Point{g.X(), g.Y()}, nil
	case *geom.MultiPoint:
		return orb.MultiPoint(pts(0, len(flat))), nil
	case *geom.MultiLineString:
		var mls orb.MultiLineString
		start := 0
		for _, end := range g.Ends() {
			mls = append(mls, orb.LineString(pts(start, end)))
			start = end
		}
		return mls, nil
	case *geom.MultiPolygon:
		var mp orb.MultiPolygon
		start := 0
		for _, ends := range g.Endss() {
			var p orb.Polygon
			for _, end := range ends {
				p = append(p, orb.Ring(pts(start, end)))
				start = end
			}
			mp = append(mp, p)
		}
		return mp, nil
	}
	return nil, fmt.Errorf("unsupported geometry %T", g)
}

var (
	authorityRE = regexp.MustCompile(`(?i)AUTHORITY\s*\[\s*"EPSG"\s*,\s*"?(\d+)"?\s*\]\s*\]\s*$`)
	idRE        = regexp.MustCompile(`(?i)ID\s*\[\s*"EPSG"\s*,\s*(\d+)\s*\]\s*\]\s*$`)
	headRE      = regexp.MustCompile(`^\s*([A-Z_]+)\s*\[\s*"([^"]*)"`)
	utmRE       = regexp.MustCompile(`(?i)^(WGS[ _]?(?:19)?84|ETRS[ _]?(?:19)?89)[ _/]+UTM[ _]zone[ _](\d{1,2})([NS])$`)
)

// EPSGFromPRJ finds the EPSG code of a .prj (ESRI or OGC WKT) with
// crs.FromWKT: the top-level AUTHORITY["EPSG",…] or ID["EPSG",…] when
// present, else the coordinate system's name (EPSG or common ESRI
// spelling), else its projection, parameters, unit, ellipsoid and datum
// matched against every EPSG code the crs package supports.
func EPSGFromPRJ(wkt string) (int, error) {
	code, err := crs.FromWKT(wkt)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrUnknownPRJ, err)
	}
	return code, nil
}
