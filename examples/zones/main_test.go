package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunOnBundledSample(t *testing.T) {
	var out, log bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-field", "UES-03", "-zones", "3"}, &out, &log))

	var fc struct {
		Type string `json:"type"`
		CRS  struct {
			Properties struct{ Name string } `json:"properties"`
		} `json:"crs"`
		Features []struct {
			Properties struct {
				ZONE       int
				DOSE       float64
				RASTER_VAL float64
			} `json:"properties"`
		} `json:"features"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &fc))
	assert.Equal(t, "FeatureCollection", fc.Type)
	assert.Equal(t, "urn:ogc:def:crs:EPSG::4326", fc.CRS.Properties.Name)
	require.NotEmpty(t, fc.Features)
	zones := map[int]float64{}
	for _, f := range fc.Features {
		zones[f.Properties.ZONE] = f.Properties.RASTER_VAL
		assert.Greater(t, f.Properties.DOSE, 0.0)
	}
	assert.Len(t, zones, 3)
	assert.Less(t, zones[1], zones[2], "zones ascend by RASTER_VAL")
	assert.Less(t, zones[2], zones[3])
	assert.Contains(t, log.String(), "UES-03: NDVI mean of")
}
