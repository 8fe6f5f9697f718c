package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/cropkit/cropkit/boundary"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/imagery"
)

const boundariesUsage = `usage: cropkit boundaries --scene DIR [DIR ...] [--scene DIR ...] --aoi FILE.geojson --out FILE.geojson [flags]

Detects field boundaries in an area of interest from a season of Sentinel-2
scenes (folders of <BAND>.tif, STAC item JSON paths or URLs), with the same
library the server uses (package boundary). Without --start and --end, the
last growing season (March to October) with imagery is used. Writes a GeoJSON
FeatureCollection (EPSG:4326) of field polygons with area_ha and confidence.

`

// runBoundaries detects field polygons in --aoi and writes them to --out.
func runBoundaries(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("boundaries", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, boundariesUsage); fs.PrintDefaults() }
	var scenes stringList
	fs.Var(&scenes, "scene", "scene folder, STAC item JSON path or http(s) URL (repeatable)")
	aoiPath := fs.String("aoi", "", "GeoJSON Polygon or MultiPolygon (or a Feature, or a collection of one) of the area, EPSG:4326")
	out := fs.String("out", "", "output GeoJSON file ('-' for stdout)")
	minArea := fs.Float64("min-area-ha", boundary.DefaultMinAreaHa, "drop fields smaller than this (ha)")
	start := fs.String("start", "", "first acquisition date used (YYYY-MM-DD)")
	end := fs.String("end", "", "last acquisition date used (YYYY-MM-DD)")
	simplify := fs.Float64("simplify", 0, "smooth pixel staircases with this tolerance in metres, without gaps (0: pixel edges)")
	remote := addRemoteFlags(fs)
	if err := fs.Parse(expandScenes(args)); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	switch {
	case len(scenes) == 0:
		return errors.New("--scene is required")
	case *aoiPath == "":
		return errors.New("--aoi is required")
	case *out == "":
		return errors.New("--out is required")
	case !(*minArea > 0):
		return fmt.Errorf("--min-area-ha %g: want a positive area", *minArea)
	case *simplify < 0:
		return fmt.Errorf("--simplify %g: want 0 or more metres", *simplify)
	}
	opts := boundary.Options{MinAreaHa: *minArea, SimplifyTolerance: *simplify}
	for _, d := range []struct {
		flag, v string
		dst     *time.Time
	}{{"--start", *start, &opts.Start}, {"--end", *end, &opts.End}} {
		if d.v == "" {
			continue
		}
		t, err := time.Parse(time.DateOnly, d.v)
		if err != nil {
			return fmt.Errorf("%s %q: want YYYY-MM-DD", d.flag, d.v)
		}
		*d.dst = t
	}
	if !opts.End.IsZero() {
		opts.End = opts.End.Add(24*time.Hour - time.Nanosecond) // the whole last day
	}
	if !opts.Start.IsZero() && !opts.End.IsZero() && opts.End.Before(opts.Start) {
		return fmt.Errorf("--end %s is before --start %s", *end, *start)
	}
	data, err := os.ReadFile(*aoiPath)
	if err != nil {
		return fmt.Errorf("--aoi: %w", err)
	}
	aoi, err := geo.ParseGeometry(data)
	if err != nil {
		return fmt.Errorf("--aoi %s: %w", *aoiPath, err)
	}
	if err := geo.ValidateLonLat(aoi); err != nil {
		return fmt.Errorf("--aoi %s: %w", *aoiPath, err)
	}

	list := make([]boundary.Scene, 0, len(scenes))
	for _, src := range scenes {
		sc, err := openSceneArg(ctx, src, imagery.SceneOptions{}, remote)
		if err != nil {
			return fmt.Errorf("--scene: %w", err)
		}
		defer sc.Close()
		list = append(list, sc)
	}
	began := time.Now()
	res, err := boundary.Detect(ctx, list, aoi, opts)
	if err != nil {
		return err
	}
	js, err := json.Marshal(res)
	if err != nil {
		return err
	}
	js = append(js, '\n')
	if *out == "-" {
		_, err = stdout.Write(js)
	} else {
		err = writeAtomic(*out, js)
	}
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	fmt.Fprintf(stderr, "cropkit boundaries: %d field(s) from %d date(s) (%s to %s), %d scene(s) skipped, %.2f s\n",
		len(res.Fields), len(res.Dates), res.Dates[0].Format(time.DateOnly), res.Dates[len(res.Dates)-1].Format(time.DateOnly),
		len(res.Skipped), time.Since(began).Seconds())
	return nil
}

// expandScenes lets --scene take several values, as a shell glob gives
// them (--scene s2/2019-*): the arguments after a --scene value up to the
// next flag become further --scene values.
func expandScenes(args []string) []string {
	out := make([]string, 0, len(args))
	inScenes := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(out, args[i:]...)
		case a == "--scene" || a == "-scene":
			out = append(out, a)
			if i+1 < len(args) {
				i++
				out = append(out, args[i])
			}
			inScenes = true
		case inScenes && !strings.HasPrefix(a, "-"):
			out = append(out, "--scene", a)
		default:
			inScenes = strings.HasPrefix(a, "--scene=") || strings.HasPrefix(a, "-scene=")
			out = append(out, a)
		}
	}
	return out
}
