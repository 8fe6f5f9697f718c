package imagery

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// SensorError refuses an item of a sensor cropkit does not read: it
// names the sensor (and why, when the sensor is read from other sources),
// so an item is never misread as another sensor's.
// errors.Is(err, ErrUnsupportedSensor) holds.
type SensorError struct {
	// Sensor is the sensor as the item names it ("Sentinel-3", "worldview-3").
	Sensor string
	// Reason, when set, replaces the default explanation.
	Reason string
}

func (e *SensorError) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("%s item: %s", e.Sensor, e.Reason)
	}
	return fmt.Sprintf("%s item: not supported (cropkit reads Sentinel-2, Landsat 8/9 Collection 2 Level-2 and terrain-corrected Sentinel-1 items)", e.Sensor)
}

func (e *SensorError) Unwrap() error { return ErrUnsupportedSensor }

// AssetError says why no asset of a band can be read, e.g. "JPEG 2000 only
// (CDSE): not supported". errors.Is(err, ErrUnreadableAsset) holds.
type AssetError struct {
	Band   string
	Reason string
}

func (e *AssetError) Error() string { return fmt.Sprintf("band %s: %s", e.Band, e.Reason) }

func (e *AssetError) Unwrap() error { return ErrUnreadableAsset }

// stacSensor decides the sensor of a STAC item from its platform, then its
// constellation, then its collection id. It is the one place that says which
// sensors cropkit reads from items: Sentinel-2 (also when the item names no
// sensor at all, as a plain folder-made item does), Landsat 8/9 and
// Sentinel-1 in a map projection (RTC). Sentinel-1 GRD in radar geometry
// (a collection named …grd…, as Earth Search's sentinel-1-grd) and any other
// named sensor are a *SensorError.
func stacSensor(collection string, props map[string]json.RawMessage) (Sensor, error) {
	str := func(key string) string {
		var v string
		if raw, ok := props[key]; ok {
			_ = json.Unmarshal(raw, &v)
		}
		return v
	}
	norm := func(v string) string {
		return strings.NewReplacer(" ", "-", "_", "-").Replace(strings.ToLower(strings.TrimSpace(v)))
	}
	c := norm(collection)
	sensor := Sensor("")
	for _, v := range []string{str("platform"), str("constellation")} {
		n := norm(v)
		if n == "" {
			continue
		}
		ps, ok := ParseSensor(n)
		if !ok {
			return "", &SensorError{Sensor: sensorName(n, v)}
		}
		sensor = ps
		break
	}
	if sensor == "" {
		// No platform: a collection id naming a sensor family decides; any
		// other id (a private catalogue's own names) is read as Sentinel-2.
		switch {
		case strings.Contains(c, "landsat"):
			sensor = Landsat
			if m := landsatNumber.FindStringSubmatch(c); m != nil {
				if s, ok := ParseSensor("landsat-" + m[1]); ok {
					sensor = s
				} else {
					return "", &SensorError{Sensor: sensorName(c, collection)}
				}
			}
		case strings.Contains(c, "sentinel-1"):
			sensor = Sentinel1
		default:
			for _, family := range []string{"sentinel-3", "sentinel-5p", "modis", "viirs"} {
				if strings.Contains(c, family) {
					return "", &SensorError{Sensor: sensorName(c, collection)}
				}
			}
			sensor = Sentinel2
		}
	}
	if sensor.Family() == FamilyLandsat && (strings.Contains(c, "-l1") || strings.Contains(c, "level-1")) {
		return "", &SensorError{Sensor: sensorName(string(sensor), string(sensor)) + " Level-1", Reason: "top-of-atmosphere " +
			"radiance/reflectance: not supported; cropkit reads Collection 2 Level-2 surface reflectance (landsat-c2-l2)"}
	}
	if sensor.Radar() && strings.Contains(c, "grd") && !strings.Contains(c, "rtc") {
		return "", &SensorError{Sensor: "Sentinel-1 GRD", Reason: "in radar geometry (slant/ground range with " +
			"tie points, no map projection): not supported; use a terrain-corrected collection such as Planetary Computer sentinel-1-rtc"}
	}
	return sensor, nil
}

