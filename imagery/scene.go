package imagery

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/imagery/geotiff"
)

// DefaultMaskClasses are the Sen2Cor scene classes masked by default:
// 0 no data, 1 saturated or defective, 3 cloud shadow, 8 cloud medium
// probability, 9 cloud high probability, 10 thin cirrus, 11 snow or ice.
func DefaultMaskClasses() []int { return []int{0, 1, 3, 8, 9, 10, 11} }

// StrictMaskClasses mask every Sen2Cor class but 4 (vegetation) and 5 (not
// vegetated): also 2 (dark area), 6 (water) and 7 (unclassified), which on a
// field are mostly cloud edges, haze and shadows Sen2Cor could not name.
// It is the "clear" of the shared data's README and of time series, where
// one contaminated date pulls the estimate of the days around it.
func StrictMaskClasses() []int { return []int{0, 1, 2, 3, 6, 7, 8, 9, 10, 11} }

// DefaultCacheBytes bounds a scene's cache of decoded tiles when
// SceneOptions.CacheBytes is 0.
const DefaultCacheBytes = 128 << 20

// SceneOptions tune OpenScene. The zero value is ready to use.
type SceneOptions struct {
	// MaskClasses are the SCL classes masked; nil means DefaultMaskClasses.
	// A scene without SCL is masked where its CLM band is 1.
	MaskClasses []int
	// Date dates the scene when neither its metadata nor its folder name does.
	Date time.Time
	// HTTPClient fetches STAC items and assets over http(s); nil means http.DefaultClient.
	HTTPClient *http.Client
	// Open opens a band file or asset, a path or an http(s) URL; nil means
	// os.Open for paths and HTTP Range requests (through HTTPClient) for URLs.
	// When the returned reader is an io.Closer, Scene.Close closes it.
	Open func(ctx context.Context, name string) (io.ReaderAt, error)
	// CacheBytes bounds the decoded tiles kept for reuse across fields of the
	// same scene: 0 means DefaultCacheBytes, negative disables the cache.
	CacheBytes int64
	// MaxFieldPixels caps the pixels of one field window, counted in the
	// scene's pixels and in those of every band read (a band finer than the
	// scene counts more): a read over it fails with a *BudgetError before
	// allocating. 0 means DefaultMaxFieldPixels, negative no cap.
	MaxFieldPixels int64
	// Budget bounds the memory of concurrent field reads: each reserves
	// its estimated peak for its duration. Share one between scenes to bound
	// a process or an ingestion; nil gives the scene its own of
	// DefaultBudgetBytes.
	Budget *Budget
}

// Scene is one Sentinel-2 acquisition: its bands, mask and date. A Scene is
// safe for concurrent use by multiple goroutines.
type Scene struct {
	id       string
	date     time.Time
	grid     geo.Grid
	bands    map[string]*band // reflectance bands by name (B02, B8A, …)
	mask     *band            // SCL or CLM, nil when the scene has neither
	maskKind qaKind           // how the mask's values read
	maskedAs [256]bool        // mask value → masked
	sensor   Sensor
	cache    *tileCache
	floats   floatPool // the temporary arrays of field reads
	maxPix   int64     // per field window, ≤ 0 for none
	budget   *Budget   // never nil
	client   *http.Client
	openFn   func(ctx context.Context, name string) (io.ReaderAt, error)
	// remote: the scene came from a network item, whose bands are only ever
	// read over http(s), never from this machine's files.
	remote bool
	// unreadable are the bands the item names but no asset of which can be
	// read, with the reason (JPEG 2000 only…).
	unreadable map[string]*AssetError
}

// band is one raster of a scene, opened on first use.
type band struct {
	name string
	src  string // path or URL
	// scale and add give reflectance = (DN + add) · scale.
	scale, add float64
	// explicitScale: scale/add came from the source (STAC raster:bands), not from the file's metadata.
	explicitScale bool
	// baseline rule inputs from a STAC item (empty for folders: the file's metadata decides).
	baseline   string
	harmonized bool
	// epsg is the item's proj:code/proj:epsg, used only when the file has no EPSG code.
	epsg int
	// landsat: an OLI band served under a Sentinel-2 name: Collection 2
	// scaling (Collection 1 when landsatC1) unless explicitScale, then the
	// inverse HLS bandpass adjustment hls.
	landsat, landsatC1 bool
	hls                hlsAdjust
	// decibel: the band's values (after scaling) are dB, read as linear power 10^(v/10).
	// Set for radar bands from VALUE_UNIT unless explicitScale.
	decibel bool

	once   sync.Once
	err    error
	file   *geotiff.File
	closer io.Closer
	grid   geo.Grid
	nodata float64
	hasND  bool
}

