package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/paulmach/orb"

	"github.com/cropkit/cropkit/geo/crs"
	"github.com/cropkit/cropkit/imagery"
	"github.com/cropkit/cropkit/zoning"
)

const zonesUsage = `usage: cropkit zones --scene DIR [--scene DIR ...] --fields FILE.geojson --field NAME
                     --index ndvi --zones K --out FILE [flags]

Computes management zones for one field from local Sentinel-2 scenes, with
the same library the server uses. With --date, the scene of that date is
used; otherwise the mean of the index over every scene with clear pixels
(a productivity map). Doses follow the --type rule (see zoning.Prescription).

`

// runZones computes zones for one field from local scenes and writes them to --out.
func runZones(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("zones", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, zonesUsage); fs.PrintDefaults() }
	var scenes stringList
	fs.Var(&scenes, "scene", "scene folder, STAC item JSON path or http(s) URL (repeatable)")
	fieldsPath := fs.String("fields", "", "GeoJSON FeatureCollection of fields (EPSG:4326)")
	fieldName := fs.String("field", "", "name of the field (property name or field_name); optional when the file has one field")
	index := fs.String("index", "ndvi", "crop-health index")
	k := fs.Int("zones", 0, "number of zones (1..100)")
	parcelPath := fs.String("parcel", "", "GeoJSON polygon inside the field to compute zones for")
	dstCRS := fs.String("dst-crs", "4326", "EPSG code of the output")
	format := fs.String("format", "geojson", "geojson, shapefile or isoxml")
	date := fs.String("date", "", "use the scene of this date (YYYY-MM-DD)")
	out := fs.String("out", "", "output file ('-' for stdout)")
	typ := fs.String("type", "n_fertilizer", "dose rule: n_fertilizer or seeding")
	strategy := fs.String("strategy", "", "compensate or proportional (default by type)")
	base := fs.Float64("base-rate", 0, "base rate (default by type)")
	minRate := fs.Float64("min-rate", 0, "minimum rate (default by type)")
	maxRate := fs.Float64("max-rate", 0, "maximum rate (default by type)")
	minArea := fs.Float64("min-area-ha", zoning.DefaultMinAreaHa, "minimum mapping unit in ha (negative: no sieve)")
	simplify := fs.Float64("simplify", 0, "simplify zone boundaries with this tolerance in metres, without gaps (0: pixel edges)")
	seed := fs.Uint64("seed", 0, "k-means seed")
	timings := fs.Bool("timings", false, "print step times to stderr")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to `FILE` (for go tool pprof)")
	remote := addRemoteFlags(fs)
	if err := fs.Parse(expandScenes(args)); err != nil {
		return err
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	if len(scenes) == 0 || *fieldsPath == "" || *k == 0 || *out == "" {
		fs.Usage()
		return errors.New("--scene, --fields, --zones and --out are required")
	}
	f, err := zoning.ParseFormat(*format)
	if err != nil {
		return err
	}
	dst, err := crs.ParseEPSG(*dstCRS)
	if err != nil {
		return fmt.Errorf("--dst-crs: %w", err)
	}
	var day time.Time
	if *date != "" {
		if day, err = time.Parse(time.DateOnly, *date); err != nil {
			return fmt.Errorf("--date %q: want YYYY-MM-DD", *date)
		}
	}
	rx := zoning.Prescription{Type: zoning.PrescriptionType(*typ), Strategy: zoning.Strategy(*strategy),
		BaseRate: *base, MinRate: *minRate, MaxRate: *maxRate}
	if err := rx.WithDefaults().Validate(); err != nil {
		return err
	}
	var times stepTimes
	began := time.Now()
	last := began
	step := func(name string) { times.add(name, last); last = time.Now() }

	field, err := readField(*fieldsPath, *fieldName)
	if err != nil {
		return err
	}
	area := field
	if *parcelPath != "" {
		data, err := os.ReadFile(*parcelPath)
		if err != nil {
			return err
		}
		if area, err = zoning.ParseParcel(data, field); err != nil {
			return err
		}
	}

	// The index on the field's window of each scene (only those tiles are read).
	var products []imagery.Product
	cat := imagery.NewCatalogue()
	bar := newProgress(stderr, "zones: reading scenes", len(scenes))
	defer bar.Finish()
	skipped := 0
	for _, dir := range scenes {
		bar.Add(1)
		// --date also dates a scene whose files and folder name carry no date.
		sc, err := openSceneArg(ctx, dir, imagery.SceneOptions{Date: day}, remote)
		if errors.Is(err, imagery.ErrNoDate) {
			return fmt.Errorf("%w: give its date with --date", err)
		}
		if err != nil {
			return err
		}
		if !day.IsZero() && !sameDay(sc.Date(), day) {
			sc.Close()
			continue
		}
		ps, err := sc.FieldProducts(ctx, field, []string{*index}, cat)
		sc.Close()
		switch {
		case errors.Is(err, imagery.ErrNoClearPixels):
			fmt.Fprintf(stderr, "cropkit zones: %s: no clear pixel, skipped\n", dir)
			skipped++
			continue
		case err != nil:
			return err
		}
		products = append(products, ps[0])
	}
	if len(products) == 0 {
		if !day.IsZero() {
			return fmt.Errorf("no scene of %s with clear pixels in the field", *date)
		}
		return errors.New("no scene with clear pixels in the field")
	}
	grid := products[0].Grid
	grids := make([][]float64, len(products))
	for i, p := range products {
		if p.Grid != grid {
			return fmt.Errorf("scene of %s has another grid than the first scene's", p.Date.Format(time.DateOnly))
		}
		grids[i] = p.Values
	}
	values, err := zoning.MeanValues(grids...)
	if err != nil {
		return err
	}
	step("read+index")

	c, err := zoning.Run(ctx, zoning.Request{
		Grid:         grid,
		Outline:      area,
		Layers:       []zoning.Layer{{Name: *index, Type: zoning.CropHealth, Values: values, Weight: 1}},
		Options:      zoning.Options{Zones: *k, Seed: *seed, MinAreaHa: *minArea, SimplifyTolerance: *simplify},
		Prescription: rx,
		DstEPSG:      dst,
	})
	if err != nil {
		return err
	}
	step("zones")
	name := *fieldName
	if name == "" {
		name = "field"
	}
	var buf bytes.Buffer
	if err := f.Write(&buf, c, name); err != nil {
		return err
	}
	if *out == "-" {
		_, err = stdout.Write(buf.Bytes())
	} else {
		err = os.WriteFile(*out, buf.Bytes(), 0o644)
	}
	if err != nil {
		return err
	}
	step("write")
	if *timings {
		times.print(stderr, time.Since(began), 1)
	}
	q := c.Quality
	bar.Finish()
	fmt.Fprintf(stderr, "cropkit zones: %d pixels, %d zones, %d polygons, %d image(s) (%d scene(s) skipped); variance explained %.1f %%, smallest zone %.2f ha, smallest polygon %.2f ha\n",
		q.Pixels, q.Zones, q.Polygons, len(products), skipped, 100*q.VarianceReduction, q.SmallestZoneHa, q.SmallestPolygonHa)
	for _, z := range c.ZoneStats {
		fmt.Fprintf(stderr, "  zone %d: %.4f %s, %.2f ha\n", z.ID, z.RasterVal, formatDose(z.Dose, rx), z.AreaHa)
	}
	return nil
}

func formatDose(d float64, rx zoning.Prescription) string {
	return fmt.Sprintf("%.1f %s", d, rx.WithDefaults().Unit())
}

func sameDay(a, b time.Time) bool {
	return a.UTC().Format(time.DateOnly) == b.UTC().Format(time.DateOnly)
}

// readField returns the named field of a GeoJSON file (EPSG:4326), or its
// only field when name is empty.
func readField(path, name string) (orb.MultiPolygon, error) {
	// Feature by feature: another field's broken polygon does not stop this one.
	feats, err := readFieldFeatures(path)
	if err != nil {
		return nil, err
	}
	if name == "" {
		if len(feats) != 1 {
			return nil, fmt.Errorf("%s has %d fields: name one with --field", path, len(feats))
		}
		return feats[0].geometry(path)
	}
	var names []string
	for _, f := range feats {
		if f.name == name {
			return f.geometry(path)
		}
		names = append(names, f.name)
	}
	slices.Sort(names)
	return nil, fmt.Errorf("%s has no field %q (it has %s)", path, name, strings.Join(names, ", "))
}
