package zoning

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// LayerType is the type of a §2.3 layer object.
type LayerType string

// The layer types of §2.3.
const (
	CropHealth LayerType = "crop_health"
	Custom     LayerType = "custom"
)

// MaxLayers bounds the number of layers one request may combine.
const MaxLayers = 16

// ErrInvalidLayers is matched (errors.Is) by every error about the layers
// JSON; a server answers it with 400.
var ErrInvalidLayers = errors.New("invalid layers")

// ErrNoCropHealthLayer is returned when no crop_health layer is given (§2.3 rule 1).
// It also matches ErrInvalidLayers.
var ErrNoCropHealthLayer = fmt.Errorf("%w: at least one crop_health layer is required", ErrInvalidLayers)

// LayerError describes what is wrong with one layer object.
type LayerError struct {
	Layer  int    // position in the array, from 0
	Field  string // the offending key, if any
	Reason string
}

func (e *LayerError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("layer %d: %s: %s", e.Layer, e.Field, e.Reason)
	}
	return fmt.Sprintf("layer %d: %s", e.Layer, e.Reason)
}

// Is makes errors.Is(err, ErrInvalidLayers) true.
func (e *LayerError) Is(target error) bool { return target == ErrInvalidLayers }

// LayerSpec is one validated §2.3 layer object.
//
// A crop_health layer is an index either on one Date or averaged over the
// usable images between StartDate and EndDate (inclusive); a custom layer is
// the numeric Attribute of the uploaded shapefile Filename, or band 1 of the
// uploaded GeoTIFF Filename (IsRaster).
//
// Weight is the layer's relative influence on the clustering: each layer is
// standardized (z-score over the field's valid pixels) and scaled by
// sqrt(Weight), so its share of the squared distances k-means minimizes is
// Weight / (sum of weights). Weight 2 therefore counts twice as much as
// weight 1, and weight 0 leaves the layer out.
type LayerSpec struct {
	Type      LayerType
	Weight    float64
	Index     string    // crop_health
	Date      time.Time // crop_health, single-date form
	StartDate time.Time // crop_health, date-range form
	EndDate   time.Time
	Filename  string // custom: the .shp file name
	Attribute string // custom
}

// IsRaster reports whether a custom layer names a GeoTIFF (.tif, .tiff).
func (l LayerSpec) IsRaster() bool {
	ext := strings.ToLower(extension(l.Filename))
	return ext == ".tif" || ext == ".tiff"
}

// IsRange reports whether a crop_health layer uses the date-range form.
func (l LayerSpec) IsRange() bool { return l.Date.IsZero() }

type layerJSON struct {
	Type      *string      `json:"type"`
	Weight    *json.Number `json:"weight"`
	Date      *string      `json:"date"`
	StartDate *string      `json:"start_date"`
	EndDate   *string      `json:"end_date"`
	Index     *string      `json:"index"`
	Filename  *string      `json:"filename"`
	Attribute *string      `json:"attribute"`
}

// ParseLayers parses and validates the layers form value of §4.1: a JSON
// array of §2.3 layer objects. Every error matches ErrInvalidLayers; errors
// about one layer are *LayerError.
func ParseLayers(data []byte) ([]LayerSpec, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var raw []layerJSON
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%w: not a JSON array of layer objects: %v", ErrInvalidLayers, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: trailing data after the JSON array", ErrInvalidLayers)
	}
	if len(raw) == 0 {
		return nil, ErrNoCropHealthLayer
	}
	if len(raw) > MaxLayers {
		return nil, fmt.Errorf("%w: %d layers, at most %d", ErrInvalidLayers, len(raw), MaxLayers)
	}
	specs := make([]LayerSpec, len(raw))
	var total float64
	health := false
	for i, r := range raw {
		s, err := r.spec(i)
		if err != nil {
			return nil, err
		}
		specs[i] = s
		total += s.Weight
		health = health || s.Type == CropHealth
	}
	if !health {
		return nil, ErrNoCropHealthLayer
	}
	if total <= 0 {
		return nil, fmt.Errorf("%w: all weights are 0", ErrInvalidLayers)
	}
	return specs, nil
}

