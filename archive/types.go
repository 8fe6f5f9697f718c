package archive

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/paulmach/orb"

	"github.com/cropkit/cropkit/geo"
)

// User is an account. Indices lists the indices it may use; nil means every
// index of the catalogue.
type User struct {
	ID      int64
	Name    string
	Admin   bool
	Indices []string
}

// May reports whether u may use index name.
func (u User) May(name string) bool {
	return u.Indices == nil || slices.Contains(u.Indices, name)
}

// NewUser describes an account to create.
type NewUser struct {
	Name     string
	Password string // empty: token-only account (no login)
	Admin    bool
	Indices  []string // nil: every index
}

// Token describes an issued token; the secret itself is never stored.
type Token struct {
	ID      int64
	Created time.Time
	Expires time.Time // zero: never
	// Current is set by Archive.Tokens on the token the caller used.
	Current bool
}

// Field is a registered field.
type Field struct {
	ID       int64
	OwnerID  int64
	Owner    string
	Name     string
	Group    string
	Labels   map[string]string
	Indices  []string
	Geometry orb.MultiPolygon // EPSG:4326; nil in summaries
	Bound    orb.Bound        // of Geometry
	Created  time.Time
	Updated  time.Time
	// Version counts the outline's changes; ingestion records products only
	// for the version it read, and uploads belong to one version.
	Version int64
}

// Season is one stored metadata record keyed by its start date.
type Season struct {
	StartDate string
	Record    json.RawMessage
}

// Product is the record of one field × index × date after ingestion.
// Unusable products (too little clear sky) are recorded with their cloud
// cover but have no files and are never served.
type Product struct {
	FieldID int64
	Index   string
	Date    string // YYYY-MM-DD (UTC acquisition date)
	// Sensor is the scene's sensor (imagery.Sensor: "sentinel-2a",
	// "landsat-8", "sentinel-1a", …) and Family its family ("sentinel-2",
	// "landsat", "sentinel-1"); a field, index and date hold one product
	// per family. Empty means Sentinel-2 (rows from before sensors).
	Sensor      string
	Family      string
	SceneID     string
	Usable      bool
	CloudCover  float64 // percent of field pixels masked
	Mean        float64
	Median      float64
	Std         float64
	Min         float64
	Max         float64
	P25         float64
	P75         float64
	Num         int // clear pixels
	FieldPixels int
	Grid        geo.Grid // of the product's values (scene CRS)
	IngestedAt  time.Time
	// Bundle is the blob key of the date's files (usable products only).
	Bundle string
	// Digest identifies the product's content (its stored document); an
	// ingestion that reproduces it notifies nobody.
	Digest string
	// AcquiredAt is the scene's acquisition time (UTC), set by ingestion for
	// the webhook payload; rows keep the date only.
	AcquiredAt time.Time
}

// ProductQuery selects the products of a field.
type ProductQuery struct {
	FieldID    int64
	Index      string // "" = every index
	From, To   string // inclusive YYYY-MM-DD bounds; "" = open
	UsableOnly bool
	// Family keeps one sensor family's products ("sentinel-2", "landsat",
	// "sentinel-1"); "" keeps every family.
	Family string
}

// Limits are the per-account and per-field caps (ErrInvalid or ErrQuota beyond).
type Limits struct {
	// FieldsPerUser is the number of fields one account may register.
	FieldsPerUser int
	// FieldExtentHa bounds the area of a field's lon/lat bounding box, in
	// hectares: ingestion reads the whole box.
	FieldExtentHa float64
	// FieldParts bounds the polygons of a field's MultiPolygon.
	FieldParts int
	// WebhooksPerUser is the number of webhook URLs one account may register.
	WebhooksPerUser int
	// NameBytes bounds field and user names; GroupBytes the group;
	// LabelBytes each label key and value; Labels the number of labels.
	NameBytes, GroupBytes, LabelBytes, Labels int
}

// DefaultLimits are the limits used for zero Limits fields.
func DefaultLimits() Limits {
	outline := geo.DefaultOutlineLimits()
	return Limits{FieldsPerUser: 10000, FieldExtentHa: outline.ExtentHa, FieldParts: outline.Parts, WebhooksPerUser: 20,
		NameBytes: 200, GroupBytes: 200, LabelBytes: 200, Labels: 50}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	set := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	set(&l.FieldsPerUser, d.FieldsPerUser)
	set(&l.FieldParts, d.FieldParts)
	set(&l.WebhooksPerUser, d.WebhooksPerUser)
	set(&l.NameBytes, d.NameBytes)
	set(&l.GroupBytes, d.GroupBytes)
	set(&l.LabelBytes, d.LabelBytes)
	set(&l.Labels, d.Labels)
	if l.FieldExtentHa <= 0 {
		l.FieldExtentHa = d.FieldExtentHa
	}
	return l
}
