package boundary

import (
	"cmp"
	"encoding/json"
	"slices"

	"github.com/paulmach/orb"

	"github.com/cropkit/cropkit/api"
)

func sortFields(fs []Field) {
	slices.SortStableFunc(fs, func(a, b Field) int { return cmp.Compare(b.AreaHa, a.AreaHa) })
}

// The GeoJSON form of a Result is the API's wire type.
type (
	// FeatureCollection is the GeoJSON form of a Result (EPSG:4326, RFC 7946).
	FeatureCollection = api.BoundaryCollection
	// Feature is one detected field as GeoJSON.
	Feature = api.BoundaryFeature
	// PolygonGeometry is a GeoJSON Polygon.
	PolygonGeometry = api.PolygonGeometry
	// FeatureProperties are a detected field's properties.
	FeatureProperties = api.BoundaryProperties
)

// FeatureCollection is the detected fields as GeoJSON (EPSG:4326): one
// Polygon feature per field, largest first, with properties area_ha (4
// decimals) and confidence (3 decimals), and ids 1, 2, … in that order.
// Coordinates are rounded to 8 decimals (about 1 mm), far below the 10 m
// pixels the vertices come from.
// orb's geojson package is not used: it pulls in a BSON dependency.
func (r *Result) FeatureCollection() FeatureCollection {
	fc := FeatureCollection{Type: "FeatureCollection", Features: make([]Feature, 0, len(r.Fields))}
	for i, f := range r.Fields {
		fc.Features = append(fc.Features, Feature{
			Type:       "Feature",
			ID:         i + 1,
			Geometry:   PolygonGeometry{Type: "Polygon", Coordinates: rounded(f.Polygon)},
			Properties: FeatureProperties{AreaHa: round(f.AreaHa, 4), Confidence: round(f.Confidence, 3)},
		})
	}
	return fc
}

// MarshalJSON encodes FeatureCollection.
func (r *Result) MarshalJSON() ([]byte, error) {
	return json.Marshal(r.FeatureCollection())
}

// rounded is a copy of p with coordinates rounded to 8 decimals.
func rounded(p orb.Polygon) orb.Polygon {
	out := make(orb.Polygon, len(p))
	for i, r := range p {
		out[i] = make(orb.Ring, len(r))
		for j, q := range r {
			out[i][j] = orb.Point{round(q[0], 8), round(q[1], 8)}
		}
	}
	return out
}
