package zoning

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"

	"github.com/cropkit/cropkit/geo/crs"
	"github.com/paulmach/orb"

	"github.com/cropkit/cropkit/internal/panicgroup"
)

// Collection is a zone result as polygon features in one CRS: what every
// export (GeoJSON, shapefile, ISOXML) encodes. A zone in several parts has
// one Feature per part, all with the same Zone.
type Collection struct {
	EPSG     int
	Features []Feature
	// Boundary is the outline of all zones together (the field's or
	// parcel's pixels); nil when unknown.
	Boundary orb.MultiPolygon
	// Type and Unit describe the doses (n_fertilizer in kg/ha, seeding in
	// seeds/ha); empty when no prescription was applied.
	Type PrescriptionType
	Unit string
	// Quality, when set, is encoded as a top-level "quality" member.
	Quality *Quality
	// ImageDate, when set, is encoded as a top-level "image_date" member:
	// the imagery the zones come from (one date, START/END for a layer
	// averaged over a date range, comma-separated for several layers).
	ImageDate string
	// ZoneStats are the zones (ID, RasterVal, Dose, Pixels, AreaHa) when
	// the collection comes from a Result; not encoded.
	ZoneStats []Zone
	// Plain marks a parsed collection whose features are not zones (some
	// feature has no numeric ZONE, e.g. a field collection): a shapefile
	// export then keeps the features' own Properties, named in Attributes,
	// instead of inventing zone columns. Each source feature is then one
	// Zone number (its position), so its parts stay one record.
	Plain bool
	// Attributes are the property names of a Plain collection in the
	// order they first appear.
	Attributes []string
}

// Feature is one zone polygon with the §2.4 properties.
type Feature struct {
	Zone      int
	RasterVal float64
	Dose      float64
	Polygon   orb.Polygon
	// Properties are the source feature's GeoJSON properties (nil unless
	// the collection is Plain).
	Properties map[string]any
}

// Collection returns the zones of r as features reprojected to dstEPSG
// (4326 when 0). An unsupported code gives an error matching
// crs.ErrUnsupportedCRS that names it.
func (r *Result) Collection(dstEPSG int) (*Collection, error) {
	if dstEPSG == 0 {
		dstEPSG = 4326
	}
	t, err := crs.New(r.Grid.EPSG, dstEPSG)
	if err != nil {
		return nil, fmt.Errorf("reproject zones to EPSG:%d: %w", dstEPSG, err)
	}
	byID := make(map[int]Zone, len(r.Zones))
	for _, z := range r.Zones {
		byID[z.ID] = z
	}
	c := &Collection{EPSG: dstEPSG, Features: make([]Feature, len(r.Polygons))}
	// The polygons are projected in chunks on all cores (a large field's
	// thousands of polygons take tens of milliseconds on one); the first
	// polygon that fails, in order, is reported.
	failed := make([]bool, len(r.Polygons))
	chunk := max(64, (len(r.Polygons)+4*runtime.GOMAXPROCS(0)-1)/(4*runtime.GOMAXPROCS(0)))
	var g panicgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for lo := 0; lo < len(r.Polygons); lo += chunk {
		g.Go(func() {
			for i := lo; i < min(lo+chunk, len(r.Polygons)); i++ {
				p := r.Polygons[i]
				z := byID[p.Zone]
				poly, ok := crs.Project(p.Polygon, t).(orb.Polygon)
				failed[i] = !ok || !finitePolygon(poly)
				c.Features[i] = Feature{Zone: z.ID, RasterVal: z.RasterVal, Dose: z.Dose, Polygon: poly}
			}
		})
	}
	g.Wait()
	if i := slices.Index(failed, true); i >= 0 {
		return nil, fmt.Errorf("reproject zone %d to EPSG:%d: coordinates outside the CRS's area of use", r.Polygons[i].Zone, dstEPSG)
	}
	q := r.Quality
	c.Quality = &q
	c.ZoneStats = slices.Clone(r.Zones)
	var boundary []orb.Polygon
	if r.Outline != nil {
		boundary = r.Outline
	} else {
		outline := make([]int32, len(r.Labels))
		for i, l := range r.Labels {
			if l > 0 {
				outline[i] = 1
			}
		}
		for _, p := range polygonize(outline, r.Grid) {
			boundary = append(boundary, p.Polygon)
		}
	}
	for _, p := range boundary {
		poly, ok := crs.Project(p, t).(orb.Polygon)
		if ok && finitePolygon(poly) {
			c.Boundary = append(c.Boundary, poly)
		}
	}
	return c, nil
}

