package imagery

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

func TestItemLocationResolve(t *testing.T) {
	tests := []struct {
		name, base string
		remote     bool
		href, want string
		reason     string // substring of the refusal, "" when readable
		local      bool   // ErrLocalAsset
	}{
		{"local relative", "/data/items/S2A.json", false, "bands/B04.tif", "/data/items/bands/B04.tif", "", false},
		{"local file URL", "/data/items/S2A.json", false, "file:///data/B04.tif", "/data/B04.tif", "", false},
		{"remote relative", "https://example.com/items/S2A.json", true, "../cogs/B04.tif", "https://example.com/cogs/B04.tif", "", false},
		{"local item, https href", "/x/item.json", false, "https://e.com/B04.tif", "https://e.com/B04.tif", "", false},
		{"public bucket mapped", "https://earth-search.example/items/x", true, "s3://sentinel-cogs/sentinel-s2-l2a-cogs/32/T/MT/B04.tif",
			"https://sentinel-cogs.s3.us-west-2.amazonaws.com/sentinel-s2-l2a-cogs/32/T/MT/B04.tif", "", false},
		{"requester-pays bucket", "https://earth-search.example/items/x", true, "s3://sentinel-s2-l2a/tiles/B04.jp2", "", "requester-pays", false},
		{"requester-pays landsat", "/x/item.json", false, "s3://usgs-landsat/collection02/B4.TIF", "", "requester-pays", false},
		{"unknown bucket", "https://e.com/items/x", true, "s3://eodata/Sentinel-2/B04.jp2", "", "not a known public bucket", false},
		{"remote file URL", "https://e.com/items/x", true, "file:///etc/shadow", "", "", true},
		{"remote item with an s3 base, file href", "s3://sentinel-cogs/x/item.json", true, "file:///etc/shadow", "", "", true},
		{"remote item with an s3 base, relative href", "s3://sentinel-cogs/x/item.json", true, "B04.tif", "", "not fetched over http(s)", false},
		{"remote ftp", "https://e.com/items/x", true, "ftp://e.com/B04.tif", "", `scheme "ftp"`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			loc, reason, err := itemLocation{base: tt.base, remote: tt.remote}.resolve(tt.href)
			if tt.local {
				assert.ErrorIs(t, err, ErrLocalAsset)
				return
			}
			assert.NoError(t, err)
			assert.Equal(t, tt.want, loc)
			if tt.reason == "" {
				assert.Empty(t, reason)
			} else {
				assert.Contains(t, reason, tt.reason)
			}
		})
	}
}

func TestSTACRadiometry(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	yes, no := true, false
	rb := func(scale, offset *float64) stacAsset {
		var a stacAsset
		a.RasterBands = append(a.RasterBands, struct {
			Scale             *float64        `json:"scale"`
			Offset            *float64        `json:"offset"`
			SpatialResolution json.RawMessage `json:"spatial_resolution"`
		}{Scale: scale, Offset: offset})
		return a
	}
	tests := []struct {
		name     string
		r        stacRadiometry
		a        stacAsset
		wantAdd  float64
		explicit bool
	}{
		{"raster:bands first, over boa_offset_applied", stacRadiometry{baseline: "05.00", boaApplied: &yes}, rb(f(1e-4), f(-0.1)), -1000, true},
		{"raster:bands offset 0 over a baseline ≥ 04.00", stacRadiometry{baseline: "05.10"}, rb(f(1e-4), f(0)), 0, true},
		{"raster:scale/raster:offset (CDSE)", stacRadiometry{baseline: "05.11"}, stacAsset{RasterScale: f(1e-4), RasterOffset: f(-0.1)}, -1000, true},
		{"boa_offset_applied true", stacRadiometry{baseline: "05.00", boaApplied: &yes}, stacAsset{}, 0, true},
		{"boa_offset_applied false, baseline 05.00", stacRadiometry{baseline: "05.00", boaApplied: &no}, stacAsset{}, -1000, true},
		{"baseline 05.10 (Planetary Computer)", stacRadiometry{baseline: "05.10"}, stacAsset{}, -1000, true},
		{"baseline 02.12", stacRadiometry{baseline: "02.12"}, stacAsset{}, 0, true},
		{"nothing said: the file decides", stacRadiometry{}, stacAsset{}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scale, add, explicit := tt.r.scaling(tt.a)
			assert.Equal(t, tt.explicit, explicit)
			if explicit {
				assert.InDelta(t, 1e-4, scale, 1e-18)
			}
			assert.InDelta(t, tt.wantAdd, add, 1e-9)
		})
	}
	// Where the baseline comes from.
	for _, tt := range []struct{ item, want string }{
		{`{"id":"x","properties":{"s2:processing_baseline":"05.10"}}`, "05.10"},
		{`{"id":"x","properties":{"processing:version":"05.11"}}`, "05.11"},
		{`{"id":"x","properties":{"processing:version":"v2025.06.17"}}`, ""},
		{`{"id":"x","properties":{"sentinel:product_id":"S2A_MSIL2A_20200714T115221_N0214_R123_T28QCH_20200714T191310"}}`, "02.14"},
		{`{"id":"S2A_MSIL2A_20200301T090901_N0500_R050_T35UPU_20230630T033416","properties":{}}`, "05.00"},
		{`{"id":"x","properties":{"s2:processing_baseline":4.0}}`, "04.00"},
	} {
		var it stacItem
		require.NoError(t, json.Unmarshal([]byte(tt.item), &it))
		assert.Equal(t, tt.want, newSTACRadiometry(it).baseline, tt.item)
	}
}
