package archive

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cropkit/cropkit/api"
	"github.com/cropkit/cropkit/geo/crs"
	"github.com/cropkit/cropkit/imagery"
	"github.com/cropkit/cropkit/imagery/geotiff"
	"github.com/cropkit/cropkit/zoning"
)

// Upload is one file set uploaded for a field (/files/upload): a shapefile
// (its .shp name and its .shp, .shx, .dbf, .prj, .cpg files) or a GeoTIFF
// raster (its .tif name and the file).
type Upload struct {
	Name     string // e.g. "soil.shp", as uploaded
	Files    map[string][]byte
	Uploaded time.Time
}

// Kind is "raster" for a GeoTIFF, else "shapefile".
func (u Upload) Kind() string {
	if slices.Contains(rasterExts, strings.ToLower(path.Ext(u.Name))) {
		return "raster"
	}
	return "shapefile"
}

// uploadKey is the blob an upload is stored under: its base name and kind
// (shapefile or raster), lower-cased (a later upload of the same name
// replaces it), under the field's current outline version (attribute data
// is tied to the outline it was uploaded for).
func uploadKey(f Field, name string) string {
	ext := strings.ToLower(path.Ext(name))
	base := strings.ToLower(strings.TrimSuffix(path.Base(name), path.Ext(name)))
	kind := "shp"
	if ext == ".tif" || ext == ".tiff" {
		kind = "tif"
	}
	return uploadsVersionPrefix(f.ID, f.Version) + base + "." + kind + ".zip"
}

// SaveUpload stores a field's upload (one zip blob, atomically), replacing
// an earlier upload of the same name, and returns the field as stored for
// (its outline version). The caller validates the files.
//
// An outline change racing the upload is not the caller's fault: the upload
// is then stored for the new outline, as if it had arrived just after the
// change (a few times; an outline that keeps changing is ErrConflict). A
// field deleted meanwhile gets nothing (ErrFieldChanged).
func (a *Archive) SaveUpload(ctx context.Context, f Field, up Upload) (Field, error) {
	data, err := zipUpload(up)
	if err != nil {
		return Field{}, err
	}
	l := a.outlineLock(f.ID)
	for range 4 {
		// Under the read lock no outline change of this process commits:
		// the version read first is still the field's after the Put.
		l.RLock()
		stored, done, err := a.saveUploadOnce(ctx, f.ID, up.Name, data)
		l.RUnlock()
		if err != nil || done {
			return stored, err
		}
	}
	return Field{}, errorf(ErrConflict, "field %q: its outline kept changing during the upload; send it again", f.Name)
}

// saveUploadOnce stores data for the field's current outline; done is false
// when the outline changed (in another process) between the write and the
// check, the write then removed.
func (a *Archive) saveUploadOnce(ctx context.Context, id int64, name string, data []byte) (stored Field, done bool, err error) {
	cur, err := a.store.FieldByID(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return Field{}, true, ErrFieldChanged
	}
	if err != nil {
		return Field{}, true, err
	}
	key := uploadKey(cur, name)
	if err := a.blobs.Put(ctx, key, data); err != nil {
		return Field{}, true, err
	}
	after, err := a.store.FieldByID(ctx, id)
	switch {
	case errors.Is(err, ErrNotFound):
		a.deleteBlobs(ctx, []string{key})
		return Field{}, true, ErrFieldChanged
	case err != nil:
		return Field{}, true, err
	case after.Version != cur.Version:
		a.deleteBlobs(ctx, []string{key})
		return Field{}, false, nil
	}
	return after, true, nil
}

// zipUpload is an upload's stored form: one zip of its files (by name),
// its name as the zip's comment.
func zipUpload(up Upload) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	names := make([]string, 0, len(up.Files))
	for n := range up.Files {
		names = append(names, n)
	}
	sort.Strings(names)
	mod := up.Uploaded
	if mod.IsZero() {
		mod = time.Now()
	}
	for _, n := range names {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: n, Method: zip.Deflate, Modified: mod})
		if err != nil {
			return nil, fmt.Errorf("store upload %s: %w", up.Name, err)
		}
		if _, err := w.Write(up.Files[n]); err != nil {
			return nil, fmt.Errorf("store upload %s: %w", up.Name, err)
		}
	}
	if err := zw.SetComment(up.Name); err != nil {
		return nil, fmt.Errorf("store upload %s: %w", up.Name, err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("store upload %s: %w", up.Name, err)
	}
	return buf.Bytes(), nil
}

