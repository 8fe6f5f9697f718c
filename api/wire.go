package api

import (
	"encoding/json"
	"time"
)

// Login answers /login.
type Login struct {
	Token    string `json:"token"`
	Username string `json:"username"`
}

// Message is an answer that only says what was done.
type Message struct {
	Message string `json:"message"`
}

// Geometry is a GeoJSON geometry; fields are answered as MultiPolygon.
type Geometry struct {
	Type        string          `json:"type"`
	Coordinates json.RawMessage `json:"coordinates"`
}

// FieldRequest is the JSON body of /fields/register and /fields/update.
// Geometry is GeoJSON (Polygon, MultiPolygon or Feature, EPSG:4326). On update, nil members are left
// unchanged; an empty non-nil Labels map clears the labels (sent as {}), a
// pointer to "" clears the group. Sending the current geometry again keeps
// the field's products.
type FieldRequest struct {
	FieldName string          `json:"field_name"`
	Geometry  json.RawMessage `json:"geometry,omitempty"`
	Group     *string         `json:"group,omitempty"`
	// Labels is sent even when empty: nil is JSON null (unchanged), an
	// empty map {} (no labels).
	Labels  map[string]string `json:"labels"`
	Indices []string          `json:"indices,omitempty"`
}

// ZoneLayer is a §2.3 layer object of a variable-rate request: a crop_health
// layer (Index with Date, or StartDate and EndDate) or a custom layer
// (Filename, the .shp name, and Attribute). Weight is the layer's share of
// the clustering distance.
type ZoneLayer struct {
	Type      string `json:"type"` // "crop_health" or "custom"
	Weight    int    `json:"weight"`
	Index     string `json:"index,omitempty"`
	Date      string `json:"date,omitempty"` // YYYY-MM-DD
	StartDate string `json:"start_date,omitempty"`
	EndDate   string `json:"end_date,omitempty"`
	Filename  string `json:"filename,omitempty"`
	Attribute string `json:"attribute,omitempty"`
}

// Field is a registered field.
type Field struct {
	FieldName string            `json:"field_name"`
	Group     string            `json:"group"`
	Labels    map[string]string `json:"labels"`
	Indices   []string          `json:"indices"`
	Geometry  Geometry          `json:"geometry"`
	BBox      [4]float64        `json:"bbox"` // west, south, east, north
	// AreaHa is the outline's geodesic area (SpaceSense's client reads "area (ha)").
	AreaHa    float64 `json:"area (ha)"`
	CreatedAt string  `json:"created_at"`
	UpdatedAt string  `json:"updated_at"`
}

// FieldResult answers a field's registration or update.
type FieldResult struct {
	Message string `json:"message"`
	Field   Field  `json:"field"`
	// AreaHa repeats field.area (ha) at the top level, where SpaceSense's
	// client reads it.
	AreaHa float64 `json:"area (ha)"`
}

// FieldList answers /fields/list.
type FieldList struct {
	Fields []Field `json:"fields"`
}

// Index describes an index the caller may use.
type Index struct {
	Name    string   `json:"name"`
	Formula string   `json:"formula"`
	Source  string   `json:"source"`
	Bands   []string `json:"bands"`
	// Sensors are the sensor families the index applies to
	// ("sentinel-2", "landsat", "sentinel-1").
	Sensors []string `json:"sensors"`
}

// IndexList answers /indices/list.
type IndexList struct {
	Indices []Index `json:"indices"`
}

// FileEntry is one date with a usable image.
type FileEntry struct {
	Date       string  `json:"date"`
	CloudCover float64 `json:"cloud_cover"`
	Mean       float64 `json:"mean"`
	Num        int     `json:"num"`
	Scene      string  `json:"scene"`
	// Sensor names the image's sensor ("sentinel-2a", "landsat-8", "sentinel-1a", …).
	Sensor string `json:"sensor"`
}

// FileList answers /files/list: usable dates per index, and the uploads.
type FileList struct {
	FieldName string                 `json:"field_name"`
	Indices   map[string][]FileEntry `json:"indices"`
	// Uploads are the field's uploaded shapefiles and rasters (/files/upload).
	Uploads []UploadEntry `json:"uploads"`
}

// UploadEntry is one upload as /files/list names it.
type UploadEntry struct {
	Filename   string `json:"filename"`
	Kind       string `json:"kind"`
	UploadedAt string `json:"uploaded_at"`
}

