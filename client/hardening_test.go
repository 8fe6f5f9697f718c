package client_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/client"
	"github.com/cropkit/cropkit/server"
	"github.com/cropkit/cropkit/server/servertest"
)

func TestConflictAndLabelClearing(t *testing.T) {
	ctx := context.Background()
	env := servertest.New(t, server.Config{})
	ts := httptest.NewServer(env.Handler)
	defer ts.Close()
	c, err := client.New(ts.URL, client.WithToken(env.AdminToken))
	require.NoError(t, err)
	geom := json.RawMessage(`{"type":"Polygon","coordinates":[[[4.06,50.74],[4.07,50.74],[4.07,50.75],[4.06,50.75],[4.06,50.74]]]}`)
	f, err := c.RegisterField(ctx, client.FieldRequest{FieldName: "f", Geometry: geom, Labels: map[string]string{"farm": "north"}})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"farm": "north"}, f.Labels)
	_, err = c.RegisterField(ctx, client.FieldRequest{FieldName: "f", Geometry: geom})
	assert.ErrorIs(t, err, client.ErrConflict)
	assert.NotErrorIs(t, err, client.ErrBadRequest)

	f, err = c.UpdateField(ctx, client.FieldRequest{FieldName: "f", Group: ptr("g")})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"farm": "north"}, f.Labels, "nil labels: unchanged")
	f, err = c.UpdateField(ctx, client.FieldRequest{FieldName: "f", Labels: map[string]string{}})
	require.NoError(t, err)
	assert.Empty(t, f.Labels, "empty labels: cleared")
	assert.Equal(t, "g", f.Group)
}

func TestUnavailableCarriesRetryAfter(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "3")
		w.WriteHeader(503)
		w.Write([]byte(`{"error":{"code":"unavailable","message":"busy"}}`))
	}))
	defer ts.Close()
	c, err := client.New(ts.URL, client.WithToken("t"))
	require.NoError(t, err)
	_, err = c.ListFields(context.Background(), "")
	assert.ErrorIs(t, err, client.ErrUnavailable)
	var apiErr *client.APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, 3*time.Second, apiErr.RetryAfter)
	assert.Equal(t, "unavailable", apiErr.Code)
}
