package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
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

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/geo/crs"
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
	case errors.Is(err, zoning.ErrInvalidParcel):
		return &Error{Status: http.StatusBadRequest, Code: CodeInvalidGeometry, Message: "parcel_geojson: " + err.Error()}
	case errors.Is(err, zoning.ErrTooFewPixels):
		return &Error{Status: http.StatusNotFound, Code: CodeNoImagery, Message: err.Error()}
	case errors.Is(err, zoning.ErrInvalidParam), errors.Is(err, zoning.ErrInvalidLayers),
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

func noImagery(format string, args ...any) *Error {
	return &Error{Status: http.StatusNotFound, Code: CodeNoImagery, Message: fmt.Sprintf(format, args...)}
}

// registeredIndex checks that the caller may use index (400 unknown, 403
// forbidden) and that field f is registered for it (400, naming it).
func (s *Server) registeredIndex(u User, f Field, index string) error {
	if err := s.checkIndex(u, index); err != nil {
		return err
	}
	if !slices.Contains(f.Indices, index) {
		return badRequest("field %q is not registered for index %q (registered: %s)", f.Name, index, strings.Join(f.Indices, ", "))
	}
	return nil
}

// usableImages lists field f's usable products of index between from and to
// (inclusive, "" = open), by date.
func (s *Server) usableImages(ctx context.Context, f Field, index, from, to string) ([]StoredProduct, error) {
	return s.store.Products(ctx, ProductQuery{FieldID: f.ID, Index: index, From: from, To: to, UsableOnly: true})
}

// layerValues are an index's values on a field's grid and the dates they come from.
type layerValues struct {
	grid   geo.Grid
	values []float64
	dates  []string
}

// meanValues reads the stored values of products (one field and index, on
// one grid) and averages them per pixel (zoning.MeanValues).
func (s *Server) meanValues(f Field, products []StoredProduct) (layerValues, error) {
	out := layerValues{grid: products[0].Grid}
	grids := make([][]float64, 0, len(products))
	for _, p := range products {
		if p.Grid != out.grid {
			return layerValues{}, badRequest("the %s images of field %q lie on different pixel grids (%s, %s): choose dates of one tile",
				p.Index, f.Name, products[0].Date, p.Date)
		}
		values, err := s.storedValues(imageRequest{field: f, index: p.Index, chosen: p})
		if err != nil {
			return layerValues{}, err
		}
		grids = append(grids, values)
		out.dates = append(out.dates, p.Date)
	}
	if len(grids) == 1 {
		out.values = grids[0]
		return out, nil
	}
	v, err := zoning.MeanValues(grids...)
	if err != nil {
		return layerValues{}, fmt.Errorf("mean of %d images: %w", len(grids), err)
	}
	out.values = v
	return out, nil
}

// storedValues are the chosen product's stored pixel values (NaN where
// null), row-major on its grid. The §2.5 document is scanned for its index
// array directly: decoding the whole document with encoding/json took more
// than half of a 10,000 ha zone request. A document the scan does not
// understand is decoded in full (storedReport).
func (s *Server) storedValues(q imageRequest) ([]float64, error) {
	doc, err := s.readProduct(q, "json")
	if err != nil {
		return nil, err
	}
	if v, ok := scanIndexValues(doc, q.index, q.chosen.Grid.Cols*q.chosen.Grid.Rows); ok {
		return v, nil
	}
	rep, err := s.storedReport(q)
	if err != nil {
		return nil, err
	}
	return rep.Values, nil
}

// scanIndexValues reads the 2-D array of key index ([[v, null, …], …]) of
// a §2.5 document as n values; ok is false on anything unexpected.
func scanIndexValues(doc []byte, index string, n int) (values []float64, ok bool) {
	key := append(strconv.AppendQuote(nil, index), ':')
	i := bytes.Index(doc, key)
	if i < 0 {
		return nil, false
	}
	p := i + len(key)
	out := make([]float64, 0, n)
	depth := 0
	for p < len(doc) {
		switch c := doc[p]; {
		case c == '[':
			depth++
			if depth > 2 {
				return nil, false
			}
			p++
		case c == ']':
			depth--
			p++
			if depth == 0 {
				return out, len(out) == n
			}
		case c == ',' || c == ' ' || c == '\n' || c == '\t' || c == '\r':
			p++
		case depth != 2:
			return nil, false
		case c == 'n':
			if !bytes.HasPrefix(doc[p:], []byte("null")) {
				return nil, false
			}
			out = append(out, math.NaN())
			p += 4
		default:
			end := p
			for end < len(doc) && doc[end] != ',' && doc[end] != ']' && doc[end] != ' ' {
				end++
			}
			v, err := strconv.ParseFloat(string(doc[p:end]), 64)
			if err != nil {
				return nil, false
			}
			out = append(out, v)
			p = end
		}
		if len(out) > n {
			return nil, false
		}
	}
	return nil, false
}

