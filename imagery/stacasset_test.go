package imagery

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/internal/testenv"
)

// selection is what selectAssets chose for an item, or why it refused.
type selection struct {
	chosen     map[string]string // band → key@href
	unreadable map[string]string // band → reason
	sensor     string            // the SensorError, if any
}

func selectItem(t *testing.T, raw []byte, base string) selection {
	t.Helper()
	var item stacItem
	require.NoError(t, json.Unmarshal(raw, &item))
	sel := selection{chosen: map[string]string{}, unreadable: map[string]string{}}
	if _, err := stacSensor(item.Collection, item.Properties); err != nil {
		sel.sensor = err.Error()
	}
	chosen, unreadable, err := selectAssets(item, itemLocation{base: base, remote: true})
	require.NoError(t, err)
	for _, c := range chosen {
		sel.chosen[c.band] = c.key + "@" + c.href
	}
	for b, e := range unreadable {
		sel.unreadable[b] = e.Reason
	}
	return sel
}

// Asset selection over the 12 real item documents: the same choice on
// every run (each decoding iterates the assets map in a new random order),
// and the choice expected of each catalogue.
func TestAssetSelectionRealItemsDeterministic(t *testing.T) {
	dir := testenv.DataDir(t, "stac-items")
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(t, err)
	require.Len(t, paths, 12)
	for _, p := range paths {
		name := strings.TrimSuffix(filepath.Base(p), ".json")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(p)
			require.NoError(t, err)
			base := "https://catalogue.example/items/" + name
			first := selectItem(t, raw, base)
			for range 300 {
				require.Equal(t, first, selectItem(t, raw, base), "the choice depends on map order")
			}
			switch {
			case strings.HasPrefix(name, "earthsearch-v1-s2l2a"):
				// COGs on the public bucket, never the JPEG 2000 s3://sentinel-s2-l2a (requester-pays) twins.
				assert.Equal(t, "red@https://sentinel-cogs.s3.us-west-2.amazonaws.com/sentinel-s2-l2a-cogs/32/T/MT/2020/3/"+
					strings.TrimPrefix(name, "earthsearch-v1-s2l2a-")+"/B04.tif", first.chosen["B04"])
				assert.Equal(t, "scl", strings.Split(first.chosen["SCL"], "@")[0])
				assert.Len(t, first.chosen, 13)
				assert.Empty(t, first.unreadable)
			case strings.HasPrefix(name, "earthsearch-v1-s2c1l2a"):
				assert.Equal(t, "nir", strings.Split(first.chosen["B08"], "@")[0])
				assert.Empty(t, first.unreadable)
			case strings.HasPrefix(name, "earthsearch-v0"):
				assert.Contains(t, first.chosen["B04"], "B04@https://sentinel-cogs.s3.us-west-2.amazonaws.com/")
			case strings.HasPrefix(name, "pc-s2l2a"):
				assert.Contains(t, first.chosen["B04"], "B04@https://sentinel2l2a01.blob.core.windows.net/")
				assert.Contains(t, first.chosen["B04"], "_B04_10m.tif")
			case strings.HasPrefix(name, "cdse"):
				assert.Empty(t, first.chosen)
				assert.Equal(t, "JPEG 2000 only (CDSE): not supported (cropkit reads GeoTIFF/COG; there is no pure-Go JPEG 2000 decoder)", first.unreadable["B04"])
			case strings.HasPrefix(name, "pc-landsat"):
				assert.Contains(t, first.chosen["B04"], "red@https://landsateuwest.blob.core.windows.net/")
			case strings.HasPrefix(name, "earthsearch-v1-landsat"):
				assert.Equal(t, "s3://usgs-landsat is a requester-pays bucket (AWS credentials needed): not supported", first.unreadable["B04"])
			case strings.HasPrefix(name, "pc-s1rtc"):
				assert.Contains(t, first.chosen["VV"], "vv@https://sentinel1euwestrtc.blob.core.windows.net/")
			case strings.HasPrefix(name, "earthsearch-v1-s1grd"):
				assert.Regexp(t, `^Sentinel-1 GRD item: in radar geometry`, first.sensor)
			}
			if !strings.Contains(name, "s1grd") {
				assert.Empty(t, first.sensor)
			}
		})
	}
}