var landsatNumber = regexp.MustCompile(`landsat-?(\d+)`)

// sensorName names a normalised platform, constellation or collection for
// messages: "landsat-8" → "Landsat 8", "sentinel-1a" → "Sentinel-1".
func sensorName(n, raw string) string {
	switch {
	case strings.Contains(n, "landsat"):
		if m := landsatNumber.FindStringSubmatch(n); m != nil {
			return "Landsat " + m[1]
		}
		return "Landsat"
	case strings.Contains(n, "sentinel-1"):
		return "Sentinel-1"
	case strings.Contains(n, "sentinel-3"):
		return "Sentinel-3"
	}
	return strings.TrimSpace(raw)
}

// stacRadiometry holds the item-level inputs of the reflectance rule.
type stacRadiometry struct {
	// baseline is s2:processing_baseline, else processing:version (CDSE),
	// else the N0xxx of the product id; "" when the item says none.
	baseline string
	// boaApplied is earthsearch:boa_offset_applied, nil when absent.
	boaApplied *bool
}

// productBaseline finds the processing baseline in a Sentinel-2 product id
// (S2A_MSIL2A_20200301T090901_N0500_R050_…).
var productBaseline = regexp.MustCompile(`_N(\d{2})(\d{2})_`)

func newSTACRadiometry(item stacItem) stacRadiometry {
	var r stacRadiometry
	for _, key := range []string{"s2:processing_baseline", "processing:version"} {
		raw, ok := item.Properties[key]
		if !ok {
			continue
		}
		var v string
		if json.Unmarshal(raw, &v) != nil {
			var f float64
			if json.Unmarshal(raw, &f) == nil {
				v = fmt.Sprintf("%05.2f", f)
			}
		}
		// processing:version is free text elsewhere: only a number counts.
		if _, ok := parseFloat(strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(v)), "N")); ok {
			r.baseline = v
			break
		}
	}
	if r.baseline == "" {
		for _, key := range []string{"s2:product_uri", "sentinel:product_id", "s2:product_id"} {
			var v string
			if raw, ok := item.Properties[key]; ok && json.Unmarshal(raw, &v) == nil {
				if m := productBaseline.FindStringSubmatch(v); m != nil {
					r.baseline = m[1] + "." + m[2]
					break
				}
			}
		}
	}
	if r.baseline == "" {
		if m := productBaseline.FindStringSubmatch(item.ID); m != nil {
			r.baseline = m[1] + "." + m[2]
		}
	}
	if raw, ok := item.Properties["earthsearch:boa_offset_applied"]; ok {
		var b bool
		if json.Unmarshal(raw, &b) == nil {
			r.boaApplied = &b
		}
	}
	return r
}

// scaling is reflectance = (DN + add)·scale of a reflectance asset, from
// what the item says, first rule that applies:
//  1. the asset's raster:bands scale/offset (STAC 1.0, raster v1);
//  2. the asset's raster:scale/raster:offset (STAC 1.1, raster v2: CDSE);
//  3. earthsearch:boa_offset_applied true: offset 0;
//  4. a processing baseline (s2:processing_baseline, processing:version or
//     the product id's N0xxx): 04.00 or later → offset −0.1, else 0.
//
// When the item says none of these (explicit false), the band file's own
// metadata decides (reflectanceScaling).
func (r stacRadiometry) scaling(a stacAsset) (scale, add float64, explicit bool) {
	if len(a.RasterBands) == 1 && (a.RasterBands[0].Scale != nil || a.RasterBands[0].Offset != nil) {
		scale, add = scaleOffset(a.RasterBands[0].Scale, a.RasterBands[0].Offset)
		return scale, add, true
	}
	if a.RasterScale != nil || a.RasterOffset != nil {
		scale, add = scaleOffset(a.RasterScale, a.RasterOffset)
		return scale, add, true
	}
	if r.boaApplied != nil && *r.boaApplied {
		return 1.0 / 10000, 0, true
	}
	if r.baseline != "" {
		if baselineAtLeast4(r.baseline) {
			return 1.0 / 10000, -1000, true
		}
		return 1.0 / 10000, 0, true
	}
	return 0, 0, false
}

