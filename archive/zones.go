package archive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/paulmach/orb"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/imagery/geotiff"
	"github.com/cropkit/cropkit/zoning"
)

// RegisteredIndex checks that u may use index (ErrInvalid unknown,
// ErrForbidden not granted) and that field f is registered for it
// (ErrInvalid: the zone operations name what is registered).
func (a *Archive) RegisteredIndex(u User, f Field, index string) error {
	if err := a.CheckIndex(u, index); err != nil {
		return err
	}
	if !slices.Contains(f.Indices, index) {
		return Invalid("field %q is not registered for index %q (registered: %s)", f.Name, index, strings.Join(f.Indices, ", "))
	}
	return nil
}

// CropHealthLayer resolves a §2.3 crop_health layer of field f: the usable
// image of spec.Date (that date when usable, else the closest, as downloads
// do), or the mean over the usable images from StartDate to EndDate.
// Dates lists what was used.
func (a *Archive) CropHealthLayer(ctx context.Context, f Field, spec zoning.LayerSpec) (LayerValues, error) {
	return a.CropHealthLayerOf(ctx, f, spec, "")
}

// CropHealthLayerOf is CropHealthLayer from one sensor family (see
// SensorFamily: "" the index's default). "any" is refused: images of two
// sensors lie on different grids.
func (a *Archive) CropHealthLayerOf(ctx context.Context, f Field, spec zoning.LayerSpec, sensor string) (LayerValues, error) {
	if strings.EqualFold(strings.TrimSpace(sensor), SensorAny) {
		return LayerValues{}, Invalid("sensor any: zones need the images of one sensor (their pixel grids differ)")
	}
	if spec.IsRange() {
		from, to := spec.StartDate.Format(time.DateOnly), spec.EndDate.Format(time.DateOnly)
		ps, err := a.UsableProductsOf(ctx, f, spec.Index, sensor, from, to)
		if err != nil {
			return LayerValues{}, err
		}
		if len(ps) == 0 {
			return LayerValues{}, NoImagery("no usable %s image of field %q from %s to %s", spec.Index, f.Name, from, to)
		}
		return a.MeanValues(ctx, f, ps)
	}
	ps, err := a.UsableProductsOf(ctx, f, spec.Index, sensor, "", "")
	if err != nil {
		return LayerValues{}, err
	}
	if len(ps) == 0 {
		return LayerValues{}, NoImagery("no usable %s image of field %q (none ingested yet, or too little of it clear: clouds, or outside the scenes)", spec.Index, f.Name)
	}
	i := ClosestDate(ps, spec.Date.Format(time.DateOnly))
	return a.MeanValues(ctx, f, ps[i:i+1])
}

// PrescriptionLayer is the index layer of a §4.3 prescription: for
// n_fertilizer the usable image of date (the closest; zero: the latest),
// for seeding the mean over the usable images of the season of the latest
// one (SeasonRange).
func (a *Archive) PrescriptionLayer(ctx context.Context, f Field, index string, typ zoning.PrescriptionType, date time.Time) (LayerValues, error) {
	return a.PrescriptionLayerOf(ctx, f, index, typ, date, "")
}

