package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/paulmach/orb"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/geo/crs"
	"github.com/cropkit/cropkit/imagery/geotiff"
	"github.com/cropkit/cropkit/zoning"
)

// maxZoneBody bounds the bodies of the zone operations, which carry
// shapefiles (the shapefile reader bounds each file at 64 MiB).
const maxZoneBody = 128 << 20

// maxPartBytes bounds one multipart file read into memory (the shapefile
// reader's own bound per file).
const maxPartBytes = 64 << 20

// maxConvertBody bounds /convert/geojson-to-shapefile: GeoJSON decodes to
// several times its size in memory (a 120 MiB body used ~900 MB).
const maxConvertBody = 16 << 20

// zoneSeed is the k-means seed of every zone request: the same request on
// the same data gives the same zones.
const zoneSeed = 1

// zoneRoutes are the zoning operations: §4.1, §4.3, shapefile uploads and
// the GeoJSON → shapefile conversion (§4.6).
func (s *Server) zoneRoutes() []route {
	return []route{
		{methods: postOnly, paths: []string{"/v1/variable-rate-zones"}, access: user, maxBody: maxZoneBody, heavy: true, handle: s.handleVariableRateZones},
		{methods: readable, paths: []string{"/prescription_maps/get_zones"}, access: user, heavy: true, handle: s.handlePrescriptionZones},
		{methods: postOnly, paths: []string{"/files/upload"}, access: user, maxBody: maxZoneBody, heavy: true, handle: s.handleFilesUpload},
		{methods: readable, paths: []string{"/files/uploads"}, access: user, handle: s.handleFilesUploads},
		{methods: postOnly, paths: []string{"/convert/geojson-to-shapefile"}, access: user, raw: true, maxBody: maxConvertBody, heavy: true, handle: s.handleConvertGeoJSON},
	}
}