// WithPrescription returns c's prescription description set from p.
func (c *Collection) WithPrescription(p Prescription) *Collection {
	out := *c
	out.Type, out.Unit = p.Type, p.WithDefaults().Unit()
	return &out
}

func finitePolygon(p orb.Polygon) bool {
	for _, r := range p {
		for _, q := range r {
			if math.IsNaN(q[0]) || math.IsNaN(q[1]) || math.IsInf(q[0], 0) || math.IsInf(q[1], 0) {
				return false
			}
		}
	}
	return true
}

// Zones returns the distinct zone numbers in ascending order.
func (c *Collection) Zones() []int {
	var ids []int
	for _, f := range c.Features {
		ids = append(ids, f.Zone)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// geometryJSON is a GeoJSON geometry whose coordinates are decoded by type.
type geometryJSON struct {
	Type        string          `json:"type"`
	Coordinates json.RawMessage `json:"coordinates"`
}

// MarshalJSON encodes the §2.4 zone collection: a FeatureCollection with a
// named crs member (urn:ogc:def:crs:EPSG::<code>) and one Polygon feature
// per zone part with DOSE, RASTER_VAL and ZONE. Outer rings are
// counter-clockwise and holes clockwise. It writes the JSON directly: a
// 10,000 ha field has hundreds of thousands of vertices.
// appendFeatures appends the GeoJSON features fs, comma-separated.
func appendFeatures(b []byte, fs []Feature) ([]byte, error) {
	for i, f := range fs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":"Feature","geometry":{"type":"Polygon","coordinates":[`...)
		for j, r := range f.Polygon {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, '[')
			for k, q := range r {
				if k > 0 {
					b = append(b, ',')
				}
				if !isFinite(q[0]) || !isFinite(q[1]) {
					return nil, fmt.Errorf("zone %d: coordinate %v is not finite", f.Zone, q)
				}
				b = append(b, '[')
				b = appendJSONFloat(b, q[0])
				b = append(b, ',')
				b = appendJSONFloat(b, q[1])
				b = append(b, ']')
			}
			b = append(b, ']')
		}
		b = append(b, `]},"properties":{"DOSE":`...)
		b = appendJSONFloat(b, finiteOr0(f.Dose))
		b = append(b, `,"RASTER_VAL":`...)
		b = appendJSONFloat(b, finiteOr0(f.RasterVal))
		b = append(b, `,"ZONE":`...)
		b = strconv.AppendInt(b, int64(f.Zone), 10)
		b = append(b, "}}"...)
	}
	return b, nil
}

