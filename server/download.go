package server

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/planar"

	"github.com/cropkit/cropkit/geo/crs"
	"github.com/cropkit/cropkit/imagery"
	"github.com/cropkit/cropkit/imagery/geotiff"
)

// download kinds
const (
	kindPNG  = "png"
	kindJSON = "json"
	kindZip  = "zip"
)

// downloadKind resolves {file_type} and ext: ext wins; neither means both files in a zip.
func downloadKind(fileType, ext string) (string, error) {
	switch strings.ToLower(ext) {
	case "png":
		return kindPNG, nil
	case "json":
		return kindJSON, nil
	case "":
	default:
		return "", badRequest("ext must be png or json, got %q", ext)
	}
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

// imageRequest is what downloads, values and rasters share: the caller's
// field, a permitted index it is registered for, and the chosen usable
// product (the asked date, else the closest, ties to the earlier; no date:
// the latest) with the one before it.
type imageRequest struct {
	field  Field
	index  string
	chosen StoredProduct
	prev   *StoredProduct
}

func (s *Server) resolveImage(ctx context.Context, c *call, index string, withGeometry bool) (imageRequest, error) {
	index = strings.ToLower(index)
	if err := s.checkIndex(c.user, index); err != nil {
		return imageRequest{}, err
	}
	date, _, err := c.params.date("date")
	if err != nil {
		return imageRequest{}, err
	}
	f, err := s.loadField(ctx, c, withGeometry)
	if err != nil {
		return imageRequest{}, err
	}
	if !slices.Contains(f.Indices, index) {
		return imageRequest{}, notFound("field %q is not registered for index %q", f.Name, index)
	}
	products, err := s.store.Products(ctx, ProductQuery{FieldID: f.ID, Index: index, UsableOnly: true})
	if err != nil {
		return imageRequest{}, err
	}
	if len(products) == 0 {
		return imageRequest{}, &Error{Status: http.StatusNotFound, Code: CodeNoImagery,
			Message: fmt.Sprintf("no usable %s image of field %q (none ingested yet, or all cloudy)", index, f.Name)}
	}
	i := closestDate(products, date)
	req := imageRequest{field: f, index: index, chosen: products[i]}
	if i > 0 {
		req.prev = &products[i-1]
	}
	return req, nil
}

// closestDate is the index in ps (sorted by date) of date, else of the
// closest date with ties to the earlier; the last when date is empty.
func closestDate(ps []StoredProduct, date string) int {
	if date == "" {
		return len(ps) - 1
	}
	want, _ := time.Parse(DateLayout, date)
	best, bestDist := 0, time.Duration(math.MaxInt64)
	for i, p := range ps {
		d, err := time.Parse(DateLayout, p.Date)
		if err != nil {
			continue
		}
		dist := d.Sub(want)
		if dist < 0 {
			dist = -dist
		}
		if dist < bestDist { // strict: on a tie the earlier date stays
			best, bestDist = i, dist
		}
	}
	return best
}

// meanVariation is the percent change of the chosen image's mean versus the
// previous usable image's, nil for the first image.
func (q imageRequest) meanVariation() *float64 {
	if q.prev == nil {
		return nil
	}
	mv := imagery.MeanVariation(q.chosen.Mean, q.prev.Mean)
	if math.IsNaN(mv) || math.IsInf(mv, 0) {
		return nil
	}
	return &mv
}

// reportJSON is the stored §2.5 document of the chosen product with its
// mean_variation set against the previous usable image (stored documents
// carry null there, so re-ingesting an older date later stays right).
func (s *Server) reportJSON(q imageRequest) ([]byte, error) {
	doc, err := s.readProduct(q, "json")
	if err != nil {
		return nil, err
	}
	mv := "null"
	if v := q.meanVariation(); v != nil {
		mv = strconv.FormatFloat(*v, 'g', -1, 64)
	}
	return setMeanVariation(doc, mv)
}

// setMeanVariation replaces the value of the one "mean_variation" key of a
// §2.5 document (values are numbers or null, so the key cannot occur elsewhere).
func setMeanVariation(doc []byte, value string) ([]byte, error) {
	const key = `"mean_variation":`
	i := bytes.LastIndex(doc, []byte(key))
	if i < 0 {
		return nil, errors.New("report has no mean_variation")
	}
	start := i + len(key)
	end := start + bytes.IndexAny(doc[start:], ",}")
	if end < start {
		return nil, errors.New("report mean_variation is not terminated")
	}
	out := make([]byte, 0, len(doc)+len(value))
	out = append(out, doc[:start]...)
	out = append(out, value...)
	return append(out, doc[end:]...), nil
}

// fileBase is "<field>_<index>_<YYYYMMDD>" with characters unsafe in file names replaced.
func fileBase(field, index, date string) string {
	clean := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.':
			return r
		}
		return '_'
	}, field)
	return clean + "_" + index + "_" + strings.ReplaceAll(date, "-", "")
}