// cropHealthLayer resolves a §2.3 crop_health layer of field f: the usable
// image of Date (that date when usable, else the closest, as downloads do), or
// the mean over the usable images from StartDate to EndDate.
func (s *Server) cropHealthLayer(ctx context.Context, f Field, spec zoning.LayerSpec) (layerValues, error) {
	if spec.IsRange() {
		from, to := spec.StartDate.Format(DateLayout), spec.EndDate.Format(DateLayout)
		ps, err := s.usableImages(ctx, f, spec.Index, from, to)
		if err != nil {
			return layerValues{}, err
		}
		if len(ps) == 0 {
			return layerValues{}, noImagery("no usable %s image of field %q from %s to %s", spec.Index, f.Name, from, to)
		}
		return s.meanValues(f, ps)
	}
	ps, err := s.usableImages(ctx, f, spec.Index, "", "")
	if err != nil {
		return layerValues{}, err
	}
	if len(ps) == 0 {
		return layerValues{}, noImagery("no usable %s image of field %q (none ingested yet, or all cloudy)", spec.Index, f.Name)
	}
	i := closestDate(ps, spec.Date.Format(DateLayout))
	return s.meanValues(f, ps[i:i+1])
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
func (s *Server) customLayer(f Field, spec zoning.LayerSpec, reqFiles map[string][]byte, grid geo.Grid) ([]float64, error) {
	files := map[string][]byte{}
	stored, err := s.store.Shapefile(f.ID, spec.Filename)
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

// handleVariableRateZones is §4.1 POST /v1/variable-rate-zones: zones from
// weighted crop_health and custom layers, optionally clipped to a parcel.
// The request's files are used, never stored.
func (s *Server) handleVariableRateZones(w http.ResponseWriter, r *http.Request, c *call) error {
	ctx := r.Context()
	p, err := zoning.ParseZonesParams(c.params.formValue)
	if err != nil {
		return zoneError(err)
	}
	for _, spec := range p.Layers {
		if spec.Type == zoning.CropHealth {
			if err := s.checkIndex(c.user, spec.Index); err != nil {
				return err
			}
		}
	}
	reqFiles, err := requestFiles(r)
	if err != nil {
		return err
	}
	f, err := s.loadField(ctx, c, true)
	if err != nil {
		return err
	}
	region := f.Geometry
	if p.ParcelGeoJSON != nil {
		if region, err = zoning.ParseParcel(p.ParcelGeoJSON, f.Geometry); err != nil {
			return zoneError(err)
		}
	}
	// Crop-health layers first: the first one's grid is the zones' grid.
	layers := make([]zoning.Layer, len(p.Layers))
	var grid geo.Grid
	var dates []string
	for i, spec := range p.Layers {
		if spec.Type != zoning.CropHealth {
			continue
		}
		if err := s.registeredIndex(c.user, f, spec.Index); err != nil {
			return err
		}
		lv, err := s.cropHealthLayer(ctx, f, spec)
		if err != nil {
			return err
		}
		if len(dates) == 0 {
			grid = lv.grid
		} else if lv.grid != grid {
			return badRequest("layer %d: its images lie on another pixel grid than layer 0's: choose dates of one tile", i)
		}
		dates = append(dates, lv.dates...)
		layers[i] = zoning.Layer{Name: spec.Index, Type: zoning.CropHealth, Values: lv.values, Weight: spec.Weight}
	}
	for i, spec := range p.Layers {
		if spec.Type != zoning.Custom {
			continue
		}
		values, err := s.customLayer(f, spec, reqFiles, grid)
		if err != nil {
			return err
		}
		layers[i] = zoning.Layer{Name: spec.Attribute, Type: zoning.Custom, Values: values, Weight: spec.Weight}
	}
	col, err := s.zones(ctx, grid, region, layers, p.Zones, p.MinAreaHa, p.Simplify, p.Prescription, p.DstEPSG)
	if err != nil {
		return err
	}
	return writeZones(w, col, p.Format, f.Name, fileBaseName(f.Name)+"_zones", "")
}

// zones runs the library on region's pixels of grid: k-means zones,
// sieve, polygons, doses, reprojection.
func (s *Server) zones(ctx context.Context, grid geo.Grid, region orb.MultiPolygon, layers []zoning.Layer,
	n int, minAreaHa, simplify float64, rx zoning.Prescription, dstEPSG int) (*zoning.Collection, error) {
	mask, err := zoning.FieldMask(region, grid)
	if err != nil {
		return nil, zoneError(fmt.Errorf("field pixels: %w", err))
	}
	res, err := zoning.Compute(ctx, grid, mask, layers, zoning.Options{Zones: n, Seed: zoneSeed, MinAreaHa: minAreaHa, SimplifyTolerance: simplify})
	if err != nil {
		return nil, zoneError(err)
	}
	if err := rx.Apply(res); err != nil {
		return nil, zoneError(err)
	}
	col, err := res.Collection(dstEPSG)
	if err != nil {
		return nil, zoneError(err)
	}
	return col.WithPrescription(rx), nil
}

// fileBaseName is a field name made safe for a file name.
func fileBaseName(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.':
			return r
		}
		return '_'
	}, name)
}

