package colormap

// viridis is a perceptually uniform 9-colour ramp (matplotlib's viridis at
// evenly spaced stops) for backscatter, which has no "good" or "bad" end.
const viridis = "#440154 #472d7b #3b528b #2c728e #21918c #28ae80 #5ec962 #addc30 #fde725"

// radarTable holds cropkit's colormaps of the Sentinel-1 indices (beyond
// the spec's §2.6), over the ranges that span crop land: vv −25…0 dB,
// vh −30…−5 dB, vh_vv −15…0 dB (VH/VV), rvi 0…1 (red-yellow-green like the
// vegetation indices: 0 bare, 1 dense canopy).
func radarTable() []specMap {
	return []specMap{
		{"vv", viridis, -25, 0},
		{"vh", viridis, -30, -5},
		{"vh_vv", viridis, -15, 0},
		{"rvi", rdYlGn, 0, 1},
	}
}

// RadarNames lists the radar indices that have a colormap of their own.
func RadarNames() []string { return indexNames(radarTable()) }

// ForRadarIndex returns the colormap of a Sentinel-1 index (vv, vh, vh_vv,
// rvi) and whether it exists.
func ForRadarIndex(name string) (Colormap, bool) { return lookup(radarTable(), name) }
