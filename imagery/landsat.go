package imagery

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Landsat 8/9 OLI scenes are served under the names of the Sentinel-2
// bands they stand in for, after HLS's bandpass adjustment, so one index
// catalogue and one scale serve both sensors:
//
//	OLI band (C2 asset key)   Sentinel-2 band
//	B2 blue                   B02
//	B3 green                  B03
//	B4 red                    B04
//	B5 nir08                  B8A, and B08 (MSI has no narrow/broad NIR split on OLI)
//	B6 swir16                 B11
//	B7 swir22                 B12
//
// OLI has no red-edge band: indices over B05…B07 do not apply to Landsat.

// hlsAdjust is one band's HLS bandpass adjustment, OLI = Slope·MSI + Offset
// (surface reflectance), for Sentinel-2A MSI: HLS v2.0, "Bandpass
// adjustment", https://hls.gsfc.nasa.gov/algorithms/bandpass-adjustment/,
// from Claverie et al. 2018, "The Harmonized Landsat and Sentinel-2 surface
// reflectance data set", Remote Sensing of Environment 219, 145–161.
// cropkit inverts it, MSI = (OLI − Offset)/Slope, to bring Landsat onto
// Sentinel-2's scale (HLS itself adjusts MSI to OLI).
type hlsAdjust struct{ Slope, Offset float64 }

// hlsCoefficients returns the HLS MSI→OLI coefficients by Sentinel-2 band.
// B08 takes NIR (B8A)'s: OLI B5 is the NIR counterpart of both.
func hlsCoefficients() map[string]hlsAdjust {
	return map[string]hlsAdjust{
		"B02": {0.9778, -0.004},
		"B03": {1.0053, -0.0009},
		"B04": {0.9765, 0.0009},
		"B08": {0.9983, -0.0001},
		"B8A": {0.9983, -0.0001},
		"B11": {0.9987, -0.0011},
		"B12": {1.003, -0.0012},
	}
}

// landsatAssets maps the Collection 2 band names, lower case (STAC asset
// keys, the USGS sr_b<n> file names and plain Landsat numbering b<n>/b0<n>),
// to the Sentinel-2 bands they serve.
func landsatAssets() map[string][]string {
	return map[string][]string{
		"blue": {"B02"}, "green": {"B03"}, "red": {"B04"}, "nir08": {"B08", "B8A"}, "swir16": {"B11"}, "swir22": {"B12"},
		"sr_b2": {"B02"}, "sr_b3": {"B03"}, "sr_b4": {"B04"}, "sr_b5": {"B08", "B8A"}, "sr_b6": {"B11"}, "sr_b7": {"B12"},
		"b2": {"B02"}, "b3": {"B03"}, "b4": {"B04"}, "b5": {"B08", "B8A"}, "b6": {"B11"}, "b7": {"B12"},
		"b02": {"B02"}, "b03": {"B03"}, "b04": {"B04"}, "b05": {"B08", "B8A"}, "b06": {"B11"}, "b07": {"B12"},
	}
}

// Collection 2 Level-2 surface reflectance scaling (USGS): reflectance =
// DN·2.75e-5 − 0.2, where the file's metadata and the item's raster:bands
// do not say otherwise. Collection 1 surface reflectance is DN·1e-4.
const (
	landsatC2Scale  = 2.75e-5
	landsatC2Offset = -0.2
	landsatC1Scale  = 1e-4
)

// qaKind says how a mask band's values are read.
type qaKind int

const (
	qaCLM       qaKind = iota // s2cloudless CLM: 1 = cloud
	qaSCL                     // Sen2Cor scene classes, masked per SceneOptions.MaskClasses
	qaLandsatC2               // Landsat Collection 2 QA_PIXEL bits
	qaLandsatC1               // Landsat Collection 1 pixel_qa bits
)

// Landsat Collection 2 QA_PIXEL bits that make a pixel unusable: 0 fill,
// 1 dilated cloud, 2 cirrus, 3 cloud, 4 cloud shadow, 5 snow (USGS Landsat 8-9
// Collection 2 Level 2 Science Product Guide, table 6-3). Water (7) is usable.
const qaC2Unusable = 1<<0 | 1<<1 | 1<<2 | 1<<3 | 1<<4 | 1<<5

