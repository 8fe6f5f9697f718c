package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/paulmach/orb"
	"golang.org/x/sync/errgroup"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/imagery"
	"github.com/cropkit/cropkit/internal/atomicfile"
	"github.com/cropkit/cropkit/render"
)

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// indexJob is the validated command line of cropkit index.
type indexJob struct {
	scenes  []string
	fields  string
	indices []string
	out     string
	date    time.Time
	workers int
	timings bool
	// cpuProfile names a file for a CPU profile of the run (go tool pprof).
	cpuProfile string
	// remote are --sign-url and --ingest-allow-host.
	remote *remoteFlags
}

// runIndex computes per-field index statistics and PNGs:
//
//	cropkit index --scene DIR|ITEM.json|URL [--scene …] --fields FILE.geojson --index ndvi,ndre --out OUTDIR
//
// It writes OUTDIR/<field>/<YYYY-MM-DD>/<index>.json and .png.
func runIndex(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("index", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var job indexJob
	var scenes stringList
	var indexList, date string
	fs.Var(&scenes, "scene", "scene folder DIR/<BAND>.tif (Sentinel-2 B02…, Sentinel-1 VV/VH), STAC item JSON path or http(s) URL (repeatable)")
	fs.StringVar(&job.fields, "fields", "", "GeoJSON FeatureCollection of field polygons (EPSG:4326; name from properties.field_name or name)")
	fs.StringVar(&indexList, "index", "", "comma-separated indices: "+strings.Join(imagery.NewCatalogue().Names(), ","))
	fs.StringVar(&job.out, "out", "", "output folder: OUT/<field>/<YYYY-MM-DD>/<index>.json and .png")
	fs.StringVar(&date, "date", "", "YYYY-MM-DD date of a single scene whose metadata and folder name have none")
	// Twice the CPUs: file creation and renames block, decoding does not.
	fs.IntVar(&job.workers, "workers", 2*runtime.GOMAXPROCS(0), "fields processed concurrently")
	fs.BoolVar(&job.timings, "timings", false, "print per-step wall times to stderr")
	job.remote = addRemoteFlags(fs)
	fs.StringVar(&job.cpuProfile, "cpuprofile", "", "write a CPU profile of the run to `FILE` (for go tool pprof)")
	if err := fs.Parse(expandScenes(args)); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	job.scenes = scenes
	switch {
	case len(job.scenes) == 0:
		return errors.New("--scene is required")
	case job.fields == "":
		return errors.New("--fields is required")
	case indexList == "":
		return errors.New("--index is required")
	case job.out == "":
		return errors.New("--out is required")
	case job.workers < 1:
		return fmt.Errorf("--workers %d: want at least 1", job.workers)
	}
	// The live heap is the scenes' tile caches (128 MiB each) and the
	// workers' fields; without a limit the collector lets the heap grow to
	// twice that. 320 MiB keeps 1,000 fields × 4 indices at ~345 MB peak
	// RSS instead of ~375 MB, at no measurable CPU cost; GOMEMLIMIT
	// overrides it.
	if debug.SetMemoryLimit(-1) == math.MaxInt64 {
		debug.SetMemoryLimit(320 << 20)
	}
	if date != "" {
		if len(job.scenes) != 1 {
			return errors.New("--date dates a single scene: give exactly one --scene")
		}
		t, err := time.Parse(time.DateOnly, date)
		if err != nil {
			return fmt.Errorf("--date %q: want YYYY-MM-DD", date)
		}
		job.date = t
	}
	cat := imagery.NewCatalogue()
	for _, name := range strings.Split(indexList, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if _, ok := cat.Lookup(name); !ok {
			return fmt.Errorf("--index: unknown index %q (known: %s)", name, strings.Join(cat.Names(), ", "))
		}
		if !slices.Contains(job.indices, name) {
			job.indices = append(job.indices, name)
		}
	}
	if len(job.indices) == 0 {
		return errors.New("--index: no index given")
	}
	return job.run(ctx, cat, stdout, stderr)
}

// namedField is one input field.
type namedField struct {
	name string
	geom orb.MultiPolygon
	// order sorts fields so that neighbours, which share tiles, run together.
	order [2]int
}

// stepTimes accumulates wall time per step across workers.
type stepTimes struct {
	mu sync.Mutex
	d  map[string]time.Duration
	k  []string
}

func (s *stepTimes) add(step string, since time.Time) {
	d := time.Since(since)
	s.mu.Lock()
	if s.d == nil {
		s.d = map[string]time.Duration{}
	}
	if _, ok := s.d[step]; !ok {
		s.k = append(s.k, step)
	}
	s.d[step] += d
	s.mu.Unlock()
}

// print writes the steps' times summed over the workers (worker-seconds:
// with N workers they add up to at most N × the wall time), their sum, and
// the wall time of the whole run with the parallelism it implies.
func (s *stepTimes) print(w io.Writer, wall time.Duration, workers int) {
	parts := make([]string, 0, len(s.k)+1)
	var sum time.Duration
	for _, k := range s.k {
		parts = append(parts, fmt.Sprintf("%s=%.3fs", k, s.d[k].Seconds()))
		sum += s.d[k]
	}
	fmt.Fprintf(w, "timings (worker-seconds summed over %d workers): %s sum=%.3fs; wall=%.3fs (parallelism %.1f)\n",
		workers, strings.Join(parts, " "), sum.Seconds(), wall.Seconds(), sum.Seconds()/max(wall.Seconds(), 1e-9))
}

func (job *indexJob) run(ctx context.Context, cat *imagery.Catalogue, stdout, stderr io.Writer) error {
	start := time.Now()
	var times stepTimes
	fields, problems, err := readFieldFile(job.fields)
	if err != nil {
		return err
	}
	for _, p := range problems {
		fmt.Fprintf(stderr, "cropkit index: %s: skipped\n", p)
	}
	t0 := time.Now()
	scenes := make([]*imagery.Scene, 0, len(job.scenes))
	defer func() {
		for _, s := range scenes {
			s.Close()
		}
	}()
	for _, src := range job.scenes {
		s, err := openSceneArg(ctx, src, imagery.SceneOptions{Date: job.date}, job.remote)
		if err != nil {
			if len(job.scenes) == 1 || ctx.Err() != nil {
				return err
			}
			// The other scenes are still computed; the run fails at the end.
			problems = append(problems, fmt.Sprintf("scene %s: %v", src, err))
			fmt.Fprintf(stderr, "cropkit index: scene %s: %v: skipped\n", src, err)
			continue
		}
		scenes = append(scenes, s)
	}
	if len(scenes) == 0 {
		return fmt.Errorf("no scene could be opened: %s", strings.Join(problems, "; "))
	}
	// mean_variation follows the scenes in date order.
	sort.SliceStable(scenes, func(i, j int) bool { return scenes[i].Date().Before(scenes[j].Date()) })
	sceneIndices, err := indicesPerScene(scenes, job.indices, cat)
	if err != nil {
		return err
	}
	for i := range scenes {
		// OUT/<field>/<date>/<index>.json: two scenes of one date may not
		// both give an index (a Sentinel-2 and a Sentinel-1 scene may).
		for j := i - 1; j >= 0 && day(scenes[j].Date()) == day(scenes[i].Date()); j-- {
			if slices.ContainsFunc(sceneIndices[i], func(ix string) bool { return slices.Contains(sceneIndices[j], ix) }) {
				return fmt.Errorf("scenes %s (%s) and %s (%s) have the same date %s", scenes[j].ID(), scenes[j].Sensor(),
					scenes[i].ID(), scenes[i].Sensor(), day(scenes[i].Date()))
			}
		}
	}
	for i, s := range scenes {
		for _, name := range sceneIndices[i] {
			ix, _ := cat.Lookup(name)
			if err := s.CheckBands(ix.Bands...); err != nil {
				return fmt.Errorf("index %s: %w", name, err)
			}
		}
	}
	times.add("open", t0)
	if err := os.MkdirAll(job.out, 0o755); err != nil {
		return fmt.Errorf("create output folder: %w", err)
	}
	sortFields(fields, scenes[0])
	geoms := make([]orb.MultiPolygon, len(fields))
	for i, f := range fields {
		geoms[i] = f.geom
	}
	for _, s := range scenes {
		s.PlanFields(geoms)
	}
	if job.cpuProfile != "" {
		stop, err := startCPUProfile(job.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}

	var (
		outMu   sync.Mutex
		rnd     = render.New(cat)
		buffers = sync.Pool{New: func() any { return new(fieldBuffers) }}
		counts  indexCounts
	)
	note := func(format string, args ...any) {
		outMu.Lock()
		fmt.Fprintf(stderr, format+"\n", args...)
		outMu.Unlock()
	}
	bar := newProgress(stderr, "index", len(fields))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(job.workers)
	for _, f := range fields {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			buf := buffers.Get().(*fieldBuffers)
			defer buffers.Put(buf)
			err := job.field(gctx, f, scenes, sceneIndices, cat, rnd, buf, &times, &counts, note)
			bar.Add(1)
			if err != nil && gctx.Err() == nil {
				// One field's failure does not stop the others.
				outMu.Lock()
				problems = append(problems, err.Error())
				outMu.Unlock()
				note("cropkit index: %v", err)
				return nil
			}
			return err
		})
	}
	err = g.Wait()
	bar.Finish()
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	wall := time.Since(start)
	fmt.Fprintf(stdout, "index: %d fields × %d scenes: %d products written, %d field-dates skipped (no clear pixel or outside the scene) in %s\n",
		len(fields), len(scenes), counts.products.Load(), counts.skipped.Load(), wall.Round(time.Millisecond))
	if job.timings {
		times.print(stderr, wall, job.workers)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d problem(s), the other fields were written: %s", len(problems), strings.Join(problems, "; "))
	}
	if counts.products.Load() == 0 {
		return errors.New("no product written: every field was outside the scenes or without clear pixels")
	}
	return nil
}

