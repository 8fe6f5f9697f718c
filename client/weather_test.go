package client_test

import (
	"context"
	"encoding/csv"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/client"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/server"
	"github.com/cropkit/cropkit/server/servertest"
	"github.com/cropkit/cropkit/weather"
	"github.com/cropkit/cropkit/weather/weathertest"
)

func TestWeather(t *testing.T) {
	ctx := context.Background()
	tab, err := weather.ReadTableFile(testenv.DataDir(t, "weather", "flanders-31UDS.csv"))
	require.NoError(t, err)
	upstream := weathertest.New(tab.All())
	defer upstream.Close()
	cfg, err := archive.OpenMeteoWeather(upstream.URL, true)
	require.NoError(t, err)
	now := func() time.Time { return time.Date(2019, 1, 10, 0, 0, 0, 0, time.UTC) }
	cfg.Source.(*weather.OpenMeteo).Now, cfg.Now = now, now
	env := servertest.NewWith(t, archive.Config{Weather: cfg}, server.Config{})
	ts := httptest.NewServer(env.Handler)
	defer ts.Close()
	c, err := client.New(ts.URL, client.WithToken(env.AddUser(t, "ann", nil)))
	require.NoError(t, err)
	_, err = c.RegisterField(ctx, client.FieldRequest{FieldName: "UDS-1", Indices: []string{"ndvi"},
		Geometry: []byte(`{"type":"Polygon","coordinates":[[[3.02,50.81],[3.021,50.81],[3.021,50.811],[3.02,50.811],[3.02,50.81]]]}`)})
	require.NoError(t, err)
	_, err = c.RegisterMetadata(ctx, client.MetadataRecord{FieldName: "UDS-1", StartDate: "2017-10-10",
		HarvestDate: ptr("2018-07-25"), CropType: ptr("winter wheat")})
	require.NoError(t, err)

	got, err := c.Weather(ctx, client.WeatherRequest{FieldName: "UDS-1"})
	require.NoError(t, err)
	days, err := tab.Daily(ctx, weather.Query{From: mustDate(t, "2017-10-10"), To: mustDate(t, "2018-07-25")})
	require.NoError(t, err)
	p, err := weather.ParamsFor("winter wheat", nil, nil)
	require.NoError(t, err)
	want := weather.Accumulate(days, p)
	assert.Equal(t, "winter wheat", got.Crop)
	require.NotNil(t, got.CapC)
	assert.Equal(t, 26.0, *got.CapC)
	assert.Len(t, got.Daily, len(want.Rows))
	assert.Equal(t, want.Totals.GDD, got.Totals.GDD)
	assert.Equal(t, want.Totals.FrostDays, got.Totals.FrostDays)
	assert.Positive(t, got.Totals.FrostDays)

	f, err := c.WeatherCSV(ctx, client.WeatherRequest{FieldName: "UDS-1", From: "2018-06-01", To: "2018-06-30", Crop: "maize", Base: ptr(6.0)})
	require.NoError(t, err)
	recs, err := csv.NewReader(strings.NewReader(string(f.Data))).ReadAll()
	require.NoError(t, err)
	assert.Len(t, recs, 32)
	assert.Equal(t, "total", recs[31][2])

	_, err = c.Weather(ctx, client.WeatherRequest{FieldName: "UDS-1", From: "2016-01-01", To: "2016-01-02", Crop: "maize"})
	var apiErr *client.APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, 400, apiErr.StatusCode)
}

func mustDate(t *testing.T, s string) time.Time {
	d, err := weather.ParseDate(s)
	require.NoError(t, err)
	return d
}
