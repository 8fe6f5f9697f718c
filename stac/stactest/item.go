package stactest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cropkit/cropkit/geo/crs"
	"github.com/cropkit/cropkit/imagery/geotiff"
	"github.com/cropkit/cropkit/internal/testenv"
)

// Item is one item the catalogue serves, in the Earth Search v1
// sentinel-2-l2a shape.
type Item struct {
	ID string
	// Collection defaults to "sentinel-2-l2a".
	Collection string
	// Datetime is the acquisition time; it is served with its fractions of a second.
	Datetime time.Time
	// Created and Updated are served as given; zero means the time of Publish.
	Created, Updated time.Time
	// CloudCover is eo:cloud_cover in percent.
	CloudCover float64
	// NoCloudCover serves the item without eo:cloud_cover, as real
	// catalogues serve radar (Sentinel-1) items: a query or CQL2 filter on
	// it then excludes the item, as theirs do.
	NoCloudCover bool
	// EPSG is served as proj:epsg and proj:code ("EPSG:32631").
	EPSG int
	// Bbox is [west, south, east, north] in degrees; the geometry is its polygon.
	Bbox [4]float64
	// Baseline is s2:processing_baseline, omitted when empty.
	Baseline string
	// BOAOffsetApplied is earthsearch:boa_offset_applied.
	BOAOffsetApplied bool
	// RasterOffset is the raster:bands offset of reflectance assets (scale 0.0001).
	RasterOffset float64
	// Files maps Earth Search asset keys (red, nir, scl…) to local files.
	Files map[string]string
	// Data maps asset keys to in-memory file contents; it wins over Files.
	Data map[string][]byte
	// Properties are added to the item's properties.
	Properties map[string]any
}

// assetKeys maps Sentinel-2 band names to Earth Search v1 asset keys.
var assetKeys = map[string]string{
	"B01": "coastal", "B02": "blue", "B03": "green", "B04": "red", "B05": "rededge1", "B06": "rededge2",
	"B07": "rededge3", "B08": "nir", "B8A": "nir08", "B09": "nir09", "B11": "swir16", "B12": "swir22",
	"SCL": "scl", "CLM": "cloud_mask",
}

// AssetKey is the Earth Search v1 asset key of a band ("B04" → "red"), "" if none.
func AssetKey(band string) string { return assetKeys[strings.ToUpper(band)] }

var bandFile = regexp.MustCompile(`^(B0[1-9]|B1[0-2]|B8A|SCL|CLM)\.tif$`)

// tileInName finds a Sentinel-2 tile code (31UES) in a folder name.
var tileInName = regexp.MustCompile(`\d{2}[A-Z]{3}`)

// ChipItem makes the item of a scene folder (<place>/<YYYY-MM-DD>/<BAND>.tif):
// its date from the files' ACQUISITION_DATETIME_UTC (else the folder name),
// projection and footprint from the 10 m grid, cloud cover from SCL
// (classes 8, 9, 10 among pixels with data) or CLM, and one asset per band.
// The id is S2A_<tile>_<YYYYMMDD>_0_L2A, the tile taken from the place name.
func ChipItem(dir string) (Item, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return Item{}, fmt.Errorf("stactest: chip %s: %w", dir, err)
	}
	it := Item{Files: map[string]string{}, RasterOffset: 0}
	var ref *geotiff.File
	for _, e := range entries {
		m := bandFile.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		path := filepath.Join(dir, e.Name())
		it.Files[AssetKey(m[1])] = path
		f, err := geotiff.OpenFile(path)
		if err != nil {
			return Item{}, fmt.Errorf("stactest: chip %s: %w", path, err)
		}
		switch m[1] {
		case "SCL", "CLM":
			cc, err := cloudCover(f, m[1] == "SCL")
			if err != nil {
				f.Close()
				return Item{}, fmt.Errorf("stactest: chip %s: %w", path, err)
			}
			it.CloudCover = cc
		}
		if m[1] != "SCL" && m[1] != "CLM" && (ref == nil || f.Grid().DX < ref.Grid().DX) {
			if ref != nil {
				ref.Close()
			}
			ref = f
			continue
		}
		f.Close()
	}
	if ref == nil {
		return Item{}, fmt.Errorf("stactest: chip %s: no band file", dir)
	}
	defer ref.Close()
	g := ref.Grid()
	md := ref.Metadata()
	if t, err := time.Parse(time.RFC3339Nano, md["ACQUISITION_DATETIME_UTC"]); err == nil {
		it.Datetime = t.UTC()
	} else if t, err := time.Parse(time.DateOnly, filepath.Base(dir)); err == nil {
		it.Datetime = t
	} else {
		return Item{}, fmt.Errorf("stactest: chip %s: no date", dir)
	}
	it.EPSG = g.EPSG
	tr, err := crs.New(g.EPSG, 4326)
	if err != nil {
		return Item{}, fmt.Errorf("stactest: chip %s: %w", dir, err)
	}
	b := g.Bound()
	it.Bbox = [4]float64{180, 90, -180, -90}
	for _, p := range [][2]float64{{b.Min[0], b.Min[1]}, {b.Max[0], b.Min[1]}, {b.Max[0], b.Max[1]}, {b.Min[0], b.Max[1]}} {
		lon, lat := tr.Transform(p[0], p[1])
		it.Bbox = [4]float64{min(it.Bbox[0], lon), min(it.Bbox[1], lat), max(it.Bbox[2], lon), max(it.Bbox[3], lat)}
	}
	tile := tileInName.FindString(strings.ToUpper(filepath.Base(filepath.Dir(dir))))
	if tile == "" {
		tile = "00XXX"
	}
	it.ID = fmt.Sprintf("S2A_%s_%s_0_L2A", tile, it.Datetime.Format("20060102"))
	return it, nil
}

// cloudCover is the percentage of cloudy pixels among pixels with data.
func cloudCover(f *geotiff.File, scl bool) (float64, error) {
	r, err := f.ReadWindow(context.Background(), f.Grid().Full())
	if err != nil {
		return 0, err
	}
	var cloudy, valid int
	for i := 0; i < r.Len(); i++ {
		v := int(r.At(i))
		switch {
		case scl && v == 0:
		case scl:
			valid++
			if v == 8 || v == 9 || v == 10 {
				cloudy++
			}
		default:
			valid++
			if v == 1 {
				cloudy++
			}
		}
	}
	if valid == 0 {
		return 100, nil
	}
	return 100 * float64(cloudy) / float64(valid), nil
}

// Chips makes the items of dates (YYYY-MM-DD) of a place of the shared real
// data (s2/<place>), skipping the test when the data is absent outside CI.
func Chips(t testing.TB, place string, dates ...string) []Item {
	t.Helper()
	items := make([]Item, 0, len(dates))
	for _, d := range dates {
		it, err := ChipItem(testenv.DataDir(t, "s2", place, d))
		if err != nil {
			t.Fatalf("%v", err)
		}
		items = append(items, it)
	}
	return items
}