// Landsat Collection 1 pixel_qa bits that make a pixel unusable: 0 fill,
// 3 cloud shadow, 4 snow, 5 cloud; and cirrus confidence (bits 8–9) high.
const qaC1Unusable = 1<<0 | 1<<3 | 1<<4 | 1<<5

// landsatUsable reports whether a QA value leaves the pixel usable.
func landsatUsable(kind qaKind, v float64) bool {
	if v < 0 || v > 65535 || v != v {
		return false
	}
	q := uint32(v)
	if kind == qaLandsatC1 {
		return q&qaC1Unusable == 0 && (q>>8)&3 != 3
	}
	return q&qaC2Unusable == 0
}

// landsatFile matches the files of a Landsat folder (case-insensitive).
var landsatFile = regexp.MustCompile(`(?i)^(blue|green|red|nir08|swir16|swir22|sr_b[2-7]|b0?[2-7]|qa_pixel|qa_pixel_c1)\.tiff?$`)

// isLandsatFolder reports whether dir holds a Landsat scene: a QA_PIXEL
// file, or Collection 2 asset-key band files (red.tif, nir08.tif, …).
func isLandsatFolder(entries []os.DirEntry) bool {
	for _, e := range entries {
		m := landsatFile.FindStringSubmatch(e.Name())
		if m == nil || e.IsDir() {
			continue
		}
		switch name := strings.ToLower(m[1]); {
		case strings.HasPrefix(name, "qa_pixel"), strings.HasPrefix(name, "sr_b"),
			name == "blue", name == "green", name == "red", name == "nir08", name == "swir16", name == "swir22":
			return true
		}
	}
	return false
}

// loadLandsatFolder registers a Landsat folder's bands under their
// Sentinel-2 names, with the bandpass adjustment and the QA mask.
func (s *Scene) loadLandsatFolder(dir string, entries []os.DirEntry) {
	assets := landsatAssets()
	c1 := false
	for _, e := range entries {
		if strings.EqualFold(strings.TrimSuffix(strings.TrimSuffix(strings.ToLower(e.Name()), ".tif"), ".tiff"), "qa_pixel_c1") {
			c1 = true
		}
	}
	for _, e := range entries {
		m := landsatFile.FindStringSubmatch(e.Name())
		if m == nil || e.IsDir() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		key := m[1]
		switch strings.ToLower(key) {
		case "qa_pixel", "qa_pixel_c1":
			kind := qaLandsatC2
			if strings.ToLower(key) == "qa_pixel_c1" {
				kind = qaLandsatC1
			}
			s.mask, s.maskKind = &band{name: strings.ToUpper(key), src: path}, kind
			continue
		}
		s.addLandsatBand(key, path, assets[strings.ToLower(key)], c1)
	}
}

// addLandsatBand registers one OLI band file under the Sentinel-2 names it
// serves (one shared band: opened and cached once).
func (s *Scene) addLandsatBand(key, src string, names []string, c1 bool) *band {
	if len(names) == 0 {
		return nil
	}
	b := &band{name: key, src: src, landsat: true, landsatC1: c1, hls: hlsCoefficients()[names[0]]}
	for _, n := range names {
		s.bands[n] = b
	}
	return b
}

// landsatScaling derives a Landsat band's reflectance = (DN + add)·scale:
// GDAL REFLECTANCE_SCALE/REFLECTANCE_OFFSET items when present, else the
// collection's (C2: 2.75e-5, −0.2; C1: 1e-4, 0).
func landsatScaling(md map[string]string, c1 bool) (scale, add float64) {
	scale, offset := landsatC2Scale, landsatC2Offset
	if c1 {
		scale, offset = landsatC1Scale, 0
	}
	if v, ok := parseFloat(md["REFLECTANCE_SCALE"]); ok && v > 0 {
		scale, offset = v, 0
	}
	if v, ok := parseFloat(md["REFLECTANCE_OFFSET"]); ok {
		offset = v
	}
	return scale, offset / scale
}

// harmonize applies the inverse HLS adjustment to OLI reflectance in place.
func (a hlsAdjust) harmonize(v []float64) {
	for i, x := range v {
		v[i] = (x - a.Offset) / a.Slope
	}
}
