package zoning

import (
	"archive/zip"
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
// .prj) in EPSG:4326, written with github.com/jonas-p/go-shp: one Polygon
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
	if err := writeShapefile(base, c, zones); err != nil {
		return err
	}
	if err := os.WriteFile(base+".prj", []byte(wgs84PRJ), 0o600); err != nil {
		return fmt.Errorf("write shapefile: %w", err)
	}
	zw := zip.NewWriter(w)
	for _, ext := range []string{".shp", ".shx", ".dbf", ".prj"} {
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
// to shapefile"), with no limit on the number of zones.
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
