package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/imagery"
	"github.com/cropkit/cropkit/imagery/geotiff"
)

type ingestRequest struct {
	Source string `json:"source"`
	Date   string `json:"date"`
}

// handleIngest ingests a scene named by source (JSON {"source": folder,
// STAC item path or URL, "date": optional}) or uploaded as a multipart form
// of band files (parts named B02…B12, B8A, SCL or CLM, or with such file
// names) and a date field.
func (s *Server) handleIngest(w http.ResponseWriter, r *http.Request, c *call) error {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var (
		src  string
		date string
	)
	if mt == "multipart/form-data" {
		dir, d, err := s.receiveScene(r)
		if dir != "" {
			defer os.RemoveAll(filepath.Dir(dir))
		}
		if err != nil {
			return err
		}
		src, date = dir, d
	} else {
		body, err := io.ReadAll(io.LimitReader(r.Body, s.maxBody+1))
		if err != nil {
			return bodyError("read body", err)
		}
		if int64(len(body)) > s.maxBody {
			return &Error{Status: http.StatusRequestEntityTooLarge, Code: CodeTooLarge, Message: fmt.Sprintf("request body larger than %d bytes", s.maxBody)}
		}
		var req ingestRequest
		if len(bytes.TrimSpace(body)) > 0 {
			if err := json.Unmarshal(body, &req); err != nil {
				return badRequest("request body must be a JSON object {\"source\": …}: %v", err)
			}
		}
		if v, ok, _ := c.params.str("source"); ok && req.Source == "" {
			req.Source = v
		}
		if v, ok, _ := c.params.str("date"); ok && req.Date == "" {
			req.Date = v
		}
		if strings.TrimSpace(req.Source) == "" {
			return badRequest("missing required parameter source (scene folder, STAC item path or URL)")
		}
		src, date = req.Source, req.Date
	}
	release, err := s.heavySlot(r, c)
	if err != nil {
		return err
	}
	defer release()
	opts := archive.IngestOptions{Untrusted: true}
	if date != "" {
		t, err := time.Parse(time.DateOnly, date)
		if err != nil {
			return badRequest("date must be YYYY-MM-DD, got %q", date)
		}
		opts.Date = t
	}
	res, err := s.core.Ingest(r.Context(), src, opts)
	if err != nil {
		if errors.Is(err, archive.ErrInvalid) {
			return err
		}
		if ctxErr := r.Context().Err(); ctxErr == nil && res.Failed > 0 && len(res.Failures) == res.Failed {
			// Some fields failed, the others are stored: report each
			// (the details are in the log and in failures).
			s.log.ErrorContext(r.Context(), "ingest: some fields failed", "scene", res.Scene, "failed", res.Failed, "err", err)
			return writeJSON(w, http.StatusOK, res)
		}
		return fmt.Errorf("ingest %s: %w", src, err)
	}
	return writeJSON(w, http.StatusOK, res)
}

// receiveScene writes the band parts of a multipart upload into a fresh
// temporary scene folder DATA/tmp/upload-*/upload and returns it with the
// date field (the folder is renamed after the date once it is known, so the
// scene's id reads upload-…/YYYY-MM-DD).
func (s *Server) receiveScene(r *http.Request) (dir, date string, err error) {
	mr, err := r.MultipartReader()
	if err != nil {
		return "", "", badRequest("read multipart upload: %v", err)
	}
	tmp := s.core.TempDir()
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return "", "", fmt.Errorf("upload folder: %w", err)
	}
	root, err := os.MkdirTemp(tmp, "upload-")
	if err != nil {
		return "", "", fmt.Errorf("upload folder: %w", err)
	}
	dir = filepath.Join(root, "upload")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return dir, "", fmt.Errorf("upload folder: %w", err)
	}
	bands := 0
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return dir, "", bodyError("read multipart upload", err)
		}
		name := part.FormName()
		if part.FileName() == "" {
			v, err := io.ReadAll(io.LimitReader(part, 1024))
			if err != nil {
				return dir, "", bodyError("read multipart upload", err)
			}
			if name == "date" {
				date = strings.TrimSpace(string(v))
			}
			continue
		}
		band, ok := imagery.BandName(name)
		if !ok {
			band, ok = imagery.BandName(part.FileName())
		}
		if !ok {
			return dir, "", badRequest("upload part %q (file %q) is not a band file B01…B12, B8A, SCL or CLM", name, part.FileName())
		}
		f, err := os.Create(filepath.Join(dir, band+".tif"))
		if err != nil {
			return dir, "", fmt.Errorf("store upload: %w", err)
		}
		_, err = io.Copy(f, part)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return dir, "", bodyError("store upload", err)
		}
		bands++
	}
	if bands == 0 {
		return dir, "", badRequest("upload holds no band file")
	}
	if date != "" {
		if _, err := time.Parse(time.DateOnly, date); err != nil {
			return dir, "", badRequest("date must be YYYY-MM-DD, got %q", date)
		}
	}
	filesDate, err := checkUploadedBands(dir)
	if err != nil {
		return dir, "", err
	}
	switch {
	case filesDate != "" && date != "" && filesDate != date:
		return dir, "", badRequest("parameter date (%s) contradicts the band files' acquisition date (%s): leave date out or send the files of %s", date, filesDate, date)
	case filesDate != "":
		date = filesDate
	}
	if _, err := time.Parse(time.DateOnly, date); err == nil {
		dated := filepath.Join(root, date)
		if err := os.Rename(dir, dated); err == nil {
			dir = dated
		}
	}
	return dir, date, nil
}

