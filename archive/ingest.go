package archive

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/paulmach/orb"
	"golang.org/x/sync/errgroup"

	"github.com/cropkit/cropkit/api"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/imagery"
	"github.com/cropkit/cropkit/internal/netguard"
	"github.com/cropkit/cropkit/stac"
	"github.com/cropkit/cropkit/webhook"
)

// IngestOptions tune one ingestion.
type IngestOptions struct {
	// Date dates a scene whose date is in neither its metadata nor its name.
	Date time.Time
	// Untrusted applies the remote-source policy (the HTTP API sets it): a
	// URL source and its assets are fetched through the SSRF guard (no
	// loopback, private, link-local or metadata address; with
	// Config.IngestAllowPrivate the source URL's own origin may be one, its
	// assets on other hosts may not; no redirects), and a STAC item fetched
	// by URL may only reference http(s) assets.
	Untrusted bool
	// Fields restricts the ingestion to these field ids (nil: every field
	// the scene covers).
	Fields []int64
	// Progress, when set, is called after each field with the counts so far.
	Progress func(done, total int)
	// Source is where the scene can be read again (IngestScene records it,
	// unless empty; Ingest sets it to its src). A temporary upload is not a
	// source.
	Source string
}

// IngestResult summarises the ingestion of one scene (the wire type).
type IngestResult = api.IngestResult

// FieldFailure is the failed ingestion of one field.
type FieldFailure = api.FieldFailure

// sceneFetchTimeout bounds one HTTP request of a remote scene.
const sceneFetchTimeout = 5 * time.Minute

// ReadOptions are the imagery options every scene this archive reads
// takes, whatever opens it (a folder, a STAC item, the catalogue watcher):
// the field pixel cap and the shared memory budget.
func (a *Archive) ReadOptions() imagery.SceneOptions {
	return imagery.SceneOptions{MaxFieldPixels: a.maxPixels, Budget: a.budget}
}

func isHTTPURL(s string) bool {
	l := strings.ToLower(s)
	return strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://")
}

// OpenScene opens src with this archive's read options: a scene folder or
// STAC item file as imagery.OpenScene does, or the URL of a remote STAC
// item through the catalogue client (package stac), so it is read as the
// watcher reads catalogue items: hrefs resolve against the URL, no local
// file is ever opened, one readable asset per band, Planetary Computer
// assets signed (every asset with Config.SignURL). Untrusted URLs go through
// the SSRF guard (Config.IngestAllowPrivate).
func (a *Archive) OpenScene(ctx context.Context, src string, opts IngestOptions) (*imagery.Scene, error) {
	so := a.ReadOptions()
	so.Date = opts.Date
	if !isHTTPURL(src) {
		return imagery.OpenScene(ctx, src, so)
	}
	c, err := a.sceneClient(src, opts.Untrusted)
	if err != nil {
		return nil, fmt.Errorf("scene %s: %w", src, err)
	}
	it, err := c.GetItem(ctx, src)
	if err != nil {
		return nil, fmt.Errorf("scene %s: %w", src, err)
	}
	return c.OpenScene(ctx, it, so)
}

