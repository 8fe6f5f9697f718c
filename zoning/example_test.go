package zoning_test

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"

	"github.com/paulmach/orb"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/geo/crs"
	"github.com/cropkit/cropkit/zoning"
)

// A 6×4 field of 10 m pixels with a west–east vigour gradient and one
// cloudy pixel, split into two zones with an n_fertilizer prescription.
func ExampleCompute() {
	grid := geo.Grid{EPSG: 32631, X0: 574680, Y0: 5622440, DX: 10, DY: 10, Cols: 6, Rows: 4}
	ndvi := make([]float64, 24)
	mask := make([]bool, 24)
	for i := range ndvi {
		ndvi[i] = 0.4 + 0.08*float64(i%6)
		mask[i] = true
	}
	ndvi[7] = math.NaN() // a cloud: filled from its neighbours
	layers := []zoning.Layer{{Name: "ndvi", Type: zoning.CropHealth, Values: ndvi, Weight: 1}}
	res, err := zoning.Compute(context.Background(), grid, mask, layers, zoning.Options{Zones: 2, Seed: 1, MinAreaHa: -1})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := (zoning.Prescription{Type: zoning.NFertilizer}).Apply(res); err != nil {
		fmt.Println(err)
		return
	}
	for _, z := range res.Zones {
		fmt.Printf("zone %d: NDVI %.2f, %.2f ha, %.1f kg N/ha\n", z.ID, z.RasterVal, z.AreaHa, z.Dose)
	}
	fmt.Println(len(res.Polygons), "polygons")
	// Output:
	// zone 1: NDVI 0.48, 0.12 ha, 144.0 kg N/ha
	// zone 2: NDVI 0.72, 0.12 ha, 96.0 kg N/ha
	// 2 polygons
}

func ExampleParseLayers() {
	specs, err := zoning.ParseLayers([]byte(`[
		{"type": "crop_health", "weight": 2, "start_date": "2019-05-01", "end_date": "2019-07-31", "index": "ndvi"},
		{"type": "custom", "weight": 1, "filename": "soil.shp", "attribute": "clay"}]`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range specs {
		if s.Type == zoning.CropHealth {
			fmt.Printf("%s weight %g: %s from %s to %s\n", s.Type, s.Weight, s.Index, s.StartDate.Format("2006-01-02"), s.EndDate.Format("2006-01-02"))
		} else {
			fmt.Printf("%s weight %g: %s of %s\n", s.Type, s.Weight, s.Attribute, s.Filename)
		}
	}
	_, err = zoning.ParseLayers([]byte(`[{"type": "crop_health", "weight": 1, "index": "ndvi"}]`))
	fmt.Println(err)
	// Output:
	// crop_health weight 2: ndvi from 2019-05-01 to 2019-07-31
	// custom weight 1: clay of soil.shp
	// layer 0: date: missing (give date or start_date and end_date)
}

func ExamplePrescription_Doses() {
	zones := []zoning.Zone{{ID: 1, RasterVal: 0.5, AreaHa: 1}, {ID: 2, RasterVal: 0.7, AreaHa: 3}}
	for _, p := range []zoning.Prescription{{Type: zoning.NFertilizer}, {Type: zoning.Seeding}} {
		doses, _ := p.Doses(zones)
		fmt.Printf("%s: %.0f %s\n", p.Type, doses, p.Unit())
	}
	// Output:
	// n_fertilizer: [162 106] kg/ha
	// seeding: [60000 86667] seeds/ha
}

func ExampleKMeans() {
	// Two obvious groups of 1-D values.
	data := []float64{0.21, 0.19, 0.2, 0.8, 0.82, 0.78}
	res, err := zoning.KMeans(context.Background(), data, 1, 2, zoning.KMeansOptions{Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("centres %.2f, labels %v, inertia %.4f\n", res.Centers, res.Labels, res.Inertia)
	// Output:
	// centres [0.20 0.80], labels [0 0 0 1 1 1], inertia 0.0010
}

func ExampleGeoJSONToShapefileZip() {
	geojson := []byte(`{"type":"FeatureCollection","features":[{"type":"Feature",
		"properties":{"ZONE":1,"DOSE":120},
		"geometry":{"type":"Polygon","coordinates":[[[4.06,50.74],[4.07,50.74],[4.07,50.75],[4.06,50.74]]]}}]}`)
	var buf bytes.Buffer
	if err := zoning.GeoJSONToShapefileZip(geojson, &buf); err != nil {
		fmt.Println(err)
		return
	}
	zr, _ := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	for _, f := range zr.File {
		fmt.Println(f.Name)
	}
	// Output:
	// zones.shp
	// zones.shx
	// zones.dbf
	// zones.prj
}

// A collection that is not zones (here a field with a name and a crop)
// keeps its own properties as the shapefile's attributes.
func ExampleGeoJSONToShapefileZip_fields() {
	geojson := []byte(`{"type":"FeatureCollection","features":[{"type":"Feature",
		"properties":{"name":"north","crop_code":1200,"clipped_by_image_edge":false},
		"geometry":{"type":"Polygon","coordinates":[[[4.06,50.74],[4.07,50.74],[4.07,50.75],[4.06,50.74]]]}}]}`)
	var buf bytes.Buffer
	if err := zoning.GeoJSONToShapefileZip(geojson, &buf); err != nil {
		fmt.Println(err)
		return
	}
	zr, _ := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	files := map[string][]byte{}
	for _, f := range zr.File {
		rc, _ := f.Open()
		files[f.Name], _ = io.ReadAll(rc)
		rc.Close()
	}
	parts, _ := zoning.ShapefileParts(files, "")
	s, err := zoning.ReadShapefile(parts, zoning.ShapefileLimits{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Fields)
	fmt.Println(s.Features[0].Attributes["name"], s.Features[0].Attributes["crop_code"], s.Features[0].Attributes["clipped_by"])
	// Output:
	// [name crop_code clipped_by]
	// north 1200 false
}

// Run is the one zone chain (the server's and the CLI's): a field outline
// and a layer on its pixel grid give zones that tile the outline exactly,
// with doses, in the CRS asked.
func ExampleRun() {
	grid := geo.Grid{EPSG: 32631, X0: 574680, Y0: 5622440, DX: 10, DY: 10, Cols: 6, Rows: 4}
	ndvi := make([]float64, 24)
	for i := range ndvi {
		ndvi[i] = 0.4 + 0.08*float64(i%6)
	}
	// The outline: the grid's box in EPSG:4326.
	toLonLat, _ := crs.New(32631, 4326)
	box, _ := geo.Transform(orb.MultiPolygon{grid.Bound().ToPolygon()}, toLonLat)
	c, err := zoning.Run(context.Background(), zoning.Request{
		Grid:         grid,
		Outline:      box,
		Layers:       []zoning.Layer{{Name: "ndvi", Type: zoning.CropHealth, Values: ndvi, Weight: 1}},
		Options:      zoning.Options{Zones: 2, Seed: 1, MinAreaHa: -1},
		Prescription: zoning.Prescription{Type: zoning.NFertilizer},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, z := range c.ZoneStats {
		fmt.Printf("zone %d: NDVI %.2f, %.2f ha, %.1f kg N/ha\n", z.ID, z.RasterVal, z.AreaHa, z.Dose)
	}
	// Output:
	// zone 1: NDVI 0.48, 0.12 ha, 144.0 kg N/ha
	// zone 2: NDVI 0.72, 0.12 ha, 96.0 kg N/ha
}
