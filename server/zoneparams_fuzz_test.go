package server

import (
	"bytes"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/zoning"
)

// FuzzParseZonesParams feeds the §4.1/§4.3 form parameters to the parsers
// the server calls, from an arbitrary multipart/form-data body read by
// readParams (as every request is) and from an arbitrary query string.
// Invariants: no panic; every error is a 400 naming a parameter or matches
// zoning.ErrInvalidLayers; accepted values are in range (a field name, at
// least one layer, a positive EPSG code, 1 to MaxZones zones); parsing is
// deterministic.
func FuzzParseZonesParams(f *testing.F) {
	f.Add("field_name=f&n_zones=3&layers="+url.QueryEscape(oneLayer), []byte(multipartSeed))
	f.Add("field_name=UES-03&type=n_fertilizer&dst_crs=EPSG:32631&format=shapefile", []byte("--X\r\n\r\n--X--\r\n"))
	f.Fuzz(func(t *testing.T, query string, body []byte) {
		getters := map[string]func(string) string{}
		if vals, err := url.ParseQuery(query); err == nil {
			getters["query"] = vals.Get
		}
		req, err := http.NewRequest(http.MethodPost, "/v1/variable-rate-zones", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "multipart/form-data; boundary=X")
		if p, err := readParams(req, 1<<20); err == nil {
			getters["multipart"] = p.formValue
		} else if e, ok := err.(*Error); !ok || e.Status >= 500 {
			t.Fatalf("readParams: %v", err)
		}
		for src, get := range getters {
			p, err := archive.ParseZonesParams(get)
			if err != nil {
				if !isBadRequest(err) && !errors.Is(err, zoning.ErrInvalidLayers) {
					t.Fatalf("%s: zones error is neither a 400 nor ErrInvalidLayers: %v", src, err)
				}
			} else {
				if strings.TrimSpace(p.FieldName) == "" || len(p.Layers) == 0 || p.DstEPSG <= 0 || p.Zones < 1 || p.Zones > zoning.MaxZones {
					t.Fatalf("%s: accepted %+v", src, p)
				}
				again, err := archive.ParseZonesParams(get)
				if err != nil || again.Zones != p.Zones || again.FieldName != p.FieldName || len(again.Layers) != len(p.Layers) {
					t.Fatalf("%s: second parse differs: %+v %v", src, again, err)
				}
			}
			if _, err := archive.ParsePrescriptionParams(get); err != nil && !isBadRequest(err) {
				t.Fatalf("%s: prescription error is not a 400: %v", src, err)
			}
		}
	})
}

const multipartSeed = "--X\r\nContent-Disposition: form-data; name=\"field_name\"\r\n\r\nUDS-01\r\n" +
	"--X\r\nContent-Disposition: form-data; name=\"n_zones\"\r\n\r\n4\r\n" +
	"--X\r\nContent-Disposition: form-data; name=\"layers\"\r\n\r\n" + oneLayer + "\r\n" +
	"--X\r\nContent-Disposition: form-data; name=\"files\"; filename=\"a.shp\"\r\nContent-Type: application/octet-stream\r\n\r\n\x00\x00\x27\x0a\r\n" +
	"--X--\r\n"

func isBadRequest(err error) bool {
	e, _ := asAPIError(err)
	return e.Status == 400
}

const oneLayer = `[{"type":"crop_health","weight":1,"date":"2019-06-20","index":"ndvi"}]`
