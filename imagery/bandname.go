package imagery

import (
	"path"
	"strings"
)

// BandName is the Sentinel-2 band a file or form-part name stands for
// (B01…B12, B8A, SCL, CLM, case-insensitive, with or without a .tif or .tiff
// extension): the names a scene folder holds.
func BandName(name string) (string, bool) {
	base := strings.ToUpper(path.Base(strings.ReplaceAll(name, "\\", "/")))
	for _, ext := range []string{".TIFF", ".TIF"} {
		base = strings.TrimSuffix(base, ext)
	}
	if bandFileName.MatchString(base + ".tif") {
		return base, true
	}
	return "", false
}
