package client

import (
	"context"
	"strings"

	"github.com/cropkit/cropkit/api"
)

// Wire types of the daily series, phenology and events.
type (
	SeriesDay       = api.SeriesDay
	TimeSeries      = api.TimeSeries
	PhenologySeason = api.PhenologySeason
	Phenology       = api.Phenology
	FieldEvent      = api.FieldEvent
	FieldEvents     = api.FieldEvents
)

// TimeSeriesRequest asks a field's daily series of one index.
type TimeSeriesRequest struct {
	FieldName, Index   string
	StartDate, EndDate string // YYYY-MM-DD, inclusive; "" = the first / last usable image's date
}

func (r TimeSeriesRequest) query(format string) request {
	return request{path: "/fields/timeseries", query: query("field_name", r.FieldName, "index", r.Index,
		"start_date", r.StartDate, "end_date", r.EndDate, "format", format)}
}

// TimeSeries returns one element per day: the observation (if any), the
// estimate and its 80 % interval (GET /fields/timeseries).
func (c *Client) TimeSeries(ctx context.Context, r TimeSeriesRequest) (TimeSeries, error) {
	var out TimeSeries
	err := c.call(ctx, r.query(""), &out)
	return out, err
}

// TimeSeriesCSV returns the same series as CSV (date, observed, sensor,
// estimate, lower, upper).
func (c *Client) TimeSeriesCSV(ctx context.Context, r TimeSeriesRequest) (File, error) {
	return c.file(ctx, r.query("csv"))
}

// Phenology returns a field's phenology per season of one index (GET /fields/phenology).
func (c *Client) Phenology(ctx context.Context, fieldName, index string) (Phenology, error) {
	var out Phenology
	err := c.call(ctx, request{path: "/fields/phenology", query: query("field_name", fieldName, "index", index)}, &out)
	return out, err
}

// EventsRequest asks a field's events.
type EventsRequest struct {
	FieldName          string
	Indices            []string // nil: every index of the field
	StartDate, EndDate string   // YYYY-MM-DD, inclusive; "" = open
}

// Events returns a field's drops and rises, by date (GET /fields/events).
func (c *Client) Events(ctx context.Context, r EventsRequest) ([]FieldEvent, error) {
	var out FieldEvents
	err := c.call(ctx, request{path: "/fields/events", query: query("field_name", r.FieldName,
		"indices", strings.Join(r.Indices, ","), "start_date", r.StartDate, "end_date", r.EndDate)}, &out)
	return out.Events, err
}