// scaleOffset turns a STAC scale and offset (reflectance = DN·scale + offset)
// into the scale and DN addend of reflectance = (DN + add)·scale.
func scaleOffset(sp, op *float64) (scale, add float64) {
	scale = 1.0 / 10000
	if sp != nil && *sp > 0 {
		scale = *sp
	}
	if op != nil {
		add = *op / scale
	}
	return scale, add
}

// assetFormat ranks what an asset's bytes are.
type assetFormat int

const (
	formatGeoTIFF  assetFormat = iota // image/tiff, a COG, .tif
	formatUnknown                     // no media type and no telling extension: tried as a GeoTIFF
	formatJPEG2000                    // image/jp2, .jp2: not readable here
	formatOther                       // another media type (PNG, XML…)
)

// formatOf classifies an asset by its media type, else by its href's extension.
func formatOf(mediaType, href string) assetFormat {
	t := strings.ToLower(mediaType)
	if strings.Contains(t, "octet-stream") {
		t = "" // says nothing: the extension decides
	}
	switch {
	case strings.Contains(t, "tiff") || strings.Contains(t, "geotiff") || strings.Contains(t, "cloud-optimized"):
		return formatGeoTIFF
	case strings.Contains(t, "jp2") || strings.Contains(t, "jpeg2000") || strings.Contains(t, "jpx"):
		return formatJPEG2000
	case strings.TrimSpace(t) != "":
		return formatOther
	}
	p := href
	if u, err := url.Parse(href); err == nil && u.Path != "" {
		p = u.Path
	}
	switch strings.ToLower(path.Ext(p)) {
	case ".tif", ".tiff":
		return formatGeoTIFF
	case ".jp2", ".j2k", ".jpx":
		return formatJPEG2000
	}
	return formatUnknown
}

// publicBucketEndpoint is the https endpoint of a public S3 bucket that
// anyone may read without credentials, "" for any other bucket.
// Requester-pays buckets (sentinel-s2-l2a, sentinel-s2-l1c, usgs-landsat,
// sentinel-s1-l1c) are not public: reading them needs an AWS account.
func publicBucketEndpoint(bucket string) string {
	switch bucket {
	case "sentinel-cogs", "e84-earth-search-sentinel-data":
		return "https://" + bucket + ".s3.us-west-2.amazonaws.com"
	}
	return ""
}

func requesterPays(bucket string) bool {
	switch bucket {
	case "sentinel-s2-l2a", "sentinel-s2-l1c", "usgs-landsat", "sentinel-s1-l1c", "sentinel-s1-l2":
		return true
	}
	return false
}

// itemLocation is where an item came from: the URL it was fetched from
// (remote), or the path of a local item file.
type itemLocation struct {
	base   string
	remote bool
}

