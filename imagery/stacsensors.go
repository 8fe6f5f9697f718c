package imagery

import (
	"fmt"
	"slices"
	"strings"
)

// addLandsatAssets registers a Landsat Collection 2 Level-2 item's surface
// reflectance assets (blue, green, red, nir08, swir16, swir22) under the
// Sentinel-2 names they serve, with the HLS bandpass adjustment, and its
// qa_pixel asset as the mask. Scaling comes from raster:bands (2.75e-5,
// −0.2 on Planetary Computer and Earth Search), else the Collection 2 rule.
func (s *Scene) addLandsatAssets(item stacItem, loc itemLocation, chosen []assetCandidate,
	unreadable map[string]*AssetError, itemEPSG int, rad stacRadiometry) error {
	kept := map[string]*AssetError{}
	for _, name := range landsatBandNames() {
		if e, ok := unreadable[name]; ok {
			kept[name] = e
		}
	}
	if e, ok := kept["B8A"]; ok { // nir08 serves both NIR bands
		kept["B08"] = e
	}
	for _, c := range chosen {
		if c.band == "B08" || !slices.Contains(landsatBandNames(), c.band) {
			continue // coastal, thermal, …: not used (the item's "nir" never exists)
		}
		names := []string{c.band}
		if c.band == "B8A" {
			names = []string{"B08", "B8A"}
		}
		b := s.addLandsatBand(c.key, c.href, names, false)
		b.epsg = cmp0(projEPSG(c.asset.ProjCode, c.asset.ProjEPSG), itemEPSG)
		b.scale, b.add, b.explicitScale = rad.scaling(c.asset)
		if !b.explicitScale {
			b.scale, b.add, b.explicitScale = landsatC2Scale, landsatC2Offset/landsatC2Scale, true
		}
	}
	// The mask: qa_pixel (QA_PIXEL in USGS file names).
	var qaKey string
	for key := range item.Assets {
		if strings.EqualFold(key, "qa_pixel") && (qaKey == "" || key < qaKey) {
			qaKey = key
		}
	}
	if qaKey == "" {
		kept["QA_PIXEL"] = &AssetError{Band: "QA_PIXEL", Reason: "the item has no qa_pixel asset: its clouds would count"}
	} else {
		a := item.Assets[qaKey]
		c, err := loc.candidate("QA_PIXEL", qaKey, a)
		if err != nil {
			return err
		}
		if c.readable() {
			s.mask = &band{name: "QA_PIXEL", src: c.href, epsg: cmp0(projEPSG(a.ProjCode, a.ProjEPSG), itemEPSG)}
			s.maskKind = qaLandsatC2
		} else {
			kept["QA_PIXEL"] = &AssetError{Band: "QA_PIXEL", Reason: unreadableReason(item, []assetCandidate{c})}
		}
	}
	s.unreadable = kept
	return nil
}

// addRadarAssets registers a Sentinel-1 item's vv and vh assets. Planetary
// Computer's sentinel-1-rtc serves γ0 as float32 linear power; a
// raster:bands scale/offset is honoured, else the file's VALUE_SCALE and
// VALUE_UNIT items (as a folder's), else linear power. The band files
// must carry their own CRS: an item's proj:epsg is not applied to radar
// assets, whose files in radar geometry have tie points instead.
func (s *Scene) addRadarAssets(chosen []assetCandidate, unreadable map[string]*AssetError) error {
	kept := map[string]*AssetError{}
	for _, name := range []string{"VV", "VH"} {
		if e, ok := unreadable[name]; ok {
			kept[name] = e
		}
	}
	for _, c := range chosen {
		if !isRadarBand(c.band) {
			continue
		}
		b := &band{name: c.band, src: c.href}
		if len(c.asset.RasterBands) == 1 {
			if rb := c.asset.RasterBands[0]; rb.Scale != nil || rb.Offset != nil {
				b.scale, b.add, b.explicitScale = 1, 0, true
				if rb.Scale != nil && *rb.Scale > 0 {
					b.scale = *rb.Scale
				}
				if rb.Offset != nil {
					b.add = *rb.Offset / b.scale
				}
			}
		}
		s.addBand(b)
	}
	s.unreadable = kept
	if len(s.bands) == 0 && len(kept) == 0 {
		return fmt.Errorf("Sentinel-1 item without a vv or vh asset")
	}
	return nil
}

// cmp0 is a, else b when a is 0.
func cmp0(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}
