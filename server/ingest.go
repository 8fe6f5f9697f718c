package server

import (
	"archive/zip"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/paulmach/orb"

	"github.com/cropkit/cropkit/colormap"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/geo/crs"
	"github.com/cropkit/cropkit/imagery"
	"github.com/cropkit/cropkit/imagery/geotiff"
	"github.com/cropkit/cropkit/webhook"
)

// IngestOptions tune one ingestion.
type IngestOptions struct {
	// Date dates a scene whose date is in neither its metadata nor its name.
	Date time.Time
	// Untrusted applies the remote-source policy (the HTTP API sets it): a
	// URL source and its assets are fetched through the webhook SSRF guard
	// (no loopback, private, link-local or metadata address unless
	// Config.IngestAllowPrivate; no redirects), and a STAC item fetched by URL
	// may only reference http(s) assets (no file: or local paths).
	Untrusted bool
}

// sceneFetchTimeout bounds one HTTP request of an untrusted remote scene.
const sceneFetchTimeout = 5 * time.Minute

// sceneOptions are the imagery options of an ingestion of src.
func (s *Server) sceneOptions(src string, opts IngestOptions) imagery.SceneOptions {
	so := imagery.SceneOptions{Date: opts.Date}
	if !opts.Untrusted || !isHTTPURL(src) {
		return so
	}
	client := webhook.NewClient(s.ingestAllowPrivate, sceneFetchTimeout)
	so.HTTPClient = client
	so.Open = func(ctx context.Context, name string) (io.ReaderAt, error) {
		if !isHTTPURL(name) {
			return nil, fmt.Errorf("asset %q: a scene fetched by URL may only reference http(s) assets", name)
		}
		return geotiff.NewHTTPReaderAt(context.WithoutCancel(ctx), client, name)
	}
	return so
}

func isHTTPURL(s string) bool {
	l := strings.ToLower(s)
	return strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://")
}

// IngestResult summarises the ingestion of one scene.
type IngestResult struct {
	Scene string `json:"scene"`
	Date  string `json:"date"`
	// Fields is the number of fields whose box meets the scene footprint.
	Fields int `json:"fields"`
	// Outside counts those fields that, precisely, hold no pixel of the scene.
	Outside int `json:"outside"`
	// Usable counts stored products with enough clear pixels; Unusable the
	// others (recorded with their cloud cover, never served).
	Usable   int `json:"usable"`
	Unusable int `json:"unusable"`
	// Skipped counts fields deleted, or whose outline changed, while the
	// scene was processed: nothing is recorded for them.
	Skipped int `json:"skipped"`
	// Failed counts fields whose ingestion failed; Failures says why.
	Failed   int            `json:"failed"`
	Failures []FieldFailure `json:"failures"`
}

// FieldFailure is the failed ingestion of one field.
type FieldFailure struct {
	Owner string `json:"owner"`
	Field string `json:"field"`
	Error string `json:"error"`
}

// errFieldChanged is returned (and counted as skipped) when a field was
// deleted or its outline replaced while ingestion processed the old one.
var errFieldChanged = errors.New("field deleted or its outline changed during ingestion")

// rasterNoData marks pixels outside the field or masked in /rasters/get GeoTIFFs.
const rasterNoData = -9999

