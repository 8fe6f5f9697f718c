package archive_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/archive/backend"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/imagery"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/metadata"
	"github.com/cropkit/cropkit/timeseries"
)

// TestTimeSeriesFromStoredProducts ingests every scene of the 31UES
// chip for four fields and checks the series, phenology and events the
// archive answers from its product rows against the library run on the
// same scenes directly (the CLI's path).
func TestTimeSeriesFromStoredProducts(t *testing.T) {
	ctx := context.Background()
	place := testenv.DataDir(t, "s2", "flanders-31UES")
	data, err := os.ReadFile(testenv.DataDir(t, "fields", "flanders-31UES.geojson"))
	require.NoError(t, err)
	feats, err := geo.ReadFeatures(data)
	require.NoError(t, err)
	feats = feats[:4] // UES-01 and -03 winter wheat, -02 grass, -04 winter barley

	a, err := backend.Open(ctx, t.TempDir(), true, archive.Config{})
	require.NoError(t, err)
	defer a.Close()
	_, _, err = a.EnsureAdmin(ctx)
	require.NoError(t, err)
	admin, err := a.UserByName(ctx, "admin")
	require.NoError(t, err)
	var geoms []orb.MultiPolygon
	for _, ft := range feats {
		geom, err := archive.EncodeGeometry(ft.Geometry)
		require.NoError(t, err)
		_, err = a.RegisterField(ctx, admin, archive.FieldInput{Name: ft.Name, Geometry: []byte(geom), Indices: []string{"ndvi"}})
		require.NoError(t, err)
		geoms = append(geoms, ft.Geometry)
	}
	entries, err := os.ReadDir(place)
	require.NoError(t, err)
	var scenes []*imagery.Scene
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(place, e.Name())
		_, err := a.Ingest(ctx, dir, archive.IngestOptions{})
		require.NoError(t, err)
		s, err := imagery.OpenScene(ctx, dir, imagery.SceneOptions{})
		require.NoError(t, err)
		defer s.Close()
		scenes = append(scenes, s)
	}
	direct, err := timeseries.SceneObservations(ctx, scenes, geoms, "ndvi", timeseries.SceneOptions{})
	require.NoError(t, err)

	from, to := "2019-03-01", "2019-09-30"
	ts, err := a.TimeSeries(ctx, admin, archive.TimeSeriesQuery{Field: "UES-03", Index: "NDVI", From: from, To: to})
	require.NoError(t, err)
	assert.Equal(t, "ndvi", ts.Index)
	require.Len(t, ts.Series, 214)
	start, _ := time.Parse(time.DateOnly, from)
	end, _ := time.Parse(time.DateOnly, to)
	want, err := timeseries.Daily(timeseries.Usable(direct[2], archive.DefaultMinClear), start, end, timeseries.Options{Range: [2]float64{-1, 1}})
	require.NoError(t, err)
	observed := 0
	for i, d := range ts.Series {
		require.Equal(t, want[i].Date.Format(time.DateOnly), d.Date)
		assert.InDelta(t, want[i].Estimate, d.Estimate, 1e-6, d.Date)
		assert.InDelta(t, want[i].Lower, d.Lower, 1e-6, d.Date)
		assert.InDelta(t, want[i].Upper, d.Upper, 1e-6, d.Date)
		if d.Observed != nil {
			observed++
			assert.InDelta(t, want[i].Observed, *d.Observed, 1e-9)
			assert.Equal(t, "sentinel-2", *d.Sensor)
		}
	}
	assert.Greater(t, observed, 15)

	ph, err := a.Phenology(ctx, admin, "UES-03", "ndvi")
	require.NoError(t, err)
	require.Len(t, ph.Seasons, 1, "%+v", ph.Seasons)
	season := ph.Seasons[0]
	assert.Equal(t, "calendar", season.Source)
	assert.Equal(t, "2019-03-01", season.WindowStart)
	require.NotNil(t, season.End)
	assert.Equal(t, "2019-07", (*season.End)[:7], "winter wheat ends at harvest")

	// With a metadata season, that season is measured instead of the calendar's.
	_, _, _, err = a.RegisterSeason(ctx, admin, metadata.Record{FieldName: "UES-03", StartDate: "2018-10-15", HarvestDate: "2019-07-25", CropType: "winter wheat"})
	require.NoError(t, err)
	ph, err = a.Phenology(ctx, admin, "UES-03", "ndvi")
	require.NoError(t, err)
	require.Len(t, ph.Seasons, 1, "%+v", ph.Seasons)
	assert.Equal(t, "metadata", ph.Seasons[0].Source)
	assert.Equal(t, "winter wheat", ph.Seasons[0].CropType)
	assert.Equal(t, "2018-10-15", ph.Seasons[0].WindowStart)
	assert.Equal(t, "2019-08-24", ph.Seasons[0].WindowEnd)
	require.NotNil(t, ph.Seasons[0].End)
	assert.Equal(t, "2019-07", (*ph.Seasons[0].End)[:7])

	ev, err := a.Events(ctx, admin, "UES-03", nil, "", "")
	require.NoError(t, err)
	harvest := false
	for _, e := range ev.Events {
		if e.Kind == timeseries.Drop && e.Date >= "2019-07-01" && e.Date <= "2019-08-31" {
			harvest = true
			assert.Equal(t, "UES-03", e.FieldName)
			assert.Less(t, e.Observed, e.Lower)
		}
	}
	assert.True(t, harvest, "%+v", ev.Events)

	for _, tt := range []struct {
		q    archive.TimeSeriesQuery
		want error
	}{
		{archive.TimeSeriesQuery{Field: "UES-03", Index: "ndre"}, archive.ErrNotFound},
		{archive.TimeSeriesQuery{Field: "nope", Index: "ndvi"}, archive.ErrNotFound},
		{archive.TimeSeriesQuery{Field: "UES-03", Index: "bogus"}, archive.ErrInvalid},
		{archive.TimeSeriesQuery{Field: "UES-03", Index: "ndvi", From: "2019-05-01", To: "2019-04-01"}, archive.ErrInvalid},
		{archive.TimeSeriesQuery{Field: "UES-03", Index: "ndvi", From: "1900-01-01", To: "2019-04-01"}, archive.ErrInvalid},
		{archive.TimeSeriesQuery{Field: "UES-03", Index: "ndvi", From: "2019-5-1"}, archive.ErrInvalid},
	} {
		_, err := a.TimeSeries(ctx, admin, tt.q)
		require.ErrorIs(t, err, tt.want, "%+v", tt.q)
	}
}
