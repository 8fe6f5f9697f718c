// Package zoning derives management zones for a field from per-pixel layers
// and turns them into prescriptions: layers → smoothing → k-means → sieve →
// polygonize → zone collection (§2.4 of the interface spec), doses, and
// exports as GeoJSON, zipped shapefile and ISOXML (ISO 11783-10).
//
// The package holds every algorithm of the zone endpoints (§4.1
// /v1/variable-rate-zones and §4.3 /prescription_maps/get_zones); a server
// only composes it:
//
//	specs, err := zoning.ParseLayers([]byte(form.Get("layers")))    // 400 on ErrInvalidLayers
//	parcel, err := zoning.ParseParcel(parcelJSON, field)             // 400 on ErrInvalidParcel
//	ndvi, err := zoning.MeanValues(valuesOfEachUsableImage...)       // crop_health over a date range
//	parts, err := zoning.ShapefileParts(files, spec.Filename)        // custom layer: uploaded shapefile
//	shapes, err := zoning.ReadShapefile(parts, zoning.ShapefileLimits{})
//	clay, err := zoning.RasterizeAttribute(shapes, spec.Attribute, grid)
//	c, err := zoning.Run(ctx, zoning.Request{Grid: grid, Outline: parcel, Layers: layers,
//		Options: zoning.Options{Zones: n}, Prescription: rx, DstEPSG: dst}) // the one zone chain
//	err = format.Write(w, c.WithPrescription(rx), fieldName)        // geojson, shapefile or isoxml
//
// Layers come in as value grids ([]float64 on the field window's grid, NaN
// where missing); the package does not read imagery.
//
// # Layer weights
//
// The spec leaves the effect of a layer's weight open. Here weight is the
// layer's relative influence on the clustering: every layer is standardized
// to a z-score over the pixels that have a value in all layers, then
// multiplied by sqrt(weight). k-means minimizes squared distances, to which
// each layer then contributes in proportion to its weight: a layer of weight
// 2 counts twice as much as one of weight 1 (multiplying by the weight
// itself would make it count four times), and weight 0 leaves the layer out.
//
// # Smoothing
//
// Options.Smooth > 0 replaces every layer by its mean over a
// (2·Smooth+1)² window of the pixels being clustered before standardizing
// (separable running sums, O(pixels) whatever the radius). The default is
// no smoothing: a fixed window blurs the zones of small or elongated
// fields, and post-processing the labels (see Cleaning) explains more of
// the field's variance on every field measured (README, "Zone quality").
// RasterVal (and so the doses) is always the zone mean of the original values.
//
// # Missing pixels
//
// Pixels of the mask missing in any weighted layer (clouds, no data, outside
// a shapefile) are left out of k-means and take the zone of the nearest
// clustered pixel (breadth-first over 4-neighbours), so the zones always
// cover the whole field or parcel.
//
// # Zone numbering
//
// Zones are numbered 1..n by ascending RASTER_VAL, the zone's mean of the
// first crop_health layer in that layer's own units (ZONE 1 = lowest vigour).
//
// # Cleaning
//
// Per-pixel k-means gives salt-and-pepper zones; the minimum mapping unit
// (Options.MinAreaHa, default 0.1 ha, as the nearest pixel count) removes
// the specks. Compute starts from several k-means partitions (the exact
// 1-D optimum, Lloyd's restarts and 16 single Lloyd runs) and
// post-processes each five ways (fields above 5,000 pixels: one start,
// one way, for speed): a sieve that merges a small region into the neighbouring zone of
// closest mean (geo.SieveOptions.Values), either only into regions already
// at the minimum (gdal_sieve's rule, geo.SieveOptions.IntoLargeOnly) or
// repeatedly, optionally after a Potts regularization (iterated
// conditional modes); then boundary pixels move to the closest zone while
// every region keeps at least the minimum and stays connected. A zone's
// last region is never merged (geo.SieveOptions.KeepLabels): a farmer who
// asks for 5 zones gets 5. With gdal_sieve's rule a region below the
// minimum also stays when none of its neighbours had reached the minimum
// (on fields of a few dozen pixels, where merging everything leaves one
// region per zone and explains far less of the field). The partition explaining most of the clustered
// features' variance wins, except that on fields of at least 2·k minimum
// mapping units the best one of at most 2k regions wins when it is within
// 0.04 and not below common practice on the same starts (a sieve into the
// largest neighbours at the minimum mapping unit). Then the label raster is polygonized along pixel edges
// (geo.Polygonize). Result.Quality reports the variance reduction, the
// polygon count and the smallest zone and polygon.
//
// # Tiling the outline
//
// Run clips the zones to the field's (or parcel's) outline with
// geo.TileOutline: pixels the outline cuts are cut along it, and a pixel
// the outline covers in part, its centre outside, takes the nearest
// zone, so the polygons' union is the outline, without gaps or overlaps,
// in every CRS and export. Options.SimplifyTolerance then simplifies the
// boundaries between zones (Douglas–Peucker, each shared boundary once,
// checked, dropped if any boundaries cross) and keeps the outline.
//
// # Dose range
//
// The spec gives base_rate, min_rate and max_rate without defaults for the
// range. When min_rate or max_rate is not given it is derived from the base
// rate: base ±50 % for n_fertilizer (120 → 60..180 kg N/ha) and ±25 % for
// seeding (80,000 → 60,000..100,000 seeds/ha), so a base rate alone outside
// the usual range still gives a variable map. Given rates must satisfy
// min_rate < base_rate < max_rate (ErrInvalidPrescription, a 400): with
// min_rate = base_rate the mean-preserving rule could only give every zone
// the base rate.
package zoning