// Value answers /fields/value: the index value of the pixel holding a
// location, and the date used.
type Value struct {
	FieldName string  `json:"field_name"`
	Index     string  `json:"index"`
	Date      string  `json:"date"`
	Lat       float64 `json:"lat"`
	Lon       float64 `json:"lon"`
	Value     float64 `json:"value"`
}

// Token describes one of the caller's tokens (never its secret).
type Token struct {
	ID        int64   `json:"id"`
	CreatedAt string  `json:"created_at"`
	ExpiresAt *string `json:"expires_at"`
	// Current marks the token the request was sent with.
	Current bool `json:"current"`
}

// TokenList answers /tokens/list.
type TokenList struct {
	Tokens []Token `json:"tokens"`
}

// WebhookRegistered is the §2.7 registration result, plus the
// registration's id and, when it was created now, its signing secret.
type WebhookRegistered struct {
	Message  string `json:"message"`
	Username string `json:"username"`
	ID       int64  `json:"id"`
	URL      string `json:"url"`
	// Created is false when the URL was already registered: nothing changed
	// (a registration disabled by a 410 is enabled again) and Secret is empty.
	Created bool `json:"created"`
	// Secret signs the notifications (webhook.Verify); it is shown only once.
	Secret string `json:"secret,omitempty"`
	// Events is whether the registration receives field-event
	// notifications (EventNotification), when the request set it
	// (events=true|false).
	Events *bool `json:"events,omitempty"`
}

// SceneItemField is a field a catalogue item was ingested for.
type SceneItemField struct {
	Owner string `json:"owner"`
	Field string `json:"field_name"`
}

// SceneItem is one catalogue item the watcher handled (/scenes/list).
type SceneItem struct {
	ID         string           `json:"id"`
	Collection string           `json:"collection"`
	Datetime   time.Time        `json:"datetime"`
	Updated    string           `json:"updated,omitempty"`
	Source     string           `json:"source"`
	Fields     []SceneItemField `json:"fields"`
	Usable     int              `json:"usable"`
	State      string           `json:"state"`
	Error      string           `json:"error,omitempty"`
	IngestedAt time.Time        `json:"ingested_at"`
}

// SceneItemList answers /scenes/list.
type SceneItemList struct {
	Items []SceneItem `json:"items"`
}

// History answers /fields/history (JSON): per index, one row per usable date.
type History struct {
	FieldName string                  `json:"field_name"`
	Indices   map[string][]HistoryRow `json:"indices"`
}

// ZoneCollection is the §2.4 zone collection.
type ZoneCollection struct {
	Type string `json:"type"`
	CRS  struct {
		Type       string `json:"type"`
		Properties struct {
			Name string `json:"name"` // urn:ogc:def:crs:EPSG::<code>
		} `json:"properties"`
	} `json:"crs"`
	Features []ZoneFeature `json:"features"`
}

// ZoneFeature is one zone polygon; a zone in several parts has several features.
type ZoneFeature struct {
	Type     string `json:"type"`
	Geometry struct {
		Type        string         `json:"type"` // Polygon
		Coordinates [][][2]float64 `json:"coordinates"`
	} `json:"geometry"`
	Properties ZoneProperties `json:"properties"`
}

// ZoneProperties are a zone's §2.4 properties.
type ZoneProperties struct {
	Dose      float64 `json:"DOSE"`
	RasterVal float64 `json:"RASTER_VAL"`
	Zone      int     `json:"ZONE"`
}

// MetadataRecord is a field metadata record (spec §2.2); optional members are pointers.
type MetadataRecord struct {
	FieldName   string  `json:"field_name"`
	StartDate   string  `json:"start_date"`
	HarvestDate *string `json:"harvest_date,omitempty"`
	CropType    *string `json:"crop_type,omitempty"`
	IsCoverCrop *bool   `json:"is_cover_crop,omitempty"`
	YieldAmount *int    `json:"yield_amount,omitempty"`
	YieldUnit   *string `json:"yield_unit,omitempty"`
	IsTilled    *bool   `json:"is_tilled,omitempty"`
	TillingType *string `json:"tilling_type,omitempty"`
}

// TokensRevoked answers /tokens/revoke.
type TokensRevoked struct {
	Message string `json:"message"`
	Revoked int    `json:"revoked"`
}

// NameAvailable answers /fields/check/{field_name}: whether the caller has
// no field of that name.
type NameAvailable struct {
	Available bool `json:"available"`
}