// checkUploadedBands checks that the band files of an uploaded scene are one
// scene: GeoTIFFs in one CRS covering one extent (bands of another
// resolution cover it with their own pixels; half a coarse pixel of slack),
// and, when they carry acquisition dates, the same date. It returns that
// date ("" when no file carries one). Mixed scenes used to be accepted and
// then failed field by field.
func checkUploadedBands(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("uploaded scene: %w", err)
	}
	var (
		refName, date, dateBand string
		ref                     geo.Grid
	)
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), filepath.Ext(e.Name()))
		f, err := geotiff.OpenFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return "", badRequest("band %s is not a readable GeoTIFF: %v", name, err)
		}
		g, md := f.Grid(), f.Metadata()
		f.Close()
		if g.EPSG == 0 {
			return "", badRequest("band %s has no EPSG code", name)
		}
		switch {
		case refName == "":
			refName, ref = name, g
		case g.EPSG != ref.EPSG:
			return "", badRequest("bands %s (EPSG:%d) and %s (EPSG:%d) are in different CRS: send the bands of one scene", refName, ref.EPSG, name, g.EPSG)
		case !sameExtent(ref, g):
			return "", badRequest("bands %s and %s cover different extents (%v, %v): send the bands of one scene", refName, name, ref.Bound(), g.Bound())
		}
		if d := acquisitionDate(md); d != "" {
			if date != "" && d != date {
				return "", badRequest("bands %s and %s are of different dates (%s, %s): send the bands of one scene", dateBand, name, date, d)
			}
			date, dateBand = d, name
		}
	}
	return date, nil
}

// sameExtent reports whether two grids cover one extent, within half the
// coarser pixel (a 20 m band rounds a 10 m extent to its own pixels).
func sameExtent(a, b geo.Grid) bool {
	ba, bb := a.Bound(), b.Bound()
	tol := max(a.DX, a.DY, b.DX, b.DY) / 2
	return math.Abs(ba.Min[0]-bb.Min[0]) <= tol && math.Abs(ba.Min[1]-bb.Min[1]) <= tol &&
		math.Abs(ba.Max[0]-bb.Max[0]) <= tol && math.Abs(ba.Max[1]-bb.Max[1]) <= tol
}

// acquisitionDate is the acquisition date (YYYY-MM-DD, UTC) in a band's GDAL
// metadata, "" without one. The keys are those imagery dates a scene by.
func acquisitionDate(md map[string]string) string {
	for _, key := range []string{"ACQUISITION_DATETIME_UTC", "ACQUISITION_DATETIME", "DATATAKE_1_DATATAKE_SENSING_START", "PRODUCT_START_TIME", "SENSING_TIME", "DATETIME"} {
		v := strings.TrimSpace(md[key])
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006:01:02 15:04:05", "2006-01-02 15:04:05", time.DateOnly} {
			if t, err := time.Parse(layout, v); err == nil {
				return t.UTC().Format(time.DateOnly)
			}
		}
	}
	return ""
}