// PrescriptionLayerOf is PrescriptionLayer from one sensor family (see
// CropHealthLayerOf).
func (a *Archive) PrescriptionLayerOf(ctx context.Context, f Field, index string, typ zoning.PrescriptionType, date time.Time, sensor string) (LayerValues, error) {
	if strings.EqualFold(strings.TrimSpace(sensor), SensorAny) {
		return LayerValues{}, Invalid("sensor any: zones need the images of one sensor (their pixel grids differ)")
	}
	ps, err := a.UsableProductsOf(ctx, f, index, sensor, "", "")
	if err != nil {
		return LayerValues{}, err
	}
	if len(ps) == 0 {
		return LayerValues{}, NoImagery("no usable %s image of field %q (none ingested yet, or too little of it clear: clouds, or outside the scenes)", index, f.Name)
	}
	if typ == zoning.NFertilizer {
		want := ""
		if !date.IsZero() {
			want = date.Format(time.DateOnly)
		}
		i := ClosestDate(ps, want)
		return a.MeanValues(ctx, f, ps[i:i+1])
	}
	from, to, err := a.SeasonRange(ctx, f, ps[len(ps)-1].Date)
	if err != nil {
		return LayerValues{}, err
	}
	var chosen []Product
	for _, pr := range ps {
		if pr.Date >= from && (to == "" || pr.Date <= to) {
			chosen = append(chosen, pr)
		}
	}
	if len(chosen) == 0 {
		end := to
		if end == "" {
			end = "now"
		}
		return LayerValues{}, NoImagery("no usable %s image of field %q in its season %s to %s", index, f.Name, from, end)
	}
	return a.MeanValues(ctx, f, chosen)
}

// SeasonRange is the season a seeding prescription averages over: the
// field's metadata season of its latest usable image (the latest season
// starting on or before that image's date, from start_date to harvest_date,
// open-ended without a harvest date), else the 12 months up to the latest
// usable image. A season registered ahead (a cover crop after harvest,
// next year's crop) has no image yet, so the last season with imagery is used.
func (a *Archive) SeasonRange(ctx context.Context, f Field, latest string) (from, to string, err error) {
	seasons, err := a.fieldSeasons(ctx, f.ID)
	if err != nil {
		return "", "", err
	}
	for i := len(seasons) - 1; i >= 0; i-- {
		if seasons[i].StartDate <= latest {
			return seasons[i].StartDate, seasons[i].HarvestDate, nil
		}
	}
	end, err := time.Parse(time.DateOnly, latest)
	if err != nil {
		return "", "", fmt.Errorf("latest image date %q: %w", latest, err)
	}
	return end.AddDate(-1, 0, 1).Format(time.DateOnly), latest, nil
}

// ImageDates is how a zone map reports the imagery it used: one date, or
// START/END for a layer over several images; several layers comma-separated.
func ImageDates(layers ...LayerValues) string {
	var parts []string
	for _, l := range layers {
		switch len(l.Dates) {
		case 0:
		case 1:
			parts = append(parts, l.Dates[0])
		default:
			parts = append(parts, l.Dates[0]+"/"+l.Dates[len(l.Dates)-1])
		}
	}
	return strings.Join(parts, ",")
}

// zoneSeed is the k-means seed of every zone request: the same request on
// the same data gives the same zones.
const zoneSeed = 1

// ZoneMap is a computed zone map as answered: the §2.4 collection in the
// format asked, with the file name and the imagery dates it used.
type ZoneMap struct {
	Collection *zoning.Collection
	Format     zoning.Format
	FieldName  string
	// FileBase is the file name without its extension.
	FileBase string
	// ImageDate is ImageDates of the layers used ("" without imagery).
	ImageDate string
}

// Encode writes the map in its format (a zip for shapefile and isoxml).
func (m ZoneMap) Encode(w io.Writer) error {
	m.Collection.ImageDate = m.ImageDate
	return zoneError(m.Format.Write(w, m.Collection, m.FieldName))
}

// ContentType is the media type of Encode's output: the §2.4 collection
// as application/json (which every client of the spec's service expects;
// it is also valid GeoJSON), else the format's.
func (m ZoneMap) ContentType() string {
	if m.Format == zoning.GeoJSON {
		return "application/json"
	}
	return m.Format.ContentType()
}

// FileName is the map's file name with the format's extension.
func (m ZoneMap) FileName() string { return m.FileBase + m.Format.Extension() }

// CheckLayerIndices checks that u may use the index of every crop_health layer.
func (a *Archive) CheckLayerIndices(u User, layers []zoning.LayerSpec) error {
	for _, spec := range layers {
		if spec.Type == zoning.CropHealth {
			if err := a.CheckIndex(u, spec.Index); err != nil {
				return err
			}
		}
	}
	return nil
}