// resolve turns an href into what cropkit reads (an http(s) URL, or a path
// for a local item), or says in reason why it cannot. A remote item naming a
// local file is an ErrLocalAsset error: such an href is never opened.
func (l itemLocation) resolve(href string) (loc, reason string, err error) {
	u, perr := url.Parse(href)
	if perr != nil {
		return "", fmt.Sprintf("bad href %q", href), nil
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		return href, "", nil
	case "s3":
		if ep := publicBucketEndpoint(u.Host); ep != "" {
			return ep + "/" + strings.TrimPrefix(u.EscapedPath(), "/"), "", nil
		}
		if requesterPays(u.Host) {
			return "", fmt.Sprintf("s3://%s is a requester-pays bucket (AWS credentials needed): not supported", u.Host), nil
		}
		return "", fmt.Sprintf("s3://%s is not a known public bucket: not supported", u.Host), nil
	case "file":
		if l.remote {
			return "", "", fmt.Errorf("%w: %q in an item served over the network", ErrLocalAsset, href)
		}
		return u.Path, "", nil
	case "":
		if l.remote {
			b, err := url.Parse(l.base)
			if err != nil || (b.Scheme != "http" && b.Scheme != "https") {
				return "", fmt.Sprintf("relative href %q in an item not fetched over http(s)", href), nil
			}
			return b.ResolveReference(u).String(), "", nil
		}
		if filepath.IsAbs(href) {
			return href, "", nil
		}
		return filepath.Join(filepath.Dir(l.base), filepath.FromSlash(href)), "", nil
	}
	if l.remote {
		return "", fmt.Sprintf("href scheme %q: not supported", u.Scheme), nil
	}
	// A local item: a Windows drive letter parses as a scheme.
	if len(u.Scheme) == 1 && filepath.IsAbs(href) {
		return href, "", nil
	}
	return "", fmt.Sprintf("href scheme %q: not supported", u.Scheme), nil
}

// assetCandidate is one asset that names a band.
type assetCandidate struct {
	band, key string
	asset     stacAsset
	href      string // resolved, "" when unreadable
	format    assetFormat
	res       float64 // metres, 0 when unknown
	reason    string  // why href is "", or why the format is refused
}

func (c assetCandidate) readable() bool {
	return c.href != "" && (c.format == formatGeoTIFF || c.format == formatUnknown)
}

// rank orders candidates: readable GeoTIFF/COG first, then readable assets
// of unknown format; finer resolution first (unknown last); then key.
func (c assetCandidate) compare(d assetCandidate) int {
	r := func(c assetCandidate) int {
		switch {
		case c.readable() && c.format == formatGeoTIFF:
			return 0
		case c.readable():
			return 1
		}
		return 2
	}
	if x := cmp.Compare(r(c), r(d)); x != 0 {
		return x
	}
	if c.res != d.res {
		switch {
		case c.res == 0:
			return 1
		case d.res == 0:
			return -1
		}
		return cmp.Compare(c.res, d.res)
	}
	return strings.Compare(c.key, d.key)
}

// assetBand is the Sentinel-2 band an asset holds: from its key (red, B04,
// B04_10m), else from its single eo:bands / bands entry; "" for assets of
// several bands (visual, TCI) or none.
func assetBand(key string, a stacAsset) string {
	if n := stacBandName(key); n != "" {
		return n
	}
	// Earth Search's format twins: red-jp2, scl-jp2.
	if i := strings.LastIndexByte(key, '-'); i > 0 {
		if n := stacBandName(key[:i]); n != "" {
			return n
		}
	}
	bands := a.EOBands
	if len(bands) == 0 {
		bands = a.Bands
	}
	if len(bands) != 1 {
		return ""
	}
	for _, n := range []string{bands[0].Name, bands[0].CommonName, bands[0].EOCommonName} {
		if b := stacBandName(n); b != "" {
			return b
		}
	}
	return ""
}

// assetResolution is an asset's pixel size in metres: raster:bands
// spatial_resolution, else gsd, else a key suffix (B04_10m), else 0.
func assetResolution(key string, a stacAsset) float64 {
	num := func(raw json.RawMessage) float64 {
		var f float64
		if len(raw) > 0 && json.Unmarshal(raw, &f) == nil && f > 0 {
			return f
		}
		return 0
	}
	if len(a.RasterBands) == 1 {
		if f := num(a.RasterBands[0].SpatialResolution); f > 0 {
			return f
		}
	}
	if f := num(a.GSD); f > 0 {
		return f
	}
	if i := strings.LastIndexByte(key, '_'); i > 0 {
		if v, ok := strings.CutSuffix(strings.ToLower(key[i+1:]), "m"); ok {
			if n, err := strconv.Atoi(v); err == nil && n > 0 {
				return float64(n)
			}
		}
	}
	return 0
}

