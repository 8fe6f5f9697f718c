package server

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// StoredShapefile is one shapefile set uploaded for a field (/files/upload):
// its .shp name and its files (.shp, .shx, .dbf, .prj, .cpg) by file name.
type StoredShapefile struct {
	Name     string // the .shp file name as uploaded, e.g. "soil.shp"
	Files    map[string][]byte
	Uploaded time.Time
}

// uploadsDir is DIR/products/<field-id>/uploads: a field's uploads live with
// its product files, so they go when the field is deleted or its outline
// changes (attribute data is tied to the outline it was uploaded for).
func (s *Store) uploadsDir(fieldID int64) string {
	return filepath.Join(s.fieldDir(fieldID), "uploads")
}

// uploadKey is the file name a shapefile set is stored under: its base name,
// lower-cased (a later upload of the same name replaces it).
func uploadKey(shpName string) string {
	base := strings.TrimSuffix(path.Base(shpName), path.Ext(shpName))
	return strings.ToLower(base) + ".zip"
}

// SaveShapefile stores a field's shapefile set atomically (one zip file
// written beside its final name, then renamed), replacing an earlier upload
// of the same name. The caller validates the files first.
func (s *Store) SaveShapefile(fieldID int64, sh StoredShapefile) error {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	names := make([]string, 0, len(sh.Files))
	for n := range sh.Files {
		names = append(names, n)
	}
	sort.Strings(names)
	mod := sh.Uploaded
	if mod.IsZero() {
		mod = time.Now()
	}
	for _, n := range names {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: n, Method: zip.Deflate, Modified: mod})
		if err != nil {
			return fmt.Errorf("store shapefile %s: %w", sh.Name, err)
		}
		if _, err := w.Write(sh.Files[n]); err != nil {
			return fmt.Errorf("store shapefile %s: %w", sh.Name, err)
		}
	}
	if err := zw.SetComment(sh.Name); err != nil {
		return fmt.Errorf("store shapefile %s: %w", sh.Name, err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("store shapefile %s: %w", sh.Name, err)
	}
	dir := s.uploadsDir(fieldID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("store shapefile %s: %w", sh.Name, err)
	}
	return writeFileAtomic(filepath.Join(dir, uploadKey(sh.Name)), buf.Bytes())
}

// Shapefile returns the stored set whose .shp is named shpName
// (case-insensitive), or ErrNotFound.
func (s *Store) Shapefile(fieldID int64, shpName string) (StoredShapefile, error) {
	return readStoredShapefile(filepath.Join(s.uploadsDir(fieldID), uploadKey(shpName)))
}

// Shapefiles lists a field's stored shapefile sets by name.
func (s *Store) Shapefiles(fieldID int64) ([]StoredShapefile, error) {
	entries, err := os.ReadDir(s.uploadsDir(fieldID))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list uploads of field %d: %w", fieldID, err)
	}
	var out []StoredShapefile
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") || !strings.HasSuffix(e.Name(), ".zip") {
			continue
		}
		sh, err := readStoredShapefile(filepath.Join(s.uploadsDir(fieldID), e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, sh)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func readStoredShapefile(p string) (StoredShapefile, error) {
	zr, err := zip.OpenReader(p)
	if errors.Is(err, fs.ErrNotExist) {
		return StoredShapefile{}, fmt.Errorf("upload %s: %w", filepath.Base(p), ErrNotFound)
	}
	if err != nil {
		return StoredShapefile{}, fmt.Errorf("read upload %s: %w", p, err)
	}
	defer zr.Close()
	sh := StoredShapefile{Name: zr.Comment, Files: map[string][]byte{}}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			return StoredShapefile{}, fmt.Errorf("read upload %s: %w", p, err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return StoredShapefile{}, fmt.Errorf("read upload %s: %w", p, err)
		}
		sh.Files[f.Name] = data
		if sh.Uploaded.IsZero() || f.Modified.After(sh.Uploaded) {
			sh.Uploaded = f.Modified
		}
	}
	return sh, nil
}
