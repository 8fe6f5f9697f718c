package archive

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/cropkit/cropkit/geo/crs"
	"github.com/cropkit/cropkit/zoning"
)

// ZonesParams are the §4.1 /v1/variable-rate-zones form values (the token
// and the files parts aside).
type ZonesParams struct {
	FieldName     string
	Zones         int // n_zones
	DstEPSG       int // dst_crs, default 4326
	Layers        []zoning.LayerSpec
	ParcelGeoJSON []byte // parcel_geojson, nil when absent
	Format        zoning.Format
	// Prescription is the dose rule of the DOSE property: type (default
	// n_fertilizer), strategy, base_rate, min_rate, max_rate.
	Prescription zoning.Prescription
	MinAreaHa    float64 // min_area_ha, default zoning.DefaultMinAreaHa
	Simplify     float64 // simplify: boundary simplification tolerance in metres, 0 = none
	// Sensor is the crop-health layers' sensor family (SensorFamily; "" each
	// index's default; "any" refused: grids differ).
	Sensor string
}

// PrescriptionParams are the §4.3 /prescription_maps/get_zones query
// values (the token aside).
type PrescriptionParams struct {
	FieldName string
	Zones     int    // n_zones
	Index     string // the index the field must be registered for
	// Date is the n_fertilizer image date (zero: the latest usable image);
	// seeding takes no date and uses the mean over the season's usable images.
	Date         time.Time
	Prescription zoning.Prescription // type (required), strategy, base_rate, min_rate, max_rate
	DstEPSG      int                 // dst_crs, default 4326
	Format       zoning.Format
	MinAreaHa    float64
	Simplify     float64
	// Sensor is the image's sensor family, as ZonesParams.Sensor.
	Sensor string
}

// ParseZonesParams reads and validates the §4.1 form values through get
// (e.g. http.Request.FormValue). Errors are ErrInvalid naming the
// parameter, or match zoning.ErrInvalidLayers (ZoneError maps those).
func ParseZonesParams(get func(key string) string) (ZonesParams, error) {
	p, err := parseZonesParams(get)
	return p, zoneError(err)
}

func parseZonesParams(get func(key string) string) (ZonesParams, error) {
	p := ZonesParams{Sensor: strings.TrimSpace(get("sensor"))}
	var err error
	if p.FieldName, err = requiredValue(get, "field_name"); err != nil {
		return p, err
	}
	if p.Zones, err = parseZones(get); err != nil {
		return p, err
	}
	if p.DstEPSG, err = parseDstCRS(get); err != nil {
		return p, err
	}
	layers, err := requiredValue(get, "layers")
	if err != nil {
		return p, err
	}
	if p.Layers, err = zoning.ParseLayers([]byte(layers)); err != nil {
		return p, err
	}
	if s := strings.TrimSpace(get("parcel_geojson")); s != "" {
		p.ParcelGeoJSON = []byte(s)
	}
	if p.Format, err = parseFormatParam(get); err != nil {
		return p, err
	}
	typ := zoning.PrescriptionType(strings.TrimSpace(get("type")))
	if typ == "" {
		typ = zoning.NFertilizer
	}
	if p.Prescription, err = parseRates(get, typ); err != nil {
		return p, err
	}
	if p.MinAreaHa, err = parseMinArea(get); err != nil {
		return p, err
	}
	p.Simplify, err = parseSimplify(get)
	return p, err
}

// ParsePrescriptionParams reads and validates the §4.3 query values through get.
// Errors are ErrInvalid naming the parameter.
func ParsePrescriptionParams(get func(key string) string) (PrescriptionParams, error) {
	p, err := parsePrescriptionParams(get)
	return p, zoneError(err)
}

