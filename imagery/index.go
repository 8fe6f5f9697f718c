package imagery

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
)

// Index is a spectral index computed per pixel from reflectance.
type Index struct {
	// Name is the lower-case key used everywhere (file names, JSON keys).
	Name string
	// Formula documents the computation on reflectance, e.g. "(B08−B04)/(B08+B04)".
	Formula string
	// Source cites where the index comes from.
	Source string
	// Bands lists the Sentinel-2 bands Compute receives, in order ("B04", "B08", "B8A", …).
	Bands []string
	// Range is the index's usual span [low, high], used to stretch a colour
	// ramp when the index has no colormap of its own.
	Range [2]float64
	// Compute writes the index of pixel i to out[i] from b[k][i], the
	// reflectance of Bands[k]. All slices have the same length. Results that
	// are not finite mark the pixel as unusable; inputs may be NaN (no data).
	Compute func(b [][]float64, out []float64)
}

// Catalogue is a set of indices by name. The zero value is empty; NewCatalogue
// returns one holding the built-in indices. A Catalogue is not safe for
// concurrent Register; Lookup and Names may run concurrently with each other.
type Catalogue struct {
	byName map[string]Index
}

var indexName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

// NewCatalogue returns a catalogue with the built-in indices (see Builtins).
func NewCatalogue() *Catalogue {
	c := &Catalogue{byName: make(map[string]Index)}
	for _, ix := range Builtins() {
		c.byName[ix.Name] = ix
	}
	return c
}

// Register adds ix, or replaces the index of the same name. The name must be
// lower-case letters, digits and underscores (it becomes a file name and a
// JSON key), the bands known Sentinel-2 band names and Compute non-nil.
func (c *Catalogue) Register(ix Index) error {
	if !indexName.MatchString(ix.Name) {
		return fmt.Errorf("register index %q: name must match %s", ix.Name, indexName)
	}
	if ix.Compute == nil {
		return fmt.Errorf("register index %q: Compute is nil", ix.Name)
	}
	if len(ix.Bands) == 0 {
		return fmt.Errorf("register index %q: no bands", ix.Name)
	}
	for _, b := range ix.Bands {
		if !isReflectanceBand(b) {
			return fmt.Errorf("register index %q: unknown band %q (want B01…B12 or B8A)", ix.Name, b)
		}
	}
	if c.byName == nil {
		c.byName = make(map[string]Index)
	}
	ix.Bands = slices.Clone(ix.Bands)
	c.byName[ix.Name] = ix
	return nil
}

// Lookup returns the index called name.
func (c *Catalogue) Lookup(name string) (Index, bool) {
	ix, ok := c.byName[name]
	return ix, ok
}

