package geo

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/paulmach/orb"
)

// ErrInvalidGeoJSON is matched (errors.Is) by every ParseGeometry and
// ReadFeatures error: the input is not GeoJSON of the expected shape.
var ErrInvalidGeoJSON = errors.New("invalid GeoJSON")

// Feature is one polygonal GeoJSON feature.
type Feature struct {
	ID any // the feature's "id" member, nil when absent
	// Name is the "field_name" property, or "name" when there is no "field_name"
	// (the two spellings the field files use); empty when neither is a string.
	Name       string
	Properties map[string]any
	Geometry   orb.MultiPolygon
}

// rawObject is any GeoJSON object; only the members of its type are used.
type rawObject struct {
	Type        string            `json:"type"`
	Coordinates json.RawMessage   `json:"coordinates"`
	Geometry    json.RawMessage   `json:"geometry"`
	Properties  map[string]any    `json:"properties"`
	Features    []json.RawMessage `json:"features"`
	ID          any               `json:"id"`
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidGeoJSON, fmt.Sprintf(format, args...))
}

// ParseGeometry reads a GeoJSON Polygon or MultiPolygon, a Feature holding
// one, or a FeatureCollection of exactly one such feature, and returns it as
// a MultiPolygon (a Polygon becomes a one-element MultiPolygon). Coordinates
// are returned as given (no reprojection, no validation: see ValidateLonLat);
// positions must have at least two numbers, and a third (height) is dropped.
// Every error matches ErrInvalidGeoJSON and says what was wrong.
func ParseGeometry(data []byte) (orb.MultiPolygon, error) {
	var o rawObject
	if err := json.Unmarshal(data, &o); err != nil {
		return nil, invalid("%v", err)
	}
	switch o.Type {
	case "Polygon", "MultiPolygon":
		return decodeGeometry(o)
	case "Feature":
		return featureGeometry(o)
	case "FeatureCollection":
		if len(o.Features) != 1 {
			return nil, invalid("FeatureCollection has %d features, want exactly one polygon feature", len(o.Features))
		}
		var f rawObject
		if err := json.Unmarshal(o.Features[0], &f); err != nil {
			return nil, invalid("feature 0: %v", err)
		}
		if f.Type != "Feature" {
			return nil, invalid("feature 0 has type %q, want Feature", f.Type)
		}
		mp, err := featureGeometry(f)
		if err != nil {
			return nil, fmt.Errorf("feature 0: %w", err)
		}
		return mp, nil
	case "":
		return nil, invalid("no \"type\" member")
	default:
		return nil, invalid("type %q is not a Polygon, MultiPolygon, Feature or FeatureCollection", o.Type)
	}
}

// ReadFeatures reads a FeatureCollection whose features all have Polygon or
// MultiPolygon geometry (a single Feature is accepted as a collection of one).
// Every error matches ErrInvalidGeoJSON and names the offending feature.
func ReadFeatures(data []byte) ([]Feature, error) {
	var o rawObject
	if err := json.Unmarshal(data, &o); err != nil {
		return nil, invalid("%v", err)
	}
	var raws []json.RawMessage
	switch o.Type {
	case "FeatureCollection":
		raws = o.Features
	case "Feature":
		raws = []json.RawMessage{data}
	default:
		return nil, invalid("type %q is not a FeatureCollection", o.Type)
	}
	out := make([]Feature, 0, len(raws))
	for i, raw := range raws {
		var f rawObject
		if err := json.Unmarshal(raw, &f); err != nil {
			return nil, invalid("feature %d: %v", i, err)
		}
		if f.Type != "Feature" {
			return nil, invalid("feature %d has type %q, want Feature", i, f.Type)
		}
		mp, err := featureGeometry(f)
		if err != nil {
			return nil, fmt.Errorf("feature %d: %w", i, err)
		}
		name, ok := f.Properties["field_name"].(string)
		if !ok {
			name, _ = f.Properties["name"].(string)
		}
		out = append(out, Feature{ID: f.ID, Name: name, Properties: f.Properties, Geometry: mp})
	}
	return out, nil
}

func featureGeometry(f rawObject) (orb.MultiPolygon, error) {
	g := bytes.TrimSpace(f.Geometry)
	if len(g) == 0 || bytes.Equal(g, []byte("null")) {
		return nil, invalid("feature has no geometry")
	}
	var o rawObject
	if err := json.Unmarshal(g, &o); err != nil {
		return nil, invalid("geometry: %v", err)
	}
	if o.Type != "Polygon" && o.Type != "MultiPolygon" {
		return nil, invalid("geometry type %q is not a Polygon or MultiPolygon", o.Type)
	}
	return decodeGeometry(o)
}

func decodeGeometry(o rawObject) (orb.MultiPolygon, error) {
	if len(o.Coordinates) == 0 {
		return nil, invalid("%s has no coordinates", o.Type)
	}
	if o.Type == "Polygon" {
		var c [][][]float64
		if err := json.Unmarshal(o.Coordinates, &c); err != nil {
			return nil, invalid("Polygon coordinates: %v", err)
		}
		p, err := polygonFrom(c)
		if err != nil {
			return nil, invalid("Polygon: %v", err)
		}
		return orb.MultiPolygon{p}, nil
	}
	var c [][][][]float64
	if err := json.Unmarshal(o.Coordinates, &c); err != nil {
		return nil, invalid("MultiPolygon coordinates: %v", err)
	}
	if len(c) == 0 {
		return nil, invalid("MultiPolygon has no polygons")
	}
	mp := make(orb.MultiPolygon, len(c))
	for i, pc := range c {
		p, err := polygonFrom(pc)
		if err != nil {
			return nil, invalid("MultiPolygon polygon %d: %v", i, err)
		}
		mp[i] = p
	}
	return mp, nil
}

func polygonFrom(c [][][]float64) (orb.Polygon, error) {
	if len(c) == 0 {
		return nil, errors.New("no rings")
	}
	p := make(orb.Polygon, len(c))
	for i, rc := range c {
		r := make(orb.Ring, len(rc))
		for j, pos := range rc {
			if len(pos) < 2 {
				return nil, fmt.Errorf("ring %d position %d has %d numbers, want 2 or 3", i, j, len(pos))
			}
			if math.IsNaN(pos[0]) || math.IsNaN(pos[1]) || math.IsInf(pos[0], 0) || math.IsInf(pos[1], 0) {
				return nil, fmt.Errorf("ring %d position %d is not finite", i, j)
			}
			r[j] = orb.Point{pos[0], pos[1]}
		}
		p[i] = r
	}
	return p, nil
}