// Ingest computes and stores the products of every registered field
// intersecting the scene at src (a scene folder, a STAC item path or URL),
// for each index the field is registered for. Re-ingesting a scene replaces
// its products. A field's failure does not stop the others: their errors are
// joined in the returned error, next to a result counting what was stored.
func (s *Server) Ingest(ctx context.Context, src string, opts IngestOptions) (IngestResult, error) {
	scene, err := imagery.OpenScene(ctx, src, s.sceneOptions(src, opts))
	if err != nil {
		return IngestResult{}, &Error{Status: 400, Code: CodeBadRequest, Message: fmt.Sprintf("ingest: %v", err)}
	}
	defer scene.Close()
	res := IngestResult{Scene: scene.ID(), Date: scene.Date().UTC().Format(DateLayout)}
	footprint, err := lonLatFootprint(scene.Grid())
	if err != nil {
		return res, &Error{Status: 400, Code: CodeBadRequest, Message: fmt.Sprintf("ingest %s: %v", src, err)}
	}
	fields, err := s.store.FieldsIntersecting(ctx, footprint)
	if err != nil {
		return res, err
	}
	res.Fields = len(fields)
	sceneBands := scene.Bands()
	s.log.InfoContext(ctx, "ingest scene", "scene", res.Scene, "date", res.Date, "fields", len(fields))

	res.Failures = []FieldFailure{}
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, s.workers)
		done int
	)
	for _, f := range fields {
		// Stop starting fields once ctx ends (shutdown, client gone); the
		// fields in flight finish or fail as a whole (files are installed
		// with their rows, see recordProducts).
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			usable, unusable, outside, err := s.ingestFieldSafe(ctx, scene, sceneBands, f)
			mu.Lock()
			defer mu.Unlock()
			done++
			switch {
			case errors.Is(err, errFieldChanged):
				res.Skipped++
			case err != nil:
				res.Failed++
				res.Failures = append(res.Failures, FieldFailure{Owner: f.Owner, Field: f.Name, Error: err.Error()})
				errs = append(errs, fmt.Errorf("field %q of %s: %w", f.Name, f.Owner, err))
			default:
				res.Usable += usable
				res.Unusable += unusable
				if outside {
					res.Outside++
				}
			}
			if done%100 == 0 || done == len(fields) {
				s.log.InfoContext(ctx, "ingest progress", "scene", res.Scene, "fields_done", done, "fields", len(fields))
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("ingest %s: stopped after %d of %d fields: %w", res.Scene, done, len(fields), err)
	}
	return res, errors.Join(errs...)
}

