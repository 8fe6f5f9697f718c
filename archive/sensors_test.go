package archive_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/internal/testenv"
)

// TestHistoryMixesSensors ingests one field's Sentinel-2, Landsat 8 and
// Sentinel-1 scenes of June 2018 (2018-06-15: all three, Sentinel-2 fully
// cloudy): every product row, history row and webhook data element names
// its sensor, the radar date of the cloudy week notifies, and the
// closest-date rule stays within a sensor unless sensor=any.
func TestHistoryMixesSensors(t *testing.T) {
	ctx := context.Background()
	data, err := os.ReadFile(testenv.DataDir(t, "fields", "flanders-31UDS.geojson"))
	require.NoError(t, err)
	feats, err := geo.ReadFeatures(data)
	require.NoError(t, err)
	var field geo.Feature
	for _, f := range feats {
		if f.Name == "UDS-02" {
			field = f
		}
	}
	require.NotNil(t, field.Geometry)

	a := openTest(t, t.TempDir())
	u, err := a.CreateUser(ctx, archive.NewUser{Name: "u"})
	require.NoError(t, err)
	_, err = a.RegisterWebhook(ctx, u, "https://farm.example.com/hook")
	require.NoError(t, err)
	f, err := a.Store().InsertField(ctx, archive.Field{OwnerID: u.ID, Name: "f", Indices: []string{"ndvi", "vv", "rvi"}, Geometry: field.Geometry}, 0)
	require.NoError(t, err)

	ingest := func(kind, date string) archive.IngestResult {
		res, err := a.Ingest(ctx, testenv.DataDir(t, kind, "flanders-31UDS", date), archive.IngestOptions{})
		require.NoError(t, err, kind+" "+date)
		return res
	}
	assert.Equal(t, 1, ingest("s2", "2018-06-10").Usable, "ndvi only: vv and rvi do not apply")
	cloudy := ingest("s2", "2018-06-15")
	assert.Equal(t, 0, cloudy.Usable)
	assert.Equal(t, 0, cloudy.Notified, "a fully cloudy Sentinel-2 date notifies nobody")
	ingest("s2", "2018-06-23")
	assert.Equal(t, 1, ingest("landsat8", "2018-06-06").Usable)
	radar := ingest("s1", "2018-06-15")
	assert.Equal(t, 2, radar.Usable, "vv and rvi")
	assert.Equal(t, 1, radar.Notified, "the radar image of the cloudy day notifies")
	ingest("s1", "2018-06-20")

	ds, err := a.Deliveries(ctx, u, 100)
	require.NoError(t, err)
	var s1Payload string
	for _, d := range ds {
		p := string(d.Payload)
		assert.Contains(t, p, `"sensor":"`, "every data element names its sensor")
		if strings.Contains(p, `"2018-06-15`) {
			s1Payload = p
		}
	}
	require.NotEmpty(t, s1Payload)
	assert.Contains(t, s1Payload, `"sensor":"sentinel-1"`)
	assert.NotContains(t, s1Payload, `"index":"ndvi"`)

	// Stored rows: 2018-06-15 holds a Sentinel-2 ndvi row (unusable) and
	// the radar rows side by side.
	rows, err := a.Store().Products(ctx, archive.ProductQuery{FieldID: f.ID, From: "2018-06-15", To: "2018-06-15"})
	require.NoError(t, err)
	got := map[string]string{}
	for _, p := range rows {
		got[p.Index+"/"+p.Family] = p.Sensor
	}
	assert.Equal(t, map[string]string{"ndvi/sentinel-2": "sentinel-2", "vv/sentinel-1": "sentinel-1", "rvi/sentinel-1": "sentinel-1"}, got)

	_, hist, err := a.HistoryFor(ctx, u, archive.HistoryQuery{Field: "f", Sensor: archive.SensorAny})
	require.NoError(t, err)
	sensors := map[string]bool{}
	for ix, rows := range hist {
		for _, r := range rows {
			require.NotEmpty(t, r.Sensor, ix+" "+r.Date)
			sensors[r.Sensor] = true
		}
	}
	assert.Equal(t, map[string]bool{"sentinel-2": true, "landsat-8": true, "sentinel-1": true}, sensors)
	ndviDates := func(rows []archive.HistoryRow) []string {
		var out []string
		for _, r := range rows {
			out = append(out, r.Date+" "+r.Sensor)
		}
		return out
	}
	assert.Equal(t, []string{"2018-06-06 landsat-8", "2018-06-10 sentinel-2", "2018-06-23 sentinel-2"}, ndviDates(hist["ndvi"]))
	assert.Equal(t, []string{"2018-06-15 sentinel-1", "2018-06-20 sentinel-1"}, ndviDates(hist["vv"]))

	_, hist, err = a.HistoryFor(ctx, u, archive.HistoryQuery{Field: "f"})
	require.NoError(t, err)
	assert.Equal(t, []string{"2018-06-10 sentinel-2", "2018-06-23 sentinel-2"}, ndviDates(hist["ndvi"]), "default: Sentinel-2 for optical indices")
	assert.Len(t, hist["vv"], 2, "default: Sentinel-1 for radar indices")
	_, hist, err = a.HistoryFor(ctx, u, archive.HistoryQuery{Field: "f", Indices: []string{"ndvi"}, Sensor: "landsat-9"})
	require.NoError(t, err)
	assert.Equal(t, []string{"2018-06-06 landsat-8"}, ndviDates(hist["ndvi"]), "a satellite name stands for its family")

	img, err := a.Image(ctx, u, archive.ImageQuery{Field: "f", Index: "ndvi", Date: "2018-06-06"})
	require.NoError(t, err)
	assert.Equal(t, "2018-06-10", img.Product.Date, "closest within Sentinel-2")
	img, err = a.Image(ctx, u, archive.ImageQuery{Field: "f", Index: "ndvi", Date: "2018-06-06", Sensor: "any"})
	require.NoError(t, err)
	assert.Equal(t, "2018-06-06", img.Product.Date)
	assert.Equal(t, "landsat-8", img.Product.Sensor)
	doc, err := a.ReportJSON(ctx, img)
	require.NoError(t, err)
	assert.Contains(t, string(doc), `"sensor":"landsat-8"`)
	img, err = a.Image(ctx, u, archive.ImageQuery{Field: "f", Index: "vv", Date: "2018-06-16"})
	require.NoError(t, err)
	assert.Equal(t, "2018-06-15", img.Product.Date)
	_, err = a.Image(ctx, u, archive.ImageQuery{Field: "f", Index: "vv", Sensor: "landsat"})
	assert.ErrorIs(t, err, archive.ErrInvalid)
	_, err = a.Image(ctx, u, archive.ImageQuery{Field: "f", Index: "ndvi", Sensor: "modis"})
	assert.ErrorIs(t, err, archive.ErrInvalid)
}
