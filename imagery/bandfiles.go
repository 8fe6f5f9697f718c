package imagery

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/imagery/geotiff"
)

// BandFilesError is a folder of band files that is not one scene; its
// message says which files disagree and how.
type BandFilesError struct{ Msg string }

func (e *BandFilesError) Error() string { return e.Msg }

func bandFilesError(format string, args ...any) error {
	return &BandFilesError{Msg: fmt.Sprintf(format, args...)}
}

// CheckBandFiles checks that the band files in dir (one GeoTIFF a band, as
// an uploaded scene is received) are one scene: GeoTIFFs in one CRS
// covering one extent (bands of another resolution cover it with their own
// pixels; half a coarse pixel of slack) and, when they carry acquisition
// dates (the metadata keys OpenScene dates a scene by), the same date. It
// returns that date as YYYY-MM-DD in UTC ("" when no file carries one).
// A folder that is not one scene is a *BandFilesError.
func CheckBandFiles(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("uploaded scene: %w", err)
	}
	var (
		refName, date, dateBand string
		ref                     geo.Grid
	)
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), filepath.Ext(e.Name()))
		f, err := geotiff.OpenFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return "", bandFilesError("band %s is not a readable GeoTIFF: %v", name, err)
		}
		g, md := f.Grid(), f.Metadata()
		f.Close()
		if g.EPSG == 0 {
			return "", bandFilesError("band %s has no EPSG code", name)
		}
		switch {
		case refName == "":
			refName, ref = name, g
		case g.EPSG != ref.EPSG:
			return "", bandFilesError("bands %s (EPSG:%d) and %s (EPSG:%d) are in different CRS: send the bands of one scene", refName, ref.EPSG, name, g.EPSG)
		case !sameExtent(ref, g):
			return "", bandFilesError("bands %s and %s cover different extents (%v, %v): send the bands of one scene", refName, name, ref.Bound(), g.Bound())
		}
		if t := metadataDate(md); !t.IsZero() {
			d := t.UTC().Format(time.DateOnly)
			if date != "" && d != date {
				return "", bandFilesError("bands %s and %s are of different dates (%s, %s): send the bands of one scene", dateBand, name, date, d)
			}
			date, dateBand = d, name
		}
	}
	return date, nil
}

// sameExtent reports whether two grids cover one extent, within half the
// coarser pixel (a 20 m band rounds a 10 m extent to its own pixels).
func sameExtent(a, b geo.Grid) bool {
	ba, bb := a.Bound(), b.Bound()
	tol := max(a.DX, a.DY, b.DX, b.DY) / 2
	return math.Abs(ba.Min[0]-bb.Min[0]) <= tol && math.Abs(ba.Min[1]-bb.Min[1]) <= tol &&
		math.Abs(ba.Max[0]-bb.Max[0]) <= tol && math.Abs(ba.Max[1]-bb.Max[1]) <= tol
}