func (c *Collection) MarshalJSON() ([]byte, error) {
	n := 0
	for _, f := range c.Features {
		for _, r := range f.Polygon {
			n += len(r)
		}
	}
	b := make([]byte, 0, 128+len(c.Features)*128+n*40)
	b = append(b, `{"type":"FeatureCollection","crs":{"type":"name","properties":{"name":`...)
	b = strconv.AppendQuote(b, crs.URN(c.EPSG))
	b = append(b, `}},"features":[`...)
	// The features are encoded in chunks on all cores (a large field has
	// thousands), then joined in order.
	chunk := max(256, (len(c.Features)+4*runtime.GOMAXPROCS(0)-1)/(4*runtime.GOMAXPROCS(0)))
	parts := make([][]byte, (len(c.Features)+chunk-1)/chunk)
	errs := make([]error, len(parts))
	var g panicgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i := range parts {
		g.Go(func() {
			lo, hi := i*chunk, min((i+1)*chunk, len(c.Features))
			if i == 0 {
				parts[i], errs[i] = appendFeatures(b, c.Features[lo:hi]) // in place: the first part is b
				return
			}
			parts[i], errs[i] = appendFeatures(make([]byte, 0, (hi-lo)*128+(n/len(c.Features)+1)*(hi-lo)*40), c.Features[lo:hi])
		})
	}
	g.Wait()
	for i, part := range parts {
		if errs[i] != nil {
			return nil, errs[i]
		}
		if i == 0 {
			b = part
			continue
		}
		b = append(b, ',')
		b = append(b, part...)
	}
	b = append(b, ']')
	if c.Quality != nil {
		q, err := json.Marshal(c.Quality)
		if err != nil {
			return nil, fmt.Errorf("encode zone quality: %w", err)
		}
		b = append(b, `,"quality":`...)
		b = append(b, q...)
	}
	if c.ImageDate != "" {
		b = append(b, `,"image_date":`...)
		b = strconv.AppendQuote(b, c.ImageDate)
	}
	b = append(b, '}')
	return b, nil
}

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// appendJSONFloat formats v as encoding/json does: the shortest
// representation that round-trips, in exponent form only for very small
// or very large magnitudes.
func appendJSONFloat(b []byte, v float64) []byte {
	abs := math.Abs(v)
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		return strconv.AppendFloat(b, v, 'e', -1, 64)
	}
	return strconv.AppendFloat(b, v, 'f', -1, 64)
}

