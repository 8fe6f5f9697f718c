package stac_test

import (
	"context"
	"errors"
	"math"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/imagery"
	"github.com/cropkit/cropkit/imagery/geotiff"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/stac"
	"github.com/cropkit/cropkit/stac/stactest"
)

func imageryOptions() imagery.SceneOptions { return imagery.SceneOptions{} }

// End to end on real data: search the local catalogue, open the item as a
// scene (bands by Range GETs only), compute every field's NDVI and compare
// with the same chip opened from its folder: identical values.
func TestSearchOpenSceneMatchesLocal(t *testing.T) {
	dir := testenv.DataDir(t, "s2", "flanders-31UES", "2019-06-20")
	data, err := os.ReadFile(testenv.DataDir(t, "fields", "flanders-31UES.geojson"))
	require.NoError(t, err)
	fields, err := geo.ReadFeatures(data)
	require.NoError(t, err)
	require.NotEmpty(t, fields)

	cat := stactest.New(t, stactest.Options{})
	cat.Publish(stactest.Chips(t, "flanders-31UES", "2019-06-20")...)
	c := testClient()
	var items []stac.Item
	for it, err := range c.Search(context.Background(), cat.URL(), stac.SearchParams{Intersects: fields[0].Geometry, MaxCloud: ptr(10)}) {
		require.NoError(t, err)
		items = append(items, it)
	}
	require.Len(t, items, 1)
	remote, err := c.OpenScene(context.Background(), items[0], imagery.SceneOptions{})
	require.NoError(t, err)
	defer remote.Close()
	local, err := imagery.OpenScene(context.Background(), dir, imagery.SceneOptions{})
	require.NoError(t, err)
	defer local.Close()

	assert.Equal(t, local.Grid(), remote.Grid())
	assert.Equal(t, local.Bands(), remote.Bands())
	assert.Equal(t, local.Date(), remote.Date())
	compared := 0
	for _, f := range fields {
		want, werr := local.FieldProducts(context.Background(), f.Geometry, []string{"ndvi", "ndre"}, nil)
		got, gerr := remote.FieldProducts(context.Background(), f.Geometry, []string{"ndvi", "ndre"}, nil)
		if werr != nil {
			assert.Equal(t, werr.Error(), gerr.Error(), f.Name)
			continue
		}
		require.NoError(t, gerr, f.Name)
		require.Len(t, got, len(want))
		for i := range want {
			assert.Equal(t, want[i].Stats, got[i].Stats, "%s %s", f.Name, want[i].Index)
			assert.True(t, sameFloats(want[i].Values, got[i].Values), "%s %s values differ", f.Name, want[i].Index)
		}
		compared++
	}
	assert.Equal(t, len(fields), compared, "every field has a product on this clear date")
	st := cat.Stats()
	assert.Zero(t, st.WholeFileGETs)
	assert.Zero(t, st.ItemGets, "the item is not fetched again")
	assert.Positive(t, st.AssetRequests)
	t.Logf("%d fields: %d band requests, %d bytes", len(fields), st.AssetRequests, st.AssetBytes)
}

// sameFloats: equal lengths and bit-identical values (NaN where NaN).
func sameFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// An item whose assets 404 fails to open with the HTTP status; items already
// ingested (skipped by id) cause no band request at all.
func TestOpenSceneAssetErrorsAndKnownItems(t *testing.T) {
	items := stactest.Chips(t, "flanders-31UES", chipDates...)
	cat := stactest.New(t, stactest.Options{PageSize: 1})
	cat.Publish(items...)
	cat.FailAsset(items[4].ID)
	c := testClient()
	ingested := map[string]bool{items[0].ID: true, items[1].ID: true, items[3].ID: true}
	opened := 0
	for it, err := range c.Search(context.Background(), cat.URL(), stac.SearchParams{MaxCloud: ptr(50)}) {
		require.NoError(t, err)
		if ingested[it.ID] {
			continue
		}
		s, err := c.OpenScene(context.Background(), it, imagery.SceneOptions{})
		if it.ID == items[4].ID {
			var he *geotiff.HTTPError
			require.True(t, errors.As(err, &he), "%v", err)
			assert.Equal(t, 404, he.StatusCode)
			continue
		}
		require.NoError(t, err)
		opened++
		require.NoError(t, s.Close())
	}
	assert.Zero(t, opened, "items 0, 1, 3 known, 2 too cloudy, 4 failed")
	for _, known := range []int{0, 1, 2, 3} {
		assert.Zero(t, cat.ItemStats(items[known].ID).Requests, items[known].ID)
	}
	assert.Positive(t, cat.ItemStats(items[4].ID).Requests)
}