// VariableRateZones is §4.1: zones of field f from weighted crop_health
// and custom layers, optionally clipped to a parcel. files are the
// request's files by base name (shapefile parts, GeoTIFFs): used, never
// stored; a custom layer not among them is read from the field's uploads.
func (a *Archive) VariableRateZones(ctx context.Context, u User, f Field, p ZonesParams, files map[string][]byte) (ZoneMap, error) {
	region := f.Geometry
	if p.ParcelGeoJSON != nil {
		var err error
		if region, err = zoning.ParseParcel(p.ParcelGeoJSON, f.Geometry); err != nil {
			return ZoneMap{}, zoneError(err)
		}
	}
	// Crop-health layers first: the first one's grid is the zones' grid.
	layers := make([]zoning.Layer, len(p.Layers))
	var grid geo.Grid
	var used []LayerValues
	for i, spec := range p.Layers {
		if spec.Type != zoning.CropHealth {
			continue
		}
		if err := a.RegisteredIndex(u, f, spec.Index); err != nil {
			return ZoneMap{}, err
		}
		lv, err := a.CropHealthLayerOf(ctx, f, spec, p.Sensor)
		if err != nil {
			return ZoneMap{}, err
		}
		if len(used) == 0 {
			grid = lv.Grid
		} else if lv.Grid != grid {
			return ZoneMap{}, Invalid("layer %d: its images lie on another pixel grid than layer 0's: choose dates of one tile", i)
		}
		used = append(used, lv)
		layers[i] = zoning.Layer{Name: spec.Index, Type: zoning.CropHealth, Values: lv.Values, Weight: spec.Weight}
	}
	for i, spec := range p.Layers {
		if spec.Type != zoning.Custom {
			continue
		}
		values, err := a.customLayer(ctx, f, spec, files, grid)
		if err != nil {
			return ZoneMap{}, err
		}
		layers[i] = zoning.Layer{Name: spec.Attribute, Type: zoning.Custom, Values: values, Weight: spec.Weight}
	}
	col, err := zones(ctx, grid, region, layers, p.Zones, p.MinAreaHa, p.Simplify, p.Prescription, p.DstEPSG)
	if err != nil {
		return ZoneMap{}, err
	}
	return ZoneMap{Collection: col, Format: p.Format, FieldName: f.Name, FileBase: SafeFileName(f.Name) + "_zones", ImageDate: ImageDates(used...)}, nil
}

// PrescriptionZones is §4.3: zones of one index of field f with
// n_fertilizer or seeding doses (PrescriptionLayer says which images).
func (a *Archive) PrescriptionZones(ctx context.Context, u User, f Field, p PrescriptionParams) (ZoneMap, error) {
	if err := a.RegisteredIndex(u, f, p.Index); err != nil {
		return ZoneMap{}, err
	}
	lv, err := a.PrescriptionLayerOf(ctx, f, p.Index, p.Prescription.Type, p.Date, p.Sensor)
	if err != nil {
		return ZoneMap{}, err
	}
	layers := []zoning.Layer{{Name: p.Index, Type: zoning.CropHealth, Values: lv.Values, Weight: 1}}
	col, err := zones(ctx, lv.Grid, f.Geometry, layers, p.Zones, p.MinAreaHa, p.Simplify, p.Prescription, p.DstEPSG)
	if err != nil {
		return ZoneMap{}, err
	}
	base := SafeFileName(f.Name) + "_" + string(p.Prescription.Type) + "_" + p.Index
	if len(lv.Dates) == 1 {
		base += "_" + strings.ReplaceAll(lv.Dates[0], "-", "")
	}
	return ZoneMap{Collection: col, Format: p.Format, FieldName: f.Name, FileBase: base, ImageDate: ImageDates(lv)}, nil
}