// writeZones answers col in format: the §2.4 collection as application/json
// (geojson), or a zip (shapefile, isoxml), with a Content-Disposition file
// name. date, when set, is sent as X-Image-Date.
func writeZones(w http.ResponseWriter, col *zoning.Collection, format zoning.Format, fieldName, base, date string) error {
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
	h.Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", base+format.Extension()))
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
	p, err := zoning.ParsePrescriptionParams(c.params.formValue)
	if err != nil {
		return zoneError(err)
	}
	if err := s.checkIndex(c.user, p.Index); err != nil {
		return err
	}
	f, err := s.loadField(ctx, c, true)
	if err != nil {
		return err
	}
	if err := s.registeredIndex(c.user, f, p.Index); err != nil {
		return err
	}
	ps, err := s.usableImages(ctx, f, p.Index, "", "")
	if err != nil {
		return err
	}
	if len(ps) == 0 {
		return noImagery("no usable %s image of field %q (none ingested yet, or all cloudy)", p.Index, f.Name)
	}
	var chosen []StoredProduct
	date := ""
	switch p.Prescription.Type {
	case zoning.NFertilizer:
		want := ""
		if !p.Date.IsZero() {
			want = p.Date.Format(DateLayout)
		}
		i := closestDate(ps, want)
		chosen, date = ps[i:i+1], ps[i].Date
	default:
		from, to, err := s.seasonRange(ctx, f, ps[len(ps)-1].Date)
		if err != nil {
			return err
		}
		for _, pr := range ps {
			if pr.Date >= from && (to == "" || pr.Date <= to) {
				chosen = append(chosen, pr)
			}
		}
		if len(chosen) == 0 {
			return noImagery("no usable %s image of field %q in its season %s to %s", p.Index, f.Name, from, orOpen(to))
		}
	}
	lv, err := s.meanValues(f, chosen)
	if err != nil {
		return err
	}
	layers := []zoning.Layer{{Name: p.Index, Type: zoning.CropHealth, Values: lv.values, Weight: 1}}
	col, err := s.zones(ctx, lv.grid, f.Geometry, layers, p.Zones, p.MinAreaHa, p.Simplify, p.Prescription, p.DstEPSG)
	if err != nil {
		return err
	}
	base := fileBaseName(f.Name) + "_" + string(p.Prescription.Type) + "_" + p.Index
	if date != "" {
		base += "_" + strings.ReplaceAll(date, "-", "")
	}
	return writeZones(w, col, p.Format, f.Name, base, date)
}

func orOpen(date string) string {
	if date == "" {
		return "now"
	}
	return date
}

// seasonRange is the season a seeding prescription averages over: the
// field's metadata season of its latest usable image (the latest season
// starting on or before that image's date, from start_date to harvest_date,
// open-ended without a harvest date), else the 12 months up to the latest
// usable image. A season registered ahead (a cover crop after harvest, next
// year's crop) has no image yet, so the last season with imagery is used.
func (s *Server) seasonRange(ctx context.Context, f Field, latest string) (from, to string, err error) {
	stored, err := s.store.Seasons(ctx, f.ID)
	if err != nil {
		return "", "", err
	}
	seasons, err := decodeSeasons(stored)
	if err != nil {
		return "", "", err
	}
	for i := len(seasons) - 1; i >= 0; i-- {
		if seasons[i].StartDate <= latest {
			return seasons[i].StartDate, seasons[i].HarvestDate, nil
		}
	}
	end, err := time.Parse(DateLayout, latest)
	if err != nil {
		return "", "", fmt.Errorf("latest image date %q: %w", latest, err)
	}
	return end.AddDate(-1, 0, 1).Format(DateLayout), latest, nil
}

