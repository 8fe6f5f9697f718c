package imagery

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// stacItem is the part of a STAC Item cropkit reads.
type stacItem struct {
	Type       string                     `json:"type"`
	ID         string                     `json:"id"`
	Collection string                     `json:"collection"`
	Properties map[string]json.RawMessage `json:"properties"`
	Assets     map[string]stacAsset       `json:"assets"`
}

// stacBand is one entry of an asset's eo:bands (STAC 1.0) or bands (STAC 1.1).
type stacBand struct {
	Name         string `json:"name"`
	CommonName   string `json:"common_name"`
	EOCommonName string `json:"eo:common_name"`
}

type stacAsset struct {
	Href     string          `json:"href"`
	Type     string          `json:"type"`
	ProjEPSG json.RawMessage `json:"proj:epsg"`
	ProjCode json.RawMessage `json:"proj:code"`
	GSD      json.RawMessage `json:"gsd"`
	// Alternate holds other locations of the file (alternate-assets
	// extension): CDSE gives an s3:// href and an https alternate.
	Alternate map[string]struct {
		Href string `json:"href"`
	} `json:"alternate"`
	RasterBands []struct {
		Scale             *float64        `json:"scale"`
		Offset            *float64        `json:"offset"`
		SpatialResolution json.RawMessage `json:"spatial_resolution"`
	} `json:"raster:bands"`
	// RasterScale and RasterOffset are STAC 1.1 / raster v2 fields put
	// directly on the asset (CDSE).
	RasterScale  *float64   `json:"raster:scale"`
	RasterOffset *float64   `json:"raster:offset"`
	EOBands      []stacBand `json:"eo:bands"`
	Bands        []stacBand `json:"bands"`
}

// stacBandName maps Earth Search and CDSE asset keys to Sentinel-2 band names.
func stacBandName(key string) string {
	k := strings.ToLower(key)
	switch k {
	case "coastal":
		return "B01"
	case "blue":
		return "B02"
	case "green":
		return "B03"
	case "red":
		return "B04"
	case "rededge1":
		return "B05"
	case "rededge2":
		return "B06"
	case "rededge3":
		return "B07"
	case "nir":
		return "B08"
	case "nir08":
		return "B8A"
	case "nir09":
		return "B09"
	case "cirrus":
		return "B10"
	case "swir16":
		return "B11"
	case "swir22":
		return "B12"
	case "scl":
		return "SCL"
	case "clm", "cloud_mask", "cloudmask":
		return "CLM"
	}
	// CDSE and older keys: B04, B04_10m, B8A_20m, SCL_20m.
	u := strings.ToUpper(key)
	if i := strings.IndexByte(u, '_'); i > 0 {
		u = u[:i]
	}
	if m := bandFileName.FindStringSubmatch(u + ".TIF"); m != nil {
		return m[1]
	}
	return ""
}

// projEPSG reads the EPSG code of STAC projection fields: proj:code
// ("EPSG:32631", projection extension v2) first, then proj:epsg (32631, v1).
// 0 when neither names an EPSG code.
func projEPSG(code, epsg json.RawMessage) int {
	var c string
	if len(code) > 0 && json.Unmarshal(code, &c) == nil {
		if v, ok := strings.CutPrefix(strings.ToUpper(strings.TrimSpace(c)), "EPSG:"); ok {
			if n, err := strconv.Atoi(v); err == nil && n > 0 {
				return n
			}
		}
	}
	var n float64
	if len(epsg) > 0 && json.Unmarshal(epsg, &n) == nil && n > 0 && n == float64(int(n)) {
		return int(n)
	}
	return 0
}

// loadSTAC reads a STAC item from a file or URL and registers its band assets.
func (s *Scene) loadSTAC(ctx context.Context, src string, isURL bool) (time.Time, error) {
	var data []byte
	var err error
	if isURL {
		data, err = s.fetch(ctx, src)
	} else {
		data, err = os.ReadFile(src)
	}
	if err != nil {
		return time.Time{}, err
	}
	return s.parseSTAC(data, src, isURL)
}

// parseSTAC registers the band assets of the STAC item data located at src
// and returns its acquisition time (zero if it has none). isURL: the item was
// fetched from src over the network, so none of its hrefs may name a local file.
func (s *Scene) parseSTAC(data []byte, src string, isURL bool) (time.Time, error) {
	var item stacItem
	if err := json.Unmarshal(data, &item); err != nil {
		return time.Time{}, fmt.Errorf("parse STAC item: %w", err)
	}
	if item.Type != "" && item.Type != "Feature" {
		return time.Time{}, fmt.Errorf("STAC item: type %q, want Feature", item.Type)
	}
	s.id = item.ID
	sensor, err := stacSensor(item.Collection, item.Properties)
	if err != nil {
		return time.Time{}, err
	}
	s.sensor = sensor
	var date time.Time
	for _, key := range []string{"datetime", "start_datetime"} {
		var dt string
		if raw, ok := item.Properties[key]; ok && json.Unmarshal(raw, &dt) == nil {
			if t, ok := parseTime(dt); ok {
				date = t
				break
			}
		}
	}
	itemEPSG := projEPSG(item.Properties["proj:code"], item.Properties["proj:epsg"])
	rad := newSTACRadiometry(item)
	loc := itemLocation{base: src, remote: isURL}
	chosen, unreadable, err := selectAssets(item, loc)
	if err != nil {
		return time.Time{}, err
	}
	switch sensor.Family() {
	case FamilyLandsat:
		return date, s.addLandsatAssets(item, loc, chosen, unreadable, itemEPSG, rad)
	case FamilySentinel1:
		return date, s.addRadarAssets(chosen, unreadable)
	}
	for _, c := range chosen {
		b := &band{name: c.band, src: c.href, epsg: itemEPSG}
		if e := projEPSG(c.asset.ProjCode, c.asset.ProjEPSG); e != 0 {
			b.epsg = e // CDSE puts the projection on each asset
		}
		if c.band != "SCL" && c.band != "CLM" {
			b.scale, b.add, b.explicitScale = rad.scaling(c.asset)
		}
		s.addBand(b)
	}
	s.unreadable = unreadable
	return date, nil
}

// fetch GETs a small document (a STAC item), at most 16 MiB.
func (s *Scene) fetch(ctx context.Context, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 16<<20))
}