func (r layerJSON) spec(i int) (LayerSpec, error) {
	bad := func(field, reason string) error { return &LayerError{Layer: i, Field: field, Reason: reason} }
	var s LayerSpec
	if r.Type == nil {
		return s, bad("type", "missing")
	}
	s.Type = LayerType(*r.Type)
	if r.Weight == nil {
		return s, bad("weight", "missing")
	}
	w, err := r.Weight.Float64()
	if err != nil || math.IsNaN(w) || math.IsInf(w, 0) || w < 0 || w > 1e6 {
		return s, bad("weight", fmt.Sprintf("%s is not a number between 0 and 1e6", r.Weight.String()))
	}
	s.Weight = w
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return strings.TrimSpace(*p)
	}
	switch s.Type {
	case CropHealth:
		s.Index = strings.ToLower(str(r.Index))
		if s.Index == "" {
			return s, bad("index", "missing")
		}
		if r.Filename != nil || r.Attribute != nil {
			return s, bad("", "filename and attribute belong to custom layers")
		}
		switch {
		case r.Date != nil && (r.StartDate != nil || r.EndDate != nil):
			return s, bad("date", "give either date or start_date and end_date, not both")
		case r.Date != nil:
			if s.Date, err = parseDate(*r.Date); err != nil {
				return s, bad("date", err.Error())
			}
		case r.StartDate != nil && r.EndDate != nil:
			if s.StartDate, err = parseDate(*r.StartDate); err != nil {
				return s, bad("start_date", err.Error())
			}
			if s.EndDate, err = parseDate(*r.EndDate); err != nil {
				return s, bad("end_date", err.Error())
			}
			if s.EndDate.Before(s.StartDate) {
				return s, bad("end_date", "before start_date")
			}
		case r.StartDate != nil:
			return s, bad("end_date", "missing (start_date needs end_date)")
		case r.EndDate != nil:
			return s, bad("start_date", "missing (end_date needs start_date)")
		default:
			return s, bad("date", "missing (give date or start_date and end_date)")
		}
	case Custom:
		s.Filename, s.Attribute = str(r.Filename), str(r.Attribute)
		if s.Filename == "" {
			return s, bad("filename", "missing")
		}
		switch ext := strings.ToLower(extension(s.Filename)); {
		case ext == ".shp":
			if s.Attribute == "" {
				return s, bad("attribute", "missing (the shapefile's numeric attribute)")
			}
		case ext == ".tif" || ext == ".tiff":
			// A raster's band 1; attribute, when given, only names the layer.
		default:
			return s, bad("filename", fmt.Sprintf("%q is neither a .shp nor a .tif/.tiff file", s.Filename))
		}
		if r.Index != nil || r.Date != nil || r.StartDate != nil || r.EndDate != nil {
			return s, bad("", "index and dates belong to crop_health layers")
		}
	default:
		return s, bad("type", fmt.Sprintf("%q is neither crop_health nor custom", *r.Type))
	}
	return s, nil
}

func parseDate(s string) (time.Time, error) {
	t, err := time.Parse(time.DateOnly, strings.TrimSpace(s))
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a YYYY-MM-DD date", s)
	}
	return t, nil
}

// extension is the file name's extension with its dot ("" when none).
func extension(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 && !strings.ContainsAny(name[i:], `/\`) {
		return name[i:]
	}
	return ""
}

// Layer is one layer's values on the field's pixel grid, row-major, NaN
// where missing.
type Layer struct {
	Name   string // e.g. "ndvi" or "RABA_ID"; used in messages
	Type   LayerType
	Values []float64
	// Weight is the relative influence (see LayerSpec).
	Weight float64
}