// zones runs the library's one zone chain (zoning.Run) on region's pixels
// of grid: zones that tile region exactly, their quality, doses, reprojection.
func zones(ctx context.Context, grid geo.Grid, region orb.MultiPolygon, layers []zoning.Layer,
	n int, minAreaHa, simplify float64, rx zoning.Prescription, dstEPSG int) (*zoning.Collection, error) {
	col, err := zoning.Run(ctx, zoning.Request{Grid: grid, Outline: region, Layers: layers,
		Options:      zoning.Options{Zones: n, Seed: zoneSeed, MinAreaHa: minAreaHa, SimplifyTolerance: simplify},
		Prescription: rx, DstEPSG: dstEPSG})
	if err != nil {
		return nil, zoneError(err)
	}
	return col, nil
}

// customLayer resolves a §2.3 custom layer: the shapefile spec.Filename
// from the request's files, completed by the set uploaded before for field f
// (request files win), rasterized onto grid.
func (a *Archive) customLayer(ctx context.Context, f Field, spec zoning.LayerSpec, reqFiles map[string][]byte, grid geo.Grid) ([]float64, error) {
	if spec.IsRaster() {
		return a.rasterLayer(ctx, f, spec, reqFiles, grid)
	}
	files := map[string][]byte{}
	stored, err := a.Upload(ctx, f, spec.Filename)
	switch {
	case err == nil:
		for k, v := range stored.Files {
			files[k] = v
		}
	case !errors.Is(err, ErrNotFound):
		return nil, err
	}
	for k, v := range reqFiles {
		files[k] = v
	}
	parts, err := zoning.ShapefileParts(files, spec.Filename)
	if err != nil {
		return nil, Invalid("custom layer %s: %v (send its .shp, .shx, .dbf and .prj as files parts, or upload them first with /files/upload)", spec.Filename, err)
	}
	shapes, err := zoning.ReadShapefile(parts, zoning.ShapefileLimits{})
	if err != nil {
		return nil, Invalid("custom layer %s: %v", spec.Filename, err)
	}
	values, err := zoning.RasterizeAttribute(shapes, spec.Attribute, grid)
	if err != nil {
		return nil, Invalid("custom layer %s: %v", spec.Filename, err)
	}
	return values, nil
}

// rasterLayer resolves a §2.3 custom layer naming a GeoTIFF: the request's
// file of that name, else the raster uploaded before for field f, resampled
// onto grid (zoning.ResampleRaster).
func (a *Archive) rasterLayer(ctx context.Context, f Field, spec zoning.LayerSpec, reqFiles map[string][]byte, grid geo.Grid) ([]float64, error) {
	var data []byte
	for name, d := range reqFiles {
		if strings.EqualFold(name, spec.Filename) {
			data = d
		}
	}
	if data == nil {
		up, err := a.Upload(ctx, f, spec.Filename)
		if errors.Is(err, ErrNotFound) {
			return nil, Invalid("custom layer %s: no such raster (send it as a files part, or upload it first with /files/upload)", spec.Filename)
		}
		if err != nil {
			return nil, err
		}
		for _, d := range up.Files {
			data = d
		}
	}
	if _, err := describeRaster(spec.Filename, data); err != nil {
		return nil, err
	}
	tf, err := geotiff.Open(bytes.NewReader(data))
	if err != nil {
		return nil, Invalid("custom layer %s: %v", spec.Filename, err)
	}
	defer tf.Close()
	values, err := zoning.ResampleRaster(ctx, tf, grid, 0)
	if err != nil {
		return nil, Invalid("custom layer %s: %v", spec.Filename, err)
	}
	return values, nil
}

// GeoJSONToShapefile converts a GeoJSON FeatureCollection of polygons to a
// zipped shapefile in EPSG:4326 (§4.6): a zone collection (every feature
// with a numeric ZONE) gets the zone columns, any other collection its
// features' own properties (zoning.GeoJSONToShapefileZip).
func GeoJSONToShapefile(data []byte, w io.Writer) error {
	return zoneError(zoning.GeoJSONToShapefileZip(data, w))
}