// Upload returns field f's upload called name (case-insensitive), or ErrNotFound.
func (a *Archive) Upload(ctx context.Context, f Field, name string) (Upload, error) {
	data, err := a.blobs.Get(ctx, uploadKey(f, name))
	if errors.Is(err, ErrNotFound) {
		return Upload{}, NotFound("no upload %q for field %q", name, f.Name)
	}
	if err != nil {
		return Upload{}, err
	}
	return readUpload(bytes.NewReader(data), int64(len(data)), true)
}

// Uploads lists field f's uploads by name, with their files' contents.
func (a *Archive) Uploads(ctx context.Context, f Field) ([]Upload, error) {
	return a.uploads(ctx, f, true)
}

// UploadSummaries lists field f's uploads by name with their file names and
// times but no contents (only each zip's directory is read).
func (a *Archive) UploadSummaries(ctx context.Context, f Field) ([]Upload, error) {
	return a.uploads(ctx, f, false)
}

func (a *Archive) uploads(ctx context.Context, f Field, withData bool) ([]Upload, error) {
	var keys []string
	err := a.blobs.List(ctx, uploadsVersionPrefix(f.ID, f.Version), func(b BlobInfo) error {
		if !b.Temp && strings.HasSuffix(b.Key, ".zip") {
			keys = append(keys, b.Key)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := []Upload{}
	for _, k := range keys {
		ra, size, closer, err := a.openBlob(ctx, k)
		if errors.Is(err, ErrNotFound) {
			continue // replaced meanwhile
		}
		if err != nil {
			return nil, err
		}
		up, err := readUpload(ra, size, withData)
		closer.Close()
		if err != nil {
			return nil, fmt.Errorf("upload %s: %w", k, err)
		}
		out = append(out, up)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// readUpload reads a stored upload: its name, files and time, with the
// files' contents when withData (else nil contents).
func readUpload(ra io.ReaderAt, size int64, withData bool) (Upload, error) {
	zr, err := zip.NewReader(ra, size)
	if err != nil {
		return Upload{}, fmt.Errorf("read upload: %w", err)
	}
	up := Upload{Name: zr.Comment, Files: map[string][]byte{}}
	for _, f := range zr.File {
		up.Files[f.Name] = nil
		if withData {
			rc, err := f.Open()
			if err != nil {
				return Upload{}, fmt.Errorf("read upload: %w", err)
			}
			b, err := io.ReadAll(io.LimitReader(rc, 1<<30))
			rc.Close()
			if err != nil {
				return Upload{}, fmt.Errorf("read upload: %w", err)
			}
			up.Files[f.Name] = b
		}
		if up.Uploaded.IsZero() || f.Modified.After(up.Uploaded) {
			up.Uploaded = f.Modified
		}
	}
	return up, nil
}

// UploadedBand is the Sentinel-2 band a scene upload's file is for, named
// by its part name or else its file name (imagery.BandName).
func UploadedBand(partName, fileName string) (string, bool) {
	if band, ok := imagery.BandName(partName); ok {
		return band, true
	}
	return imagery.BandName(fileName)
}

// CheckUploadedScene checks that the band files received in dir are one
// scene (imagery.CheckBandFiles: ErrInvalid when not) and returns their
// acquisition date ("" when no file carries one).
func CheckUploadedScene(dir string) (string, error) {
	date, err := imagery.CheckBandFiles(dir)
	var be *imagery.BandFilesError
	if errors.As(err, &be) {
		return "", &Error{Kind: ErrInvalid, Msg: be.Msg, Cause: err}
	}
	return date, err
}

// maxRasterCells bounds an uploaded raster's size (a 1 m map of 100 km²).
const maxRasterCells = 100_000_000

// rasterExts are the raster files an upload may hold.
var rasterExts = []string{".tif", ".tiff"}

// shapefileExts are the files of a shapefile set cropkit keeps.
var shapefileExts = []string{".shp", ".shx", ".dbf", ".prj", ".cpg"}

// describeRaster opens an uploaded GeoTIFF and describes it: single band, a CRS
// the CRS layer supports, a bounded size.
func describeRaster(name string, data []byte) (api.Upload, error) {
	f, err := geotiff.Open(bytes.NewReader(data))
	if err != nil {
		return api.Upload{}, Invalid("%s: not a readable GeoTIFF: %v", name, err)
	}
	defer f.Close()
	g := f.Grid()
	if g.Cols*g.Rows > maxRasterCells {
		return api.Upload{}, Invalid("%s: %d×%d cells; at most %d (resample it coarser)", name, g.Cols, g.Rows, maxRasterCells)
	}
	if _, err := crs.New(g.EPSG, 4326); err != nil {
		return api.Upload{}, Invalid("%s: %v", name, err)
	}
	j := api.Upload{Filename: name, Kind: "raster", Files: []string{name}, EPSG: g.EPSG, Width: g.Cols, Height: g.Rows, PixelSize: g.DX}
	if nd, ok := f.NoData(); ok {
		j.NoData = &nd
	}
	return j, nil
}

// SaveUploads stores shapefile sets and GeoTIFFs for field f's later §4.1
// custom layers (files by base name). Every set is read and checked first;
// nothing is stored unless all are valid. It describes what it stored.
func (a *Archive) SaveUploads(ctx context.Context, f Field, files map[string][]byte) ([]api.Upload, error) {
	if len(files) == 0 {
		return nil, Invalid("missing files parts: send the .shp, .shx, .dbf and .prj of a shapefile")
	}
	var shps, rasters []string
	for name := range files {
		ext := strings.ToLower(path.Ext(name))
		switch {
		case slices.Contains(rasterExts, ext):
			rasters = append(rasters, name)
		case !slices.Contains(shapefileExts, ext):
			return nil, Invalid("files: %q is neither part of a shapefile (%s) nor a GeoTIFF (.tif, .tiff)", name, strings.Join(shapefileExts, ", "))
		case ext == ".shp":
			shps = append(shps, name)
		}
	}
	if len(shps) == 0 && len(rasters) == 0 {
		return nil, Invalid("files: no .shp nor .tif among %d files", len(files))
	}
	slices.Sort(shps)
	slices.Sort(rasters)
	now := time.Now().UTC().Truncate(time.Second)
	var sets []Upload
	out := []api.Upload{}
	used := map[string]bool{}
	for _, name := range rasters {
		j, err := describeRaster(name, files[name])
		if err != nil {
			return nil, err
		}
		j.UploadedAt = now
		sets = append(sets, Upload{Name: name, Files: map[string][]byte{name: files[name]}, Uploaded: now})
		out = append(out, j)
		used[name] = true
	}
	for _, shp := range shps {
		parts, err := zoning.ShapefileParts(files, shp)
		if err != nil {
			return nil, Invalid("%s: %v", shp, err)
		}
		shapes, err := zoning.ReadShapefile(parts, zoning.ShapefileLimits{})
		if err != nil {
			return nil, Invalid("%s: %v", shp, err)
		}
		set := Upload{Name: shp, Files: map[string][]byte{}, Uploaded: now}
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
		out = append(out, api.Upload{Filename: shp, Kind: "shapefile", Files: names, Records: len(shapes.Features),
			Attributes: shapes.Fields, EPSG: shapes.EPSG, UploadedAt: now})
	}
	for name := range files {
		if !used[name] {
			return nil, Invalid("files: %q belongs to no .shp sent", name)
		}
	}
	for _, set := range sets {
		saved, err := a.SaveUpload(ctx, f, set)
		if errors.Is(err, ErrFieldChanged) {
			return nil, FieldNotFound(f.Name) // deleted meanwhile
		} else if err != nil {
			return nil, err
		}
		f = saved // reshaped meanwhile: the next sets go to the same outline
	}
	return out, nil
}

// DescribeUploads lists the shapefile sets and rasters stored for field f.
func (a *Archive) DescribeUploads(ctx context.Context, f Field) ([]api.Upload, error) {
	sets, err := a.UploadSummaries(ctx, f) // names only: a raster is read below to describe it
	if err != nil {
		return nil, err
	}
	out := []api.Upload{}
	for _, set := range sets {
		names := make([]string, 0, len(set.Files))
		for n := range set.Files {
			names = append(names, n)
		}
		slices.Sort(names)
		j := api.Upload{Filename: set.Name, Kind: "shapefile", Files: names, UploadedAt: set.Uploaded.UTC().Truncate(time.Second)}
		if set.Kind() == "raster" {
			full, err := a.Upload(ctx, f, set.Name)
			if err != nil {
				return nil, err
			}
			if j, err = describeRaster(set.Name, full.Files[set.Name]); err != nil {
				return nil, fmt.Errorf("stored raster %s: %w", set.Name, err)
			}
			j.UploadedAt = set.Uploaded.UTC().Truncate(time.Second)
		}
		out = append(out, j)
	}
	return out, nil
}
