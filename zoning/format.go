package zoning

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/geo/crs"
	"github.com/paulmach/orb"
)

// Format is an output format of the zone endpoints (parameter format).
type Format string

// The output formats.
const (
	GeoJSON   Format = "geojson"   // the §2.4 zone collection (default)
	Shapefile Format = "shapefile" // zipped .shp/.shx/.dbf/.prj, EPSG:4326
	ISOXML    Format = "isoxml"    // zipped TASKDATA/TASKDATA.XML (ISO 11783-10 v4)
)

// ErrUnknownFormat is returned by ParseFormat (a server answers 400).
var ErrUnknownFormat = errors.New("unknown format")

// ParseFormat reads a format parameter; "" means GeoJSON.
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(strings.TrimSpace(s))); f {
	case "":
		return GeoJSON, nil
	case GeoJSON, Shapefile, ISOXML:
		return f, nil
	}
	return "", fmt.Errorf("%w %q: want geojson, shapefile or isoxml", ErrUnknownFormat, s)
}

// ContentType is the media type of the format.
func (f Format) ContentType() string {
	if f == GeoJSON || f == "" {
		return "application/geo+json"
	}
	return "application/zip"
}

// Extension is the usual file extension of the format.
func (f Format) Extension() string {
	if f == GeoJSON || f == "" {
		return ".geojson"
	}
	return ".zip"
}

// Write encodes c in format f. name is the field's name (the ISOXML
// partfield designator and the shapefile's base name).
func (f Format) Write(w io.Writer, c *Collection, name string) error {
	switch f {
	case GeoJSON, "":
		data, err := c.MarshalJSON()
		if err != nil {
			return fmt.Errorf("encode zones: %w", err)
		}
		_, err = w.Write(data)
		return err
	case Shapefile:
		return WriteShapefileZip(w, c, ShapefileOptions{Name: safeName(name)})
	case ISOXML:
		return WriteISOXMLZip(w, c, ISOXMLOptions{FieldName: name})
	}
	return fmt.Errorf("%w %q", ErrUnknownFormat, string(f))
}

// safeName turns a field name into a plain file name.
func safeName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 || b.Len() > 64 {
		return "zones"
	}
	return b.String()
}

// FieldMask returns the pixels of grid whose centre lies in field, a
// (multi)polygon in EPSG:4326 (geo.Rasterize, with its all-touched
// fallback for a parcel thinner than a pixel): the mask Compute takes.
func FieldMask(field orb.MultiPolygon, grid geo.Grid) ([]bool, error) {
	mask, _, err := fieldMask(field, grid)
	return mask, err
}

// fieldMask is FieldMask, also returning the field in grid's CRS.
func fieldMask(field orb.MultiPolygon, grid geo.Grid) ([]bool, orb.MultiPolygon, error) {
	t, err := crs.New(4326, grid.EPSG)
	if err != nil {
		return nil, nil, fmt.Errorf("project field to EPSG:%d: %w", grid.EPSG, err)
	}
	mp, err := geo.Transform(field, t)
	if err != nil {
		return nil, nil, fmt.Errorf("project field to EPSG:%d: %w", grid.EPSG, err)
	}
	return geo.Rasterize(mp, grid), mp, nil
}

// MeanValues is the per-pixel mean of several value grids of the same
// size (the mean over a date range's usable images), skipping NaN; a pixel
// missing everywhere stays NaN.
func MeanValues(grids ...[]float64) ([]float64, error) {
	if len(grids) == 0 {
		return nil, errors.New("mean of no images")
	}
	n := len(grids[0])
	sum := make([]float64, n)
	if len(grids) == 1 {
		// One image (a single date): its values, infinities as NaN and
		// −0 as 0, what the sums below give, in one pass.
		for i, v := range grids[0] {
			switch {
			case math.IsNaN(v) || math.IsInf(v, 0):
				sum[i] = math.NaN()
			case v == 0:
				sum[i] = 0
			default:
				sum[i] = v
			}
		}
		return sum, nil
	}
	cnt := make([]int32, n)
	for g, vals := range grids {
		if len(vals) != n {
			return nil, fmt.Errorf("image %d has %d pixels, image 0 has %d", g, len(vals), n)
		}
		for i, v := range vals {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				sum[i] += v
				cnt[i]++
			}
		}
	}
	for i := range sum {
		if cnt[i] == 0 {
			sum[i] = math.NaN()
		} else {
			sum[i] /= float64(cnt[i])
		}
	}
	return sum, nil
}