// candidate resolves an asset: its href, else the first readable of its
// alternates (https, http, then the others by name).
func (l itemLocation) candidate(band, key string, a stacAsset) (assetCandidate, error) {
	c := assetCandidate{band: band, key: key, asset: a, res: assetResolution(key, a)}
	loc, reason, err := l.resolve(a.Href)
	if err != nil {
		return c, fmt.Errorf("asset %s: %w", key, err)
	}
	c.href, c.reason = loc, reason
	c.format = formatOf(a.Type, a.Href)
	if c.href == "" {
		alts := slices.SortedFunc(maps.Keys(a.Alternate), func(x, y string) int {
			order := func(k string) int {
				switch k {
				case "https":
					return 0
				case "http":
					return 1
				}
				return 2
			}
			return cmp.Or(cmp.Compare(order(x), order(y)), strings.Compare(x, y))
		})
		for _, k := range alts {
			if loc, _, err := l.resolve(a.Alternate[k].Href); err == nil && loc != "" {
				c.href, c.reason = loc, ""
				break
			}
		}
	}
	return c, nil
}

// selectAssets chooses, for every band the item names, the asset to read:
// the best by assetCandidate.compare, whatever the map order. Bands with
// no readable asset are returned with the reason instead.
func selectAssets(item stacItem, l itemLocation) ([]assetCandidate, map[string]*AssetError, error) {
	byBand := map[string][]assetCandidate{}
	for _, key := range slices.Sorted(maps.Keys(item.Assets)) {
		a := item.Assets[key]
		band := assetBand(key, a)
		if band == "" || a.Href == "" {
			continue
		}
		c, err := l.candidate(band, key, a)
		if err != nil {
			return nil, nil, err
		}
		byBand[band] = append(byBand[band], c)
	}
	var chosen []assetCandidate
	unreadable := map[string]*AssetError{}
	for _, band := range slices.Sorted(maps.Keys(byBand)) {
		cs := byBand[band]
		slices.SortFunc(cs, assetCandidate.compare)
		if cs[0].readable() {
			chosen = append(chosen, cs[0])
			continue
		}
		unreadable[band] = &AssetError{Band: band, Reason: unreadableReason(item, cs)}
	}
	return chosen, unreadable, nil
}

// unreadableReason says why none of a band's assets can be read.
func unreadableReason(item stacItem, cs []assetCandidate) string {
	allJP2 := true
	for _, c := range cs {
		allJP2 = allJP2 && c.format == formatJPEG2000
	}
	if allJP2 {
		where := ""
		if name := catalogueOf(item); name != "" {
			where = " (" + name + ")"
		}
		return "JPEG 2000 only" + where + ": not supported (cropkit reads GeoTIFF/COG; there is no pure-Go JPEG 2000 decoder)"
	}
	for _, c := range cs {
		if c.reason != "" {
			return c.reason
		}
	}
	return fmt.Sprintf("no GeoTIFF asset (asset %s is %q): not supported", cs[0].key, cs[0].asset.Type)
}

// catalogueOf names the archive an item's assets come from when it is one
// whose limits a message should name, "" otherwise.
func catalogueOf(item stacItem) string {
	for _, a := range item.Assets {
		for _, h := range append([]string{a.Href}, altHrefs(a)...) {
			if strings.HasPrefix(h, "s3://eodata/") || strings.Contains(h, "dataspace.copernicus.eu") {
				return "CDSE"
			}
		}
	}
	return ""
}

func altHrefs(a stacAsset) []string {
	out := make([]string, 0, len(a.Alternate))
	for _, alt := range a.Alternate {
		out = append(out, alt.Href)
	}
	return out
}
