// Package demodata embeds a small real sample for `cropkit serve --demo`:
// eight Sentinel-2 L2A dates of 2019 over 16 Flemish fields (clear, partly
// cloudy and fully cloudy), all bands, with the field polygons. See README.md
// in the package folder (also embedded) for provenance and attribution:
// "Contains modified Copernicus Sentinel data 2019".
package demodata

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
)

// Place is the folder of the sample inside FS.
const Place = "flanders-31UES"

// Attribution is the notice to show wherever the demo data is served.
const Attribution = "Contains modified Copernicus Sentinel data 2019 (WorldCereal, MIT); " +
	"field polygons derived from the Flemish LPIS 2019 (Departement Landbouw en Visserij, Modellicentie Gratis Hergebruik)."

//go:embed README.md flanders-31UES
var files embed.FS

// FS returns the embedded tree: README.md, flanders-31UES/dates.csv,
// flanders-31UES/fields.geojson and flanders-31UES/<YYYY-MM-DD>/<BAND>.tif.
func FS() fs.FS { return files }

// Scenes returns the scene folders inside FS ("flanders-31UES/2019-04-21",
// …), in date order.
func Scenes() []string {
	entries, err := files.ReadDir(Place)
	if err != nil {
		return nil // unreachable: the folder is embedded
	}
	var scenes []string
	for _, e := range entries {
		if e.IsDir() {
			scenes = append(scenes, path.Join(Place, e.Name()))
		}
	}
	slices.Sort(scenes) // YYYY-MM-DD names sort by date
	return scenes
}

// Fields returns the field polygons, a GeoJSON FeatureCollection in
// EPSG:4326 whose features carry the property "name" (UES-01 … UES-16).
func Fields() []byte {
	b, err := files.ReadFile(path.Join(Place, "fields.geojson"))
	if err != nil {
		return nil // unreachable: the file is embedded
	}
	return b
}

// Extract writes the whole embedded tree under dir (created if needed,
// existing files overwritten) and returns the scene folders as paths under
// dir, in date order, for code that needs real files.
func Extract(dir string) ([]string, error) {
	err := fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		return nil, fmt.Errorf("extract demo data to %s: %w", dir, err)
	}
	scenes := Scenes()
	for i, s := range scenes {
		scenes[i] = filepath.Join(dir, filepath.FromSlash(s))
	}
	return scenes, nil
}