// sceneClient is the catalogue client reading the remote item at src.
// Private-address permission is scoped to what the operator named: the
// item URL's origin (an operator's own command, or an untrusted caller's
// URL with Config.IngestAllowPrivate), the SignURL's origin, and
// Config.IngestAllowHosts. Other hosts the item points to (assets,
// redirects) stay guarded.
func (a *Archive) sceneClient(src string, untrusted bool) (*stac.Client, error) {
	guard := stac.NewGuard()
	named := []string{a.signURL}
	if !untrusted || a.allowPriv {
		named = append(named, src)
	}
	guard, err := guard.Allow(named...)
	if err != nil {
		return nil, err
	}
	if guard, err = guard.AllowHosts(a.allowHosts...); err != nil {
		return nil, err
	}
	c := stac.NewGuardedClient(guard, sceneFetchTimeout)
	if a.signURL != "" {
		// The operator named the token service: its origin may be private.
		tokens, err := netguard.New("token service").Allow(a.signURL)
		if err != nil {
			return nil, err
		}
		if err := c.UseTokenService(a.signURL, tokens.Client(sceneFetchTimeout)); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Ingest opens the scene at src (a scene folder, a STAC item path or URL)
// and ingests it (IngestScene).
func (a *Archive) Ingest(ctx context.Context, src string, opts IngestOptions) (IngestResult, error) {
	scene, err := a.OpenScene(ctx, src, opts)
	if err != nil {
		return IngestResult{}, Invalid("ingest: %v", err)
	}
	defer scene.Close()
	if opts.Source == "" && !isTempUpload(src, a.tempDir) {
		opts.Source = src
	}
	return a.IngestScene(ctx, scene, opts)
}

func isTempUpload(src, tempDir string) bool {
	rel, err := filepath.Rel(tempDir, src)
	return err == nil && !strings.HasPrefix(rel, "..")
}

// IngestScene computes and stores the products of every registered field
// intersecting scene, for each index the field is registered for.
// Re-ingesting a scene replaces its products (and notifies only products
// whose content changed). A field's failure does not stop the others: their
// errors are joined in the returned error, next to a result counting what
// was stored.
func (a *Archive) IngestScene(ctx context.Context, scene *imagery.Scene, opts IngestOptions) (IngestResult, error) {
	res := IngestResult{Scene: scene.ID(), Date: scene.Date().UTC().Format(time.DateOnly), Failures: []FieldFailure{}}
	footprint, err := geo.LonLatBound(scene.Grid())
	if err != nil {
		return res, Invalid("ingest %s: %v", scene.ID(), err)
	}
	// Padded so fields on the border are not missed (the exact test is the
	// library's ErrNoOverlap).
	fields, err := a.store.FieldsIntersecting(ctx, footprint.Pad(0.001))
	if err != nil {
		return res, err
	}
	if opts.Fields != nil {
		fields = slices.DeleteFunc(fields, func(f Field) bool { return !slices.Contains(opts.Fields, f.ID) })
	}
	res.Fields = len(fields)
	geoms := make([]orb.MultiPolygon, len(fields))
	for i, f := range fields {
		geoms[i] = f.Geometry
	}
	scene.PlanFields(geoms) // tiles decode only as deep as these fields reach
	if opts.Source != "" {
		err := a.store.RecordScene(ctx, SceneRecord{ID: scene.ID(), Source: opts.Source, Date: res.Date, Bound: footprint})
		if err != nil {
			return res, err
		}
	}
	sceneBands := scene.Bands()
	a.log.InfoContext(ctx, "ingest scene", "scene", res.Scene, "date", res.Date, "fields", len(fields))

	var (
		mu   sync.Mutex
		errs []error
		done int
	)
	g := new(errgroup.Group)
	g.SetLimit(a.workers)
	for _, f := range fields {
		// Stop starting fields once ctx ends (shutdown, client gone); the
		// fields in flight finish or fail as a whole.
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error {
			out, err := a.ingestFieldSafe(ctx, scene, sceneBands, f)
			mu.Lock()
			defer mu.Unlock()
			done++
			switch {
			case errors.Is(err, ErrFieldChanged):
				res.Skipped++
			case err != nil:
				res.Failed++
				res.Failures = append(res.Failures, FieldFailure{Owner: f.Owner, Field: f.Name, Error: err.Error()})
				errs = append(errs, fmt.Errorf("field %q of %s: %w", f.Name, f.Owner, err))
			default:
				res.Usable += out.usable
				res.Unusable += out.unusable
				res.Notified += out.notified
				if out.outside {
					res.Outside++
				}
			}
			if opts.Progress != nil {
				opts.Progress(done, len(fields))
			}
			if done%100 == 0 || done == len(fields) {
				a.log.InfoContext(ctx, "ingest progress", "scene", res.Scene, "fields_done", done, "fields", len(fields))
			}
			return nil
		})
	}
	g.Wait()
	if res.Notified > 0 {
		a.wakeDispatcher()
	}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("ingest %s: stopped after %d of %d fields: %w", res.Scene, done, len(fields), err)
	}
	return res, errors.Join(errs...)
}

type fieldOutcome struct {
	usable, unusable, notified int
	outside                    bool
}

