package colormap

// Lookup is the colormap an index is rendered with everywhere: the spec's
// (ForIndex), else a radar index's (ForRadarIndex), else Default stretched over usual, the index's usual range
// ([0, 1] when usual is empty or inverted).
func Lookup(index string, usual [2]float64) (Colormap, error) {
	if c, ok := ForIndex(index); ok {
		return c, nil
	}
	if c, ok := ForRadarIndex(index); ok {
		return c, nil
	}
	lo, hi := usual[0], usual[1]
	if !(lo < hi) {
		lo, hi = 0, 1
	}
	return Default(index, lo, hi)
}
