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
//	mask, err := zoning.FieldMask(parcel, grid)                      // the field's or parcel's pixels
//	ndvi, err := zoning.MeanValues(valuesOfEachUsableImage...)       // crop_health over a date range
//	parts, err := zoning.ShapefileParts(files, spec.Filename)        // custom layer: uploaded shapefile
//	shapes, err := zoning.ReadShapefile(parts, zoning.ShapefileLimits{})
//	clay, err := zoning.RasterizeAttribute(shapes, spec.Attribute, grid)
//	res, err := zoning.Compute(ctx, grid, mask, layers, zoning.Options{Zones: n})
//	err = zoning.Prescription{Type: zoning.NFertilizer}.Apply(res)  // DOSE
//	c, err := res.Collection(dstEPSG)                                // 400 on crs.ErrUnsupportedCRS
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
// Sentinel-2 index values are noisy from pixel to pixel, and per-pixel
// k-means then gives salt-and-pepper zones. Before standardizing, every
// layer is replaced by its mean over a (2·Options.Smooth+1)² window (default
// 3×3) of the pixels being clustered, as is common for management zones;
// pixels without a value and outside the mask take no part. The smoothing
// is separable running sums, O(pixels) whatever the radius. Standardizing
// after smoothing keeps the weights' meaning for layers of unequal noise.
// RasterVal (and so the doses) is the zone mean of the original values.
// A negative Options.Smooth turns the smoothing off.
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
// Regions smaller than the minimum mapping unit (Options.MinAreaHa, default
// 0.1 ha) are merged into their largest neighbour, smallest first, except
// that a zone's last region is never merged (geo.SieveWithOptions with
// KeepLabels): a farmer who asks for 5 zones gets 5, and a zone all of
// whose regions are small keeps its largest one, below the minimum mapping
// unit. Fewer zones than asked come back only when k-means finds fewer
// clusters (fewer distinct values than zones). Then the
// label raster is polygonized along pixel edges (geo.Polygonize): the
// polygons are valid, do not overlap, leave no gap, and their union is
// exactly the mask's pixels. Options.SimplifyTolerance optionally
// simplifies the boundaries (Douglas–Peucker) one shared boundary at a
// time, so both zones along it take the same line and no gap or overlap
// can open; the result is checked and dropped if any boundaries cross.
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
