// Package api holds the wire types the server answers and the client
// decodes, where both sides share one definition. It imports nothing of
// cropkit's imagery or storage, so the client stays light.
package api

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/paulmach/orb"
)

// IngestRequest is the JSON body of /scenes/ingest: the scene's source (a
// folder the server reads, a STAC item path or URL) and, for a scene without
// one in its metadata or name, its date.
type IngestRequest struct {
	Source string `json:"source"`
	Date   string `json:"date,omitempty"`
}

// IngestResult summarises the ingestion of one scene (POST /scenes/ingest).
type IngestResult struct {
	Scene string `json:"scene"`
	Date  string `json:"date"`
	// Fields is the number of fields whose box meets the scene footprint.
	Fields int `json:"fields"`
	// Outside counts those fields that, precisely, hold no pixel of the scene.
	Outside int `json:"outside"`
	// Usable counts stored products with enough clear pixels; Unusable the
	// others (recorded with their cloud cover, never served).
	Usable   int `json:"usable"`
	Unusable int `json:"unusable"`
	// Skipped counts fields deleted, or whose outline changed, while the
	// scene was processed: nothing is recorded for them.
	Skipped int `json:"skipped"`
	// Notified counts the webhook deliveries enqueued.
	Notified int `json:"notified"`
	// Failed counts fields whose ingestion failed; Failures says why.
	Failed   int            `json:"failed"`
	Failures []FieldFailure `json:"failures"`
}

// FieldFailure is the failed ingestion of one field.
type FieldFailure struct {
	Owner string `json:"owner"`
	Field string `json:"field"`
	Error string `json:"error"`
}

// Report is the §2.5 JSON document of one field image as downloaded: the
// index per PNG pixel (rows north to south, NaN where null) under the
// index's name, the statistics, where to place the PNG, and how the mean
// changed since the previous usable image.
type Report struct {
	Index                                 string
	Bounds                                [2][2]float64 // [[south, west], [north, east]]
	Cols                                  int
	Rows                                  int
	Values                                []float64
	Mean, Median, Std, Min, Max, P25, P75 float64
	Num                                   int
	FieldPixels                           int
	CloudCover                            float64
	// MeanVariation is the percent change of Mean versus the image of
	// PreviousDate; 0 with a nil PreviousDate for a field's first image.
	MeanVariation float64
	PreviousDate  *string
	Date          string
	// Sensor names the image's sensor ("sentinel-2a", "landsat-8",
	// "sentinel-1a", …; "sentinel-1" when the source names only the
	// mission); "" in documents that predate sensors.
	Sensor string
}

// UnmarshalJSON reads a §2.5 document; the index is the one key that is
// not a known member. Null statistics become NaN.
func (r *Report) UnmarshalJSON(data []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	*r = Report{}
	floats := map[string]*float64{"mean": &r.Mean, "median": &r.Median, "std": &r.Std, "min": &r.Min, "max": &r.Max,
		"p25": &r.P25, "p75": &r.P75, "cloud_cover": &r.CloudCover, "mean_variation": &r.MeanVariation}
	ints := map[string]*int{"num": &r.Num, "field_pixels": &r.FieldPixels}
	for k, raw := range m {
		var err error
		switch {
		case k == "bounds":
			err = json.Unmarshal(raw, &r.Bounds)
		case k == "date":
			err = json.Unmarshal(raw, &r.Date)
		case k == "sensor":
			err = json.Unmarshal(raw, &r.Sensor)
		case k == "previous_date":
			err = json.Unmarshal(raw, &r.PreviousDate)
		case floats[k] != nil:
			var v *float64
			if err = json.Unmarshal(raw, &v); err == nil {
				*floats[k] = math.NaN()
				if v != nil {
					*floats[k] = *v
				}
			}
		case ints[k] != nil:
			err = json.Unmarshal(raw, ints[k])
		default:
			if r.Index != "" {
				return fmt.Errorf("report: two index keys %q and %q", r.Index, k)
			}
			var rows [][]*float64
			if err = json.Unmarshal(raw, &rows); err != nil {
				break
			}
			r.Index, r.Rows = k, len(rows)
			if r.Rows > 0 {
				r.Cols = len(rows[0])
			}
			r.Values = make([]float64, 0, r.Rows*r.Cols)
			for i, row := range rows {
				if len(row) != r.Cols {
					return fmt.Errorf("report %s: row %d has %d values, want %d", k, i, len(row), r.Cols)
				}
				for _, v := range row {
					if v == nil {
						r.Values = append(r.Values, math.NaN())
					} else {
						r.Values = append(r.Values, *v)
					}
				}
			}
		}
		if err != nil {
			return fmt.Errorf("report %s: %w", k, err)
		}
	}
	if r.Index == "" {
		return fmt.Errorf("report: no index key")
	}
	return nil
}

