package archive

// DefaultFamily is the sensor family of stored products that name none
// (rows from before sensors, records without a family): Sentinel-2.
const DefaultFamily = "sentinel-2"

// familyOrDefault is a product family as stored: "" is Sentinel-2.
func familyOrDefault(family string) string {
	if family == "" {
		return DefaultFamily
	}
	return family
}