func (s *Server) handleDownload(w http.ResponseWriter, r *http.Request, c *call) error {
	service := r.PathValue("service")
	if service == "" {
		service = "ndvi"
	}
	ext, _, err := c.params.str("ext")
	if err != nil {
		return err
	}
	kind, err := downloadKind(r.PathValue("file_type"), ext)
	if err != nil {
		return err
	}
	q, err := s.resolveImage(r.Context(), c, service, false)
	if err != nil {
		return err
	}
	base := fileBase(q.field.Name, q.index, q.chosen.Date)
	var body []byte
	switch kind {
	case kindPNG:
		body, err = s.readProduct(q, "png")
		if err != nil {
			return err
		}
		w.Header().Set("Content-Type", "image/png")
		base += ".png"
	case kindJSON:
		body, err = s.reportJSON(q)
		if err != nil {
			return err
		}
		w.Header().Set("Content-Type", "application/json")
		base += ".json"
	default:
		png, err := s.readProduct(q, "png")
		if err != nil {
			return err
		}
		doc, err := s.reportJSON(q)
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		mod, _ := time.Parse(DateLayout, q.chosen.Date)
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
	w.Header().Set("X-Image-Date", q.chosen.Date)
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", base))
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, err = w.Write(body)
	return err
}

type fileEntry struct {
	Date       string  `json:"date"`
	CloudCover float64 `json:"cloud_cover"`
	Mean       float64 `json:"mean"`
	Num        int     `json:"num"`
	Scene      string  `json:"scene"`
}

type filesListResponse struct {
	FieldName string                 `json:"field_name"`
	Indices   map[string][]fileEntry `json:"indices"`
}

// handleFilesList lists, per index, the dates with a usable image.
func (s *Server) handleFilesList(w http.ResponseWriter, r *http.Request, c *call) error {
	index, hasIndex, err := c.params.str("index")
	if err != nil {
		return err
	}
	index = strings.ToLower(index)
	if hasIndex {
		if err := s.checkIndex(c.user, index); err != nil {
			return err
		}
	}
	from, _, err := c.params.date("start_date")
	if err != nil {
		return err
	}
	to, _, err := c.params.date("end_date")
	if err != nil {
		return err
	}
	if from != "" && to != "" && to < from {
		return badRequest("end_date %s is before start_date %s", to, from)
	}
	f, err := s.loadField(r.Context(), c, false)
	if err != nil {
		return err
	}
	products, err := s.store.Products(r.Context(), ProductQuery{FieldID: f.ID, Index: index, From: from, To: to, UsableOnly: true})
	if err != nil {
		return err
	}
	out := filesListResponse{FieldName: f.Name, Indices: map[string][]fileEntry{}}
	for _, name := range f.Indices {
		if (hasIndex && name != index) || !c.user.May(name) {
			continue
		}
		out.Indices[name] = []fileEntry{}
	}
	for _, p := range products {
		if _, ok := out.Indices[p.Index]; !ok {
			continue
		}
		out.Indices[p.Index] = append(out.Indices[p.Index], fileEntry{
			Date: p.Date, CloudCover: p.CloudCover, Mean: p.Mean, Num: p.Num, Scene: p.SceneID,
		})
	}
	return writeJSON(w, http.StatusOK, out)
}

type valueResponse struct {
	FieldName string  `json:"field_name"`
	Index     string  `json:"index"`
	Date      string  `json:"date"`
	Lat       float64 `json:"lat"`
	Lon       float64 `json:"lon"`
	Value     float64 `json:"value"`
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
	q, err := s.resolveImage(r.Context(), c, index, true)
	if err != nil {
		return err
	}
	if !planar.MultiPolygonContains(q.field.Geometry, orb.Point{lon, lat}) {
		return badRequest("location (%g, %g) is outside field %q", lat, lon, q.field.Name)
	}
	v, ok, err := s.pixelValue(r.Context(), q, lon, lat)
	if err != nil {
		return err
	}
	if !ok {
		return &Error{Status: http.StatusNotFound, Code: CodeNoImagery,
			Message: fmt.Sprintf("no %s value at (%g, %g) on %s: the pixel is masked or its centre is outside the field", q.index, lat, lon, q.chosen.Date)}
	}
	w.Header().Set("X-Image-Date", q.chosen.Date)
	return writeJSON(w, http.StatusOK, valueResponse{FieldName: q.field.Name, Index: q.index, Date: q.chosen.Date, Lat: lat, Lon: lon, Value: v})
}

// storedReport decodes the chosen product's §2.5 document (values as stored, float64).
func (s *Server) storedReport(q imageRequest) (imagery.Report, error) {
	doc, err := s.readProduct(q, "json")
	if err != nil {
		return imagery.Report{}, err
	}
	var rep imagery.Report
	if err := json.Unmarshal(doc, &rep); err != nil {
		return imagery.Report{}, fmt.Errorf("stored report of field %d %s %s: %w", q.field.ID, q.index, q.chosen.Date, err)
	}
	if len(rep.Values) != q.chosen.Grid.Cols*q.chosen.Grid.Rows {
		return imagery.Report{}, fmt.Errorf("stored report of field %d %s %s: %d values for grid %dx%d",
			q.field.ID, q.index, q.chosen.Date, len(rep.Values), q.chosen.Grid.Cols, q.chosen.Grid.Rows)
	}
	return rep, nil
}

// pixelValue is the stored value of the product pixel holding lon/lat.
func (s *Server) pixelValue(ctx context.Context, q imageRequest, lon, lat float64) (float64, bool, error) {
	g := q.chosen.Grid
	t, err := crs.New(4326, g.EPSG)
	if err != nil {
		return 0, false, fmt.Errorf("value: %w", err)
	}
	x, y := t.Transform(lon, lat)
	col, row := g.Pixel(orb.Point{x, y})
	if col < 0 || row < 0 || col >= g.Cols || row >= g.Rows {
		return 0, false, nil
	}
	rep, err := s.storedReport(q)
	if err != nil {
		return 0, false, err
	}
	v := rep.Values[row*g.Cols+col]
	if math.IsNaN(v) {
		return 0, false, nil
	}
	return v, true, nil
}

// handleRaster serves the product's values as a float32 GeoTIFF in the
// scene's CRS, nodata (-9999) outside the field and where masked.
func (s *Server) handleRaster(w http.ResponseWriter, r *http.Request, c *call) error {
	index, err := c.params.required("index")
	if err != nil {
		return err
	}
	q, err := s.resolveImage(r.Context(), c, index, false)
	if err != nil {
		return err
	}
	rep, err := s.storedReport(q)
	if err != nil {
		return err
	}
	f32 := make([]float32, len(rep.Values))
	for i, v := range rep.Values {
		if math.IsNaN(v) {
			f32[i] = rasterNoData
		} else {
			f32[i] = float32(v)
		}
	}
	var buf bytes.Buffer
	// Strips, not 256² tiles: field windows are small, and padding them to
	// whole tiles would cost more than the data.
	rs := &geotiff.Raster{Window: q.chosen.Grid.Full(), Type: geotiff.Float32, F32: f32}
	if err := geotiff.Write(&buf, q.chosen.Grid, rs, geotiff.WriteOptions{Stripped: true, Predictor: 3, HasNoData: true, NoData: rasterNoData}); err != nil {
		return fmt.Errorf("raster: %w", err)
	}
	w.Header().Set("Content-Type", "image/tiff")
	w.Header().Set("X-Image-Date", q.chosen.Date)
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", fileBase(q.field.Name, q.index, q.chosen.Date)+".tif"))
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(http.StatusOK)
	_, err = w.Write(buf.Bytes())
	return err
}

// readProduct reads the chosen product's png or json from its date's bundle.
func (s *Server) readProduct(q imageRequest, ext string) ([]byte, error) {
	path := s.store.BundlePath(q.field.ID, q.chosen.Date)
	zr, err := zip.OpenReader(path)
	if err != nil {
		return nil, fmt.Errorf("read products: %w", err)
	}
	defer zr.Close()
	name := q.index + "." + ext
	f, err := zr.Open(name)
	if err != nil {
		return nil, fmt.Errorf("read %s of %s: %w", name, path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read %s of %s: %w", name, path, err)
	}
	return data, nil
}
