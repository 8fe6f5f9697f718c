package imagery

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// stacItem is the part of a STAC Item cropkit reads.
type stacItem struct {
	Type       string                     `json:"type"`
	ID         string                     `json:"id"`
	Properties map[string]json.RawMessage `json:"properties"`
	Assets     map[string]stacAsset       `json:"assets"`
}

type stacAsset struct {
	Href     string          `json:"href"`
	ProjEPSG json.RawMessage `json:"proj:epsg"`
	ProjCode json.RawMessage `json:"proj:code"`
	// Alternate holds other locations of the file (alternate-assets
	// extension): CDSE gives an s3:// href and an https alternate.
	Alternate map[string]struct {
		Href string `json:"href"`
	} `json:"alternate"`
	RasterBands []struct {
		Scale  *float64 `json:"scale"`
		Offset *float64 `json:"offset"`
	} `json:"raster:bands"`
	EOBands []struct {
		Name string `json:"name"`
	} `json:"eo:bands"`
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

// assetHref is the asset's href, or its https (else http) alternate when
// the href is not one cropkit reads (s3:// in CDSE items).
func assetHref(a stacAsset) string {
	if u, err := url.Parse(a.Href); err == nil {
		switch u.Scheme {
		case "", "http", "https", "file":
			return a.Href
		}
	}
	for _, key := range []string{"https", "http"} {
		if alt, ok := a.Alternate[key]; ok && alt.Href != "" {
			return alt.Href
		}
	}
	return a.Href
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

// assetResolution is the metres in a CDSE key suffix (B04_10m → 10), 0 if none.
func assetResolution(key string) int {
	var res int
	if i := strings.LastIndexByte(key, '_'); i > 0 {
		fmt.Sscanf(strings.ToLower(key[i+1:]), "%dm", &res)
	}
	return res
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
// and returns its acquisition time (zero if it has none).
func (s *Scene) parseSTAC(data []byte, src string, isURL bool) (time.Time, error) {
	var item stacItem
	if err := json.Unmarshal(data, &item); err != nil {
		return time.Time{}, fmt.Errorf("parse STAC item: %w", err)
	}
	if item.Type != "" && item.Type != "Feature" {
		return time.Time{}, fmt.Errorf("STAC item: type %q, want Feature", item.Type)
	}
	s.id = item.ID
	var date time.Time
	var dt string
	if raw, ok := item.Properties["datetime"]; ok && json.Unmarshal(raw, &dt) == nil {
		if t, ok := parseTime(dt); ok {
			date = t
		}
	}
	if date.IsZero() {
		if raw, ok := item.Properties["start_datetime"]; ok && json.Unmarshal(raw, &dt) == nil {
			if t, ok := parseTime(dt); ok {
				date = t
			}
		}
	}
	itemEPSG := projEPSG(item.Properties["proj:code"], item.Properties["proj:epsg"])
	var baseline string
	if raw, ok := item.Properties["s2:processing_baseline"]; ok {
		if json.Unmarshal(raw, &baseline) != nil {
			var f float64
			if json.Unmarshal(raw, &f) == nil {
				baseline = fmt.Sprintf("%05.2f", f)
			}
		}
	}
	var harmonized bool
	if raw, ok := item.Properties["earthsearch:boa_offset_applied"]; ok {
		json.Unmarshal(raw, &harmonized)
	}
	chosenRes := map[string]int{}
	for key, a := range item.Assets {
		name := stacBandName(key)
		if name == "" && len(a.EOBands) == 1 {
			name = stacBandName(a.EOBands[0].Name)
		}
		if name == "" || a.Href == "" {
			continue
		}
		// CDSE lists a band at several resolutions: keep the finest.
		res := assetResolution(key)
		if prev, ok := chosenRes[name]; ok && (res == 0 || (prev != 0 && prev <= res)) {
			continue
		}
		chosenRes[name] = res
		href, err := resolveHref(src, isURL, assetHref(a))
		if err != nil {
			return time.Time{}, fmt.Errorf("asset %s: %w", key, err)
		}
		if isURL && !strings.HasPrefix(href, "http://") && !strings.HasPrefix(href, "https://") {
			// A remote item naming a local file would read this machine's disk.
			return time.Time{}, fmt.Errorf("asset %s: %w: %q in an item served over http", key, ErrLocalAsset, a.Href)
		}
		b := &band{name: name, src: href, baseline: baseline, harmonized: harmonized, epsg: itemEPSG}
		if e := projEPSG(a.ProjCode, a.ProjEPSG); e != 0 {
			b.epsg = e // CDSE puts the projection on each asset
		}
		if name != "SCL" && name != "CLM" {
			b.scale, b.add, b.explicitScale = stacScaling(a, baseline, harmonized)
		}
		s.addBand(b)
	}
	return date, nil
}

// stacScaling applies, in order: harmonization already applied (offset 0),
// the asset's raster:bands scale/offset, and otherwise leaves the decision to
// the file's metadata and the baseline rule (explicit false).
func stacScaling(a stacAsset, baseline string, harmonized bool) (scale, add float64, explicit bool) {
	if harmonized {
		return 1.0 / 10000, 0, true
	}
	if len(a.RasterBands) == 1 && (a.RasterBands[0].Scale != nil || a.RasterBands[0].Offset != nil) {
		scale = 1.0 / 10000
		if p := a.RasterBands[0].Scale; p != nil && *p > 0 {
			scale = *p
		}
		if p := a.RasterBands[0].Offset; p != nil {
			add = *p / scale
		}
		return scale, add, true
	}
	return 0, 0, false
}

// resolveHref resolves an asset href against the item's location.
func resolveHref(item string, itemIsURL bool, href string) (string, error) {
	u, err := url.Parse(href)
	if err != nil {
		return "", err
	}
	switch u.Scheme {
	case "http", "https":
		return href, nil
	case "file":
		return u.Path, nil
	case "":
	default:
		return "", fmt.Errorf("unsupported href scheme %q in %s", u.Scheme, href)
	}
	if itemIsURL {
		base, err := url.Parse(item)
		if err != nil {
			return "", err
		}
		return base.ResolveReference(u).String(), nil
	}
	if filepath.IsAbs(href) {
		return href, nil
	}
	return filepath.Join(filepath.Dir(item), filepath.FromSlash(href)), nil
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
