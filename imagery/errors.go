package imagery

import "errors"

// Errors callers branch on (match with errors.Is).
var (
	// ErrNoOverlap: the field holds no pixel of the scene.
	ErrNoOverlap = errors.New("field does not overlap the scene")
	// ErrNoClearPixels: every field pixel is masked (clouds, shadow, no data),
	// so the field has no product for that date.
	ErrNoClearPixels = errors.New("no clear pixel in the field")
	// ErrUnknownIndex: the index name is not in the catalogue.
	ErrUnknownIndex = errors.New("unknown index")
	// ErrMissingBand: the scene lacks a band an index needs.
	ErrMissingBand = errors.New("band missing from scene")
	// ErrSensorMismatch: the index does not apply to the scene's sensor
	// (an optical index on a radar scene, a red-edge index on Landsat, …).
	ErrSensorMismatch = errors.New("index does not apply to the scene's sensor")
	// ErrNoDate: no acquisition date in the scene's metadata, its folder
	// name or SceneOptions.Date.
	ErrNoDate = errors.New("scene has no acquisition date")
	// ErrLocalAsset: a STAC item served over http(s) names a local file
	// (file:// or a path) as an asset; it is refused.
	ErrLocalAsset = errors.New("local asset in a remote STAC item")
	// ErrUnsupportedSensor: a STAC item of a sensor cropkit does not read
	// (Landsat, Sentinel-1…); the error is a *SensorError naming it.
	ErrUnsupportedSensor = errors.New("unsupported sensor")
	// ErrUnreadableAsset: no asset of a band is in a format and place cropkit
	// reads (JPEG 2000 only, a requester-pays bucket…); the error is an
	// *AssetError naming the band and the reason.
	ErrUnreadableAsset = errors.New("no readable asset")
)
