// Package boundary detects agricultural field boundaries in a season of
// Sentinel-2 scenes over an area of interest.
//
// The method is classical and has no trained weights:
//
//  1. Read the area's window of every scene of the season (Options.Start,
//     Options.End; by default the last growing season with imagery) and
//     keep the dates whose area is mostly clear (SCL/CLM mask).
//  2. For every pair of 4-adjacent pixels, accumulate the squared
//     difference of a few per-date features (NDVI and 10 m reflectances)
//     over the dates where both pixels are clear. The root mean square is
//     the pair's multi-temporal edge strength: two pixels of one field
//     follow the same crop calendar, two pixels of neighbouring fields
//     rarely do.
//  3. Segment the pixel graph with Felzenszwalb–Huttenlocher graph
//     merging (adaptive threshold: a region absorbs a neighbour while the
//     edge between them is not stronger than its own internal variation
//     plus Scale/size), then merge regions smaller than the minimum area
//     into the neighbour across their weakest edge.
//  4. Drop non-fields: never-green surfaces (built-up land, roads, water:
//     the region's highest mean NDVI over the season stays low), regions
//     too small, and thin strips (hedges, tree rows, road verges).
//  5. Polygonize on pixel edges, optionally simplify without gaps,
//     reproject to EPSG:4326 and measure geodesic areas.
//
// Memory is O(pixels): scenes are read one at a time and only per-pixel
// running sums are kept, never the time series.
package boundary
