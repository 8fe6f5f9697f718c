package imagery

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestReflectanceScaling(t *testing.T) {
	tests := []struct {
		name       string
		md         map[string]string
		baseline   string
		harmonized bool
		wantAdd    float64
	}{
		{"shared data: explicit offset 0", map[string]string{"REFLECTANCE_SCALE": "0.0001", "REFLECTANCE_OFFSET": "0", "PROCESSING_BASELINE": "05.09"}, "", false, 0},
		{"no metadata", nil, "", false, 0},
		{"baseline 04.00, not harmonized", map[string]string{"PROCESSING_BASELINE": "04.00"}, "", false, -1000},
		{"baseline 05.10 harmonized", map[string]string{"PROCESSING_BASELINE": "05.10", "BOA_OFFSET_APPLIED": "TRUE"}, "", false, 0},
		{"baseline 03.01", map[string]string{"PROCESSING_BASELINE": "03.01"}, "", false, 0},
		{"baseline N0400 form", map[string]string{"PROCESSING_BASELINE": "N0400"}, "", false, -1000},
		{"baseline from STAC item", nil, "05.00", false, -1000},
		{"STAC item harmonized", nil, "05.00", true, 0},
		{"explicit BOA_ADD_OFFSET", map[string]string{"BOA_ADD_OFFSET": "-1000"}, "", false, -1000},
		{"explicit reflectance offset −0.1", map[string]string{"REFLECTANCE_OFFSET": "-0.1"}, "", false, -1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scale, add := reflectanceScaling(tt.md, tt.baseline, tt.harmonized)
			assert.InDelta(t, 1e-4, scale, 1e-18)
			assert.InDelta(t, tt.wantAdd, add, 1e-9)
		})
	}
}

func TestBaselineAtLeast4(t *testing.T) {
	for v, want := range map[string]bool{"04.00": true, "4.0": true, "05.11": true, "N0500": true, "03.01": false, "02.14": false, "": false, "junk": false} {
		assert.Equal(t, want, baselineAtLeast4(v), v)
	}
}

func TestStacBandName(t *testing.T) {
	for key, want := range map[string]string{
		"red": "B04", "nir": "B08", "nir08": "B8A", "rededge1": "B05", "swir16": "B11", "swir22": "B12", "scl": "SCL", "blue": "B02",
		"B04_10m": "B04", "B8A_20m": "B8A", "SCL_20m": "SCL", "B02": "B02", "thumbnail": "", "visual": "", "AOT_10m": "",
	} {
		assert.Equal(t, want, stacBandName(key), key)
	}
}

func TestResolveHref(t *testing.T) {
	got, err := resolveHref("/data/items/S2A.json", false, "bands/B04.tif")
	assert.NoError(t, err)
	assert.Equal(t, "/data/items/bands/B04.tif", got)
	got, err = resolveHref("https://example.com/items/S2A.json", true, "../cogs/B04.tif")
	assert.NoError(t, err)
	assert.Equal(t, "https://example.com/cogs/B04.tif", got)
	got, err = resolveHref("/x/item.json", false, "https://e.com/B04.tif")
	assert.NoError(t, err)
	assert.Equal(t, "https://e.com/B04.tif", got)
	_, err = resolveHref("/x/item.json", false, "s3://bucket/B04.tif")
	assert.Error(t, err)
}

func TestStacScaling(t *testing.T) {
	scale, off := 0.0001, -0.1
	a := stacAsset{}
	a.RasterBands = append(a.RasterBands, struct {
		Scale  *float64 `json:"scale"`
		Offset *float64 `json:"offset"`
	}{&scale, &off})
	s, add, explicit := stacScaling(a, "05.00", false)
	assert.True(t, explicit)
	assert.InDelta(t, 1e-4, s, 1e-18)
	assert.InDelta(t, -1000, add, 1e-9)
	_, add, explicit = stacScaling(a, "05.00", true)
	assert.True(t, explicit)
	assert.Zero(t, add, "harmonized: offset already applied")
	_, _, explicit = stacScaling(stacAsset{}, "05.00", false)
	assert.False(t, explicit, "left to the file metadata and the baseline rule")
}