// indicesPerScene gives, for each scene, the indices of the run that apply
// to its sensor, so that one run can mix Sentinel-2, Landsat and Sentinel-1
// scenes (--index ndvi,vv). A scene no index applies to, or an index that
// applies to no scene, is an error naming the sensors the index needs.
func indicesPerScene(scenes []*imagery.Scene, indices []string, cat *imagery.Catalogue) ([][]string, error) {
	perScene := make([][]string, len(scenes))
	used := map[string]bool{}
	for i, s := range scenes {
		for _, name := range indices {
			ix, _ := cat.Lookup(name)
			if ix.AppliesTo(s.Sensor()) {
				perScene[i] = append(perScene[i], name)
				used[name] = true
			}
		}
		if len(perScene[i]) == 0 {
			ix, _ := cat.Lookup(indices[0])
			return nil, fmt.Errorf("scene %s is %s: index %s applies to %v", s.ID(), s.Sensor(), indices[0], ix.Sensors)
		}
	}
	for _, name := range indices {
		if !used[name] {
			ix, _ := cat.Lookup(name)
			return nil, fmt.Errorf("scene %s is %s: index %s applies to %v", scenes[0].ID(), scenes[0].Sensor(), name, ix.Sensors)
		}
	}
	return perScene, nil
}

// indexCounts count a run's outcome.
type indexCounts struct {
	products, skipped atomic.Int64
}

