package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"path"
	"strconv"
	"strings"
	"unicode"

	"github.com/cropkit/cropkit/api"
	"github.com/cropkit/cropkit/archive"
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
		return nil, &Error{Status: http.StatusRequestEntityTooLarge, Code: api.CodeTooLarge,
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

// handleVariableRateZones is §4.1 POST /v1/variable-rate-zones: zones from
// weighted crop_health and custom layers, optionally clipped to a parcel.
// The request's files are used, never stored.
func (s *Server) handleVariableRateZones(w http.ResponseWriter, r *http.Request, c *call) error {
	ctx := r.Context()
	p, err := archive.ParseZonesParams(c.params.formValue)
	if err != nil {
		return err
	}
	if err := s.core.CheckLayerIndices(c.user, p.Layers); err != nil {
		return err
	}
	reqFiles, err := requestFiles(r)
	if err != nil {
		return err
	}
	f, err := s.field(ctx, c, true)
	if err != nil {
		return err
	}
	m, err := s.core.VariableRateZones(ctx, c.user, f, p, reqFiles)
	if err != nil {
		return err
	}
	return writeZones(w, m)
}

// writeZones answers a zone map: the §2.4 collection as application/json
// (geojson), or a zip (shapefile, isoxml), with a Content-Disposition file
// name; its image dates, when known, as X-Image-Date.
func writeZones(w http.ResponseWriter, m archive.ZoneMap) error {
	var buf bytes.Buffer
	if err := m.Encode(&buf); err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", m.ContentType())
	h.Set("Content-Disposition", contentDisposition(m.FileName()))
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	if m.ImageDate != "" {
		h.Set("X-Image-Date", m.ImageDate)
	}
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(buf.Bytes())
	return err
}

// handlePrescriptionZones is §4.3 /prescription_maps/get_zones: zones of one
// index with n_fertilizer or seeding doses (archive.PrescriptionZones).
func (s *Server) handlePrescriptionZones(w http.ResponseWriter, r *http.Request, c *call) error {
	ctx := r.Context()
	p, err := archive.ParsePrescriptionParams(c.params.formValue)
	if err != nil {
		return err
	}
	if err := s.core.CheckIndex(c.user, p.Index); err != nil {
		return err
	}
	f, err := s.field(ctx, c, true)
	if err != nil {
		return err
	}
	m, err := s.core.PrescriptionZones(ctx, c.user, f, p)
	if err != nil {
		return err
	}
	return writeZones(w, m)
}

// handleFilesUpload stores shapefile sets and rasters for a field
// (multipart field_name and files parts), for later §4.1 custom layers
// (archive.SaveUploads).
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
	uploads, err := s.core.SaveUploads(r.Context(), f, files)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, api.Uploads{FieldName: f.Name, Uploads: uploads})
}

// handleFilesUploads lists the shapefile sets and rasters stored for a field.
func (s *Server) handleFilesUploads(w http.ResponseWriter, r *http.Request, c *call) error {
	f, err := s.field(r.Context(), c, false)
	if err != nil {
		return err
	}
	uploads, err := s.core.DescribeUploads(r.Context(), f)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.Uploads{FieldName: f.Name, Uploads: uploads})
}

// handleConvertGeoJSON converts a GeoJSON FeatureCollection of polygons
// (the body, or the multipart part "file") to a zipped shapefile in
// EPSG:4326 (§4.6 "GeoJSON to shapefile"): a zone collection (every
// feature with a numeric ZONE) gets the zone columns, any other collection
// its features' own properties (archive.GeoJSONToShapefile).
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
	if err := archive.GeoJSONToShapefile(data, &buf); err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "application/zip")
	h.Set("Content-Disposition", contentDisposition("zones.zip"))
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(http.StatusOK)
	_, err = w.Write(buf.Bytes())
	return err
}