func finiteOr0(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// ErrInvalidCollection is matched by ParseCollection errors.
var ErrInvalidCollection = errors.New("invalid zone collection")

// ParseCollection reads a GeoJSON FeatureCollection of Polygon or
// MultiPolygon features (the §2.4 collection, or any with numeric ZONE,
// RASTER_VAL and DOSE/RATE properties, which default to the feature's
// position and 0). The CRS comes from its crs member (EPSG:4326 without
// one); a MultiPolygon becomes one Feature per polygon. A collection in
// which some feature has no numeric ZONE is not a zone collection: it is
// marked Plain and keeps every feature's properties.
func ParseCollection(data []byte) (*Collection, error) {
	var raw struct {
		Type string `json:"type"`
		CRS  *struct {
			Properties struct {
				Name string `json:"name"`
			} `json:"properties"`
		} `json:"crs"`
		Features []struct {
			Geometry   *geometryJSON   `json:"geometry"`
			Properties json.RawMessage `json:"properties"`
		} `json:"features"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidCollection, err)
	}
	if raw.Type != "FeatureCollection" {
		return nil, fmt.Errorf("%w: type %q, want FeatureCollection", ErrInvalidCollection, raw.Type)
	}
	c := &Collection{EPSG: 4326}
	if raw.CRS != nil && raw.CRS.Properties.Name != "" {
		code, err := crs.ParseEPSG(raw.CRS.Properties.Name)
		if err != nil {
			return nil, fmt.Errorf("%w: crs: %w", ErrInvalidCollection, err)
		}
		c.EPSG = code
	}
	props := make([]map[string]any, len(raw.Features))
	seen := map[string]bool{}
	for i, f := range raw.Features {
		keys, err := propertyKeys(f.Properties)
		if err != nil {
			return nil, fmt.Errorf("%w: feature %d properties: %v", ErrInvalidCollection, i, err)
		}
		if len(keys) > 0 {
			// UseNumber keeps integers beyond 2^53 exact for the attributes.
			d := json.NewDecoder(bytes.NewReader(f.Properties))
			d.UseNumber()
			if err := d.Decode(&props[i]); err != nil {
				return nil, fmt.Errorf("%w: feature %d properties: %v", ErrInvalidCollection, i, err)
			}
		}
		for _, k := range keys {
			if !seen[k] {
				seen[k] = true
				c.Attributes = append(c.Attributes, k)
			}
		}
		if _, ok := number(props[i], "ZONE"); !ok {
			c.Plain = true
		}
	}
	if !c.Plain {
		c.Attributes = nil
	}
	for i, f := range raw.Features {
		if f.Geometry == nil {
			return nil, fmt.Errorf("%w: feature %d has no geometry", ErrInvalidCollection, i)
		}
		var polys [][][][]float64
		switch f.Geometry.Type {
		case "Polygon":
			var p [][][]float64
			if err := json.Unmarshal(f.Geometry.Coordinates, &p); err != nil {
				return nil, fmt.Errorf("%w: feature %d: %v", ErrInvalidCollection, i, err)
			}
			polys = append(polys, p)
		case "MultiPolygon":
			if err := json.Unmarshal(f.Geometry.Coordinates, &polys); err != nil {
				return nil, fmt.Errorf("%w: feature %d: %v", ErrInvalidCollection, i, err)
			}
		default:
			return nil, fmt.Errorf("%w: feature %d is a %q, want Polygon or MultiPolygon", ErrInvalidCollection, i, f.Geometry.Type)
		}
		zone, ok := number(props[i], "ZONE")
		if !ok || c.Plain {
			zone = float64(i + 1)
		}
		if zone != math.Trunc(zone) || zone < 0 || zone > 1e9 {
			return nil, fmt.Errorf("%w: feature %d: ZONE %v is not a whole number", ErrInvalidCollection, i, zone)
		}
		rv, _ := number(props[i], "RASTER_VAL")
		dose, ok := number(props[i], "DOSE")
		if !ok {
			dose, _ = number(props[i], "RATE")
		}
		var own map[string]any
		if c.Plain {
			own = props[i]
			if own == nil {
				own = map[string]any{}
			}
		}
		for _, p := range polys {
			poly, err := toPolygon(p)
			if err != nil {
				return nil, fmt.Errorf("%w: feature %d: %v", ErrInvalidCollection, i, err)
			}
			c.Features = append(c.Features, Feature{Zone: int(zone), RasterVal: rv, Dose: dose, Polygon: poly, Properties: own})
		}
	}
	return c, nil
}

// propertyKeys returns the member names of a GeoJSON properties object in
// document order (a map would lose it, and a shapefile's columns should
// follow the source); null or absent properties have none.
func propertyKeys(raw json.RawMessage) ([]string, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	if tok != json.Delim('{') {
		return nil, errors.New("not an object")
	}
	var keys []string
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return nil, err
		}
		k, _ := tok.(string)
		keys = append(keys, k)
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// number returns props[key] as a finite float64 (decoded as json.Number
// or float64).
func number(props map[string]any, key string) (float64, bool) {
	var v float64
	switch x := props[key].(type) {
	case float64:
		v = x
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return 0, false
		}
		v = f
	default:
		return 0, false
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

func toPolygon(rings [][][]float64) (orb.Polygon, error) {
	if len(rings) == 0 {
		return nil, errors.New("polygon without rings")
	}
	p := make(orb.Polygon, len(rings))
	for i, r := range rings {
		if len(r) < 4 {
			return nil, fmt.Errorf("ring %d has %d points, want at least 4", i, len(r))
		}
		p[i] = make(orb.Ring, len(r))
		for j, q := range r {
			if len(q) < 2 {
				return nil, fmt.Errorf("ring %d point %d has %d coordinates", i, j, len(q))
			}
			p[i][j] = orb.Point{q[0], q[1]}
		}
		if p[i][0] != p[i][len(r)-1] {
			return nil, fmt.Errorf("ring %d is not closed", i)
		}
	}
	return p, nil
}

// Reproject returns c in EPSG code dst.
func (c *Collection) Reproject(dst int) (*Collection, error) {
	if dst == c.EPSG {
		return c, nil
	}
	t, err := crs.New(c.EPSG, dst)
	if err != nil {
		return nil, fmt.Errorf("reproject zones to EPSG:%d: %w", dst, err)
	}
	out := *c
	out.EPSG = dst
	out.Boundary = nil
	for _, p := range c.Boundary {
		if poly, ok := crs.Project(p, t).(orb.Polygon); ok && finitePolygon(poly) {
			out.Boundary = append(out.Boundary, poly)
		}
	}
	out.Features = make([]Feature, len(c.Features))
	for i, f := range c.Features {
		poly, ok := crs.Project(f.Polygon, t).(orb.Polygon)
		if !ok || !finitePolygon(poly) {
			return nil, fmt.Errorf("reproject zone %d to EPSG:%d: coordinates outside the CRS's area of use", f.Zone, dst)
		}
		f.Polygon = poly
		out.Features[i] = f
	}
	return &out, nil
}