// fieldBuffers are one worker's output buffers, reused across products: a
// report's JSON is about 10 bytes per pixel, and each file is written with
// a single write call.
type fieldBuffers struct {
	json []byte
	png  bytes.Buffer
}

// field computes every scene's products for one field, oldest scene first.
func (job *indexJob) field(ctx context.Context, f namedField, scenes []*imagery.Scene, sceneIndices [][]string, cat *imagery.Catalogue,
	rnd *render.Renderer, buf *fieldBuffers, times *stepTimes, counts *indexCounts, note func(string, ...any)) error {
	prev := map[string]*render.Previous{} // index → the previous product
	fieldDir := filepath.Join(job.out, f.name)
	for i, s := range scenes {
		t0 := time.Now()
		products, err := s.FieldProducts(ctx, f.geom, sceneIndices[i], cat)
		times.add("read+index+stats", t0)
		switch {
		case errors.Is(err, imagery.ErrNoClearPixels):
			note("field %s %s: no clear pixel, no output", f.name, day(s.Date()))
			counts.skipped.Add(1)
			continue
		case errors.Is(err, imagery.ErrNoOverlap):
			note("field %s %s: outside scene %s, no output", f.name, day(s.Date()), s.ID())
			counts.skipped.Add(1)
			continue
		case err != nil:
			return fmt.Errorf("field %s, scene %s: %w", f.name, s.ID(), err)
		}
		// job.out exists and field names hold no separator: two Mkdir calls
		// do what MkdirAll does without its stat calls on every parent.
		dir := filepath.Join(fieldDir, day(s.Date()))
		for _, d := range [2]string{fieldDir, dir} {
			if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("field %s: %w", f.name, err)
			}
		}
		for _, p := range products {
			t1 := time.Now()
			buf.json, err = rnd.Report(buf.json[:0], p, prev[p.Index])
			if err != nil {
				return fmt.Errorf("field %s %s: %w", f.name, day(s.Date()), err)
			}
			prev[p.Index] = &render.Previous{Mean: p.Stats.Mean, Date: day(s.Date())}
			if err := writeAtomic(filepath.Join(dir, p.Index+".json"), buf.json); err != nil {
				return err
			}
			times.add("json", t1)
			t2 := time.Now()
			buf.png.Reset()
			if err := rnd.PNG(&buf.png, p); err != nil {
				return fmt.Errorf("field %s %s: %w", f.name, day(s.Date()), err)
			}
			if err := writeAtomic(filepath.Join(dir, p.Index+".png"), buf.png.Bytes()); err != nil {
				return err
			}
			times.add("png", t2)
			counts.products.Add(1)
		}
	}
	return nil
}

