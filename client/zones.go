package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"sort"
	"strconv"

	"github.com/cropkit/cropkit/api"
)

// Layer is a §2.3 layer object of a variable-rate request (api.ZoneLayer).
type Layer = api.ZoneLayer

// Rates is the dose rule beyond the spec; zero members take the server's
// defaults (n_fertilizer 120 kg N/ha in 60..180, compensate; seeding 80,000
// seeds/ha in 60,000..100,000, proportional).
type Rates struct {
	Strategy string // "compensate" or "proportional"
	BaseRate float64
	MinRate  float64
	MaxRate  float64
}

func (r Rates) query(kv []string) []string {
	num := func(v float64) string {
		if v == 0 {
			return ""
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return append(kv, "strategy", r.Strategy, "base_rate", num(r.BaseRate), "min_rate", num(r.MinRate), "max_rate", num(r.MaxRate))
}

// VariableRateZonesRequest is a §4.1 request.
type VariableRateZonesRequest struct {
	FieldName string
	NZones    int
	Layers    []Layer
	// DstCRS is the output's EPSG code, e.g. "32631" ("" = 4326).
	DstCRS string
	// ParcelGeoJSON is a GeoJSON Polygon or Feature holding one, inside the field.
	ParcelGeoJSON json.RawMessage
	// Files are the files of the custom layers' shapefiles by file name
	// (e.g. "soil.shp", "soil.shx", "soil.dbf", "soil.prj"), sent as files parts.
	Files map[string][]byte
	// Format is "geojson" (default), "shapefile" or "isoxml".
	Format string
	// Sensor chooses the crop-health layers' sensor family ("" each
	// index's default: Sentinel-2 for optical indices).
	Sensor string
	// Type is the DOSE rule's prescription type ("" = n_fertilizer) and Rates its rates.
	Type  string
	Rates Rates
	// MinAreaHa is the minimum mapping unit (nil = 0.1 ha; 0 = no sieve).
	MinAreaHa *float64
	// Simplify is the boundary simplification tolerance in metres (0 = none).
	Simplify float64
}

// ZoneCollection is the §2.4 zone collection.
type ZoneCollection = api.ZoneCollection

// ZoneFeature is one zone polygon; a zone in several parts has several features.
type ZoneFeature = api.ZoneFeature

// ZoneProperties are a zone's §2.4 properties.
type ZoneProperties = api.ZoneProperties

// Zones is the answer of the zone operations: File holds the answer as sent
// (its name, type and, for §4.3 n_fertilizer, the image date), and
// Collection the decoded §2.4 collection when the format is geojson (nil for
// the zipped shapefile and ISOXML formats).
type Zones struct {
	Collection *ZoneCollection
	File       File
}

func (c *Client) zones(ctx context.Context, r request) (Zones, error) {
	f, err := c.file(ctx, r)
	if err != nil {
		return Zones{}, err
	}
	out := Zones{File: f}
	if f.ContentType == "application/json" {
		out.Collection = &ZoneCollection{}
		if err := json.Unmarshal(f.Data, out.Collection); err != nil {
			return Zones{}, fmt.Errorf("cropkit client: %s: decode zones: %w", r.path, err)
		}
	}
	return out, nil
}

// VariableRateZones computes management zones from weighted layers (§4.1
// /v1/variable-rate-zones), sent as a multipart form with the files parts.
func (c *Client) VariableRateZones(ctx context.Context, z VariableRateZonesRequest) (Zones, error) {
	layers, err := json.Marshal(z.Layers)
	if err != nil {
		return Zones{}, fmt.Errorf("cropkit client: encode layers: %w", err)
	}
	values := []string{"field_name", z.FieldName, "n_zones", strconv.Itoa(z.NZones), "layers", string(layers),
		"dst_crs", z.DstCRS, "parcel_geojson", string(z.ParcelGeoJSON), "format", z.Format, "type", z.Type}
	if z.Sensor != "" {
		values = append(values, "sensor", z.Sensor)
	}
	values = z.Rates.query(values)
	if z.MinAreaHa != nil {
		values = append(values, "min_area_ha", strconv.FormatFloat(*z.MinAreaHa, 'g', -1, 64))
	}
	if z.Simplify != 0 {
		values = append(values, "simplify", strconv.FormatFloat(z.Simplify, 'g', -1, 64))
	}
	r, err := multipartRequest("/v1/variable-rate-zones", values, "files", z.Files)
	if err != nil {
		return Zones{}, err
	}
	return c.zones(ctx, r)
}

// PrescriptionZonesRequest is a §4.3 request.
type PrescriptionZonesRequest struct {
	FieldName string
	Type      string // "n_fertilizer" or "seeding"
	NZones    int
	Index     string
	// Date is the n_fertilizer image date ("" = the latest usable image); seeding takes none.
	Date   string
	DstCRS string // "" = 4326
	Format string // "geojson" (default), "shapefile" or "isoxml"
	Rates  Rates
	// Sensor chooses the image's sensor family ("" the index's default:
	// Sentinel-2 for optical indices; "landsat", "sentinel-1").
	Sensor string
}

// PrescriptionZones computes fertilizer or seeding zones of one index
// (§4.3 /prescription_maps/get_zones).
func (c *Client) PrescriptionZones(ctx context.Context, p PrescriptionZonesRequest) (Zones, error) {
	kv := []string{"field_name", p.FieldName, "type", p.Type, "n_zones", strconv.Itoa(p.NZones), "index", p.Index,
		"date", p.Date, "dst_crs", p.DstCRS, "format", p.Format, "sensor", p.Sensor}
	return c.zones(ctx, request{path: "/prescription_maps/get_zones", query: query(p.Rates.query(kv)...)})
}

// Upload is one shapefile set or raster stored for a field.
type Upload = api.Upload

// UploadList is the answer of UploadFiles and ListUploads.
type UploadList = api.Uploads

// UploadFiles stores shapefile sets (files by name: .shp, .shx, .dbf, .prj)
// for a field's later custom layers (/files/upload).
func (c *Client) UploadFiles(ctx context.Context, fieldName string, files map[string][]byte) (UploadList, error) {
	r, err := multipartRequest("/files/upload", []string{"field_name", fieldName}, "files", files)
	if err != nil {
		return UploadList{}, err
	}
	var out UploadList
	return out, c.call(ctx, r, &out)
}

// ListUploads lists the shapefile sets stored for a field (/files/uploads).
func (c *Client) ListUploads(ctx context.Context, fieldName string) (UploadList, error) {
	var out UploadList
	return out, c.call(ctx, request{path: "/files/uploads", query: query("field_name", fieldName)}, &out)
}

// ConvertGeoJSONToShapefile converts a GeoJSON FeatureCollection of polygons
// to a zipped shapefile in EPSG:4326 (/convert/geojson-to-shapefile).
func (c *Client) ConvertGeoJSONToShapefile(ctx context.Context, geojson []byte) (File, error) {
	return c.file(ctx, request{path: "/convert/geojson-to-shapefile", body: bytes.NewReader(geojson), contentType: "application/json"})
}

// multipartRequest builds a multipart form of values (name/value pairs,
// empty values skipped) and files, each a part named part, in name order.
func multipartRequest(path string, values []string, part string, files map[string][]byte) (request, error) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for i := 0; i+1 < len(values); i += 2 {
		if values[i+1] == "" {
			continue
		}
		if err := mw.WriteField(values[i], values[i+1]); err != nil {
			return request{}, fmt.Errorf("cropkit client: %s: %w", path, err)
		}
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		w, err := mw.CreateFormFile(part, n)
		if err != nil {
			return request{}, fmt.Errorf("cropkit client: %s: %w", path, err)
		}
		if _, err := w.Write(files[n]); err != nil {
			return request{}, fmt.Errorf("cropkit client: %s: %w", path, err)
		}
	}
	if err := mw.Close(); err != nil {
		return request{}, fmt.Errorf("cropkit client: %s: %w", path, err)
	}
	return request{path: path, body: &body, contentType: mw.FormDataContentType()}, nil
}