// HistoryRow is one usable image of a field and index in its history
// (GET /fields/history): the §2.5 statistics, cloud cover and
// mean_variation against the usable image before it (PreviousDate).
type HistoryRow struct {
	Date          string  `json:"date"`
	Mean          float64 `json:"mean"`
	Median        float64 `json:"median"`
	Std           float64 `json:"std"`
	Min           float64 `json:"min"`
	Max           float64 `json:"max"`
	P25           float64 `json:"p25"`
	P75           float64 `json:"p75"`
	Num           int     `json:"num"`
	FieldPixels   int     `json:"field_pixels"`
	CloudCover    float64 `json:"cloud_cover"`
	MeanVariation float64 `json:"mean_variation"`
	PreviousDate  *string `json:"previous_date"`
	Scene         string  `json:"scene"`
	// Sensor names the image's sensor ("sentinel-2a", "landsat-8",
	// "sentinel-1a", …; the mission when the source names no satellite).
	Sensor string `json:"sensor"`
}

// Upload describes one stored upload for custom zone layers (/files/upload,
// /files/uploads): a shapefile set or a raster.
type Upload struct {
	Filename   string   `json:"filename"`
	Kind       string   `json:"kind"` // shapefile or raster
	Files      []string `json:"files"`
	Records    int      `json:"records,omitempty"`
	Attributes []string `json:"attributes,omitempty"`
	EPSG       int      `json:"epsg,omitempty"`
	// Width and Height are a raster's size in cells, PixelSize its cell
	// size in CRS units, NoData its nodata value when it has one.
	Width     int      `json:"width,omitempty"`
	Height    int      `json:"height,omitempty"`
	PixelSize float64  `json:"pixel_size,omitempty"`
	NoData    *float64 `json:"nodata,omitempty"`
	// UploadedAt is when it was stored, to the second (UTC).
	UploadedAt time.Time `json:"uploaded_at"`
}

// Uploads is a field's stored uploads (/files/upload, /files/uploads).
type Uploads struct {
	FieldName string   `json:"field_name"`
	Uploads   []Upload `json:"uploads"`
}

// Boundaries is the answer of field boundary detection (§4.6): the
// detected fields as a GeoJSON FeatureCollection (EPSG:4326, largest
// first), the imagery dates used and, when registered, the fields' names
// (also each feature's properties.field_name).
type Boundaries struct {
	BoundaryCollection
	Dates      []string `json:"dates"`
	Registered []string `json:"registered"`
}

// BoundaryCollection is detected fields as GeoJSON (boundary.Result's form).
type BoundaryCollection struct {
	Type     string            `json:"type"` // "FeatureCollection"
	Features []BoundaryFeature `json:"features"`
}

// BoundaryFeature is one detected field.
type BoundaryFeature struct {
	Type       string             `json:"type"` // "Feature"
	ID         int                `json:"id"`
	Geometry   PolygonGeometry    `json:"geometry"`
	Properties BoundaryProperties `json:"properties"`
}

// PolygonGeometry is a GeoJSON Polygon.
type PolygonGeometry struct {
	Type        string      `json:"type"` // "Polygon"
	Coordinates orb.Polygon `json:"coordinates"`
}

// BoundaryProperties are a detected field's properties.
type BoundaryProperties struct {
	AreaHa     float64 `json:"area_ha"`
	Confidence float64 `json:"confidence"`
	// FieldName is the field registered for it (only when registered).
	FieldName string `json:"field_name,omitempty"`
}

