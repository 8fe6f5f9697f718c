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
	// Bands lists the bands Compute receives, in order: Sentinel-2 band
	// names ("B04", "B08", "B8A", …; a Landsat scene serves B02, B03, B04,
	// B08, B8A, B11 and B12 after its bandpass adjustment) or the radar
	// polarisations "VV" and "VH" (linear power), never both kinds.
	Bands []string
	// Sensors lists the sensor families the index applies to. Register
	// fills it when empty: sentinel-1 for radar bands, else sentinel-2, and
	// landsat too when a Landsat scene serves every band.
	Sensors []Family
	// Decibel marks an index whose values are 10·log10 of a linear
	// quantity (radar backscatter or a ratio of two): its mean is then
	// 10·log10 of the mean of the linear values (speckle-correct
	// averaging); median, percentiles, min and max are order statistics of
	// the dB values and std their population standard deviation.
	Decibel bool
	// Linear, optional for a Decibel index, writes the per-pixel linear
	// quantity whose mean the index's mean is (VV, VH, VH/VV) from the same
	// inputs as Compute; without it the dB values are converted back.
	Linear func(b [][]float64, out []float64)
	// Range is the index's usual span [low, high], used to stretch a colour
	// ramp when the index has no colormap of its own.
	Range [2]float64
	// Compute writes the index of pixel i to out[i] from b[k][i], the
	// reflectance of Bands[k]. All slices have the same length. Results that
	// are not finite mark the pixel as unusable; inputs may be NaN (no data).
	Compute func(b [][]float64, out []float64)

	// bandDecibels marks an index that is its single band in dB and whose
	// Linear is that band: on a scene storing the band in dB, Product
	// takes the dB values as read instead of Compute's log of the linear
	// power (the same values to an ulp, a log less per pixel).
	bandDecibels bool
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
	radar := 0
	for _, b := range ix.Bands {
		switch {
		case isRadarBand(b):
			radar++
		case !isReflectanceBand(b):
			return fmt.Errorf("register index %q: unknown band %q (want B01…B12, B8A, VV or VH)", ix.Name, b)
		}
	}
	if radar > 0 && radar != len(ix.Bands) {
		return fmt.Errorf("register index %q: bands %v mix radar and optical", ix.Name, ix.Bands)
	}
	if len(ix.Sensors) == 0 {
		ix.Sensors = defaultFamilies(ix.Bands)
	}
	for _, f := range ix.Sensors {
		switch {
		case f != FamilySentinel1 && f != FamilySentinel2 && f != FamilyLandsat:
			return fmt.Errorf("register index %q: unknown sensor family %q", ix.Name, f)
		case (f == FamilySentinel1) != (radar > 0):
			return fmt.Errorf("register index %q: sensor %s cannot serve bands %v", ix.Name, f, ix.Bands)
		case f == FamilyLandsat && !landsatServes(ix.Bands):
			return fmt.Errorf("register index %q: a Landsat scene has no equivalent of every band of %v", ix.Name, ix.Bands)
		}
	}
	ix.Sensors = slices.Clone(ix.Sensors)
	if c.byName == nil {
		c.byName = make(map[string]Index)
	}
	ix.Bands = slices.Clone(ix.Bands)
	c.byName[ix.Name] = ix
	return nil
}

// defaultFamilies is the sensors an index over bands applies to when its
// author does not say.
func defaultFamilies(bands []string) []Family {
	if len(bands) > 0 && isRadarBand(bands[0]) {
		return []Family{FamilySentinel1}
	}
	if landsatServes(bands) {
		return []Family{FamilySentinel2, FamilyLandsat}
	}
	return []Family{FamilySentinel2}
}

// landsatServes reports whether a Landsat scene has every band (in
// Sentinel-2 names, after the bandpass adjustment).
func landsatServes(bands []string) bool {
	for _, b := range bands {
		if !slices.Contains(landsatBandNames(), b) {
			return false
		}
	}
	return true
}

// AppliesTo reports whether the index can be computed on scenes of the sensor.
func (ix Index) AppliesTo(s Sensor) bool { return slices.Contains(ix.Sensors, s.Family()) }

