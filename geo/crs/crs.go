// Package crs transforms coordinates between the EPSG coordinate reference
// systems cropkit supports, behind a small interface over github.com/wroge/wgs84/v2.
//
// API CONTRACT (stub, to be implemented): see the doc of each declaration.
package crs

import (
	"errors"
	"fmt"

	"github.com/paulmach/orb"
)

// ErrUnsupportedCRS is matched (errors.Is) by every error about an EPSG code
// this package cannot transform.
var ErrUnsupportedCRS = errors.New("unsupported CRS")

// UnsupportedError names the EPSG code that cannot be used.
type UnsupportedError struct{ EPSG int }

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("unsupported CRS EPSG:%d", e.EPSG)
}

// Is makes errors.Is(err, ErrUnsupportedCRS) true.
func (e *UnsupportedError) Is(target error) bool { return target == ErrUnsupportedCRS }

// Transformer maps coordinates from one CRS to another. X is easting or
// longitude, Y northing or latitude (GeoJSON axis order, whatever the EPSG axis order).
type Transformer interface {
	Transform(x, y float64) (float64, float64)
}

// New returns the transformer from EPSG code from to EPSG code to, or an
// *UnsupportedError when either is not supported.
func New(from, to int) (Transformer, error) {
	return nil, errors.New("crs: not implemented")
}

// Supported reports whether EPSG code epsg can be used with New.
func Supported(epsg int) bool { return false }

// Project returns a copy of g with every point transformed by t.
func Project(g orb.Geometry, t Transformer) orb.Geometry { return nil }
