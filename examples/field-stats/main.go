// Command field-stats shows the imagery and colormap packages end to end:
// it opens a Sentinel-2 scene, computes an index for every field of a GeoJSON
// file, prints the §2.5 statistics and writes one colormapped PNG per field.
//
//	go run ./examples/field-stats                       # the bundled real sample
//	go run ./examples/field-stats -scene DIR -fields F.geojson -index ndre -out /tmp/pngs
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/cropkit/cropkit/colormap"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/imagery"
	"github.com/cropkit/cropkit/internal/demodata"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "field-stats:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("field-stats", flag.ContinueOnError)
	sceneDir := fs.String("scene", "", "scene folder (DIR/<BAND>.tif) or STAC item; default: a bundled real scene")
	fieldsFile := fs.String("fields", "", "GeoJSON FeatureCollection of fields in EPSG:4326; default: the bundled fields")
	index := fs.String("index", "ndvi", "index name")
	out := fs.String("out", "", "folder for the PNGs (none written when empty)")
	if err := fs.Parse(args); err != nil {
		return err
	}

	fieldsJSON := demodata.Fields()
	if *fieldsFile != "" {
		b, err := os.ReadFile(*fieldsFile)
		if err != nil {
			return err
		}
		fieldsJSON = b
	}
	if *sceneDir == "" {
		tmp, err := os.MkdirTemp("", "cropkit-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		scenes, err := demodata.Extract(tmp)
		if err != nil {
			return err
		}
		*sceneDir = scenes[3] // 2019-06-20, a clear summer date
	}

	features, err := geo.ReadFeatures(fieldsJSON)
	if err != nil {
		return fmt.Errorf("read fields: %w", err)
	}
	scene, err := imagery.OpenScene(ctx, *sceneDir, imagery.SceneOptions{})
	if err != nil {
		return err
	}
	defer scene.Close()
	cm, ok := colormap.ForIndex(*index)
	if !ok {
		return fmt.Errorf("no colormap for index %q", *index)
	}

	fmt.Fprintf(stdout, "scene %s (%s)\n%-8s %6s %8s %8s %8s %8s\n", scene.ID(), scene.Date().Format(time.DateOnly),
		"field", "num", "mean", "median", "std", "cloud%")
	for _, f := range features {
		products, err := scene.FieldProducts(ctx, f.Geometry, []string{*index}, nil)
		if errors.Is(err, imagery.ErrNoClearPixels) || errors.Is(err, imagery.ErrNoOverlap) || (err == nil && len(products) == 0) {
			fmt.Fprintf(stdout, "%-8s no clear pixel\n", f.Name)
			continue
		}
		if err != nil {
			return fmt.Errorf("field %s: %w", f.Name, err)
		}
		p := products[0]
		fmt.Fprintf(stdout, "%-8s %6d %8.4f %8.4f %8.4f %8.1f\n", f.Name, p.Stats.Num, p.Stats.Mean, p.Stats.Median, p.Stats.Std, p.Stats.CloudCover)
		if *out == "" {
			continue
		}
		if err := writePNG(filepath.Join(*out, f.Name+"_"+*index+".png"), p, cm); err != nil {
			return err
		}
	}
	return nil
}

func writePNG(name string, p imagery.Product, cm colormap.Colormap) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := colormap.EncodePNG(f, p.Values, p.Grid.Cols, p.Grid.Rows, cm, colormap.PNGOptions{Upscale: 4}); err != nil {
		f.Close()
		return fmt.Errorf("encode %s: %w", name, err)
	}
	return f.Close()
}