// ForSensor keeps the names of indices that apply to the sensor, in order
// (unknown names are dropped).
func (c *Catalogue) ForSensor(s Sensor, names []string) []string {
	var out []string
	for _, n := range names {
		if ix, ok := c.byName[n]; ok && ix.AppliesTo(s) {
			out = append(out, n)
		}
	}
	return out
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

func optical() []Family       { return []Family{FamilySentinel2, FamilyLandsat} }
func sentinel2Only() []Family { return []Family{FamilySentinel2} }
func radar() []Family         { return []Family{FamilySentinel1} }

// decibels writes 10·log10 of each value of lin into out.
func decibels(lin, out []float64) {
	lin = lin[:len(out)]
	for i := range out {
		out[i] = 10 * math.Log10(lin[i])
	}
}

// Builtins returns the built-in indices: the eight of the interface spec
// (ndvi, ndwi, chi, ndre, savi, lai, evi, nirv), gndvi, msavi2, osavi,
// cigreen and ndmi (Sentinel-2; all but chi and ndre Landsat too), and the
// Sentinel-1 radar indices vv, vh, vh_vv (dB) and rvi.
func Builtins() []Index {
	return []Index{
		{
			Name: "ndvi", Sensors: optical(), Range: [2]float64{0, 1}, Formula: "(B08−B04)/(B08+B04)", Bands: []string{"B08", "B04"},
			Source:  "Rouse et al. 1974, Monitoring vegetation systems in the Great Plains with ERTS",
			Compute: normalizedDifference,
		},
		{
			Name: "ndwi", Sensors: optical(), Range: [2]float64{0, 1}, Formula: "(B08−B11)/(B08+B11)", Bands: []string{"B08", "B11"},
			Source:  "Gao 1996, NDWI: a normalized difference water index for remote sensing of vegetation liquid water (canopy water: high = wet)",
			Compute: normalizedDifference,
		},
		{
			Name: "chi", Sensors: sentinel2Only(), Range: [2]float64{0, 3}, Formula: "B08/B05 − 1", Bands: []string{"B08", "B05"},
			Source: "Gitelson et al. 2003, red-edge chlorophyll index CI_red-edge",
			Compute: func(b [][]float64, out []float64) {
				nir, re := b[0][:len(out)], b[1][:len(out)]
				for i := range out {
					out[i] = nir[i]/re[i] - 1
				}
			},
		},
		{
			Name: "ndre", Sensors: sentinel2Only(), Range: [2]float64{0, 1}, Formula: "(B08−B05)/(B08+B05)", Bands: []string{"B08", "B05"},
			Source:  "Barnes et al. 2000, normalized difference red edge",
			Compute: normalizedDifference,
		},
		{
			Name: "savi", Sensors: optical(), Range: [2]float64{0, 1}, Formula: "1.428·(B08−B04)/(B08+B04+0.428)", Bands: []string{"B08", "B04"},
			Source: "Huete 1988, soil-adjusted vegetation index with L = 0.428",
			Compute: func(b [][]float64, out []float64) {
				nir, red := b[0][:len(out)], b[1][:len(out)]
				for i := range out {
					out[i] = 1.428 * (nir[i] - red[i]) / (nir[i] + red[i] + 0.428)
				}
			},
		},
		{
			Name: "lai", Sensors: optical(), Range: [2]float64{1, 7}, Formula: "10.22·(B08 − 0.460·B04) + 0.4768", Bands: []string{"B08", "B04"},
			Source: "leaf area index, linear in the weighted difference vegetation index WDVI (Clevers 1989)",
			Compute: func(b [][]float64, out []float64) {
				nir, red := b[0][:len(out)], b[1][:len(out)]
				for i := range out {
					out[i] = 10.22*(nir[i]-0.460*red[i]) + 0.4768
				}
			},
		},
		{
			Name: "evi", Sensors: optical(), Range: [2]float64{0, 1}, Formula: "2.5·(B08−B04)/(B08+6·B04−7.5·B02+1)", Bands: []string{"B08", "B04", "B02"},
			Source: "Huete et al. 2002, enhanced vegetation index (MODIS)",
			Compute: func(b [][]float64, out []float64) {
				nir, red, blue := b[0][:len(out)], b[1][:len(out)], b[2][:len(out)]
				for i := range out {
					out[i] = 2.5 * (nir[i] - red[i]) / (nir[i] + 6*red[i] - 7.5*blue[i] + 1)
				}
			},
		},
		{
			Name: "nirv", Sensors: optical(), Range: [2]float64{100, 2000}, Formula: "ndvi·B08·10000", Bands: []string{"B08", "B04"},
			Source: "Badgley et al. 2017, near-infrared reflectance of vegetation, in DN units (×10000)",
			Compute: func(b [][]float64, out []float64) {
				nir, red := b[0][:len(out)], b[1][:len(out)]
				for i := range out {
					out[i] = (nir[i] - red[i]) / (nir[i] + red[i]) * nir[i] * 10000
				}
			},
		},
		{
			Name: "gndvi", Sensors: optical(), Range: [2]float64{0, 1}, Formula: "(B08−B03)/(B08+B03)", Bands: []string{"B08", "B03"},
			Source:  "Gitelson et al. 1996, green normalized difference vegetation index",
			Compute: normalizedDifference,
		},
		{
			Name: "msavi2", Sensors: optical(), Range: [2]float64{0, 1}, Formula: "(2·B08+1−√((2·B08+1)²−8·(B08−B04)))/2", Bands: []string{"B08", "B04"},
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
			Name: "osavi", Sensors: optical(), Range: [2]float64{0, 1}, Formula: "(B08−B04)/(B08+B04+0.16)", Bands: []string{"B08", "B04"},
			Source: "Rondeaux et al. 1996, optimized soil-adjusted vegetation index",
			Compute: func(b [][]float64, out []float64) {
				nir, red := b[0][:len(out)], b[1][:len(out)]
				for i := range out {
					out[i] = (nir[i] - red[i]) / (nir[i] + red[i] + 0.16)
				}
			},
		},
		{
			Name: "cigreen", Sensors: optical(), Range: [2]float64{0, 8}, Formula: "B08/B03 − 1", Bands: []string{"B08", "B03"},
			Source: "Gitelson et al. 2003, green chlorophyll index",
			Compute: func(b [][]float64, out []float64) {
				nir, green := b[0][:len(out)], b[1][:len(out)]
				for i := range out {
					out[i] = nir[i]/green[i] - 1
				}
			},
		},
		{
			Name: "ndmi", Sensors: optical(), Range: [2]float64{-0.2, 0.6}, Formula: "(B8A−B11)/(B8A+B11)", Bands: []string{"B8A", "B11"},
			Source:  "Wilson & Sader 2002, normalized difference moisture index (narrow NIR)",
			Compute: normalizedDifference,
		},
		{
			Name: "vv", Sensors: radar(), Decibel: true, Range: [2]float64{-25, 0}, Formula: "10·log10(VV)", Bands: []string{"VV"}, bandDecibels: true,
			Source:  "Sentinel-1 co-polarised backscatter (σ0 or γ0) in dB",
			Compute: func(b [][]float64, out []float64) { decibels(b[0], out) },
			Linear:  func(b [][]float64, out []float64) { copy(out, b[0]) },
		},
		{
			Name: "vh", Sensors: radar(), Decibel: true, Range: [2]float64{-30, -5}, Formula: "10·log10(VH)", Bands: []string{"VH"}, bandDecibels: true,
			Source:  "Sentinel-1 cross-polarised backscatter (σ0 or γ0) in dB",
			Compute: func(b [][]float64, out []float64) { decibels(b[0], out) },
			Linear:  func(b [][]float64, out []float64) { copy(out, b[0]) },
		},
		{
			Name: "vh_vv", Sensors: radar(), Decibel: true, Range: [2]float64{-15, 0}, Formula: "10·log10(VH/VV)", Bands: []string{"VH", "VV"},
			Source: "cross-polarisation ratio in dB, per pixel from linear power (Vreugdenhil et al. 2018, Sensitivity of Sentinel-1 backscatter to vegetation dynamics)",
			Compute: func(b [][]float64, out []float64) {
				vh, vv := b[0][:len(out)], b[1][:len(out)]
				for i := range out {
					out[i] = 10 * math.Log10(vh[i]/vv[i])
				}
			},
			Linear: func(b [][]float64, out []float64) {
				vh, vv := b[0][:len(out)], b[1][:len(out)]
				for i := range out {
					out[i] = vh[i] / vv[i]
				}
			},
		},
		{
			Name: "rvi", Sensors: radar(), Range: [2]float64{0, 1}, Formula: "4·VH/(VV+VH)", Bands: []string{"VV", "VH"},
			Source: "dual-polarisation radar vegetation index from linear power (Trudel et al. 2012; Nasirzadehdizaji et al. 2019)",
			Compute: func(b [][]float64, out []float64) {
				vv, vh := b[0][:len(out)], b[1][:len(out)]
				for i := range out {
					out[i] = 4 * vh[i] / (vv[i] + vh[i])
				}
			},
		},
	}
}
