package client_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/api"
	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/client"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/server"
	"github.com/cropkit/cropkit/server/servertest"
)

func TestClientTimeSeriesPhenologyEvents(t *testing.T) {
	sceneRoot := testenv.DataDir(t, "s2", "flanders-31UES")
	_, ann, env, _ := setup(t)
	ctx := context.Background()
	_, err := ann.RegisterField(ctx, client.FieldRequest{FieldName: "wheat", Geometry: fieldGeometry(t, "UES-03"), Indices: []string{"ndvi"}})
	require.NoError(t, err)
	for _, d := range []string{"2019-03-22", "2019-04-21", "2019-05-16", "2019-06-20", "2019-07-05", "2019-07-20", "2019-07-25", "2019-07-30", "2019-08-24", "2019-09-18"} {
		_, err := env.Archive.Ingest(ctx, filepath.Join(sceneRoot, d), archive.IngestOptions{})
		require.NoError(t, err)
	}
	ts, err := ann.TimeSeries(ctx, client.TimeSeriesRequest{FieldName: "wheat", Index: "ndvi", StartDate: "2019-06-19", EndDate: "2019-06-21"})
	require.NoError(t, err)
	require.Len(t, ts.Series, 3)
	require.NotNil(t, ts.Series[1].Observed)
	assert.InDelta(t, 0.849754, *ts.Series[1].Observed, 1e-6)
	assert.Nil(t, ts.Series[0].Observed)
	f, err := ann.TimeSeriesCSV(ctx, client.TimeSeriesRequest{FieldName: "wheat", Index: "ndvi", StartDate: "2019-06-19", EndDate: "2019-06-21"})
	require.NoError(t, err)
	assert.Equal(t, 4, strings.Count(string(f.Data), "\n"), "header and three days")

	ph, err := ann.Phenology(ctx, "wheat", "ndvi")
	require.NoError(t, err)
	require.Len(t, ph.Seasons, 1)
	assert.Equal(t, "calendar", ph.Seasons[0].Source)

	evs, err := ann.Events(ctx, client.EventsRequest{FieldName: "wheat", StartDate: "2019-07-01"})
	require.NoError(t, err)
	require.NotEmpty(t, evs)
	assert.Equal(t, "drop", evs[0].Kind)

	_, err = ann.TimeSeries(ctx, client.TimeSeriesRequest{FieldName: "wheat", Index: "ndre"})
	var apiErr *client.APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, 404, apiErr.StatusCode)
}

func TestClientSetWebhookEvents(t *testing.T) {
	env := servertest.NewWith(t, archive.Config{Webhooks: archive.WebhookOptions{AllowPrivate: true}}, server.Config{})
	ts := httptest.NewServer(env.Handler)
	t.Cleanup(ts.Close)
	ann, err := client.New(ts.URL, client.WithToken(env.AddUser(t, "ann", nil)))
	require.NoError(t, err)
	ctx := context.Background()
	reg, err := ann.SetWebhookEvents(ctx, "http://127.0.0.1:9/hook", true)
	require.NoError(t, err)
	assert.True(t, reg.Created)
	require.NotNil(t, reg.Events)
	assert.True(t, *reg.Events)
	hooks, err := ann.ListWebhooks(ctx)
	require.NoError(t, err)
	require.Len(t, hooks, 1)
	assert.Equal(t, []string{api.EventTopic}, hooks[0].Topics)
	_, err = ann.SetWebhookEvents(ctx, "http://127.0.0.1:9/hook", false)
	require.NoError(t, err)
	hooks, err = ann.ListWebhooks(ctx)
	require.NoError(t, err)
	assert.Empty(t, hooks[0].Topics)
}
