// Command zones shows the zoning package on real imagery: it averages a
// field's NDVI over the clear dates of the bundled Sentinel-2 sample, splits
// the field into management zones with k-means, assigns nitrogen doses and
// prints the §2.4 zone collection (GeoJSON).
//
//	go run ./examples/zones                      # field UES-03, 4 zones
//	go run ./examples/zones -field UES-12 -zones 3 -crs 32631 > zones.geojson
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/imagery"
	"github.com/cropkit/cropkit/internal/demodata"
	"github.com/cropkit/cropkit/zoning"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "zones:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("zones", flag.ContinueOnError)
	fieldName := fs.String("field", "UES-03", "field name in the bundled sample")
	k := fs.Int("zones", 4, "number of zones")
	dst := fs.Int("crs", 4326, "EPSG code of the output")
	if err := fs.Parse(args); err != nil {
		return err
	}

	features, err := geo.ReadFeatures(demodata.Fields())
	if err != nil {
		return err
	}
	var field *geo.Feature
	for i := range features {
		if features[i].Name == *fieldName {
			field = &features[i]
		}
	}
	if field == nil {
		return fmt.Errorf("no field %q in the sample", *fieldName)
	}

	tmp, err := os.MkdirTemp("", "cropkit-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	scenes, err := demodata.Extract(tmp)
	if err != nil {
		return err
	}

	// The crop-health layer: NDVI averaged over every date with a clear image
	// of the field (all dates share the scene's grid, so the windows match).
	var grid geo.Grid
	var dates [][]float64
	for _, dir := range scenes {
		p, err := fieldNDVI(ctx, dir, field)
		if errors.Is(err, imagery.ErrNoClearPixels) {
			continue
		}
		if err != nil {
			return err
		}
		if p.Stats.CloudCover > 40 || (len(dates) > 0 && p.Grid != grid) {
			continue
		}
		grid = p.Grid
		dates = append(dates, p.Values)
	}
	if len(dates) == 0 {
		return errors.New("no clear image of the field")
	}
	ndvi, err := zoning.MeanValues(dates...)
	if err != nil {
		return err
	}
	// zoning.Run is the one zone chain, the server's and the CLI's: the
	// outline's pixels, k-means, the zones clipped to the outline (they tile
	// it exactly), doses, reprojection.
	c, err := zoning.Run(ctx, zoning.Request{
		Grid:         grid,
		Outline:      field.Geometry,
		Layers:       []zoning.Layer{{Name: "ndvi", Type: zoning.CropHealth, Values: ndvi, Weight: 1}},
		Options:      zoning.Options{Zones: *k, Seed: 1},
		Prescription: zoning.Prescription{Type: zoning.NFertilizer},
		DstEPSG:      *dst,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "%s: NDVI mean of %d clear dates, %d zones\n", field.Name, len(dates), len(c.ZoneStats))
	for _, z := range c.ZoneStats {
		fmt.Fprintf(stderr, "zone %d: NDVI %.3f, %.2f ha, %.0f kg N/ha\n", z.ID, z.RasterVal, z.AreaHa, z.Dose)
	}
	return zoning.GeoJSON.Write(stdout, c, field.Name)
}

func fieldNDVI(ctx context.Context, dir string, field *geo.Feature) (imagery.Product, error) {
	scene, err := imagery.OpenScene(ctx, dir, imagery.SceneOptions{})
	if err != nil {
		return imagery.Product{}, err
	}
	defer scene.Close()
	products, err := scene.FieldProducts(ctx, field.Geometry, []string{"ndvi"}, nil)
	if err != nil {
		return imagery.Product{}, err
	}
	if len(products) == 0 {
		return imagery.Product{}, imagery.ErrNoClearPixels
	}
	return products[0], nil
}
