package zoning

import (
	"errors"
	"fmt"

	"github.com/cropkit/cropkit/geo"
	"github.com/paulmach/orb"
)

// ErrInvalidParcel is matched by every ParseParcel error (a server answers
// 400 with the error's text, which gives the reason).
var ErrInvalidParcel = errors.New("invalid parcel")

// ParcelError says why a parcel_geojson was refused.
type ParcelError struct{ Reason string }

func (e *ParcelError) Error() string { return "invalid parcel: " + e.Reason }

// Is makes errors.Is(err, ErrInvalidParcel) true.
func (e *ParcelError) Is(target error) bool { return target == ErrInvalidParcel }

// ParseParcel reads the parcel_geojson of §4.1 (a GeoJSON Polygon, or a
// Feature holding one, in EPSG:4326), checks that it is a valid polygon
// (closed rings of at least 4 points, no self-intersection: geo's
// validation) and that it lies inside field (EPSG:4326), and returns it as
// a one-polygon MultiPolygon: the Outline of a Run, whose zones tile it.
//
// Inside (spec §4.1: "only if the parcel lies inside the field") tolerates
// 1e-6° (about 0.1 m) of overhang, so a parcel drawn along the field's
// border counts as inside; a parcel crossing the border by more, or lying
// outside, is an error matching ErrInvalidParcel (a 400) that says so.
func ParseParcel(data []byte, field orb.MultiPolygon) (orb.MultiPolygon, error) {
	mp, err := geo.ParseGeometry(data)
	if err != nil {
		return nil, &ParcelError{Reason: err.Error()}
	}
	if len(mp) != 1 {
		return nil, &ParcelError{Reason: fmt.Sprintf("a MultiPolygon of %d polygons; send one Polygon", len(mp))}
	}
	if err := geo.ValidateLonLat(mp); err != nil {
		return nil, &ParcelError{Reason: err.Error()}
	}
	// 1e-6° (about 0.1 m) of slack lets a parcel drawn along the field's
	// border count as inside.
	in, err := geo.Contains(field, mp, 1e-6)
	if err != nil {
		return nil, &ParcelError{Reason: err.Error()}
	}
	if !in {
		return nil, &ParcelError{Reason: "the parcel does not lie inside the field"}
	}
	return mp, nil
}
