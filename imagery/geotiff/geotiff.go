// Package geotiff reads GeoTIFF and Cloud-Optimized GeoTIFF rasters in pure Go,
// decoding only the tiles or strips a window needs, from any io.ReaderAt.
//
// API CONTRACT (stub, to be implemented): see the doc of each declaration.
package geotiff

import (
	"context"
	"errors"
	"io"

	"github.com/cropkit/cropkit/geo"
)

// DataType is a raster's sample type.
type DataType int

// The sample types cropkit reads.
const (
	Uint8 DataType = iota + 1
	Uint16
	Int16
	Float32
)

// Raster is a decoded window of one band. Exactly one of the typed slices is
// set, per Type, row-major with Window.Cols samples per row.
type Raster struct {
	Window geo.Window
	Type   DataType
	U8     []uint8
	U16    []uint16
	I16    []int16
	F32    []float32
}

// At returns sample i (row-major index within the window) as float64.
func (r *Raster) At(i int) float64 { return 0 }

// File is an open GeoTIFF: its full-resolution image and any internal overviews.
type File struct{}

// Open reads the header of a GeoTIFF (classic or BigTIFF) from r.
func Open(r io.ReaderAt) (*File, error) { return nil, errors.New("geotiff: not implemented") }

// Grid is the full-resolution image's grid (EPSG from the GeoKeys, 0 if none).
func (f *File) Grid() geo.Grid { return geo.Grid{} }

// Type is the sample type.
func (f *File) Type() DataType { return 0 }

// NoData is the GDAL_NODATA value, if the file has one.
func (f *File) NoData() (float64, bool) { return 0, false }

// Metadata holds the GDAL_METADATA items (dataset and band 0 items, e.g. ACQUISITION_DATETIME_UTC).
func (f *File) Metadata() map[string]string { return nil }

// ReadWindow decodes window w of the full-resolution image (clipped to the
// image), reading only the tiles or strips that intersect it, concurrently.
func (f *File) ReadWindow(ctx context.Context, w geo.Window) (*Raster, error) {
	return nil, errors.New("geotiff: not implemented")
}
