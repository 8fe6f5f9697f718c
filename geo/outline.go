package geo

import (
	"fmt"

	"github.com/paulmach/orb"
)

// OutlineLimits bound a field outline; zero members take
// DefaultOutlineLimits' values.
type OutlineLimits struct {
	// Parts bounds the polygons of a MultiPolygon.
	Parts int
	// ExtentHa bounds the area of the lon/lat bounding box, in hectares
	// (a field's imagery is read over its whole box).
	ExtentHa float64
}

// DefaultOutlineLimits are the limits of zero OutlineLimits members.
func DefaultOutlineLimits() OutlineLimits { return OutlineLimits{Parts: 100, ExtentHa: 100000} }

// ValidateOutline checks a field outline: a valid lon/lat (Multi)Polygon
// (ValidateLonLat: closed rings, no self-intersection, …) of at most
// limits.Parts polygons whose bounding box covers at most limits.ExtentHa.
// The server registers, and the CLI processes, only such outlines.
func ValidateOutline(mp orb.MultiPolygon, limits OutlineLimits) error {
	d := DefaultOutlineLimits()
	if limits.Parts <= 0 {
		limits.Parts = d.Parts
	}
	if limits.ExtentHa <= 0 {
		limits.ExtentHa = d.ExtentHa
	}
	if err := ValidateLonLat(mp); err != nil {
		return err
	}
	if len(mp) > limits.Parts {
		return fmt.Errorf("%d polygons; at most %d per field", len(mp), limits.Parts)
	}
	if ha := BoundArea(mp.Bound()) / 10000; ha > limits.ExtentHa {
		return fmt.Errorf("bounding box of %.0f ha; at most %.0f ha per field (register distant parts as separate fields)", ha, limits.ExtentHa)
	}
	return nil
}