func TestAssetSelectionRules(t *testing.T) {
	tests := []struct {
		name   string
		assets string
		want   string // key chosen for B04, or the reason
	}{
		{"COG over JPEG 2000 whatever the keys", `"a-jp2":{"href":"https://e.com/B04.jp2","type":"image/jp2","eo:bands":[{"name":"red"}]},"z":{"href":"https://e.com/B04.tif","type":"image/tiff","eo:bands":[{"name":"red"}]}`, "z"},
		{"media type before extension", `"a":{"href":"https://e.com/B04.tif","type":"image/png","eo:bands":[{"name":"B04"}]},"b":{"href":"https://e.com/B04?x=1","type":"image/tiff; application=geotiff; profile=cloud-optimized","eo:bands":[{"name":"B04"}]}`, "b"},
		{"extension when no media type", `"a":{"href":"https://e.com/B04.jp2","eo:bands":[{"name":"B04"}]},"b":{"href":"https://e.com/B04.tif","eo:bands":[{"name":"B04"}]}`, "b"},
		{"finest resolution", `"B04_60m":{"href":"https://e.com/60.tif","type":"image/tiff"},"B04_20m":{"href":"https://e.com/20.tif","type":"image/tiff"},"B04_10m":{"href":"https://e.com/10.tif","type":"image/tiff"}`, "B04_10m"},
		{"gsd resolution", `"x":{"href":"https://e.com/a.tif","gsd":20,"eo:bands":[{"name":"red"}]},"y":{"href":"https://e.com/b.tif","gsd":10,"eo:bands":[{"name":"red"}]}`, "y"},
		{"readable scheme first", `"a":{"href":"s3://sentinel-s2-l2a/B04.tif","type":"image/tiff","eo:bands":[{"name":"red"}]},"b":{"href":"https://e.com/B04.tif","type":"image/tiff","gsd":60,"eo:bands":[{"name":"red"}]}`, "b"},
		{"public bucket mapped", `"red":{"href":"s3://sentinel-cogs/a/B04.tif","type":"image/tiff"}`, "red"},
		{"multi-band assets are not a band", `"visual":{"href":"https://e.com/TCI.tif","type":"image/tiff","eo:bands":[{"name":"red"},{"name":"green"},{"name":"blue"}]},"red":{"href":"https://e.com/B04.tif","type":"image/tiff"}`, "red"},
		{"JPEG 2000 only", `"B04":{"href":"https://e.com/B04.jp2","type":"image/jp2"}`, "JPEG 2000 only: not supported (cropkit reads GeoTIFF/COG; there is no pure-Go JPEG 2000 decoder)"},
		{"requester-pays only", `"red":{"href":"s3://sentinel-s2-l2a/tiles/B04.tif","type":"image/tiff"}`, "s3://sentinel-s2-l2a is a requester-pays bucket (AWS credentials needed): not supported"},
		{"PNG only", `"red":{"href":"https://e.com/B04.png","type":"image/png"}`, `no GeoTIFF asset (asset red is "image/png"): not supported`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := []byte(`{"type":"Feature","id":"x","properties":{},"assets":{` + tt.assets + `}}`)
			for range 50 {
				sel := selectItem(t, raw, "https://catalogue.example/items/x")
				if r, ok := sel.unreadable["B04"]; ok {
					assert.Equal(t, tt.want, r)
					continue
				}
				assert.Equal(t, tt.want, strings.Split(sel.chosen["B04"], "@")[0])
			}
		})
	}
}

func TestSTACSensor(t *testing.T) {
	tests := []struct {
		collection, props string
		want              string // "" means Sentinel-2
	}{
		{"sentinel-2-l2a", `{"platform":"sentinel-2a"}`, ""},
		{"sentinel-2-l2a", `{"platform":"Sentinel-2B","constellation":"Sentinel 2"}`, ""},
		{"my-fields", `{}`, ""},
		{"landsat-c2-l2", `{"platform":"landsat-8"}`, ""},
		{"landsat-c2-l2", `{}`, ""},
		{"landsat-c2-l2", `{"platform":"landsat-7"}`, "Landsat 7"},
		{"landsat-c2-l1", `{"platform":"landsat-9"}`, "Landsat 9 Level-1"},
		{"sentinel-1-grd", `{"platform":"sentinel-1a","constellation":"sentinel-1"}`, "Sentinel-1 GRD"},
		{"sentinel-1-rtc", `{"platform":"SENTINEL-1A"}`, ""},
		{"x", `{"platform":"worldview-3"}`, "worldview-3"},
		{"sentinel-3-olci", `{}`, "Sentinel-3"},
	}
	for _, tt := range tests {
		var props map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(tt.props), &props))
		sensor, err := stacSensor(tt.collection, props)
		if tt.want == "" {
			assert.NoError(t, err, tt.props)
			assert.True(t, sensor.Valid(), tt.props)
			continue
		}
		var se *SensorError
		require.True(t, errors.As(err, &se), "%v", err)
		assert.Equal(t, tt.want, se.Sensor)
		assert.ErrorIs(t, err, ErrUnsupportedSensor)
	}
}

// An item whose B05 exists only as JPEG 2000 still gives the indices of its
// readable bands; an index needing B05 fails with the reason, and an item
// whose mask is unreadable is refused (its clouds would count).
func TestUnreadableBandNamesReason(t *testing.T) {
	dir := t.TempDir()
	writeSyntheticScene(t, dir, nil)
	item := func(scl string) []byte {
		return []byte(`{"type":"Feature","id":"x","properties":{"datetime":"2022-03-15T10:56:31Z","s2:processing_baseline":"02.14"},"assets":{
			"red":{"href":"B04.tif","type":"image/tiff"},"nir":{"href":"B08.tif","type":"image/tiff"},
			"rededge1-jp2":{"href":"B05.jp2","type":"image/jp2","eo:bands":[{"name":"rededge1"}]},` + scl + `}}`)
	}
	ctx := t.Context()
	s, err := OpenSTACItem(ctx, item(`"scl":{"href":"SCL.tif","type":"image/tiff"}`), filepath.Join(dir, "item.json"), SceneOptions{})
	require.NoError(t, err)
	defer s.Close()
	assert.Equal(t, []string{"B04", "B08"}, s.Bands())
	ps, err := s.FieldProducts(ctx, wholeChip(t), []string{"ndvi"}, nil)
	require.NoError(t, err)
	assert.Len(t, ps, 1)
	_, err = s.FieldProducts(ctx, wholeChip(t), []string{"ndre"}, nil)
	require.ErrorIs(t, err, ErrMissingBand)
	require.ErrorIs(t, err, ErrUnreadableAsset)
	assert.ErrorContains(t, err, "band B05: JPEG 2000 only: not supported")
	assert.ErrorContains(t, s.CheckBands("B08", "B05"), "JPEG 2000 only")
	assert.NoError(t, s.CheckBands("B04", "B08"))

	_, err = OpenSTACItem(ctx, item(`"scl-jp2":{"href":"SCL.jp2","type":"image/jp2"}`), filepath.Join(dir, "item.json"), SceneOptions{})
	require.ErrorIs(t, err, ErrUnreadableAsset)
	assert.ErrorContains(t, err, "mask: band SCL: JPEG 2000 only")
}
