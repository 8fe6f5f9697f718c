package server

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cropkit/cropkit/api"
	"github.com/cropkit/cropkit/archive"
)

// download kinds
const (
	kindPNG  = "png"
	kindJSON = "json"
	kindZip  = "zip"
)

// downloadKind resolves {file_type} and ext: either alone decides, both must
// agree (a 400 naming both otherwise: ext=png on /json was silently a PNG);
// neither means both files in a zip.
func downloadKind(fileType, ext string) (string, error) {
	var byExt string
	switch strings.ToLower(strings.TrimSpace(ext)) {
	case "png":
		byExt = kindPNG
	case "json":
		byExt = kindJSON
	case "":
	default:
		return "", badRequest("ext must be png or json, got %q", ext)
	}
	if byExt == "" {
		return fileKind(fileType)
	}
	if fileType == "" {
		return byExt, nil
	}
	byPath, err := fileKind(fileType)
	if err != nil {
		return "", err
	}
	if byPath != byExt {
		return "", badRequest("parameters file_type (%s, in the path) and ext (%s) disagree: give one", fileType, ext)
	}
	return byExt, nil
}

// fileKind is the kind the path's {file_type} names.
func fileKind(fileType string) (string, error) {
	switch strings.ToLower(fileType) {
	case "image", "png":
		return kindPNG, nil
	case "json":
		return kindJSON, nil
	case "":
		return kindZip, nil
	}
	return "", badRequest("file_type must be image or json, got %q", fileType)
}

// image resolves the caller's image of index for the field_name and date
// parameters.
func (s *Server) image(ctx context.Context, c *call, index string, withGeometry bool) (archive.Image, error) {
	date, _, err := c.params.date("date")
	if err != nil {
		return archive.Image{}, err
	}
	name, err := c.params.required("field_name")
	if err != nil {
		return archive.Image{}, err
	}
	sensor, _, err := c.params.str("sensor")
	if err != nil {
		return archive.Image{}, err
	}
	return s.core.Image(ctx, c.user, archive.ImageQuery{Field: name, Index: index, Date: date, Sensor: sensor, WithGeometry: withGeometry})
}

// fileBase is "<field>_<index>_<YYYYMMDD>" with characters unsafe in file names replaced.
func fileBase(field, index, date string) string {
	return archive.SafeFileName(field) + "_" + index + "_" + strings.ReplaceAll(date, "-", "")
}

// contentDisposition is an attachment header; a plain token file name is
// sent unquoted (RFC 6266 allows both, and SpaceSense's client reads the
// name as everything after the last '=').
func contentDisposition(name string) string {
	if mimeToken(name) {
		return "attachment; filename=" + name // as mime.FormatMediaType writes a token, without its map and sorting
	}
	if v := mime.FormatMediaType("attachment", map[string]string{"filename": name}); v != "" && !strings.Contains(v, `"`) {
		return v
	}
	return fmt.Sprintf("attachment; filename=%q", name)
}

// mimeToken tells whether s is an RFC 2045 token: printable ASCII without
// spaces and tspecials.
func mimeToken(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		if c := s[i]; c <= ' ' || c >= 0x7f || strings.IndexByte(`()<>@,;:\"/[]?=`, c) >= 0 {
			return false
		}
	}
	return true
}

// handleDownload serves §4.4 downloads. The service (index) is the path's
// {service}, else ndvi; /download/image and /download/json (and
// /files/get/…) are the file type with the service omitted.
func (s *Server) handleDownload(w http.ResponseWriter, r *http.Request, c *call) error {
	service, fileType := r.PathValue("service"), r.PathValue("file_type")
	if fileType == "" {
		switch strings.ToLower(service) {
		case "image", "json", "png":
			service, fileType = "", service
		}
	}
	if service == "" {
		service = "ndvi"
	}
	ext, _, err := c.params.str("ext")
	if err != nil {
		return err
	}
	kind, err := downloadKind(fileType, ext)
	if err != nil {
		return err
	}
	img, err := s.image(r.Context(), c, service, false)
	if err != nil {
		return err
	}
	base := fileBase(img.Field.Name, img.Index, img.Product.Date)
	var body []byte
	switch kind {
	case kindPNG:
		if body, err = s.core.PNG(r.Context(), img); err != nil {
			return err
		}
		w.Header().Set("Content-Type", "image/png")
		base += ".png"
	case kindJSON:
		if body, err = s.core.ReportJSON(r.Context(), img); err != nil {
			return err
		}
		w.Header().Set("Content-Type", "application/json")
		base += ".json"
	default:
		png, err := s.core.PNG(r.Context(), img)
		if err != nil {
			return err
		}
		doc, err := s.core.ReportJSON(r.Context(), img)
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		mod, _ := time.Parse(time.DateOnly, img.Product.Date)
		for _, e := range []struct {
			name string
			data []byte
		}{{base + ".png", png}, {base + ".json", doc}} {
			fw, err := zw.CreateHeader(&zip.FileHeader{Name: e.name, Method: zip.Deflate, Modified: mod})
			if err != nil {
				return fmt.Errorf("zip: %w", err)
			}
			if _, err := fw.Write(e.data); err != nil {
				return fmt.Errorf("zip: %w", err)
			}
		}
		if err := zw.Close(); err != nil {
			return fmt.Errorf("zip: %w", err)
		}
		body = buf.Bytes()
		w.Header().Set("Content-Type", "application/zip")
		base += ".zip"
	}
	return writeFile(w, body, base, img.Product.Date)
}

