package crs_test

import (
	"fmt"

	"github.com/cropkit/cropkit/geo/crs"
)

func ExampleLookup() {
	info, err := crs.Lookup(2154)
	if err != nil {
		panic(err)
	}
	fmt.Println(info.Name, "|", info.Method, "| Helmert:", info.Helmert)
	_, err = crs.Lookup(8857)
	fmt.Println(err)
	// Output:
	// RGF93 v1 / Lambert-93 | Lambert Conic Conformal | Helmert: false
	// unsupported CRS EPSG:8857
}

func ExampleFromWKT() {
	// An ESRI .prj without any EPSG code: matched by its parameters.
	prj := `PROJCS["RD_New",GEOGCS["GCS_Amersfoort",DATUM["D_Amersfoort",SPHEROID["Bessel_1841",6377397.155,299.1528128]],` +
		`PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]],PROJECTION["Double_Stereographic"],` +
		`PARAMETER["False_Easting",155000.0],PARAMETER["False_Northing",463000.0],PARAMETER["Central_Meridian",5.38763888888889],` +
		`PARAMETER["Scale_Factor",0.9999079],PARAMETER["Latitude_Of_Origin",52.15616055555555],UNIT["Meter",1.0]]`
	code, err := crs.FromWKT(prj)
	fmt.Println(code, err)
	// Output: 28992 <nil>
}

func ExampleNew_helmert() {
	// WGS 84 to the Dutch RD New grid: Amersfoort datum, 7-parameter Helmert.
	t, err := crs.New(4326, 28992)
	if err != nil {
		panic(err)
	}
	x, y := t.Transform(5.1, 52.1)
	fmt.Printf("%.2f %.2f\n", x, y)
	// Output: 135321.22 456900.43
}
