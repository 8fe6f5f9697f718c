package server_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/api"
	"github.com/cropkit/cropkit/server"
)

// jsonNames are the JSON member names of a struct type.
func jsonNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// The wire types the server answers and the client decodes (package api)
// match the schemas of the OpenAPI document member for member.
func TestWireTypesMatchOpenAPI(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
				Items      *struct {
					Properties map[string]json.RawMessage `json:"properties"`
				} `json:"items"`
			} `json:"schemas"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(server.OpenAPI(), &doc))
	props := func(name string) []string {
		s, ok := doc.Components.Schemas[name]
		require.True(t, ok, "schema %s", name)
		var out []string
		for k := range s.Properties {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	for schema, typ := range map[string]reflect.Type{
		"IngestResult":  reflect.TypeFor[api.IngestResult](),
		"HistoryRow":    reflect.TypeFor[api.HistoryRow](),
		"WeatherSeason": reflect.TypeFor[api.WeatherSeason](),
		"WeatherDay":    reflect.TypeFor[api.WeatherDay](),
		"WeatherTotals": reflect.TypeFor[api.WeatherTotals](),
		// The shapes beside the spec's: series, phenology, events, webhooks.
		"SeriesDay":           reflect.TypeFor[api.SeriesDay](),
		"TimeSeries":          reflect.TypeFor[api.TimeSeries](),
		"Phenology":           reflect.TypeFor[api.Phenology](),
		"PhenologySeason":     reflect.TypeFor[api.PhenologySeason](),
		"FieldEvent":          reflect.TypeFor[api.FieldEvent](),
		"FieldEvents":         reflect.TypeFor[api.FieldEvents](),
		"EventNotification":   reflect.TypeFor[api.EventNotification](),
		"WebhookRegistration": reflect.TypeFor[api.WebhookRegistered](),
		"Webhook":             reflect.TypeFor[api.Webhook](),
		"WebhookList":         reflect.TypeFor[api.WebhookList](),
		"WebhookAttempt":      reflect.TypeFor[api.WebhookAttempt](),
		"WebhookDelivery":     reflect.TypeFor[api.WebhookDelivery](),
		"WebhookDeliveryList": reflect.TypeFor[api.WebhookDeliveries](),
		"WebhookPayload":      reflect.TypeFor[api.WebhookPayload](),
		// The spec's and the account operations' shapes.
		"Error":          reflect.TypeFor[api.ErrorBody](),
		"Field":          reflect.TypeFor[api.Field](),
		"FieldList":      reflect.TypeFor[api.FieldList](),
		"FieldResult":    reflect.TypeFor[api.FieldResult](),
		"FileEntry":      reflect.TypeFor[api.FileEntry](),
		"FileList":       reflect.TypeFor[api.FileList](),
		"History":        reflect.TypeFor[api.History](),
		"IndexList":      reflect.TypeFor[api.IndexList](),
		"LoginResult":    reflect.TypeFor[api.Login](),
		"Message":        reflect.TypeFor[api.Message](),
		"MetadataList":   reflect.TypeFor[api.FieldSeasons](),
		"MetadataRecord": reflect.TypeFor[api.MetadataRecord](),
		"MetadataResult": reflect.TypeFor[api.MetadataRegistered](),
		"SceneItem":      reflect.TypeFor[api.SceneItem](),
		"SceneItemList":  reflect.TypeFor[api.SceneItemList](),
		"TokenList":      reflect.TypeFor[api.TokenList](),
		"UploadList":     reflect.TypeFor[api.Uploads](),
		"Value":          reflect.TypeFor[api.Value](),
		"ZoneFeature":    reflect.TypeFor[api.ZoneFeature](),
	} {
		assert.Equal(t, props(schema), jsonNames(typ), "schema %s vs %s", schema, typ)
	}
	// The failures' items are FieldFailure.
	var ir struct {
		Properties struct {
			Failures struct {
				Items struct {
					Properties map[string]json.RawMessage `json:"properties"`
				} `json:"items"`
			} `json:"failures"`
		} `json:"properties"`
	}
	var raw struct {
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(server.OpenAPI(), &raw))
	require.NoError(t, json.Unmarshal(raw.Components.Schemas["IngestResult"], &ir))
	var ff []string
	for k := range ir.Properties.Failures.Items.Properties {
		ff = append(ff, k)
	}
	slices.Sort(ff)
	assert.Equal(t, ff, jsonNames(reflect.TypeFor[api.FieldFailure]()))
	// The §2.5 document's named members are those api.Report reads.
	rep := props("Report")
	for _, k := range []string{"bounds", "mean", "median", "std", "min", "max", "p25", "p75", "num", "mean_variation",
		"previous_date", "date", "field_pixels", "cloud_cover", "sensor"} {
		assert.Contains(t, rep, k)
	}
	assert.Len(t, rep, 15, "api.Report reads every named member of the Report schema: %v", rep)
}
