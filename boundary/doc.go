// Package boundary detects agricultural field boundaries in a season of
// Sentinel-2 scenes over an area of interest (Detect).
//
// The method is classical, with no trained weights; its few parameters
// (Options) were tuned on the two labelled Flanders chips of the test data
// (TestTuneParameters reruns the sweep):
//
//  1. Read the area's window of each scene in the season (Options.Start,
//     End; by default the last growing season, March to October, with
//     imagery). Only the mask is read first; dates with fewer than 90 % of
//     the area clear (SCL/CLM) are skipped before any band is read.
//  2. Compute each clear date's NDVI and align the dates with each other
//     by whole pixels (the shift maximising the correlation of NDVI edge
//     magnitudes), since Sentinel-2 dates are often a pixel apart.
//  3. Give each pair of 4-adjacent pixels an edge strength: the root mean
//     square of their NDVI difference over the dates both were clear. Two
//     pixels of one field follow one crop calendar; neighbours rarely do.
//  4. Region merging from single pixels, cheapest border first: two
//     regions merge while the mean strength along their common border,
//     less the smaller of their mean inner strengths (texture), is at most
//     MergeThreshold. Judging borders rather than region means keeps smooth
//     in-field trends from splitting a field.
//  5. Absorb segments under MinSegmentPixels into the neighbour across
//     their weakest border; move border pixels (mostly mixed pixels) to
//     the adjacent region with the closest NDVI profile; sieve.
//  6. Drop non-fields: never green (mean of the season's highest NDVI
//     under MinGreenNDVI: built-up land, roads, water), thin (hedges, tree
//     rows, verges: few pixels with all four neighbours in the region), or
//     smaller than MinAreaHa.
//  7. Polygonize on pixel edges (optionally simplified without gaps),
//     reproject to EPSG:4326, geodesic area in hectares; the confidence is
//     the contrast of border against inner edge strength.
//
// Memory is about 4 bytes per pixel and clear date (at most MaxDates);
// a 2,500 ha area is 250,000 pixels at 10 m.
package boundary
