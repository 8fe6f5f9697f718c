package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/paulmach/orb"

	"github.com/cropkit/cropkit/api"
	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/imagery"
	"github.com/cropkit/cropkit/timeseries"
)

// maxSeriesDays bounds --from..--to (a series is one element per day).
const maxSeriesDays = 20 * 366

// seriesDoc is the file OUT/<field>/<index>.json.
type seriesDoc struct {
	Field  string          `json:"field"`
	Index  string          `json:"index"`
	Series []api.SeriesDay `json:"series"`
}

// runTimeseries writes a daily series per field and index:
//
//	cropkit timeseries --scene DIR|ITEM.json|URL [--scene …] --fields F.geojson --index ndvi --from YYYY-MM-DD --to YYYY-MM-DD --out OUT
//
// It writes OUT/<field>/<index>.json.
func runTimeseries(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("timeseries", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var scenes stringList
	var fieldsPath, indexList, from, to, out string
	var workers int
	fs.Var(&scenes, "scene", "scene folder DIR/<BAND>.tif, STAC item JSON path or http(s) URL (repeatable; every sensor whose bands the index uses)")
	fs.StringVar(&fieldsPath, "fields", "", "GeoJSON FeatureCollection of field polygons (EPSG:4326; name from properties.field_name or name)")
	fs.StringVar(&indexList, "index", "", "comma-separated indices: "+strings.Join(imagery.NewCatalogue().Names(), ","))
	fs.StringVar(&from, "from", "", "first day of the series, YYYY-MM-DD")
	fs.StringVar(&to, "to", "", "last day of the series, YYYY-MM-DD")
	fs.StringVar(&out, "out", "", "output folder: OUT/<field>/<index>.json")
	fs.IntVar(&workers, "workers", runtime.GOMAXPROCS(0), "scenes read concurrently")
	maskClasses := fs.String("mask-classes", "strict", "Sentinel-2 SCL classes that are not clear: strict (all but 4 vegetation and 5 not vegetated), default (the server's: 0,1,3,8,9,10,11) or a list such as 0,1,3,8,9,10")
	remote := addRemoteFlags(fs)
	if err := fs.Parse(expandScenes(args)); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	switch {
	case len(scenes) == 0:
		return errors.New("--scene is required")
	case fieldsPath == "":
		return errors.New("--fields is required")
	case indexList == "":
		return errors.New("--index is required")
	case from == "" || to == "":
		return errors.New("--from and --to are required")
	case out == "":
		return errors.New("--out is required")
	case workers < 1:
		return fmt.Errorf("--workers %d: want at least 1", workers)
	}
	start, err := time.Parse(time.DateOnly, from)
	if err != nil {
		return fmt.Errorf("--from %q: want YYYY-MM-DD", from)
	}
	end, err := time.Parse(time.DateOnly, to)
	if err != nil {
		return fmt.Errorf("--to %q: want YYYY-MM-DD", to)
	}
	if end.Before(start) {
		return fmt.Errorf("--to %s is before --from %s", to, from)
	}
	if end.Sub(start) > maxSeriesDays*24*time.Hour {
		return fmt.Errorf("--from %s to --to %s: at most %d days", from, to, maxSeriesDays)
	}
	cat := imagery.NewCatalogue()
	var indices []string
	for _, name := range strings.Split(indexList, ",") {
		name = strings.ToLower(strings.TrimSpace(name))
		if name == "" || slices.Contains(indices, name) {
			continue
		}
		if _, ok := cat.Lookup(name); !ok {
			return fmt.Errorf("--index: unknown index %q (known: %s)", name, strings.Join(cat.Names(), ", "))
		}
		indices = append(indices, name)
	}
	if len(indices) == 0 {
		return errors.New("--index: no index given")
	}
	fields, problems, err := readFieldFile(fieldsPath)
	if err != nil {
		return err
	}
	for _, p := range problems {
		fmt.Fprintf(stderr, "cropkit timeseries: %s: skipped\n", p)
	}
	sceneOpts, err := maskOption(*maskClasses)
	if err != nil {
		return err
	}
	opened := make([]*imagery.Scene, 0, len(scenes))
	defer func() {
		for _, s := range opened {
			s.Close()
		}
	}()
	for _, src := range scenes {
		s, err := openSceneArg(ctx, src, sceneOpts, remote)
		if err != nil {
			return err
		}
		opened = append(opened, s)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("create output folder: %w", err)
	}
	geoms := make([]orb.MultiPolygon, len(fields))
	for i, f := range fields {
		geoms[i] = f.geom
	}
	t0 := time.Now()
	written := 0
	for _, index := range indices {
		ix, _ := cat.Lookup(index)
		// The scenes of the sensors the index applies to: an optical
		// index is not measured in a radar scene, and the other way round.
		var usable []*imagery.Scene
		for _, s := range opened {
			if ix.AppliesTo(s.Sensor()) && hasAllBands(s.Bands(), ix.Bands) {
				usable = append(usable, s)
			}
		}
		if len(usable) == 0 {
			return fmt.Errorf("--index %s: no scene of the sensors it applies to (%v) with its bands %v", index, ix.Sensors, ix.Bands)
		}
		obs, err := timeseries.SceneObservations(ctx, usable, geoms, index, timeseries.SceneOptions{Catalogue: cat, Workers: workers})
		if err != nil {
			return err
		}
		for fi, f := range fields {
			days, err := timeseries.Daily(timeseries.Usable(obs[fi], archive.DefaultMinClear), start, end,
				timeseries.Options{Range: timeseries.PossibleRange(ix)})
			if errors.Is(err, timeseries.ErrNoObservations) {
				fmt.Fprintf(stderr, "field %s %s: no usable observation (≥ %.0f %% clear) in %d scenes, no series\n",
					f.name, index, 100*archive.DefaultMinClear, len(usable))
				continue
			}
			if err != nil {
				return fmt.Errorf("field %s %s: %w", f.name, index, err)
			}
			if err := writeSeries(out, f.name, index, days); err != nil {
				return err
			}
			written++
		}
	}
	fmt.Fprintf(stdout, "timeseries: %d fields × %d scenes: %d series of %d days written in %s\n",
		len(fields), len(opened), written, int(end.Sub(start).Hours()/24)+1, time.Since(t0).Round(time.Millisecond))
	if written == 0 {
		return errors.New("no series written: no field has a usable observation")
	}
	// A field left out of the fields file (an invalid polygon, no name) is
	// a failure of the batch even though the others were written: exit
	// non-zero, naming it, as cropkit index does.
	if len(problems) > 0 {
		return fmt.Errorf("%d problem(s), the other fields were written: %s", len(problems), strings.Join(problems, "; "))
	}
	return nil
}

func hasAllBands(have, want []string) bool {
	for _, b := range want {
		if !slices.Contains(have, b) {
			return false
		}
	}
	return true
}

// writeSeries writes OUT/<field>/<index>.json.
func writeSeries(out, field, index string, days []timeseries.Day) error {
	doc := seriesDoc{Field: field, Index: index, Series: make([]api.SeriesDay, len(days))}
	for i, d := range days {
		doc.Series[i] = archive.SeriesDay(d)
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("field %s %s: %w", field, index, err)
	}
	dir := filepath.Join(out, field)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("field %s: %w", field, err)
	}
	return writeAtomic(filepath.Join(dir, index+".json"), data)
}

// maskOption is --mask-classes: the SCL classes a series treats as not
// clear. The series defaults to the strict mask (imagery.StrictMaskClasses).
func maskOption(v string) (imagery.SceneOptions, error) {
	switch v {
	case "strict":
		return imagery.SceneOptions{MaskClasses: imagery.StrictMaskClasses()}, nil
	case "default":
		return imagery.SceneOptions{}, nil
	}
	var classes []int
	for _, part := range strings.Split(v, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || c < 0 || c > 255 {
			return imagery.SceneOptions{}, fmt.Errorf("--mask-classes %q: want strict, default or SCL classes 0..255 separated by commas", v)
		}
		classes = append(classes, c)
	}
	return imagery.SceneOptions{MaskClasses: classes}, nil
}