// OpenScene opens a scene from src: a folder holding <BAND>.tif files (B02…B12,
// B8A, SCL or CLM), the path of a STAC item JSON file, or the http(s) URL of
// one. Bands are opened when first read, except the reference band that sets
// the scene's grid (the finest of B04, B08, B02, B03) and the mask.
func OpenScene(ctx context.Context, src string, opts SceneOptions) (*Scene, error) {
	isURL := strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://")
	return newScene(ctx, src, isURL, opts, func(s *Scene) (time.Time, error) {
		if isURL || strings.HasSuffix(strings.ToLower(src), ".json") {
			return s.loadSTAC(ctx, src, isURL)
		}
		return time.Time{}, s.loadFolder(src)
	})
}

// OpenSTACItem opens a scene from a STAC item already fetched (raw is its
// JSON), e.g. one returned by a catalogue search, so the item is not fetched
// again. base is the URL the item was fetched from (never its own self link,
// which the catalogue chose) or its file path: relative asset hrefs resolve
// against it, and when it is a URL the item's hrefs are only ever read over
// http(s) (a remote item must not name local files: file:// and paths are
// refused, s3:// of public buckets mapped to https). Bands are read
// as OpenScene reads them: HTTP Range requests through opts.HTTPClient.
func OpenSTACItem(ctx context.Context, raw []byte, base string, opts SceneOptions) (*Scene, error) {
	isURL := remoteBase(base)
	return newScene(ctx, base, isURL, opts, func(s *Scene) (time.Time, error) {
		return s.parseSTAC(raw, base, isURL)
	})
}

// remoteBase: base is the location of an item read over the network (any
// URL scheme but file, s3:// included), not the path of a local file.
func remoteBase(base string) bool {
	scheme, _, ok := strings.Cut(base, "://")
	if !ok {
		return false
	}
	return !strings.EqualFold(scheme, "file")
}

// newScene is OpenScene and OpenSTACItem after the source is known: load
// registers the bands and returns the item's date, if any.
func newScene(ctx context.Context, src string, isURL bool, opts SceneOptions, load func(*Scene) (time.Time, error)) (*Scene, error) {
	s := &Scene{bands: make(map[string]*band), client: opts.HTTPClient, openFn: opts.Open, maxPix: opts.MaxFieldPixels, budget: opts.Budget, remote: isURL}
	if s.maxPix == 0 {
		s.maxPix = DefaultMaxFieldPixels
	}
	if s.budget == nil {
		s.budget = NewBudget(DefaultBudgetBytes)
	}
	if s.client == nil {
		s.client = http.DefaultClient
	}
	classes := opts.MaskClasses
	if classes == nil {
		classes = DefaultMaskClasses()
	}
	for _, c := range classes {
		if c < 0 || c > 255 {
			return nil, fmt.Errorf("open scene %s: SCL class %d out of 0..255", src, c)
		}
		s.maskedAs[c] = true
	}
	itemDate, err := load(s)
	if err != nil {
		return nil, fmt.Errorf("open scene %s: %w", src, err)
	}
	if err := s.init(ctx, itemDate, src, opts.Date, isURL); err != nil {
		s.Close()
		return nil, fmt.Errorf("open scene %s: %w", src, err)
	}
	switch {
	case opts.CacheBytes > 0:
		s.cache = newTileCache(opts.CacheBytes)
	case opts.CacheBytes == 0:
		s.cache = newTileCache(DefaultCacheBytes)
	}
	return s, nil
}

// bandFileName matches the band files of a scene folder.
var bandFileName = regexp.MustCompile(`^(B0[1-9]|B1[0-2]|B8A|SCL|CLM|VV|VH)\.(tif|tiff|TIF|TIFF)$`)