// ingestFieldSafe is ingestField with a panic turned into that field's error
// (a worker goroutine's panic would otherwise end the process).
func (s *Server) ingestFieldSafe(ctx context.Context, scene *imagery.Scene, sceneBands []string, f Field) (usable, unusable int, outside bool, err error) {
	defer func() {
		if v := recover(); v != nil {
			s.log.ErrorContext(ctx, "panic ingesting field", "field", f.Name, "owner", f.Owner,
				"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			usable, unusable, outside, err = 0, 0, false, fmt.Errorf("internal error: %v", v)
		}
	}()
	return s.ingestField(ctx, scene, sceneBands, f)
}

// lonLatFootprint is the lon/lat box of a scene grid: its edges, sampled
// every 1/16 of their length, transformed to EPSG:4326 and padded by 0.001°
// so fields on the border are not missed (the exact test is the library's
// ErrNoOverlap).
func lonLatFootprint(g geo.Grid) (orb.Bound, error) {
	t, err := crs.New(g.EPSG, 4326)
	if err != nil {
		return orb.Bound{}, fmt.Errorf("scene footprint: %w", err)
	}
	b := g.Bound()
	out := orb.Bound{Min: orb.Point{math.Inf(1), math.Inf(1)}, Max: orb.Point{math.Inf(-1), math.Inf(-1)}}
	const steps = 16
	for i := 0; i <= steps; i++ {
		f := float64(i) / steps
		x := b.Min[0] + f*(b.Max[0]-b.Min[0])
		y := b.Min[1] + f*(b.Max[1]-b.Min[1])
		for _, p := range [4][2]float64{{x, b.Min[1]}, {x, b.Max[1]}, {b.Min[0], y}, {b.Max[0], y}} {
			lon, lat := t.Transform(p[0], p[1])
			out = out.Extend(orb.Point{lon, lat})
		}
	}
	if math.IsNaN(out.Min[0]) || math.IsInf(out.Min[0], 0) || math.IsNaN(out.Max[1]) {
		return orb.Bound{}, fmt.Errorf("scene footprint: grid %+v does not map to lon/lat", g)
	}
	return out.Pad(0.001), nil
}

// ingestField stores the products of one field from scene.
func (s *Server) ingestField(ctx context.Context, scene *imagery.Scene, sceneBands []string, f Field) (usable, unusable int, outside bool, err error) {
	var indices []string
	for _, name := range f.Indices {
		ix, ok := s.cat.Lookup(name)
		if !ok {
			continue
		}
		if hasBands(sceneBands, ix.Bands) {
			indices = append(indices, name)
		}
	}
	if len(indices) == 0 {
		return 0, 0, false, nil
	}
	date := scene.Date().UTC().Format(DateLayout)
	products, err := scene.FieldProducts(ctx, f.Geometry, indices, s.cat)
	switch {
	case errors.Is(err, imagery.ErrNoOverlap):
		return 0, 0, true, nil
	case errors.Is(err, imagery.ErrNoClearPixels):
		products = nil
	case err != nil:
		return 0, 0, false, err
	}
	ingested := time.Now().UTC()
	byIndex := map[string]imagery.Product{}
	for _, p := range products {
		byIndex[p.Index] = p
	}
	stored := make([]StoredProduct, 0, len(indices))
	var keep []imagery.Product
	for _, name := range indices {
		sp := StoredProduct{FieldID: f.ID, Index: name, Date: date, SceneID: scene.ID(), CloudCover: 100, IngestedAt: ingested, AcquiredAt: scene.Date().UTC()}
		p, ok := byIndex[name]
		if ok {
			st := p.Stats
			sp.CloudCover = st.CloudCover
			sp.Num, sp.FieldPixels = st.Num, st.FieldPixels
			sp.Mean, sp.Median, sp.Std = finite(st.Mean), finite(st.Median), finite(st.Std)
			sp.Min, sp.Max, sp.P25, sp.P75 = finite(st.Min), finite(st.Max), finite(st.P25), finite(st.P75)
			sp.Grid = p.Grid
			sp.Usable = st.FieldPixels > 0 && float64(st.Num) >= s.minClear*float64(st.FieldPixels)
		}
		if sp.Usable {
			keep = append(keep, p)
			usable++
		} else {
			unusable++
		}
		stored = append(stored, sp)
	}
	// The bundle is written beside its final name, then installed in the
	// rows' transaction: a row never points at a missing file, and a field
	// deleted or reshaped meanwhile gets neither.
	tmp, err := s.writeBundle(f.ID, date, keep)
	if tmp != "" {
		defer os.Remove(tmp) // when not installed
	}
	if err != nil {
		return 0, 0, false, err
	}
	if err := s.recordProducts(ctx, f, date, tmp, stored); err != nil {
		if errors.Is(err, errFieldChanged) {
			s.store.RemoveFieldFilesIfGone(context.WithoutCancel(ctx), f.ID)
		}
		return 0, 0, false, err
	}
	return usable, unusable, false, nil
}

func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

func hasBands(have, need []string) bool {
	for _, b := range need {
		if !slices.Contains(have, b) {
			return false
		}
	}
	return true
}

// recordProducts upserts a field's products of one scene, installs their
// bundle (the temporary file bundle, or removes the date's bundle when bundle
// is "") and emits the "products stored" event, in one transaction; it
// returns errFieldChanged, recording nothing, when the field is gone or its
// outline is no longer the one ingested.
func (s *Server) recordProducts(ctx context.Context, f Field, date, bundle string, stored []StoredProduct) error {
	tx, err := s.store.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("record products: %w", err)
	}
	defer tx.Rollback()
	var version int64
	err = tx.QueryRowContext(ctx, `SELECT geom_version FROM fields WHERE id = ?`, f.ID).Scan(&version)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && version != f.Version) {
		return errFieldChanged
	}
	if err != nil {
		return fmt.Errorf("record products: %w", err)
	}
	if err := upsertProductsTx(ctx, tx, stored); err != nil {
		return err
	}
	if err := s.productsStored(ctx, tx, f.Owner, f, stored); err != nil {
		return fmt.Errorf("products stored event: %w", err)
	}
	path := s.store.BundlePath(f.ID, date)
	if bundle != "" {
		if err := os.Rename(bundle, path); err != nil {
			return fmt.Errorf("install products: %w", err)
		}
	} else if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove stale products: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("record products: %w", err)
	}
	return nil
}