// ingestFieldSafe is ingestField with a panic turned into that field's
// error (a worker goroutine's panic would otherwise end the process).
func (a *Archive) ingestFieldSafe(ctx context.Context, scene *imagery.Scene, sceneBands []string, f Field) (out fieldOutcome, err error) {
	defer func() {
		if v := recover(); v != nil {
			a.log.ErrorContext(ctx, "panic ingesting field", "field", f.Name, "owner", f.Owner,
				"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			out, err = fieldOutcome{}, fmt.Errorf("internal error: %v", v)
		}
	}()
	return a.ingestField(ctx, scene, sceneBands, f)
}

// ingestField stores the products of one field from scene: the bundle is
// written under a new name, the rows switched to it in one transaction with
// their notification, and the bundle they replace deleted after commit.
func (a *Archive) ingestField(ctx context.Context, scene *imagery.Scene, sceneBands []string, f Field) (fieldOutcome, error) {
	var out fieldOutcome
	var indices []string
	sensor := scene.Sensor()
	family := string(sensor.Family())
	for _, name := range f.Indices {
		if ix, ok := a.cat.Lookup(name); ok && ix.AppliesTo(sensor) && hasBands(sceneBands, ix.Bands) {
			indices = append(indices, name)
		}
	}
	if len(indices) == 0 {
		return out, nil
	}
	date := scene.Date().UTC().Format(time.DateOnly)
	products, err := scene.FieldProducts(ctx, f.Geometry, indices, a.cat)
	switch {
	case errors.Is(err, imagery.ErrNoOverlap):
		out.outside = true
		return out, nil
	case errors.Is(err, imagery.ErrNoClearPixels):
		products = nil
	case err != nil:
		return out, err
	}
	ingested := time.Now().UTC()
	byIndex := map[string]imagery.Product{}
	for _, p := range products {
		byIndex[p.Index] = p
	}
	stored := make([]Product, 0, len(indices))
	var keep []imagery.Product
	for _, name := range indices {
		sp := Product{FieldID: f.ID, Index: name, Date: date, Sensor: string(sensor), Family: family, SceneID: scene.ID(),
			CloudCover: 100, IngestedAt: ingested, AcquiredAt: scene.Date().UTC()}
		if p, ok := byIndex[name]; ok {
			st := p.Stats
			sp.CloudCover = st.CloudCover
			sp.Num, sp.FieldPixels = st.Num, st.FieldPixels
			sp.Mean, sp.Median, sp.Std = finite(st.Mean), finite(st.Median), finite(st.Std)
			sp.Min, sp.Max, sp.P25, sp.P75 = finite(st.Min), finite(st.Max), finite(st.P25), finite(st.P75)
			sp.Grid = p.Grid
			sp.Usable = st.FieldPixels > 0 && float64(st.Num) >= a.minClear*float64(st.FieldPixels)
			if sp.Usable {
				keep = append(keep, p)
			}
		}
		if sp.Usable {
			out.usable++
		} else {
			out.unusable++
		}
		stored = append(stored, sp)
	}
	key := ""
	if len(keep) > 0 {
		data, digests, err := a.bundle(date, keep)
		if err != nil {
			return out, err
		}
		if key, err = newBundleKey(f.ID, date); err != nil {
			return out, err
		}
		a.step("ingest:before-put")
		if err := a.blobs.Put(ctx, key, data); err != nil {
			return out, err
		}
		a.step("ingest:after-put")
		for i := range stored {
			if stored[i].Usable {
				stored[i].Bundle, stored[i].Digest = key, digests[stored[i].Index]
			}
		}
	}
	rr, err := a.store.RecordProducts(ctx, ProductRecord{Field: f, Date: date, Family: family, Products: stored,
		Notify: func(changed []Product, prev map[string]Product) webhook.Payload {
			return Notification(f, changed, prev)
		}})
	if err != nil {
		if key != "" {
			a.deleteBlobs(ctx, []string{key})
		}
		if errors.Is(err, ErrFieldChanged) {
			a.deleteFieldBlobsIfGone(ctx, f.ID)
		}
		return out, err
	}
	a.changed(ctx, false, true)
	a.step("ingest:after-commit")
	a.deleteBlobs(ctx, rr.Replaced)
	out.notified = rr.Notified
	if len(keep) > 0 {
		n, err := a.notifyEvents(ctx, f, date, keep)
		if err != nil {
			return out, err
		}
		out.notified += n
	}
	return out, nil
}

// deleteFieldBlobsIfGone removes the files of a deleted field that a
// writer racing the delete may have recreated.
func (a *Archive) deleteFieldBlobsIfGone(ctx context.Context, fieldID int64) {
	if _, err := a.store.FieldByID(ctx, fieldID); errors.Is(err, ErrNotFound) {
		a.deleteFieldBlobs(ctx, fieldID)
	}
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

// bundle is the zip of a field's usable products of one date: <index>.png
// and the §2.5 <index>.json (mean_variation set at download time from the
// stored means, so ingesting an older date later stays right), with each
// product's digest.
func (a *Archive) bundle(date string, products []imagery.Product) ([]byte, map[string]string, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	mod, _ := time.Parse(time.DateOnly, date)
	digests := map[string]string{}
	var img bytes.Buffer
	for _, p := range products {
		img.Reset()
		if err := a.render.PNG(&img, p); err != nil {
			return nil, nil, err
		}
		doc, err := a.render.Report(nil, p, nil)
		if err != nil {
			return nil, nil, err
		}
		sum := sha256.Sum256(doc)
		digests[p.Index] = hex.EncodeToString(sum[:16])
		for _, m := range []struct {
			name   string
			data   []byte
			method uint16
		}{{p.Index + ".png", img.Bytes(), zip.Store}, {p.Index + ".json", doc, zip.Deflate}} {
			w, err := zw.CreateHeader(&zip.FileHeader{Name: m.name, Method: m.method, Modified: mod})
			if err != nil {
				return nil, nil, fmt.Errorf("bundle %s: %w", m.name, err)
			}
			if _, err := w.Write(m.data); err != nil {
				return nil, nil, fmt.Errorf("bundle %s: %w", m.name, err)
			}
		}
	}
	if err := zw.Close(); err != nil {
		return nil, nil, fmt.Errorf("bundle: %w", err)
	}
	return buf.Bytes(), digests, nil
}
