package imagery

import (
	"regexp"
	"strings"
)

// Sensor names the instrument a scene comes from: one satellite
// ("sentinel-2a", "landsat-9", "sentinel-1a", …) or, when the source names
// only the mission, the mission ("sentinel-2", "landsat", "sentinel-1").
type Sensor string

// The sensors cropkit reads.
const (
	Sentinel2  Sensor = "sentinel-2" // satellite unknown
	Sentinel2A Sensor = "sentinel-2a"
	Sentinel2B Sensor = "sentinel-2b"
	Sentinel2C Sensor = "sentinel-2c"
	Landsat    Sensor = "landsat" // Landsat 8 or 9, satellite unknown
	Landsat8   Sensor = "landsat-8"
	Landsat9   Sensor = "landsat-9"
	Sentinel1  Sensor = "sentinel-1" // satellite unknown
	Sentinel1A Sensor = "sentinel-1a"
	Sentinel1B Sensor = "sentinel-1b"
	Sentinel1C Sensor = "sentinel-1c"
)

// Family groups sensors whose scenes share bands, scaling and masking:
// an index applies to families, a query's closest-date rule stays within one.
type Family string

// The sensor families.
const (
	FamilySentinel2 Family = "sentinel-2" // MSI optical, L2A/L1C reflectance, SCL or CLM mask
	FamilyLandsat   Family = "landsat"    // OLI/OLI-2 Collection 2 Level-2, QA_PIXEL mask
	FamilySentinel1 Family = "sentinel-1" // C-band SAR backscatter VV/VH, no mask
)

// Families lists every family, optical first.
func Families() []Family { return []Family{FamilySentinel2, FamilyLandsat, FamilySentinel1} }

// Family is the sensor's family ("" for an unknown sensor).
func (s Sensor) Family() Family {
	switch s {
	case Sentinel2, Sentinel2A, Sentinel2B, Sentinel2C:
		return FamilySentinel2
	case Landsat, Landsat8, Landsat9:
		return FamilyLandsat
	case Sentinel1, Sentinel1A, Sentinel1B, Sentinel1C:
		return FamilySentinel1
	}
	return ""
}

// Radar reports whether the sensor is a radar (no clouds, no cloud mask).
func (s Sensor) Radar() bool { return s.Family() == FamilySentinel1 }

// Valid reports whether s is one of the sensors above.
func (s Sensor) Valid() bool { return s.Family() != "" }

// Sensors lists every sensor, satellites before their mission's generic name.
func Sensors() []Sensor {
	return []Sensor{Sentinel2A, Sentinel2B, Sentinel2C, Sentinel2, Landsat8, Landsat9, Landsat,
		Sentinel1A, Sentinel1B, Sentinel1C, Sentinel1}
}

// ParseFamily accepts a family name ("sentinel-2", "landsat", "sentinel-1")
// or any sensor name, which stands for its family.
func ParseFamily(v string) (Family, bool) {
	s, ok := ParseSensor(v)
	if !ok {
		return "", false
	}
	return s.Family(), true
}

// platform matches the ways catalogues and metadata spell a platform:
// "sentinel-2a", "Sentinel-2B", "S2A", "SENTINEL_1A", "LANDSAT_8",
// "landsat-9", "LC08", "LC09", "sentinel-1", "landsat".
var platform = regexp.MustCompile(`^(?:(sentinel)[-_ ]?([12])([abc])?|(s)([12])([abc])|(landsat)[-_ ]?([89])?|(l)[co]0?([89]))$`)

// ParseSensor reads a platform or sensor name as STAC's platform property,
// GDAL metadata or a user spells it (case-insensitive).
func ParseSensor(v string) (Sensor, bool) {
	m := platform.FindStringSubmatch(strings.ToLower(strings.TrimSpace(v)))
	if m == nil {
		return "", false
	}
	switch {
	case m[1] != "":
		return Sensor("sentinel-" + m[2] + m[3]), true
	case m[4] != "":
		return Sensor("sentinel-" + m[5] + m[6]), true
	case m[7] != "":
		if m[8] == "" {
			return Landsat, true
		}
		return Sensor("landsat-" + m[8]), true
	default:
		return Sensor("landsat-" + m[10]), true
	}
}

// productSensor recognises the sensor in a product description or id such
// as GDAL's PRODUCT item ("Sentinel-1 GRD IW sigma0 …", "Landsat 8
// Collection 1 …", "S2A_MSIL2A_…", "LC09_L2SP_…", "S1A_IW_GRDH_…").
var productSensor = regexp.MustCompile(`(?i)\b(?:sentinel[-_ ]?([12])([abc])?|(s)([12])([abc])_|landsat[-_ ]?([89])|l[co]0([89])_)`)

// sensorFromText finds a sensor named in free text, "" when none.
func sensorFromText(v string) Sensor {
	m := productSensor.FindStringSubmatch(v)
	switch {
	case m == nil:
		return ""
	case m[1] != "":
		return Sensor("sentinel-" + m[1] + strings.ToLower(m[2]))
	case m[3] != "":
		return Sensor("sentinel-" + m[4] + strings.ToLower(m[5]))
	case m[6] != "":
		return Sensor("landsat-" + m[6])
	default:
		return Sensor("landsat-" + m[7])
	}
}

// sensorFromMetadata reads a band file's GDAL metadata: an explicit
// SENSOR, PLATFORM, SATELLITE or SPACECRAFT item, else the sensor named in
// PRODUCT or PRODUCT_ID; "" when none says.
func sensorFromMetadata(md map[string]string) Sensor {
	for _, key := range []string{"SENSOR", "PLATFORM", "SATELLITE", "SPACECRAFT", "SPACECRAFT_NAME", "SPACECRAFT_ID", "MISSION"} {
		if s, ok := ParseSensor(md[key]); ok {
			return s
		}
	}
	for _, key := range []string{"PRODUCT", "PRODUCT_ID", "PRODUCT_URI", "LANDSAT_PRODUCT_ID"} {
		if s := sensorFromText(md[key]); s != "" {
			return s
		}
	}
	return ""
}

// landsatBandNames are the Sentinel-2 bands a Landsat scene serves, each
// from its OLI counterpart after the bandpass adjustment (landsat.go).
func landsatBandNames() []string { return []string{"B02", "B03", "B04", "B08", "B8A", "B11", "B12"} }