func parsePrescriptionParams(get func(key string) string) (PrescriptionParams, error) {
	p := PrescriptionParams{Sensor: strings.TrimSpace(get("sensor"))}
	var err error
	if p.FieldName, err = requiredValue(get, "field_name"); err != nil {
		return p, err
	}
	typ, err := requiredValue(get, "type")
	if err != nil {
		return p, err
	}
	if p.Zones, err = parseZones(get); err != nil {
		return p, err
	}
	if p.Index, err = requiredValue(get, "index"); err != nil {
		return p, err
	}
	p.Index = strings.ToLower(p.Index)
	if p.Prescription, err = parseRates(get, zoning.PrescriptionType(typ)); err != nil {
		return p, err
	}
	if d := strings.TrimSpace(get("date")); d != "" {
		if p.Prescription.Type != zoning.NFertilizer {
			return p, Invalid("%s: %s", "date", "only n_fertilizer takes a date; seeding uses the mean over the season's usable images")
		}
		if p.Date, err = time.Parse(time.DateOnly, d); err != nil {
			return p, Invalid("date: %q is not a date YYYY-MM-DD", d)
		}
	}
	if p.DstEPSG, err = parseDstCRS(get); err != nil {
		return p, err
	}
	if p.Format, err = parseFormatParam(get); err != nil {
		return p, err
	}
	if p.MinAreaHa, err = parseMinArea(get); err != nil {
		return p, err
	}
	p.Simplify, err = parseSimplify(get)
	return p, err
}

func requiredValue(get func(string) string, key string) (string, error) {
	v := strings.TrimSpace(get(key))
	if v == "" {
		return "", Invalid("%s: %s", key, "required")
	}
	return v, nil
}

func parseZones(get func(string) string) (int, error) {
	s, err := requiredValue(get, "n_zones")
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > zoning.MaxZones {
		return 0, Invalid("%s: %s", "n_zones", fmt.Sprintf("%q is not a whole number from 1 to %d", s, zoning.MaxZones))
	}
	return n, nil
}

func parseDstCRS(get func(string) string) (int, error) {
	s := strings.TrimSpace(get("dst_crs"))
	if s == "" {
		return 4326, nil
	}
	code, err := crs.ParseEPSG(s)
	if err != nil {
		return 0, Invalid("%s: %s", "dst_crs", err.Error())
	}
	return code, nil
}

func parseFormatParam(get func(string) string) (zoning.Format, error) {
	f, err := zoning.ParseFormat(get("format"))
	if err != nil {
		return "", Invalid("%s: %s", "format", err.Error())
	}
	return f, nil
}

func parseRates(get func(string) string, typ zoning.PrescriptionType) (zoning.Prescription, error) {
	p := zoning.Prescription{Type: typ, Strategy: zoning.Strategy(strings.TrimSpace(get("strategy")))}
	for _, r := range []struct {
		key string
		dst *float64
	}{{"base_rate", &p.BaseRate}, {"min_rate", &p.MinRate}, {"max_rate", &p.MaxRate}} {
		s := strings.TrimSpace(get(r.key))
		if s == "" {
			continue
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
			return p, Invalid("%s: %s", r.key, fmt.Sprintf("%q is not a positive number", s))
		}
		*r.dst = v
	}
	if err := p.WithDefaults().Validate(); err != nil {
		d := p.WithDefaults()
		param := "base_rate"
		switch {
		case p.Type != zoning.NFertilizer && p.Type != zoning.Seeding:
			param = "type"
		case p.Strategy != "" && p.Strategy != zoning.Compensate && p.Strategy != zoning.Proportional:
			param = "strategy"
		case p.MinRate != 0 && d.MinRate > d.BaseRate:
			param = "min_rate"
		case p.MaxRate != 0 && d.MaxRate < d.BaseRate:
			param = "max_rate"
		}
		return p, Invalid("%s: %s", param, strings.TrimPrefix(err.Error(), zoning.ErrInvalidPrescription.Error()+": "))
	}
	return p, nil
}

func parseMinArea(get func(string) string) (float64, error) {
	s := strings.TrimSpace(get("min_area_ha"))
	if s == "" {
		return zoning.DefaultMinAreaHa, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || v < 0 || v > 1000 {
		return 0, Invalid("%s: %s", "min_area_ha", fmt.Sprintf("%q is not a number of hectares from 0 to 1000", s))
	}
	if v == 0 {
		return -1, nil // 0 asks for no sieve; Options treats 0 as the default
	}
	return v, nil
}

func parseSimplify(get func(string) string) (float64, error) {
	s := strings.TrimSpace(get("simplify"))
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v >= 0) || v > 1000 {
		return 0, Invalid("%s: %s", "simplify", fmt.Sprintf("%q is not a tolerance in metres from 0 to 1000", s))
	}
	return v, nil
}
