package archive

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/zoning"
)

func getter(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

const oneLayer = `[{"type":"crop_health","weight":1,"date":"2019-06-20","index":"ndvi"}]`

func TestParseZonesParams(t *testing.T) {
	p, err := ParseZonesParams(getter(map[string]string{"field_name": "UES-03", "n_zones": "4", "layers": oneLayer,
		"dst_crs": "EPSG:32631", "format": "isoxml", "parcel_geojson": ` {"type":"Polygon"} `, "base_rate": "100", "min_area_ha": "0.2", "simplify": "8"}))
	require.NoError(t, err)
	assert.Equal(t, "UES-03", p.FieldName)
	assert.Equal(t, 4, p.Zones)
	assert.Equal(t, 32631, p.DstEPSG)
	assert.Equal(t, zoning.ISOXML, p.Format)
	assert.Equal(t, `{"type":"Polygon"}`, string(p.ParcelGeoJSON))
	assert.Equal(t, zoning.Prescription{Type: zoning.NFertilizer, BaseRate: 100}, p.Prescription)
	assert.Equal(t, 0.2, p.MinAreaHa)
	assert.Equal(t, 8.0, p.Simplify)
	assert.Len(t, p.Layers, 1)

	p, err = ParseZonesParams(getter(map[string]string{"field_name": "f", "n_zones": "2", "layers": oneLayer}))
	require.NoError(t, err)
	assert.Equal(t, 4326, p.DstEPSG)
	assert.Equal(t, zoning.GeoJSON, p.Format)
	assert.Nil(t, p.ParcelGeoJSON)
	assert.Equal(t, zoning.DefaultMinAreaHa, p.MinAreaHa)

	base := map[string]string{"field_name": "f", "n_zones": "3", "layers": oneLayer}
	tests := []struct{ key, value, param string }{
		{"field_name", "", "field_name"},
		{"n_zones", "", "n_zones"},
		{"n_zones", "zero", "n_zones"},
		{"n_zones", "0", "n_zones"},
		{"n_zones", "101", "n_zones"},
		{"layers", "", "layers"},
		{"dst_crs", "8857", "dst_crs"},
		{"dst_crs", "foo", "dst_crs"},
		{"format", "kml", "format"},
		{"type", "lime", "type"},
		{"strategy", "random", "strategy"},
		{"base_rate", "-5", "base_rate"},
		{"base_rate", "1e10", "base_rate"},
		{"max_rate", "50", "max_rate"},
		{"min_rate", "150", "min_rate"},
		{"min_area_ha", "-1", "min_area_ha"},
		{"simplify", "-3", "simplify"},
	}
	for _, tc := range tests {
		t.Run(tc.key+"="+tc.value, func(t *testing.T) {
			m := map[string]string{}
			for k, v := range base {
				m[k] = v
			}
			m[tc.key] = tc.value
			_, err := ParseZonesParams(getter(m))
			require.Error(t, err)
			var e *Error
			require.True(t, errors.As(err, &e), "%v", err)
			assert.ErrorIs(t, e, ErrInvalid) // a 400
			assert.True(t, strings.HasPrefix(e.Msg, tc.param+": "), "names %s: %v", tc.param, err)
		})
	}
	_, err = ParseZonesParams(getter(map[string]string{"field_name": "f", "n_zones": "3", "layers": `[{"type":"custom","weight":1,"filename":"a.shp","attribute":"x"}]`}))
	assert.ErrorIs(t, err, zoning.ErrNoCropHealthLayer)
	_, err = ParseZonesParams(getter(map[string]string{"field_name": "f", "n_zones": "3", "dst_crs": "8857", "layers": oneLayer}))
	assert.ErrorContains(t, err, "8857", "the unsupported code is named")
}

func TestParsePrescriptionParams(t *testing.T) {
	p, err := ParsePrescriptionParams(getter(map[string]string{"field_name": "f", "type": "n_fertilizer", "n_zones": "5", "index": "NDRE", "date": "2019-06-20"}))
	require.NoError(t, err)
	assert.Equal(t, PrescriptionParams{FieldName: "f", Zones: 5, Index: "ndre", Date: time.Date(2019, 6, 20, 0, 0, 0, 0, time.UTC),
		Prescription: zoning.Prescription{Type: zoning.NFertilizer}, DstEPSG: 4326, Format: zoning.GeoJSON, MinAreaHa: zoning.DefaultMinAreaHa}, p)
	p, err = ParsePrescriptionParams(getter(map[string]string{"field_name": "f", "type": "seeding", "n_zones": "3", "index": "ndvi", "strategy": "compensate", "max_rate": "90000"}))
	require.NoError(t, err)
	assert.Equal(t, zoning.Prescription{Type: zoning.Seeding, Strategy: zoning.Compensate, MaxRate: 90000}, p.Prescription)
	assert.True(t, p.Date.IsZero())

	base := map[string]string{"field_name": "f", "type": "seeding", "n_zones": "3", "index": "ndvi"}
	for _, tc := range []struct{ key, value, param string }{
		{"type", "", "type"},
		{"type", "manure", "type"},
		{"index", "", "index"},
		{"n_zones", "-2", "n_zones"},
		{"date", "2019-06-20", "date"}, // seeding takes no date
		{"field_name", "", "field_name"},
	} {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		m[tc.key] = tc.value
		_, err := ParsePrescriptionParams(getter(m))
		var e *Error
		require.True(t, errors.As(err, &e), "%s=%s: %v", tc.key, tc.value, err)
		assert.True(t, strings.HasPrefix(e.Msg, tc.param+": "), "names %s: %v", tc.param, err)
	}
	_, err = ParsePrescriptionParams(getter(map[string]string{"field_name": "f", "type": "n_fertilizer", "n_zones": "3", "index": "ndvi", "date": "June"}))
	assert.ErrorContains(t, err, "YYYY-MM-DD")
}
