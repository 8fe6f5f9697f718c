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
		"IngestResult": reflect.TypeFor[api.IngestResult](),
		"HistoryRow":   reflect.TypeFor[api.HistoryRow](),
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