func (s *Scene) loadFolder(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if isLandsatFolder(entries) {
		s.loadLandsatFolder(dir, entries)
		entries = nil
	}
	for _, e := range entries {
		m := bandFileName.FindStringSubmatch(strings.ToUpper(e.Name()))
		if m == nil || e.IsDir() {
			continue
		}
		s.addBand(&band{name: m[1], src: filepath.Join(dir, e.Name())})
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	s.id = filepath.Base(filepath.Dir(abs)) + "/" + filepath.Base(abs)
	return nil
}

func (s *Scene) addBand(b *band) {
	switch b.name {
	case "SCL":
		s.mask, s.maskKind = b, qaSCL
	case "CLM":
		if s.mask == nil {
			s.mask = b
		}
	default:
		s.bands[b.name] = b
	}
}

// init opens the reference band and the mask, and settles the date.
func (s *Scene) init(ctx context.Context, itemDate time.Time, src string, fallback time.Time, isURL bool) error {
	if len(s.bands) == 0 {
		// An item whose bands all exist only in unreadable assets says why.
		names := append([]string{"B04", "B08", "B02", "B03"}, slices.Sorted(maps.Keys(s.unreadable))...)
		for _, name := range names {
			if e, ok := s.unreadable[name]; ok && name != "SCL" && name != "CLM" && name != "QA_PIXEL" {
				return fmt.Errorf("no readable band: %w", e)
			}
		}
		return errors.New("no band found (reflectance B01…B12, B8A, or radar VV, VH)")
	}
	radar := 0
	for name := range s.bands {
		if isRadarBand(name) {
			radar++
		}
	}
	if radar > 0 && radar != len(s.bands) {
		return fmt.Errorf("scene mixes radar bands (VV, VH) with optical bands %v", s.Bands())
	}
	if s.mask == nil {
		// Reading without the mask the item names would count clouds.
		for _, name := range []string{"SCL", "CLM", "QA_PIXEL"} {
			if e, ok := s.unreadable[name]; ok {
				return fmt.Errorf("mask: %w", e)
			}
		}
	}
	var ref *band
	for _, name := range []string{"B04", "B08", "B02", "B03"} {
		b, ok := s.bands[name]
		if !ok {
			continue
		}
		if err := s.open(ctx, b); err != nil {
			return err
		}
		if ref == nil || b.grid.DX < ref.grid.DX {
			ref = b
		}
	}
	if ref == nil { // only other bands: take the finest of them
		for _, b := range s.bands {
			if err := s.open(ctx, b); err != nil {
				return err
			}
			if ref == nil || b.grid.DX < ref.grid.DX {
				ref = b
			}
		}
	}
	s.grid = ref.grid
	if s.grid.EPSG == 0 {
		if isRadarBand(ref.name) {
			return fmt.Errorf("band %s has no EPSG code: radar geometry (no map projection) is not supported; use terrain-corrected (RTC) backscatter", ref.name)
		}
		return fmt.Errorf("band %s has no EPSG code", ref.name)
	}
	if s.mask != nil {
		if err := s.open(ctx, s.mask); err != nil {
			return err
		}
	}
	if s.sensor == "" {
		s.sensor = sensorFromMetadata(ref.file.Metadata())
	}
	landsat := ref.landsat
	if s.sensor == "" {
		switch {
		case radar > 0:
			s.sensor = Sentinel1
		case landsat:
			s.sensor = Landsat
		default:
			s.sensor = Sentinel2
		}
	}
	if s.sensor.Radar() != (radar > 0) || (s.sensor.Family() == FamilyLandsat) != landsat {
		return fmt.Errorf("sensor %s does not match the scene's bands %v", s.sensor, s.Bands())
	}
	if s.sensor.Radar() && s.mask != nil {
		return fmt.Errorf("radar scene with a cloud mask band %s", s.mask.name)
	}
	s.date = itemDate
	if s.date.IsZero() {
		s.date = metadataDate(ref.file.Metadata())
	}
	if s.date.IsZero() && !isURL {
		s.date = folderDate(src)
	}
	if s.date.IsZero() {
		s.date = fallback
	}
	if s.date.IsZero() {
		return ErrNoDate
	}
	s.date = s.date.UTC()
	if s.id == "" {
		s.id = s.date.Format(time.DateOnly)
	}
	return nil
}

// metadataDate reads the acquisition time from GDAL metadata items.
func metadataDate(md map[string]string) time.Time {
	for _, key := range []string{"ACQUISITION_DATETIME_UTC", "ACQUISITION_DATETIME", "DATATAKE_1_DATATAKE_SENSING_START", "PRODUCT_START_TIME", "SENSING_TIME", "DATETIME"} {
		if t, ok := parseTime(md[key]); ok {
			return t
		}
	}
	return time.Time{}
}

var dateInName = regexp.MustCompile(`(\d{4})-?(\d{2})-?(\d{2})`)

// folderDate takes the date from the folder's name (2019-06-20 or 20190620 in it).
func folderDate(dir string) time.Time {
	base := filepath.Base(filepath.Clean(dir))
	m := dateInName.FindStringSubmatch(base)
	if m == nil {
		return time.Time{}
	}
	t, err := time.Parse("20060102", m[1]+m[2]+m[3])
	if err != nil {
		return time.Time{}
	}
	return t
}

func parseTime(v string) (time.Time, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, false
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006:01:02 15:04:05", "2006-01-02 15:04:05", time.DateOnly} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// open opens b's file once and settles its reflectance scaling.
func (s *Scene) open(ctx context.Context, b *band) error {
	b.once.Do(func() {
		r, err := s.openReader(ctx, b.src)
		if err != nil {
			b.err = err
			return
		}
		b.closer, _ = r.(io.Closer)
		f, err := geotiff.Open(r)
		if err != nil {
			if b.closer != nil {
				b.closer.Close()
			}
			b.err = err
			return
		}
		b.file = f
		b.grid = f.Grid()
		if b.grid.EPSG == 0 {
			b.grid.EPSG = b.epsg
		}
		b.nodata, b.hasND = f.NoData()
		if b.grid.DX <= 0 || b.grid.DY <= 0 || b.grid.Cols <= 0 || b.grid.Rows <= 0 {
			b.err = fmt.Errorf("bad grid %+v", b.grid)
			return
		}
		switch {
		case b.explicitScale:
		case isRadarBand(b.name):
			b.scale, b.add, b.decibel = radarScaling(f.Metadata())
		case b.landsat:
			b.scale, b.add = landsatScaling(f.Metadata(), b.landsatC1)
		default:
			b.scale, b.add = reflectanceScaling(f.Metadata(), b.baseline, b.harmonized)
		}
	})
	if b.err != nil {
		return fmt.Errorf("band %s (%s): %w", b.name, b.src, b.err)
	}
	return nil
}

// openReader opens a band's bytes: through SceneOptions.Open when set, else
// the local file or HTTP Range requests. Remote reads outlive ctx's
// cancellation (a scene outlives the request that opened it) but keep its values.
func (s *Scene) openReader(ctx context.Context, src string) (io.ReaderAt, error) {
	isHTTP := strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://")
	if s.remote && !isHTTP {
		// Never reached through parseSTAC, which refuses such hrefs: a
		// second lock on this machine's files.
		return nil, fmt.Errorf("%w: %q", ErrLocalAsset, src)
	}
	if s.openFn != nil {
		return s.openFn(ctx, src)
	}
	if isHTTP {
		return geotiff.NewHTTPReaderAt(context.WithoutCancel(ctx), s.client, src)
	}
	return os.Open(src)
}

// reflectanceScaling derives reflectance = (DN + add)·scale from a band's
// GDAL metadata, with the processing-baseline rule as the fallback: DN offset
// −1000 when the baseline is 04.00 or later and no harmonization was applied.
// Baseline and harmonized come from a STAC item when the metadata lacks them.
func reflectanceScaling(md map[string]string, baseline string, harmonized bool) (scale, add float64) {
	scale = 1.0 / 10000
	if v, ok := parseFloat(md["REFLECTANCE_SCALE"]); ok && v > 0 {
		scale = v
	}
	if v, ok := parseFloat(md["BOA_ADD_OFFSET"]); ok {
		return scale, v
	}
	if v, ok := parseFloat(md["REFLECTANCE_OFFSET"]); ok {
		return scale, v / scale
	}
	if v := md["PROCESSING_BASELINE"]; v != "" {
		baseline = v
	}
	for _, key := range []string{"BOA_OFFSET_APPLIED", "HARMONIZED"} {
		if v, ok := parseBool(md[key]); ok {
			harmonized = v
		}
	}
	if baselineAtLeast4(baseline) && !harmonized {
		return scale, -1000
	}
	return scale, 0
}

// radarScaling reads a radar band's VALUE_SCALE (default 1) and VALUE_UNIT
// ("dB", else linear power: "linear", "power", "" or anything else):
// backscatter = value·scale, in dB when decibel.
func radarScaling(md map[string]string) (scale, add float64, decibel bool) {
	scale = 1
	if v, ok := parseFloat(md["VALUE_SCALE"]); ok && v > 0 {
		scale = v
	}
	if v, ok := parseFloat(md["VALUE_OFFSET"]); ok {
		add = v / scale
	}
	unit := strings.ToLower(strings.TrimSpace(md["VALUE_UNIT"]))
	return scale, add, unit == "db" || unit == "decibel" || unit == "decibels"
}

// isRadarBand reports whether name is a Sentinel-1 polarisation band.
func isRadarBand(name string) bool { return name == "VV" || name == "VH" }

// baselineAtLeast4 reports whether a processing baseline such as "04.00",
// "N0400", "5.09" or "05.10" is 04.00 or later.
func baselineAtLeast4(v string) bool {
	v = strings.TrimPrefix(strings.TrimSpace(strings.ToUpper(v)), "N")
	if v == "" {
		return false
	}
	if !strings.Contains(v, ".") && len(v) == 4 { // N0400 form
		v = v[:2] + "." + v[2:]
	}
	f, ok := parseFloat(v)
	return ok && f >= 4
}

// Sensor is the scene's sensor: from the STAC item's platform or
// collection, the band files' metadata (SENSOR, PLATFORM, … or the sensor
// named in PRODUCT), else by its bands (VV/VH: Sentinel-1, else Sentinel-2).
func (s *Scene) Sensor() Sensor { return s.sensor }

// ID identifies the scene: the STAC item id, or "<parent>/<folder>" for a folder.
func (s *Scene) ID() string { return s.id }

// Date is the acquisition time (UTC).
func (s *Scene) Date() time.Time { return s.date }

// Grid is the scene's finest grid (10 m for Sentinel-2), the grid of every product.
func (s *Scene) Grid() geo.Grid { return s.grid }

// Bands lists the reflectance bands the scene holds.
func (s *Scene) Bands() []string {
	return slices.Sorted(maps.Keys(s.bands))
}

// CheckBands reports whether the scene can read every band of names: nil,
// or an error wrapping ErrMissingBand for the first it cannot, with the
// reason when the item names the band only in assets cropkit does not read
// (an *AssetError: JPEG 2000 only…).
func (s *Scene) CheckBands(names ...string) error {
	for _, name := range names {
		if _, ok := s.bands[name]; ok {
			continue
		}
		if e, ok := s.unreadable[name]; ok {
			return fmt.Errorf("%w: scene %s: %w", ErrMissingBand, s.id, e)
		}
		return fmt.Errorf("%w: %s (scene %s has %v)", ErrMissingBand, name, s.id, s.Bands())
	}
	return nil
}

// MaskBand is "SCL", "CLM", "QA_PIXEL" (Landsat Collection 2), "QA_PIXEL_C1"
// (Collection 1) or "" when the scene has no mask.
func (s *Scene) MaskBand() string {
	if s.mask == nil {
		return ""
	}
	return s.mask.name
}

// Close releases the scene's files.
func (s *Scene) Close() error {
	var errs []error
	all := make([]*band, 0, len(s.bands)+1)
	for _, b := range s.bands {
		all = append(all, b)
	}
	if s.mask != nil {
		all = append(all, s.mask)
	}
	for _, b := range all {
		b.once.Do(func() { b.err = errors.New("scene closed") })
		if b.closer != nil {
			if err := b.closer.Close(); err != nil {
				errs = append(errs, err)
			}
			b.closer = nil
		}
	}
	return errors.Join(errs...)
}

func parseFloat(v string) (float64, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	var f float64
	if _, err := fmt.Sscan(v, &f); err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

func parseBool(v string) (bool, bool) {
	switch strings.ToUpper(strings.TrimSpace(v)) {
	case "TRUE", "YES", "1":
		return true, true
	case "FALSE", "NO", "0":
		return false, true
	}
	return false, false
}