// FieldSeasons is a field's metadata seasons (/fields/metadata/list): §2.2
// records by start date (metadata.Seasons.API).
type FieldSeasons struct {
	FieldName string           `json:"field_name"`
	Seasons   []MetadataRecord `json:"seasons"`
}

// MetadataRegistered answers /fields/metadata/register.
type MetadataRegistered struct {
	Message   string `json:"message"`
	FieldName string `json:"field_name"`
	StartDate string `json:"start_date"`
	Seasons   int    `json:"seasons"` // seasons now stored for the field
}

// SeriesDay is one day of a field's daily series (GET /fields/timeseries):
// the day's observation and its sensor (null without one), the estimate
// and its 80 % interval. New columns (e.g. growing degree days) are added
// as new fields; clients ignore the ones they do not know.
type SeriesDay struct {
	Date     string   `json:"date"`
	Observed *float64 `json:"observed"`
	Sensor   *string  `json:"sensor"`
	Estimate float64  `json:"estimate"`
	Lower    float64  `json:"lower"`
	Upper    float64  `json:"upper"`
	// GDD and GDDCum are the day's growing degree days and their sum from
	// the start of the field's metadata season holding the day (absent
	// outside a season with a crop_type, or without weather).
	GDD    *float64 `json:"gdd,omitempty"`
	GDDCum *float64 `json:"gdd_cum,omitempty"`
}

// TimeSeries is GET /fields/timeseries: one element per day from StartDate
// to EndDate (inclusive).
type TimeSeries struct {
	FieldName string      `json:"field_name"`
	Index     string      `json:"index"`
	StartDate string      `json:"start_date"`
	EndDate   string      `json:"end_date"`
	Series    []SeriesDay `json:"series"`
}

// PhenologySeason is one season's phenology (GET /fields/phenology):
// the window measured (the field's metadata season, else the calendar
// growing season), and in it the start, peak and end of the main growth
// cycle (dates, null when the curve does not cross), the peak value,
// amplitude and integral (index × days). docs/timeseries.md defines them.
type PhenologySeason struct {
	WindowStart string  `json:"window_start"`
	WindowEnd   string  `json:"window_end"`
	Source      string  `json:"source"` // "metadata" or "calendar"
	CropType    string  `json:"crop_type,omitempty"`
	Start       *string `json:"start"`
	Peak        string  `json:"peak"`
	End         *string `json:"end"`
	PeakValue   float64 `json:"peak_value"`
	Amplitude   float64 `json:"amplitude"`
	Integral    float64 `json:"integral"`
	Cycles      int     `json:"cycles"`
}

// Phenology is GET /fields/phenology.
type Phenology struct {
	FieldName string            `json:"field_name"`
	Index     string            `json:"index"`
	Seasons   []PhenologySeason `json:"seasons"`
}

// FieldEvent is an abrupt change of a field's index (GET /fields/events and
// the field.event webhook): a drop (harvest, mowing, damage) or a rise,
// the triggering observation, what the series expected and its interval,
// and the later observation that confirmed it.
type FieldEvent struct {
	FieldName   string  `json:"field_name"`
	Date        string  `json:"date"`
	Kind        string  `json:"kind"`
	Index       string  `json:"index"`
	Sensor      string  `json:"sensor"`
	Magnitude   float64 `json:"magnitude"`
	Observed    float64 `json:"observed"`
	Expected    float64 `json:"expected"`
	Lower       float64 `json:"lower"`
	Upper       float64 `json:"upper"`
	ConfirmedBy string  `json:"confirmed_by"`
}

// FieldEvents is GET /fields/events.
type FieldEvents struct {
	FieldName string       `json:"field_name"`
	Events    []FieldEvent `json:"events"`
}

// EventTopic names the field-event notifications a webhook registration
// opts in to (register_webhook with events=true); registrations that did
// not opt in receive only the §6 product notifications.
const EventTopic = "field.event"

// EventNotification is the webhook payload of one field event: signed and
// delivered like §6 notifications, once per event and registration (its
// webhook-id is derived from the field, index, date and kind).
type EventNotification struct {
	Type  string     `json:"type"` // EventTopic
	Group string     `json:"group"`
	Field string     `json:"field"`
	Event FieldEvent `json:"event"`
}
