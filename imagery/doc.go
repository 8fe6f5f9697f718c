// Package imagery turns satellite scenes into per-field index products:
// it opens a scene (a folder of single-band GeoTIFFs or a STAC item, local
// or over HTTP), reads only the pixels under a field, masks clouds and
// no-data, computes indices from a catalogue and summarises them with the
// statistics of the interface spec (§2.5).
//
// A scene has a Sensor: Sentinel-2 (the reference), Landsat 8/9 Collection 2
// Level-2 (served under the Sentinel-2 band names after HLS's bandpass
// adjustment, masked by QA_PIXEL) or Sentinel-1 (VV/VH backscatter as linear
// power, no cloud mask; dB indices averaged in linear power). Each Index
// says which sensor families it applies to (docs/sensors.md).
//
// The flow for one field and one date:
//
//	scene, _ := imagery.OpenScene(ctx, "data/s2/flanders-31UES/2019-06-20", imagery.SceneOptions{})
//	defer scene.Close()
//	products, err := scene.FieldProducts(ctx, field, []string{"ndvi", "ndre"}, imagery.NewCatalogue())
//	report, _ := imagery.NewReport(products[0], prevMean) // json.Marshal(report) is the §2.5 document
//
// Conventions (the repository README has the full text):
//
//   - Reflectance = (DN + offset) / 10000, offset −1000 when the metadata says
//     processing baseline ≥ 04.00 and no harmonization was applied, else 0
//     (explicit STAC raster:bands or GDAL REFLECTANCE_* items win).
//   - Coarser bands (20 m, 60 m) are resampled to the scene's finest grid by
//     nearest neighbour, i.e. each 10 m pixel takes the coarse pixel holding its centre.
//   - A field pixel is one whose centre lies inside the polygon (geo.Rasterize);
//     a pixel is clear when the scene mask (SCL classes, or CLM = 1) does not
//     flag it and no band it uses is DN 0 (or the file's nodata value);
//     index values that are not finite are excluded too.
//   - Statistics are float64 over the clear pixels: population std,
//     percentiles by linear interpolation between closest ranks (numpy's default).
//
// Memory is budgeted, not left to the input: a field window over
// SceneOptions.MaxFieldPixels (counted in the scene's pixels and in those of
// every band read, so a normal field over centimetre pixels is refused) and
// a read whose estimated peak exceeds the scene's Budget fail with a
// *BudgetError (errors.Is ErrBudget) before anything is allocated; a Budget
// shared between scenes makes concurrent reads wait for each other.
package imagery
