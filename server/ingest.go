package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cropkit/cropkit/api"
	"github.com/cropkit/cropkit/archive"
)

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
			return &Error{Status: http.StatusRequestEntityTooLarge, Code: api.CodeTooLarge, Message: fmt.Sprintf("request body larger than %d bytes", s.maxBody)}
		}
		var req api.IngestRequest
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
		band, ok := archive.UploadedBand(name, part.FileName())
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
	filesDate, err := archive.CheckUploadedScene(dir)
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