// writeBundle writes the PNG and the §2.5 JSON (mean_variation null: it is
// set at download time from the stored means) of a field's usable products
// of one date into a synced temporary file beside the date's bundle and
// returns its path ("" with no usable product); recordProducts installs it.
func (s *Server) writeBundle(fieldID int64, date string, products []imagery.Product) (string, error) {
	path := s.store.BundlePath(fieldID, date)
	if len(products) == 0 {
		return "", nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("product directory: %w", err)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	mod, _ := time.Parse(DateLayout, date)
	var img bytes.Buffer
	for _, p := range products {
		cm, err := s.colormapFor(p.Index)
		if err != nil {
			return "", err
		}
		img.Reset()
		if err := s.png.Encode(&img, p.Values, p.Grid.Cols, p.Grid.Rows, cm, colormap.PNGOptions{}); err != nil {
			return "", fmt.Errorf("render %s png: %w", p.Index, err)
		}
		report, err := imagery.NewReport(p, nil)
		if err != nil {
			return "", fmt.Errorf("%s report: %w", p.Index, err)
		}
		doc, err := json.Marshal(report)
		if err != nil {
			return "", fmt.Errorf("%s report: %w", p.Index, err)
		}
		for _, m := range []struct {
			name   string
			data   []byte
			method uint16
		}{{p.Index + ".png", img.Bytes(), zip.Store}, {p.Index + ".json", doc, zip.Deflate}} {
			w, err := zw.CreateHeader(&zip.FileHeader{Name: m.name, Method: m.method, Modified: mod})
			if err != nil {
				return "", fmt.Errorf("bundle %s: %w", m.name, err)
			}
			if _, err := w.Write(m.data); err != nil {
				return "", fmt.Errorf("bundle %s: %w", m.name, err)
			}
		}
	}
	if err := zw.Close(); err != nil {
		return "", fmt.Errorf("bundle: %w", err)
	}
	return writeTemp(path, buf.Bytes())
}

// colormapFor is the spec colormap of an index, or the default ramp over
// [−1, 1] for indices the spec does not list.
func (s *Server) colormapFor(index string) (colormap.Colormap, error) {
	if cm, ok := colormap.ForIndex(index); ok {
		return cm, nil
	}
	cm, err := colormap.Default(index, -1, 1)
	if err != nil {
		return colormap.Colormap{}, fmt.Errorf("colormap for %s: %w", index, err)
	}
	return cm, nil
}

// writeFileAtomic writes data to a temporary file beside path, syncs it and
// renames it over path: readers see the old file or the new one, never half.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := writeTemp(path, data)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// writeTemp writes data to a synced temporary file beside path (a dot file,
// ignored by listings) and returns its name.
func writeTemp(path string, data []byte) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return tmp, nil
}

// bandPart matches the band files of an uploaded scene.
var bandPart = regexp.MustCompile(`^(B0[1-9]|B1[0-2]|B8A|SCL|CLM)$`)

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
	opts := IngestOptions{Untrusted: true}
	if date != "" {
		t, err := time.Parse(DateLayout, date)
		if err != nil {
			return badRequest("date must be YYYY-MM-DD, got %q", date)
		}
		opts.Date = t
	}
	res, err := s.Ingest(r.Context(), src, opts)
	if err != nil {
		var apiErr *Error
		if errors.As(err, &apiErr) {
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
	tmp := filepath.Join(s.store.Dir(), "tmp")
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
		band := strings.ToUpper(name)
		if !bandPart.MatchString(band) {
			base := strings.ToUpper(filepath.Base(part.FileName()))
			band = strings.TrimSuffix(strings.TrimSuffix(base, ".TIF"), ".TIFF")
		}
		if !bandPart.MatchString(band) {
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
	if _, err := time.Parse(DateLayout, date); err == nil {
		dated := filepath.Join(root, date)
		if err := os.Rename(dir, dated); err == nil {
			dir = dated
		}
	}
	return dir, date, nil
}
