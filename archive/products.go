package archive

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/planar"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/geo/crs"
	"github.com/cropkit/cropkit/imagery"
	"github.com/cropkit/cropkit/imagery/geotiff"
	"github.com/cropkit/cropkit/zoning"
)

// RasterNoData marks pixels outside the field or masked in Raster GeoTIFFs.
const RasterNoData = -9999

// Image is one chosen usable product of a field with the usable product
// before it (nil for the field's first image of that index).
type Image struct {
	Field   Field
	Index   string
	Product Product
	Prev    *Product
}

// ImageQuery names an image: u's field, an index it is registered for, and
// a date (the closest usable date is chosen, ties to the earlier; "" means
// the latest).
type ImageQuery struct {
	Field, Index, Date string
	// Sensor keeps one sensor family's images (see SensorFamily): "" the
	// index's default (Sentinel-2 for optical indices), "any" all.
	Sensor       string
	WithGeometry bool
}

// Image resolves q for u: ErrInvalid/ErrForbidden for an unknown or
// forbidden index, ErrNotFound for a missing field or one not registered
// for the index, ErrNoImagery when it has no usable image.
func (a *Archive) Image(ctx context.Context, u User, q ImageQuery) (Image, error) {
	index := strings.ToLower(q.Index)
	if err := a.CheckIndex(u, index); err != nil {
		return Image{}, err
	}
	f, err := a.Field(ctx, u, q.Field, q.WithGeometry)
	if err != nil {
		return Image{}, err
	}
	if !slices.Contains(f.Indices, index) {
		return Image{}, NotFound("field %q is not registered for index %q", f.Name, index)
	}
	family, err := a.SensorFamily(index, q.Sensor)
	if err != nil {
		return Image{}, err
	}
	products, err := a.usableProducts(ctx, f, index, family)
	if err != nil {
		return Image{}, err
	}
	if len(products) == 0 {
		of := ""
		if family != "" {
			of = " from " + family
		}
		return Image{}, NoImagery("no usable %s image%s of field %q (none ingested yet, or too little of it clear: clouds, or outside the scenes)", index, of, f.Name)
	}
	i := ClosestDate(products, q.Date)
	img := Image{Field: f, Index: index, Product: products[i]}
	if i > 0 {
		prev := products[i-1] // a copy: products may be the cache's
		img.Prev = &prev
	}
	return img, nil
}

// UsableProducts lists field f's usable products of index between from and
// to (inclusive YYYY-MM-DD, "" = open), by date, from the index's default
// sensor family (Sentinel-2 for optical indices, Sentinel-1 for radar ones).
func (a *Archive) UsableProducts(ctx context.Context, f Field, index, from, to string) ([]Product, error) {
	return a.UsableProductsOf(ctx, f, index, "", from, to)
}

// UsableProductsOf is UsableProducts of one sensor family as SensorFamily
// reads sensor ("" the index's default, "any" every family: then one date
// may hold two products).
func (a *Archive) UsableProductsOf(ctx context.Context, f Field, index, sensor, from, to string) ([]Product, error) {
	family, err := a.SensorFamily(index, sensor)
	if err != nil {
		return nil, err
	}
	return a.store.Products(ctx, ProductQuery{FieldID: f.ID, Index: index, From: from, To: to, UsableOnly: true, Family: family})
}

// Products lists the products of field f matching q (FieldID is set from f).
func (a *Archive) Products(ctx context.Context, f Field, q ProductQuery) ([]Product, error) {
	q.FieldID = f.ID
	return a.store.Products(ctx, q)
}

// ClosestDate is the index in ps (sorted by date) of date, else of the
// closest date with ties to the earlier; the last when date is empty.
//
// Distances are civil days, not time.Duration: a Duration holds only ±292
// years, so a far-future date (9999-12-31) overflowed and looked closest to
// the earliest image.
func ClosestDate(ps []Product, date string) int {
	if date == "" {
		return len(ps) - 1
	}
	want, err := civilDay(date)
	if err != nil {
		return len(ps) - 1
	}
	best, bestDist := 0, int64(math.MaxInt64)
	for i, p := range ps {
		d, err := civilDay(p.Date)
		if err != nil {
			continue
		}
		dist := d - want
		if dist < 0 {
			dist = -dist
		}
		if dist < bestDist { // strict: on a tie the earlier date stays
			best, bestDist = i, dist
		}
	}
	return best
}