// writeAtomic writes data to path whole or not at all (atomicfile.Write):
// outputs are not synced, a rerun recomputes what a power loss loses.
func writeAtomic(path string, data []byte) error {
	return atomicfile.Write(path, data)
}

// startCPUProfile profiles the process into path until the returned stop is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func day(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// readFieldFile reads the named polygons of a GeoJSON file; names come from
// properties.field_name, else properties.name, and must be unique and usable
// as folder names. A feature that breaks a rule (no name, a second use of a
// name, an invalid polygon) is left out and named in problems, so the other
// fields are still computed; it is an error only when no field is usable.
func readFieldFile(path string) (fields []namedField, problems []string, err error) {
	feats, err := readFieldFeatures(path)
	if err != nil {
		return nil, nil, fmt.Errorf("--fields: %w", err)
	}
	if len(feats) == 0 {
		return nil, nil, fmt.Errorf("--fields %s: no feature", path)
	}
	seen := map[string]bool{}
	for _, f := range feats {
		name := f.name
		var problem error
		switch {
		case f.err != nil:
			problem = f.err
		case name == "":
			problem = errors.New("no properties.field_name or properties.name")
		case name == "." || name == ".." || strings.ContainsAny(name, `/\`+"\x00"):
			problem = fmt.Errorf("field name %q cannot be a folder name", name)
		case seen[name]:
			problem = fmt.Errorf("field name %q appears twice", name)
		default:
			// The server's rules, so a field the CLI accepts registers too.
			if err := geo.ValidateOutline(f.feat.Geometry, geo.OutlineLimits{}); err != nil {
				problem = fmt.Errorf("geometry: %w", err)
			}
		}
		if problem != nil {
			problems = append(problems, fmt.Sprintf("field %s (feature %d): %v", f.label(), f.index, problem))
			continue
		}
		seen[name] = true
		fields = append(fields, namedField{name: name, geom: f.feat.Geometry})
	}
	if len(fields) == 0 {
		return nil, problems, fmt.Errorf("--fields %s: no usable field: %s", path, strings.Join(problems, "; "))
	}
	return fields, problems, nil
}

// sortFields orders fields north to south in bands of 512 pixels of s's
// grid, then west to east, so concurrent workers share the tiles they decode.
func sortFields(fields []namedField, s *imagery.Scene) {
	g := s.Grid()
	for i := range fields {
		mp, err := s.ProjectField(fields[i].geom)
		if err != nil || len(mp) == 0 {
			continue
		}
		b := mp.Bound()
		col, row := g.Pixel(orb.Point{b.Min[0], b.Max[1]})
		fields[i].order = [2]int{floorDiv(row, 512), col}
	}
	sort.SliceStable(fields, func(i, j int) bool {
		a, b := fields[i].order, fields[j].order
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		return a[1] < b[1]
	})
}

func floorDiv(a, b int) int {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}