// formValue is parameter name as the text the zoning parsers read: a string
// as is, anything else (a number, an inline JSON array or object) as its JSON.
func (p params) formValue(name string) string {
	v, ok := p[name]
	if !ok || isNull(v) {
		return ""
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	return string(v)
}

// zoneError maps the zoning library's errors to API errors (see the
// package documentation of zoning for which is which).
func zoneError(err error) error {
	var apiErr *Error
	if err == nil || errors.As(err, &apiErr) {
		return err
	}
	switch {
	case errors.As(err, new(*zoning.ZonesAbovePixelsError)):
		// More zones asked than the field has usable pixels: the request
		// can be corrected (both numbers are named).
		return badRequest("%v", err)
	case errors.Is(err, zoning.ErrInvalidParcel):
		return &Error{Status: http.StatusBadRequest, Code: CodeInvalidGeometry, Message: "parcel_geojson: " + err.Error()}
	case errors.Is(err, zoning.ErrTooFewPixels):
		return &Error{Status: http.StatusNotFound, Code: CodeNoImagery, Message: err.Error()}
	case errors.Is(err, zoning.ErrInvalidLayers),
		errors.Is(err, zoning.ErrShapefile), errors.Is(err, zoning.ErrUnknownPRJ),
		errors.Is(err, zoning.ErrAttribute), errors.Is(err, zoning.ErrEmptyLayer),
		errors.Is(err, crs.ErrUnsupportedCRS), errors.Is(err, crs.ErrMalformedCRS),
		errors.Is(err, zoning.ErrTooManyZones), errors.Is(err, zoning.ErrInvalidPrescription),
		errors.Is(err, zoning.ErrInvalidOptions), errors.Is(err, zoning.ErrUnknownFormat),
		errors.Is(err, zoning.ErrInvalidCollection):
		return badRequest("%v", err)
	}
	return err
}

// requestFiles are the files parts of a multipart request by base file name.
func requestFiles(r *http.Request) (map[string][]byte, error) {
	files := map[string][]byte{}
	if r.MultipartForm == nil {
		return files, nil
	}
	for _, fh := range r.MultipartForm.File["files"] {
		name, err := partFileName(fh)
		if err != nil {
			return nil, err
		}
		if _, dup := files[name]; dup {
			return nil, badRequest("files: %q sent twice", name)
		}
		data, err := readPart(fh)
		if err != nil {
			return nil, err
		}
		files[name] = data
	}
	return files, nil
}

// partFileName is the base name of an uploaded file, refused when empty or
// holding characters unfit for a file name.
func partFileName(fh *multipart.FileHeader) (string, error) {
	name := path.Base(strings.ReplaceAll(fh.Filename, `\`, "/"))
	if name == "" || name == "." || name == "/" || name == ".." || strings.HasPrefix(name, ".") || len(name) > 200 {
		return "", badRequest("files: part without a usable file name (%q)", fh.Filename)
	}
	for _, r := range name {
		if !(unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune(" ._-()+", r)) {
			return "", badRequest("files: file name %q has a character other than letters, digits, space and ._-()+", name)
		}
	}
	return name, nil
}

func readPart(fh *multipart.FileHeader) ([]byte, error) {
	if fh.Size > maxPartBytes {
		return nil, &Error{Status: http.StatusRequestEntityTooLarge, Code: CodeTooLarge,
			Message: fmt.Sprintf("files part %q is larger than %d bytes", fh.Filename, maxPartBytes)}
	}
	f, err := fh.Open()
	if err != nil {
		return nil, bodyError("read files part "+fh.Filename, err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, bodyError("read files part "+fh.Filename, err)
	}
	return data, nil
}

// customLayer resolves a §2.3 custom layer: the shapefile spec.Filename
// from the request's files, completed by the set uploaded before for field f
// (request files win), rasterized onto grid.
func (s *Server) customLayer(ctx context.Context, f archive.Field, spec zoning.LayerSpec, reqFiles map[string][]byte, grid geo.Grid) ([]float64, error) {
	if spec.IsRaster() {
		return s.rasterLayer(ctx, f, spec, reqFiles, grid)
	}
	files := map[string][]byte{}
	stored, err := s.core.Upload(ctx, f, spec.Filename)
	switch {
	case err == nil:
		for k, v := range stored.Files {
			files[k] = v
		}
	case !isNotFound(err):
		return nil, err
	}
	for k, v := range reqFiles {
		files[k] = v
	}
	parts, err := zoning.ShapefileParts(files, spec.Filename)
	if err != nil {
		return nil, badRequest("custom layer %s: %v (send its .shp, .shx, .dbf and .prj as files parts, or upload them first with /files/upload)", spec.Filename, err)
	}
	shapes, err := zoning.ReadShapefile(parts, zoning.ShapefileLimits{})
	if err != nil {
		return nil, badRequest("custom layer %s: %v", spec.Filename, err)
	}
	values, err := zoning.RasterizeAttribute(shapes, spec.Attribute, grid)
	if err != nil {
		return nil, badRequest("custom layer %s: %v", spec.Filename, err)
	}
	return values, nil
}

// rasterLayer resolves a §2.3 custom layer naming a GeoTIFF: the request's
// file of that name, else the raster uploaded before for field f, resampled
// onto grid (zoning.ResampleRaster).
func (s *Server) rasterLayer(ctx context.Context, f archive.Field, spec zoning.LayerSpec, reqFiles map[string][]byte, grid geo.Grid) ([]float64, error) {
	var data []byte
	for name, d := range reqFiles {
		if strings.EqualFold(name, spec.Filename) {
			data = d
		}
	}
	if data == nil {
		up, err := s.core.Upload(ctx, f, spec.Filename)
		if isNotFound(err) {
			return nil, badRequest("custom layer %s: no such raster (send it as a files part, or upload it first with /files/upload)", spec.Filename)
		}
		if err != nil {
			return nil, err
		}
		for _, d := range up.Files {
			data = d
		}
	}
	if _, err := checkRaster(spec.Filename, data); err != nil {
		return nil, err
	}
	tf, err := geotiff.Open(bytes.NewReader(data))
	if err != nil {
		return nil, badRequest("custom layer %s: %v", spec.Filename, err)
	}
	defer tf.Close()
	values, err := zoning.ResampleRaster(ctx, tf, grid, 0)
	if err != nil {
		return nil, badRequest("custom layer %s: %v", spec.Filename, err)
	}
	return values, nil
}

// handleVariableRateZones is §4.1 POST /v1/variable-rate-zones: zones from
// weighted crop_health and custom layers, optionally clipped to a parcel.
// The request's files are used, never stored.
func (s *Server) handleVariableRateZones(w http.ResponseWriter, r *http.Request, c *call) error {
	ctx := r.Context()
	p, err := ParseZonesParams(c.params.formValue)
	if err != nil {
		return zoneError(err)
	}
	for _, spec := range p.Layers {
		if spec.Type == zoning.CropHealth {
			if err := s.core.CheckIndex(c.user, spec.Index); err != nil {
				return err
			}
		}
	}
	reqFiles, err := requestFiles(r)
	if err != nil {
		return err
	}
	f, err := s.field(ctx, c, true)
	if err != nil {
		return err
	}
	region := f.Geometry
	if p.ParcelGeoJSON != nil {
		if region, err = zoning.ParseParcel(p.ParcelGeoJSON, f.Geometry); err != nil {
			return zoneError(err)
		}
	}
	sensor, _, err := c.params.str("sensor")
	if err != nil {
		return err
	}
	// Crop-health layers first: the first one's grid is the zones' grid.
	layers := make([]zoning.Layer, len(p.Layers))
	var grid geo.Grid
	var used []archive.LayerValues
	for i, spec := range p.Layers {
		if spec.Type != zoning.CropHealth {
			continue
		}
		if err := s.core.RegisteredIndex(c.user, f, spec.Index); err != nil {
			return err
		}
		lv, err := s.core.CropHealthLayerOf(ctx, f, spec, sensor)
		if err != nil {
			return err
		}
		if len(used) == 0 {
			grid = lv.Grid
		} else if lv.Grid != grid {
			return badRequest("layer %d: its images lie on another pixel grid than layer 0's: choose dates of one tile", i)
		}
		used = append(used, lv)
		layers[i] = zoning.Layer{Name: spec.Index, Type: zoning.CropHealth, Values: lv.Values, Weight: spec.Weight}
	}
	for i, spec := range p.Layers {
		if spec.Type != zoning.Custom {
			continue
		}
		values, err := s.customLayer(ctx, f, spec, reqFiles, grid)
		if err != nil {
			return err
		}
		layers[i] = zoning.Layer{Name: spec.Attribute, Type: zoning.Custom, Values: values, Weight: spec.Weight}
	}
	col, err := s.zones(ctx, grid, region, layers, p.Zones, p.MinAreaHa, p.Simplify, p.Prescription, p.DstEPSG)
	if err != nil {
		return err
	}
	return writeZones(w, col, p.Format, f.Name, safeFileName(f.Name)+"_zones", archive.ImageDates(used...))
}

// zones runs the library's one zone chain (zoning.Run) on region's pixels
// of grid: zones that tile region exactly, their quality, doses, reprojection.
func (s *Server) zones(ctx context.Context, grid geo.Grid, region orb.MultiPolygon, layers []zoning.Layer,
	n int, minAreaHa, simplify float64, rx zoning.Prescription, dstEPSG int) (*zoning.Collection, error) {
	col, err := zoning.Run(ctx, zoning.Request{Grid: grid, Outline: region, Layers: layers,
		Options:      zoning.Options{Zones: n, Seed: zoneSeed, MinAreaHa: minAreaHa, SimplifyTolerance: simplify},
		Prescription: rx, DstEPSG: dstEPSG})
	if err != nil {
		return nil, zoneError(err)
	}
	return col, nil
}

// writeZones answers col in format: the §2.4 collection as application/json
// (geojson), or a zip (shapefile, isoxml), with a Content-Disposition file
// name. date, when set, is sent as X-Image-Date.
func writeZones(w http.ResponseWriter, col *zoning.Collection, format zoning.Format, fieldName, base, date string) error {
	col.ImageDate = date
	var buf bytes.Buffer
	if err := format.Write(&buf, col, fieldName); err != nil {
		return zoneError(err)
	}
	ct := format.ContentType()
	if format == zoning.GeoJSON {
		// The §2.4 collection is answered as JSON, which every client of
		// the spec's service expects (it is also valid GeoJSON).
		ct = "application/json"
	}
	h := w.Header()
	h.Set("Content-Type", ct)
	h.Set("Content-Disposition", contentDisposition(base+format.Extension()))
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	if date != "" {
		h.Set("X-Image-Date", date)
	}
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(buf.Bytes())
	return err
}

// handlePrescriptionZones is §4.3 /prescription_maps/get_zones: zones of one
// index with n_fertilizer or seeding doses. n_fertilizer uses the image of
// date (the closest usable one) or the latest usable image; seeding uses the
// mean over the season's usable images (seasonRange).
func (s *Server) handlePrescriptionZones(w http.ResponseWriter, r *http.Request, c *call) error {
	ctx := r.Context()
	p, err := ParsePrescriptionParams(c.params.formValue)
	if err != nil {
		return zoneError(err)
	}
	if err := s.core.CheckIndex(c.user, p.Index); err != nil {
		return err
	}
	f, err := s.field(ctx, c, true)
	if err != nil {
		return err
	}
	if err := s.core.RegisteredIndex(c.user, f, p.Index); err != nil {
		return err
	}
	sensor, _, err := c.params.str("sensor")
	if err != nil {
		return err
	}
	lv, err := s.core.PrescriptionLayerOf(ctx, f, p.Index, p.Prescription.Type, p.Date, sensor)
	if err != nil {
		return err
	}
	layers := []zoning.Layer{{Name: p.Index, Type: zoning.CropHealth, Values: lv.Values, Weight: 1}}
	col, err := s.zones(ctx, lv.Grid, f.Geometry, layers, p.Zones, p.MinAreaHa, p.Simplify, p.Prescription, p.DstEPSG)
	if err != nil {
		return err
	}
	dates := archive.ImageDates(lv)
	base := safeFileName(f.Name) + "_" + string(p.Prescription.Type) + "_" + p.Index
	if len(lv.Dates) == 1 {
		base += "_" + strings.ReplaceAll(lv.Dates[0], "-", "")
	}
	return writeZones(w, col, p.Format, f.Name, base, dates)
}

// uploadJSON describes one stored upload: a shapefile set or a raster.
type uploadJSON struct {
	Filename   string   `json:"filename"`
	Kind       string   `json:"kind"` // shapefile or raster
	Files      []string `json:"files"`
	Records    int      `json:"records,omitempty"`
	Attributes []string `json:"attributes,omitempty"`
	EPSG       int      `json:"epsg,omitempty"`
	// Width and Height are a raster's size in cells, PixelSize its cell
	// size in CRS units, NoData its nodata value when it has one.
	Width      int      `json:"width,omitempty"`
	Height     int      `json:"height,omitempty"`
	PixelSize  float64  `json:"pixel_size,omitempty"`
	NoData     *float64 `json:"nodata,omitempty"`
	UploadedAt string   `json:"uploaded_at"`
}

// maxRasterCells bounds an uploaded raster's size (a 1 m map of 100 km²).
const maxRasterCells = 100_000_000

// rasterExts are the raster files /files/upload takes.
var rasterExts = []string{".tif", ".tiff"}

// checkRaster opens an uploaded GeoTIFF and describes it: single band, a CRS
// the CRS layer supports, a bounded size.
func checkRaster(name string, data []byte) (uploadJSON, error) {
	f, err := geotiff.Open(bytes.NewReader(data))
	if err != nil {
		return uploadJSON{}, badRequest("%s: not a readable GeoTIFF: %v", name, err)
	}
	defer f.Close()
	g := f.Grid()
	if g.Cols*g.Rows > maxRasterCells {
		return uploadJSON{}, badRequest("%s: %d×%d cells; at most %d (resample it coarser)", name, g.Cols, g.Rows, maxRasterCells)
	}
	if _, err := crs.New(g.EPSG, 4326); err != nil {
		return uploadJSON{}, badRequest("%s: %v", name, err)
	}
	j := uploadJSON{Filename: name, Kind: "raster", Files: []string{name}, EPSG: g.EPSG, Width: g.Cols, Height: g.Rows, PixelSize: g.DX}
	if nd, ok := f.NoData(); ok {
		j.NoData = &nd
	}
	return j, nil
}

type uploadsResponse struct {
	FieldName string       `json:"field_name"`
	Uploads   []uploadJSON `json:"uploads"`
}

// shapefileExts are the files of a shapefile set cropkit keeps.
var shapefileExts = []string{".shp", ".shx", ".dbf", ".prj", ".cpg"}

// handleFilesUpload stores shapefile sets for a field (multipart field_name
// and files parts), for later §4.1 custom layers. Every set is read and
// checked first; nothing is stored unless all are valid.
func (s *Server) handleFilesUpload(w http.ResponseWriter, r *http.Request, c *call) error {
	if r.MultipartForm == nil {
		return badRequest("send a multipart form with field_name and files parts (.shp, .shx, .dbf, .prj)")
	}
	files, err := requestFiles(r)
	if err != nil {
		return err
	}
	f, err := s.field(r.Context(), c, false)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return badRequest("missing files parts: send the .shp, .shx, .dbf and .prj of a shapefile")
	}
	var shps, rasters []string
	for name := range files {
		ext := strings.ToLower(path.Ext(name))
		switch {
		case slices.Contains(rasterExts, ext):
			rasters = append(rasters, name)
		case !slices.Contains(shapefileExts, ext):
			return badRequest("files: %q is neither part of a shapefile (%s) nor a GeoTIFF (.tif, .tiff)", name, strings.Join(shapefileExts, ", "))
		case ext == ".shp":
			shps = append(shps, name)
		}
	}
	if len(shps) == 0 && len(rasters) == 0 {
		return badRequest("files: no .shp nor .tif among %d files", len(files))
	}
	slices.Sort(shps)
	slices.Sort(rasters)
	now := time.Now().UTC().Truncate(time.Second)
	var sets []archive.Upload
	out := uploadsResponse{FieldName: f.Name, Uploads: []uploadJSON{}}
	used := map[string]bool{}
	for _, name := range rasters {
		j, err := checkRaster(name, files[name])
		if err != nil {
			return err
		}
		j.UploadedAt = now.Format(time.RFC3339)
		sets = append(sets, archive.Upload{Name: name, Files: map[string][]byte{name: files[name]}, Uploaded: now})
		out.Uploads = append(out.Uploads, j)
		used[name] = true
	}
	for _, shp := range shps {
		parts, err := zoning.ShapefileParts(files, shp)
		if err != nil {
			return badRequest("%s: %v", shp, err)
		}
		shapes, err := zoning.ReadShapefile(parts, zoning.ShapefileLimits{})
		if err != nil {
			return badRequest("%s: %v", shp, err)
		}
		set := archive.Upload{Name: shp, Files: map[string][]byte{}, Uploaded: now}
		base := strings.TrimSuffix(shp, path.Ext(shp))
		var names []string
		for name, data := range files {
			if strings.EqualFold(strings.TrimSuffix(name, path.Ext(name)), base) {
				set.Files[name] = data
				names = append(names, name)
				used[name] = true
			}
		}
		slices.Sort(names)
		sets = append(sets, set)
		out.Uploads = append(out.Uploads, uploadJSON{Filename: shp, Kind: "shapefile", Files: names, Records: len(shapes.Features),
			Attributes: shapes.Fields, EPSG: shapes.EPSG, UploadedAt: now.Format(time.RFC3339)})
	}
	for name := range files {
		if !used[name] {
			return badRequest("files: %q belongs to no .shp sent", name)
		}
	}
	for _, set := range sets {
		saved, err := s.core.SaveUpload(r.Context(), f, set)
		if errors.Is(err, archive.ErrFieldChanged) {
			return archive.FieldNotFound(f.Name) // deleted meanwhile
		} else if err != nil {
			return err
		}
		f = saved // reshaped meanwhile: the next sets go to the same outline

	}
	return writeJSON(w, http.StatusCreated, out)
}

// handleFilesUploads lists the shapefile sets stored for a field.
func (s *Server) handleFilesUploads(w http.ResponseWriter, r *http.Request, c *call) error {
	f, err := s.field(r.Context(), c, false)
	if err != nil {
		return err
	}
	sets, err := s.core.UploadSummaries(r.Context(), f) // names only: a raster is read below to describe it
	if err != nil {
		return err
	}
	out := uploadsResponse{FieldName: f.Name, Uploads: []uploadJSON{}}
	for _, set := range sets {
		names := make([]string, 0, len(set.Files))
		for n := range set.Files {
			names = append(names, n)
		}
		slices.Sort(names)
		j := uploadJSON{Filename: set.Name, Kind: "shapefile", Files: names, UploadedAt: set.Uploaded.UTC().Format(time.RFC3339)}
		if slices.Contains(rasterExts, strings.ToLower(path.Ext(set.Name))) {
			full, err := s.core.Upload(r.Context(), f, set.Name)
			if err != nil {
				return err
			}
			if j, err = checkRaster(set.Name, full.Files[set.Name]); err != nil {
				return fmt.Errorf("stored raster %s: %w", set.Name, err)
			}
			j.UploadedAt = set.Uploaded.UTC().Format(time.RFC3339)
		}
		out.Uploads = append(out.Uploads, j)
	}
	return writeJSON(w, http.StatusOK, out)
}

// handleConvertGeoJSON converts a GeoJSON FeatureCollection of polygons
// (the body, or the multipart part "file") to a zipped shapefile in
// EPSG:4326 (§4.6 "GeoJSON to shapefile"): a zone collection (every
// feature with a numeric ZONE) gets the zone columns, any other collection
// its features' own properties (zoning.WriteShapefileZip).
func (s *Server) handleConvertGeoJSON(w http.ResponseWriter, r *http.Request, c *call) error {
	var data []byte
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt == "multipart/form-data" {
		if err := r.ParseMultipartForm(maxConvertBody + 1); err != nil {
			return bodyError("read multipart form", err)
		}
		defer r.MultipartForm.RemoveAll()
		fhs := r.MultipartForm.File["file"]
		if len(fhs) != 1 {
			return badRequest("send the GeoJSON as one multipart part named file (got %d)", len(fhs))
		}
		d, err := readPart(fhs[0])
		if err != nil {
			return err
		}
		data = d
	} else {
		d, err := io.ReadAll(r.Body)
		if err != nil {
			return bodyError("read body", err)
		}
		data = d
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return badRequest("empty body: send a GeoJSON FeatureCollection of polygons")
	}
	release, err := s.heavySlot(r, c)
	if err != nil {
		return err
	}
	defer release()
	var buf bytes.Buffer
	if err := zoning.GeoJSONToShapefileZip(data, &buf); err != nil {
		return zoneError(err)
	}
	h := w.Header()
	h.Set("Content-Type", "application/zip")
	h.Set("Content-Disposition", contentDisposition("zones.zip"))
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(http.StatusOK)
	_, err = w.Write(buf.Bytes())
	return err
}