// civilDay is the number of days from 1970-01-01 to a YYYY-MM-DD date.
func civilDay(date string) (int64, error) {
	t, err := time.Parse(time.DateOnly, date)
	if err != nil {
		return 0, fmt.Errorf("date %q: %w", date, err)
	}
	return t.Unix() / 86400, nil
}

// meanVariation is the percent change of p's mean versus prev's
// (imagery.MeanVariation) with prev's date; 0 and nil without a previous
// image or when the change is undefined (previous mean 0).
func meanVariation(p Product, prev *Product) (float64, *string) {
	if prev == nil {
		return 0, nil
	}
	d := prev.Date
	mv := imagery.MeanVariation(p.Mean, prev.Mean)
	if math.IsNaN(mv) || math.IsInf(mv, 0) {
		return 0, &d
	}
	return mv, &d
}

// MeanVariation is the image's mean_variation and the date it compares with.
func (img Image) MeanVariation() (float64, *string) { return meanVariation(img.Product, img.Prev) }

// File reads the image's png or json as stored in its date's bundle.
func (a *Archive) File(ctx context.Context, img Image, ext string) ([]byte, error) {
	return a.cachedDoc(docKey{bundle: img.Product.Bundle, index: img.Index, kind: ext}, func() ([]byte, error) {
		return a.readFile(ctx, img, ext)
	})
}

// readFile reads the image's png or json from its bundle.
func (a *Archive) readFile(ctx context.Context, img Image, ext string) ([]byte, error) {
	key := img.Product.Bundle
	ra, size, closer, err := a.openBlob(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("read products of field %d %s: %w", img.Field.ID, img.Product.Date, err)
	}
	defer closer.Close()
	zr, err := zip.NewReader(ra, size)
	if err != nil {
		return nil, fmt.Errorf("read products %s: %w", key, err)
	}
	name := img.Index + "." + ext
	f, err := zr.Open(name)
	if err != nil {
		return nil, fmt.Errorf("read %s of %s: %w", name, key, err)
	}
	defer f.Close()
	out, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read %s of %s: %w", name, key, err)
	}
	return out, nil
}

// PNG is the image's colormapped PNG (§2.6).
func (a *Archive) PNG(ctx context.Context, img Image) ([]byte, error) { return a.File(ctx, img, "png") }

// ReportJSON is the image's §2.5 document with its mean_variation (and
// previous_date) against the previous usable image, computed now: stored
// documents carry none, so ingesting an older date later stays right.
func (a *Archive) ReportJSON(ctx context.Context, img Image) ([]byte, error) {
	mv, prev := img.MeanVariation()
	p := ""
	if prev != nil {
		p = *prev
	}
	// The answer, not only the stored document, is kept: a download is then a map lookup.
	return a.cachedDoc(docKey{bundle: img.Product.Bundle, index: img.Index, kind: "json answer", prev: p, variation: mv}, func() ([]byte, error) {
		doc, err := a.readFile(ctx, img, "json")
		if err != nil {
			return nil, err
		}
		return imagery.SetReportVariation(doc, mv, p)
	})
}

// Values are the image's stored pixel values (NaN where null), row-major
// on its grid.
func (a *Archive) Values(ctx context.Context, img Image) ([]float64, error) {
	doc, err := a.File(ctx, img, "json")
	if err != nil {
		return nil, err
	}
	g := img.Product.Grid
	v, err := imagery.ReportValues(doc, img.Index, g.Cols*g.Rows)
	if err != nil {
		return nil, fmt.Errorf("stored report of field %d %s %s: %w", img.Field.ID, img.Index, img.Product.Date, err)
	}
	return v, nil
}