// Names lists the catalogue's index names in lexical order.
func (c *Catalogue) Names() []string {
	names := make([]string, 0, len(c.byName))
	for n := range c.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// isReflectanceBand reports whether b names a Sentinel-2 reflectance band
// (B01…B12, B8A) that indices may use.
func isReflectanceBand(b string) bool {
	switch b {
	case "B01", "B02", "B03", "B04", "B05", "B06", "B07", "B08", "B8A", "B09", "B10", "B11", "B12":
		return true
	}
	return false
}

// normalizedDifference is (a−b)/(a+b) per pixel of b[0]=a, b[1]=b.
func normalizedDifference(b [][]float64, out []float64) {
	x, y := b[0], b[1]
	x = x[:len(out)]
	y = y[:len(out)]
	for i := range out {
		out[i] = (x[i] - y[i]) / (x[i] + y[i])
	}
}

// Builtins returns the built-in indices: the eight of the interface spec
// (ndvi, ndwi, chi, ndre, savi, lai, evi, nirv) and gndvi, msavi2, osavi,
// cigreen and ndmi.
func Builtins() []Index {
	return []Index{
		{
			Name: "ndvi", Range: [2]float64{0, 1}, Formula: "(B08−B04)/(B08+B04)", Bands: []string{"B08", "B04"},
			Source:  "Rouse et al. 1974, Monitoring vegetation systems in the Great Plains with ERTS",
			Compute: normalizedDifference,
		},
		{
			Name: "ndwi", Range: [2]float64{0, 1}, Formula: "(B08−B11)/(B08+B11)", Bands: []string{"B08", "B11"},
			Source:  "Gao 1996, NDWI: a normalized difference water index for remote sensing of vegetation liquid water (canopy water: high = wet)",
			Compute: normalizedDifference,
		},
		{
			Name: "chi", Range: [2]float64{0, 3}, Formula: "B08/B05 − 1", Bands: []string{"B08", "B05"},
			Source: "Gitelson et al. 2003, red-edge chlorophyll index CI_red-edge",
			Compute: func(b [][]float64, out []float64) {
				nir, re := b[0][:len(out)], b[1][:len(out)]
				for i := range out {
					out[i] = nir[i]/re[i] - 1
				}
			},
		},
		{
			Name: "ndre", Range: [2]float64{0, 1}, Formula: "(B08−B05)/(B08+B05)", Bands: []string{"B08", "B05"},
			Source:  "Barnes et al. 2000, normalized difference red edge",
			Compute: normalizedDifference,
		},
		{
			Name: "savi", Range: [2]float64{0, 1}, Formula: "1.428·(B08−B04)/(B08+B04+0.428)", Bands: []string{"B08", "B04"},
			Source: "Huete 1988, soil-adjusted vegetation index with L = 0.428",
			Compute: func(b [][]float64, out []float64) {
				nir, red := b[0][:len(out)], b[1][:len(out)]
				for i := range out {
					out[i] = 1.428 * (nir[i] - red[i]) / (nir[i] + red[i] + 0.428)
				}
			},
		},
		{
			Name: "lai", Range: [2]float64{1, 7}, Formula: "10.22·(B08 − 0.460·B04) + 0.4768", Bands: []string{"B08", "B04"},
			Source: "leaf area index, linear in the weighted difference vegetation index WDVI (Clevers 1989)",
			Compute: func(b [][]float64, out []float64) {
				nir, red := b[0][:len(out)], b[1][:len(out)]
				for i := range out {
					out[i] = 10.22*(nir[i]-0.460*red[i]) + 0.4768
				}
			},
		},
		{
			Name: "evi", Range: [2]float64{0, 1}, Formula: "2.5·(B08−B04)/(B08+6·B04−7.5·B02+1)", Bands: []string{"B08", "B04", "B02"},
			Source: "Huete et al. 2002, enhanced vegetation index (MODIS)",
			Compute: func(b [][]float64, out []float64) {
				nir, red, blue := b[0][:len(out)], b[1][:len(out)], b[2][:len(out)]
				for i := range out {
					out[i] = 2.5 * (nir[i] - red[i]) / (nir[i] + 6*red[i] - 7.5*blue[i] + 1)
				}
			},
		},
		{
			Name: "nirv", Range: [2]float64{100, 2000}, Formula: "ndvi·B08·10000", Bands: []string{"B08", "B04"},
			Source: "Badgley et al. 2017, near-infrared reflectance of vegetation, in DN units (×10000)",
			Compute: func(b [][]float64, out []float64) {
				nir, red := b[0][:len(out)], b[1][:len(out)]
				for i := range out {
					out[i] = (nir[i] - red[i]) / (nir[i] + red[i]) * nir[i] * 10000
				}
			},
		},
		{
			Name: "gndvi", Range: [2]float64{0, 1}, Formula: "(B08−B03)/(B08+B03)", Bands: []string{"B08", "B03"},
			Source:  "Gitelson et al. 1996, green normalized difference vegetation index",
			Compute: normalizedDifference,
		},
		{
			Name: "msavi2", Range: [2]float64{0, 1}, Formula: "(2·B08+1−√((2·B08+1)²−8·(B08−B04)))/2", Bands: []string{"B08", "B04"},
			Source: "Qi et al. 1994, modified soil-adjusted vegetation index",
			Compute: func(b [][]float64, out []float64) {
				nir, red := b[0][:len(out)], b[1][:len(out)]
				for i := range out {
					t := 2*nir[i] + 1
					out[i] = (t - math.Sqrt(t*t-8*(nir[i]-red[i]))) / 2
				}
			},
		},
		{
			Name: "osavi", Range: [2]float64{0, 1}, Formula: "(B08−B04)/(B08+B04+0.16)", Bands: []string{"B08", "B04"},
			Source: "Rondeaux et al. 1996, optimized soil-adjusted vegetation index",
			Compute: func(b [][]float64, out []float64) {
				nir, red := b[0][:len(out)], b[1][:len(out)]
				for i := range out {
					out[i] = (nir[i] - red[i]) / (nir[i] + red[i] + 0.16)
				}
			},
		},
		{
			Name: "cigreen", Range: [2]float64{0, 8}, Formula: "B08/B03 − 1", Bands: []string{"B08", "B03"},
			Source: "Gitelson et al. 2003, green chlorophyll index",
			Compute: func(b [][]float64, out []float64) {
				nir, green := b[0][:len(out)], b[1][:len(out)]
				for i := range out {
					out[i] = nir[i]/green[i] - 1
				}
			},
		},
		{
			Name: "ndmi", Range: [2]float64{-0.2, 0.6}, Formula: "(B8A−B11)/(B8A+B11)", Bands: []string{"B8A", "B11"},
			Source:  "Wilson & Sader 2002, normalized difference moisture index (narrow NIR)",
			Compute: normalizedDifference,
		},
	}
}
