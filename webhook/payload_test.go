package webhook_test

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/webhook"
)

func ptr[T any](v T) *T { return &v }

func TestPayloadJSON(t *testing.T) {
	p := webhook.Payload{
		Group: "flanders",
		Field: "field-12",
		Data: []webhook.Update{
			{Index: "ndvi", Date: webhook.FormatDate(time.Date(2019, 6, 20, 10, 56, 29, 0, time.UTC)),
				Content: webhook.Content{Mean: 0.71, Median: 0.73, Std: 0.08, Min: 0.2, Max: 0.9, P25: 0.66, P75: 0.78}},
			{Index: "ndwi", Date: "2019-06-20 10:56:29 GMT",
				Content: webhook.Content{Mean: -0.5, MeanVariation: -12.5, PreviousDate: ptr("2019-06-15"), Median: -0.48, Std: 0.05, Min: -0.7, Max: -0.1, P25: -0.55, P75: -0.45}},
		},
	}
	b, err := p.Marshal()
	require.NoError(t, err)
	assert.JSONEq(t, `{"group":"flanders","field":"field-12","data":[
		{"index":"ndvi","date":"2019-06-20 10:56:29 GMT","content":{"mean":0.71,"mean_variation":0,"previous_date":null,"median":0.73,"std":0.08,"min":0.2,"max":0.9,"p25":0.66,"p75":0.78}},
		{"index":"ndwi","date":"2019-06-20 10:56:29 GMT","content":{"mean":-0.5,"mean_variation":-12.5,"previous_date":"2019-06-15","median":-0.48,"std":0.05,"min":-0.7,"max":-0.1,"p25":-0.55,"p75":-0.45}}]}`, string(b))

	var back webhook.Payload
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, p, back)
}

func TestFormatDate(t *testing.T) {
	paris := time.FixedZone("CEST", 2*3600)
	assert.Equal(t, "2019-06-20 10:56:29 GMT", webhook.FormatDate(time.Date(2019, 6, 20, 12, 56, 29, 0, paris)))
	got, err := webhook.ParseDate("2019-06-20 10:56:29 GMT")
	require.NoError(t, err)
	assert.Equal(t, time.Date(2019, 6, 20, 10, 56, 29, 0, time.UTC), got)
	_, err = webhook.ParseDate("2019-06-20")
	require.Error(t, err)
}

func TestPayloadValidate(t *testing.T) {
	good := func() webhook.Payload {
		return webhook.Payload{Group: "g", Field: "f", Data: []webhook.Update{{Index: "ndvi", Date: "2019-06-20 10:56:29 GMT"}}}
	}
	tests := []struct {
		name string
		edit func(p *webhook.Payload)
		ok   bool
	}{
		{"valid", func(*webhook.Payload) {}, true},
		{"empty group allowed", func(p *webhook.Payload) { p.Group = "" }, true},
		{"no field", func(p *webhook.Payload) { p.Field = "" }, false},
		{"no data", func(p *webhook.Payload) { p.Data = nil }, false},
		{"no index", func(p *webhook.Payload) { p.Data[0].Index = "" }, false},
		{"bad date", func(p *webhook.Payload) { p.Data[0].Date = "2019-06-20T10:56:29Z" }, false},
		{"NaN mean", func(p *webhook.Payload) { p.Data[0].Content.Mean = math.NaN() }, false},
		{"Inf max", func(p *webhook.Payload) { p.Data[0].Content.Max = math.Inf(1) }, false},
		{"NaN variation", func(p *webhook.Payload) { p.Data[0].Content.MeanVariation = math.NaN() }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := good()
			tt.edit(&p)
			_, err := p.Marshal()
			if tt.ok {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
			}
		})
	}
}
