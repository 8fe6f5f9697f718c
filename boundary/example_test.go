package boundary_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"

	"github.com/paulmach/orb"

	"github.com/cropkit/cropkit/boundary"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/imagery"
)

// Detect fields in an area from local scene folders (or STAC items), and
// write them as GeoJSON.
func ExampleDetect() {
	ctx := context.Background()
	data, err := os.ReadFile("aoi.geojson") // a lon/lat Polygon
	if err != nil {
		log.Fatal(err)
	}
	aoi, err := geo.ParseGeometry(data)
	if err != nil {
		log.Fatal(err)
	}
	var scenes []boundary.Scene
	for _, dir := range []string{"s2/2019-05-16", "s2/2019-06-20", "s2/2019-07-05"} {
		sc, err := imagery.OpenScene(ctx, dir, imagery.SceneOptions{})
		if err != nil {
			log.Fatal(err)
		}
		defer sc.Close()
		scenes = append(scenes, sc)
	}
	res, err := boundary.Detect(ctx, scenes, aoi, boundary.Options{MinAreaHa: 0.5})
	if err != nil {
		log.Fatal(err)
	}
	out, err := json.Marshal(res) // FeatureCollection with area_ha and confidence
	if err != nil {
		log.Fatal(err)
	}
	os.Stdout.Write(out)
}

// Detect with Sentinel-1 dates besides the optical ones: radar profiles
// that agree keep one crop whose NDVI differed on some dates in one piece.
func ExampleDetect_radar() {
	ctx := context.Background()
	data, err := os.ReadFile("aoi.geojson")
	if err != nil {
		log.Fatal(err)
	}
	aoi, err := geo.ParseGeometry(data)
	if err != nil {
		log.Fatal(err)
	}
	open := func(dirs ...string) []boundary.Scene {
		var out []boundary.Scene
		for _, dir := range dirs {
			sc, err := imagery.OpenScene(ctx, dir, imagery.SceneOptions{})
			if err != nil {
				log.Fatal(err)
			}
			out = append(out, sc)
		}
		return out
	}
	optical := open("s2/2019-05-16", "s2/2019-06-20", "s2/2019-07-05")
	radar := open("s1/2019-05-17", "s1/2019-05-23", "s1/2019-06-04") // VV.tif and VH.tif
	res, err := boundary.Detect(ctx, optical, aoi, boundary.Options{Radar: radar})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(res.Fields), "fields from", len(res.Dates), "optical and", len(res.RadarDates), "radar dates")
}

func ExampleResult_FeatureCollection() {
	res := &boundary.Result{Fields: []boundary.Field{{
		Polygon:    orb.Polygon{{{4.06, 50.745}, {4.062, 50.745}, {4.062, 50.746}, {4.06, 50.745}}},
		AreaHa:     0.71234,
		Confidence: 0.8345,
	}}}
	fc := res.FeatureCollection()
	f := fc.Features[0]
	fmt.Println(fc.Type, f.ID, f.Geometry.Type, f.Properties.AreaHa, f.Properties.Confidence)
	// Output: FeatureCollection 1 Polygon 0.7123 0.835
}