// writeFile answers a file download with its name and image date.
func writeFile(w http.ResponseWriter, body []byte, name, date string) error {
	h := w.Header()
	if date != "" {
		h.Set("X-Image-Date", date)
	}
	h.Set("Content-Disposition", contentDisposition(name))
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(body)
	return err
}

// dateRange reads start_date and end_date.
func dateRange(p params) (from, to string, err error) {
	if from, _, err = p.date("start_date"); err != nil {
		return "", "", err
	}
	if to, _, err = p.date("end_date"); err != nil {
		return "", "", err
	}
	if from != "" && to != "" && to < from {
		return "", "", badRequest("end_date %s is before start_date %s", to, from)
	}
	return from, to, nil
}

// handleFilesList lists, per index, the dates with a usable image.
func (s *Server) handleFilesList(w http.ResponseWriter, r *http.Request, c *call) error {
	index, hasIndex, err := c.params.str("index")
	if err != nil {
		return err
	}
	index = strings.ToLower(index)
	if hasIndex {
		if err := s.core.CheckIndex(c.user, index); err != nil {
			return err
		}
	}
	from, to, err := dateRange(c.params)
	if err != nil {
		return err
	}
	f, err := s.field(r.Context(), c, false)
	if err != nil {
		return err
	}
	sensor, _, err := c.params.str("sensor")
	if err != nil {
		return err
	}
	products, err := s.core.Products(r.Context(), f, archive.ProductQuery{Index: index, From: from, To: to, UsableOnly: true})
	if err != nil {
		return err
	}
	products, err = s.core.KeepSensor(products, sensor)
	if err != nil {
		return err
	}
	out := api.FileList{FieldName: f.Name, Indices: map[string][]api.FileEntry{}}
	for _, name := range f.Indices {
		if (hasIndex && name != index) || !c.user.May(name) {
			continue
		}
		out.Indices[name] = []api.FileEntry{}
	}
	ups, err := s.core.UploadSummaries(r.Context(), f)
	if err != nil {
		return err
	}
	out.Uploads = make([]api.UploadEntry, 0, len(ups))
	for _, u := range ups {
		out.Uploads = append(out.Uploads, api.UploadEntry{Filename: u.Name, Kind: u.Kind(), UploadedAt: u.Uploaded.UTC().Format(time.RFC3339)})
	}
	for _, p := range products {
		if _, ok := out.Indices[p.Index]; !ok {
			continue
		}
		out.Indices[p.Index] = append(out.Indices[p.Index], api.FileEntry{
			Date: p.Date, CloudCover: p.CloudCover, Mean: p.Mean, Num: p.Num, Scene: p.SceneID, Sensor: archive.ProductSensor(p),
		})
	}
	return writeJSON(w, http.StatusOK, out)
}

// handleValue answers the index value of the pixel holding (lat, lon).
func (s *Server) handleValue(w http.ResponseWriter, r *http.Request, c *call) error {
	index, err := c.params.required("index")
	if err != nil {
		return err
	}
	lat, okLat, err := c.params.float("lat")
	if err != nil {
		return err
	}
	lon, okLon, err := c.params.float("lon")
	if err != nil {
		return err
	}
	if !okLat || !okLon {
		return badRequest("missing required parameters lat and lon")
	}
	if lat < -90 || lat > 90 || lon < -180 || lon > 180 {
		return badRequest("lat must be within [-90, 90] and lon within [-180, 180]")
	}
	img, err := s.image(r.Context(), c, index, true)
	if err != nil {
		return err
	}
	v, err := s.core.Value(r.Context(), img, lon, lat)
	if err != nil {
		return err
	}
	w.Header().Set("X-Image-Date", img.Product.Date)
	return writeJSON(w, http.StatusOK, api.Value{FieldName: img.Field.Name, Index: img.Index, Date: img.Product.Date, Lat: lat, Lon: lon, Value: v})
}

// handleRaster serves the product's values as a float32 GeoTIFF in the
// scene's CRS, nodata (-9999) outside the field and where masked.
func (s *Server) handleRaster(w http.ResponseWriter, r *http.Request, c *call) error {
	index, err := c.params.required("index")
	if err != nil {
		return err
	}
	img, err := s.image(r.Context(), c, index, false)
	if err != nil {
		return err
	}
	body, err := s.core.Raster(r.Context(), img)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "image/tiff")
	return writeFile(w, body, fileBase(img.Field.Name, img.Index, img.Product.Date)+".tif", img.Product.Date)
}