// uploadJSON describes one stored shapefile set.
type uploadJSON struct {
	Filename   string   `json:"filename"`
	Files      []string `json:"files"`
	Records    int      `json:"records,omitempty"`
	Attributes []string `json:"attributes,omitempty"`
	EPSG       int      `json:"epsg,omitempty"`
	UploadedAt string   `json:"uploaded_at"`
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
	f, err := s.loadField(r.Context(), c, false)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return badRequest("missing files parts: send the .shp, .shx, .dbf and .prj of a shapefile")
	}
	var shps []string
	for name := range files {
		ext := strings.ToLower(path.Ext(name))
		if !slices.Contains(shapefileExts, ext) {
			return badRequest("files: %q is not part of a shapefile (want %s)", name, strings.Join(shapefileExts, ", "))
		}
		if ext == ".shp" {
			shps = append(shps, name)
		}
	}
	if len(shps) == 0 {
		return badRequest("files: no .shp among %d files", len(files))
	}
	slices.Sort(shps)
	now := time.Now().UTC().Truncate(time.Second)
	var sets []StoredShapefile
	out := uploadsResponse{FieldName: f.Name, Uploads: []uploadJSON{}}
	used := map[string]bool{}
	for _, shp := range shps {
		parts, err := zoning.ShapefileParts(files, shp)
		if err != nil {
			return badRequest("%s: %v", shp, err)
		}
		shapes, err := zoning.ReadShapefile(parts, zoning.ShapefileLimits{})
		if err != nil {
			return badRequest("%s: %v", shp, err)
		}
		set := StoredShapefile{Name: shp, Files: map[string][]byte{}, Uploaded: now}
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
		out.Uploads = append(out.Uploads, uploadJSON{Filename: shp, Files: names, Records: len(shapes.Features),
			Attributes: shapes.Fields, EPSG: shapes.EPSG, UploadedAt: now.Format(time.RFC3339)})
	}
	for name := range files {
		if !used[name] {
			return badRequest("files: %q belongs to no .shp sent", name)
		}
	}
	for _, set := range sets {
		if err := s.store.SaveShapefile(f.ID, set); err != nil {
			return err
		}
	}
	// A delete racing the upload removed the field's directory before the
	// files were written: remove them again and answer as for a missing field.
	if ok, err := s.store.FieldExists(r.Context(), f.ID); err != nil {
		return err
	} else if !ok {
		if err := s.store.RemoveFieldFilesIfGone(r.Context(), f.ID); err != nil {
			return err
		}
		return fieldNotFound(f.Name)
	}
	return writeJSON(w, http.StatusCreated, out)
}

// handleFilesUploads lists the shapefile sets stored for a field.
func (s *Server) handleFilesUploads(w http.ResponseWriter, r *http.Request, c *call) error {
	f, err := s.loadField(r.Context(), c, false)
	if err != nil {
		return err
	}
	sets, err := s.store.Shapefiles(f.ID)
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
		out.Uploads = append(out.Uploads, uploadJSON{Filename: set.Name, Files: names, UploadedAt: set.Uploaded.UTC().Format(time.RFC3339)})
	}
	return writeJSON(w, http.StatusOK, out)
}

// handleConvertGeoJSON converts a GeoJSON FeatureCollection of polygons
// (the body, or the multipart part "file") to a zipped shapefile in
// EPSG:4326 (§4.6 "GeoJSON to shapefile").
func (s *Server) handleConvertGeoJSON(w http.ResponseWriter, r *http.Request, c *call) error {
	var data []byte
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt == "multipart/form-data" {
		if err := r.ParseMultipartForm(8 << 20); err != nil {
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
	var buf bytes.Buffer
	if err := zoning.GeoJSONToShapefileZip(data, &buf); err != nil {
		return zoneError(err)
	}
	h := w.Header()
	h.Set("Content-Type", "application/zip")
	h.Set("Content-Disposition", `attachment; filename="zones.zip"`)
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(buf.Bytes())
	return err
}
