// Package boundary detects agricultural field boundaries in a season of
// Sentinel-2 scenes over an area of interest (Detect).
//
// The method is classical, with no trained weights; its few parameters
// (Options) were chosen by leave-one-chip-out cross-validation on the two
// labelled Flanders chips of the test data (TestTuneParameters; method and
// numbers in docs/boundaries.md):
//
//  1. Read the area's window of each scene in the season (Options.Start,
//     End; by default the last growing season, March to October, with
//     imagery). Only the mask is read first; dates with fewer than 90 % of
//     the area clear (SCL/CLM) are skipped before any band is read.
//  2. Read each clear date's four 10 m bands (B02, B03, B04, B08), compute
//     its NDVI and align the dates with each other by whole pixels (the
//     shift maximising the correlation of NDVI edge magnitudes), since
//     Sentinel-2 dates are often a pixel apart.
//  3. Give each pair of 4-adjacent pixels an edge strength: the root mean
//     square, over the dates both were clear, of their NDVI difference and
//     their four band differences, each band scaled to NDVI's typical
//     in-field difference and weighted BandWeight against NDVI. Two pixels
//     of one field follow one crop calendar; neighbours rarely do, and
//     crops of similar greenness (grass, clover) differ in colour.
//  4. Region merging from single pixels, cheapest border first: two
//     regions merge while the mean strength along their common border,
//     less the smaller of their mean inner strengths (texture), is at most
//     MergeThreshold. Judging borders rather than region means keeps smooth
//     in-field trends from splitting a field. A merge is vetoed when both
//     regions have at least a few pixels and their mean NDVI profiles over
//     the season differ by more than MaxProfileDistance (root mean square
//     over the dates): two crop calendars, whatever their border says (a
//     border weakened by mixed pixels otherwise lets a field leak into its
//     neighbour, and the leak grows with each merge). With Sentinel-1
//     scenes (Options.Radar), the regions' mean VV and VH backscatter per
//     date join their profiles and the veto holds only where the radar
//     profiles differ too (MaxRadarDistance): NDVI that differs within one
//     crop (a patchy emergence, a hazy date) no longer splits it.
//  5. Absorb segments under MinSegmentPixels into the neighbour across
//     their weakest border; move border pixels (mostly mixed pixels) to
//     the adjacent region with the closest profile (by the edge strength's
//     measure); sieve.
//  6. Drop non-fields: never green (mean of the season's highest NDVI
//     under MinGreenNDVI: built-up land, roads, water), thin (hedges, tree
//     rows, verges: few pixels with all four neighbours in the region), or
//     smaller than MinAreaHa.
//  7. Polygonize on pixel edges (optionally simplified without gaps),
//     reproject to EPSG:4326, geodesic area in hectares; the confidence is
//     the contrast of border against inner edge strength.
//
// On the two labelled Flanders chips, against labels co-registered with
// the imagery (TestDetectFlandersCoregistered), the median IoU of the 21
// parcels of at least 0.5 ha is 0.793 with 86 % at IoU ≥ 0.5 and an object
// F1 at IoU > 0.5 of 0.71 from Sentinel-2 alone, 0.810, 90 % and 0.76 with
// Sentinel-1; the leave-one-chip-out estimate is 0.775, 71 % and 0.64.
//
// Memory is about 12 bytes per pixel and clear date (at most MaxDates),
// 4 per pixel and radar date, plus 8 bytes per date for each region whose
// profile the veto compares;
// a 2,500 ha area is 250,000 pixels at 10 m.
package boundary