// Value is the stored value of the image pixel holding lon/lat:
// ErrInvalid outside the field (img needs its geometry), ErrNoImagery on a
// masked pixel or one whose centre is outside the field.
func (a *Archive) Value(ctx context.Context, img Image, lon, lat float64) (float64, error) {
	if lat < -90 || lat > 90 || lon < -180 || lon > 180 {
		return 0, Invalid("lat must be within [-90, 90] and lon within [-180, 180]")
	}
	if !planar.MultiPolygonContains(img.Field.Geometry, orb.Point{lon, lat}) {
		return 0, Invalid("location (%g, %g) is outside field %q", lat, lon, img.Field.Name)
	}
	masked := NoImagery("no %s value at (%g, %g) on %s: the pixel is masked or its centre is outside the field", img.Index, lat, lon, img.Product.Date)
	g := img.Product.Grid
	t, err := crs.New(4326, g.EPSG)
	if err != nil {
		return 0, fmt.Errorf("value: %w", err)
	}
	x, y := t.Transform(lon, lat)
	col, row := g.Pixel(orb.Point{x, y})
	if col < 0 || row < 0 || col >= g.Cols || row >= g.Rows {
		return 0, masked
	}
	values, err := a.Values(ctx, img)
	if err != nil {
		return 0, err
	}
	v := values[row*g.Cols+col]
	if math.IsNaN(v) {
		return 0, masked
	}
	return v, nil
}

// Raster is the image's values as a float32 GeoTIFF in the scene's CRS,
// RasterNoData outside the field and where masked.
func (a *Archive) Raster(ctx context.Context, img Image) ([]byte, error) {
	values, err := a.Values(ctx, img)
	if err != nil {
		return nil, err
	}
	f32 := make([]float32, len(values))
	for i, v := range values {
		if math.IsNaN(v) {
			f32[i] = RasterNoData
		} else {
			f32[i] = float32(v)
		}
	}
	var buf bytes.Buffer
	// Strips, not 256² tiles: field windows are small, and padding them to
	// whole tiles would cost more than the data.
	rs := &geotiff.Raster{Window: img.Product.Grid.Full(), Type: geotiff.Float32, F32: f32}
	if err := geotiff.Write(&buf, img.Product.Grid, rs, geotiff.WriteOptions{Stripped: true, Predictor: 3, HasNoData: true, NoData: RasterNoData}); err != nil {
		return nil, fmt.Errorf("raster: %w", err)
	}
	return buf.Bytes(), nil
}

// LayerValues are an index's values on a field's grid and the dates they come from.
type LayerValues struct {
	Grid   geo.Grid
	Values []float64
	Dates  []string
}

// MeanValues reads the stored values of products (one field and index, on
// one grid) and averages them per pixel.
func (a *Archive) MeanValues(ctx context.Context, f Field, products []Product) (LayerValues, error) {
	if len(products) == 0 {
		return LayerValues{}, NoImagery("no usable image of field %q", f.Name)
	}
	out := LayerValues{Grid: products[0].Grid}
	grids := make([][]float64, 0, len(products))
	for _, p := range products {
		if p.Grid != out.Grid {
			return LayerValues{}, Invalid("the %s images of field %q lie on different pixel grids (%s, %s): choose dates of one tile",
				p.Index, f.Name, products[0].Date, p.Date)
		}
		values, err := a.Values(ctx, Image{Field: f, Index: p.Index, Product: p})
		if err != nil {
			return LayerValues{}, err
		}
		grids = append(grids, values)
		out.Dates = append(out.Dates, p.Date)
	}
	if len(grids) == 1 {
		out.Values = grids[0]
		return out, nil
	}
	v, err := zoning.MeanValues(grids...)
	if err != nil {
		return LayerValues{}, fmt.Errorf("mean of %d images: %w", len(grids), err)
	}
	out.Values = v
	return out, nil
}

// SafeFileName is a name made safe for a file name.
func SafeFileName(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.':
			return r
		}
		return '_'
	}, name)
}
