package geo_test

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/paulmach/orb"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/internal/testenv"
)

// fuzzFieldsDir returns ../shared/data/fields when present; under CI its
// absence fails the target, elsewhere the target runs on its committed corpus.
func fuzzFieldsDir(f *testing.F) (string, bool) {
	dir := filepath.Join("..", "..", "shared", "data", "fields")
	if env := os.Getenv("CROPKIT_SHARED"); env != "" {
		dir = filepath.Join(env, "data", "fields")
	}
	if _, err := os.Stat(dir); err != nil {
		if testenv.InCI() {
			f.Fatalf("real field polygons missing under CI: %v", err)
		}
		return "", false
	}
	return dir, true
}

// FuzzParseGeometry feeds arbitrary bytes to the GeoJSON readers and the
// polygon validation. Invariants: no panic; every parse error matches
// ErrInvalidGeoJSON, every validation error is an *InvalidGeometryError; a parsed geometry survives a GeoJSON round trip
// unchanged; a geometry ValidateLonLat accepts has a finite positive area
// within MaxAreaHa. Seeds: each real field polygon (and a whole collection).
func FuzzParseGeometry(f *testing.F) {
	if dir, ok := fuzzFieldsDir(f); ok {
		paths, _ := filepath.Glob(filepath.Join(dir, "*.geojson"))
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			var fc struct {
				Features []json.RawMessage `json:"features"`
			}
			if err := json.Unmarshal(b, &fc); err != nil {
				f.Fatalf("%s: %v", p, err)
			}
			for i, ft := range fc.Features {
				if i%8 == 0 { // a sample: every feature would slow the seed run
					f.Add([]byte(ft))
				}
			}
		}
	}
	f.Add([]byte(`{"type":"Polygon","coordinates":[[[4.06,50.745],[4.07,50.745],[4.07,50.75],[4.06,50.75],[4.06,50.745]]]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := geo.ReadFeatures(data); err != nil && !errors.Is(err, geo.ErrInvalidGeoJSON) {
			t.Fatalf("ReadFeatures error does not match ErrInvalidGeoJSON: %v", err)
		}
		mp, err := geo.ParseGeometry(data)
		if err != nil {
			if !errors.Is(err, geo.ErrInvalidGeoJSON) {
				t.Fatalf("ParseGeometry error does not match ErrInvalidGeoJSON: %v", err)
			}
			return
		}
		again, err := json.Marshal(map[string]any{"type": "MultiPolygon", "coordinates": mp})
		if err != nil {
			t.Fatalf("marshal %v: %v", mp, err)
		}
		mp2, err := geo.ParseGeometry(again)
		if err != nil {
			t.Fatalf("round trip of %s: %v", again, err)
		}
		if !reflect.DeepEqual(normalize(mp), normalize(mp2)) {
			t.Fatalf("round trip changed the geometry:\n%v\n%v", mp, mp2)
		}
		if err := geo.ValidateLonLat(mp); err != nil {
			var ie *geo.InvalidGeometryError
			if !errors.As(err, &ie) {
				t.Fatalf("ValidateLonLat error is not an *InvalidGeometryError: %v", err)
			}
			return
		}
		if a := geo.GeodesicArea(mp); !(a > 0) || math.IsInf(a, 0) || a/10_000 > geo.MaxAreaHa {
			t.Fatalf("valid geometry of area %g m²", a)
		}
	})
}

// normalize maps empty slices to nil, which JSON does not tell apart.
func normalize(mp orb.MultiPolygon) orb.MultiPolygon {
	if len(mp) == 0 {
		return nil
	}
	return mp
}
