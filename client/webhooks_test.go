package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/client"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/server"
	"github.com/cropkit/cropkit/server/servertest"
	"github.com/cropkit/cropkit/webhook"
)

func TestClientWebhooks(t *testing.T) {
	sceneRoot := testenv.DataDir(t, "s2", "flanders-31UES")
	env := servertest.NewWith(t, archive.Config{Webhooks: archive.WebhookOptions{AllowPrivate: true, RetryBase: 20 * time.Millisecond}}, server.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- env.Archive.RunWebhooks(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	ts := httptest.NewServer(env.Handler)
	t.Cleanup(ts.Close)
	ann, err := client.New(ts.URL, client.WithToken(env.AddUser(t, "ann", nil)))
	require.NoError(t, err)
	admin, err := client.New(ts.URL, client.WithToken(env.AdminToken))
	require.NoError(t, err)

	// A receiver that fails once, then acknowledges.
	var (
		mu     sync.Mutex
		bodies [][]byte
		heads  []http.Header
	)
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		bodies, heads = append(bodies, b), append(heads, r.Header.Clone())
		if len(bodies) == 1 {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(rc.Close)

	reg, err := ann.RegisterWebhook(ctx, rc.URL+"/cropkit")
	require.NoError(t, err)
	assert.True(t, reg.Created)
	assert.Equal(t, "ann", reg.Username)
	assert.Contains(t, reg.Message, rc.URL+"/cropkit")
	require.NotEmpty(t, reg.Secret)
	again, err := ann.RegisterWebhook(ctx, rc.URL+"/cropkit")
	require.NoError(t, err)
	assert.False(t, again.Created)
	assert.Empty(t, again.Secret)
	assert.Equal(t, reg.ID, again.ID)

	_, err = ann.RegisterWebhook(ctx, "ftp://example.com/x")
	assert.True(t, errors.Is(err, client.ErrBadRequest), "%v", err)
	var apiErr *client.APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Contains(t, apiErr.Message, "scheme")

	hooks, err := ann.ListWebhooks(ctx)
	require.NoError(t, err)
	require.Len(t, hooks, 1)
	assert.Equal(t, client.Webhook{ID: reg.ID, Username: "ann", URL: reg.URL, CreatedAt: hooks[0].CreatedAt}, hooks[0])
	assert.WithinDuration(t, time.Now(), hooks[0].CreatedAt, time.Minute)

	_, err = ann.RegisterField(ctx, client.FieldRequest{FieldName: "wheat", Geometry: fieldGeometry(t, "UES-03"), Group: ptr("north"), Indices: []string{"ndvi", "evi"}})
	require.NoError(t, err)
	_, err = admin.IngestScene(ctx, filepath.Join(sceneRoot, "2019-06-20"), "")
	require.NoError(t, err)

	var ds []client.WebhookDelivery
	require.Eventually(t, func() bool {
		ds, err = ann.WebhookDeliveries(ctx, 0)
		return err == nil && len(ds) == 1 && ds[0].Status == webhook.StatusDelivered
	}, 10*time.Second, 10*time.Millisecond)
	d := ds[0]
	assert.Equal(t, reg.ID, d.RegistrationID)
	assert.Equal(t, reg.URL, d.URL)
	require.Len(t, d.Attempts, 2)
	assert.Equal(t, 502, d.Attempts[0].StatusCode)
	assert.Equal(t, "HTTP 502 Bad Gateway", d.Attempts[0].Error)
	assert.Equal(t, 200, d.Attempts[1].StatusCode)
	assert.False(t, d.FinishedAt.IsZero())
	notification, err := d.Notification()
	require.NoError(t, err)
	assert.Equal(t, "north", notification.Group)
	assert.Equal(t, "wheat", notification.Field)
	require.Len(t, notification.Data, 2)
	assert.Equal(t, "ndvi", notification.Data[0].Index)
	assert.Equal(t, "2019-06-20 10:57:03 GMT", notification.Data[0].Date, "the acquisition time (ACQUISITION_DATETIME_UTC)")

	// The receiver got the same signed body twice, under one webhook-id.
	mu.Lock()
	require.Len(t, bodies, 2)
	for i := range bodies {
		require.NoError(t, webhook.Verify(reg.Secret, heads[i], bodies[i], webhook.VerifyOptions{}))
		assert.Equal(t, d.MessageID, heads[i].Get("webhook-id"))
		var p webhook.Payload
		require.NoError(t, json.Unmarshal(bodies[i], &p))
		assert.Equal(t, notification, p)
	}
	mu.Unlock()
	report, err := ann.DownloadReport(ctx, client.DownloadRequest{FieldName: "wheat", Index: "ndvi"})
	require.NoError(t, err)
	assert.Equal(t, report.Mean, notification.Data[0].Content.Mean)
	assert.Equal(t, report.P75, notification.Data[0].Content.P75)

	ds, err = ann.WebhookDeliveries(ctx, 1)
	require.NoError(t, err)
	assert.Len(t, ds, 1)

	// Deletion: another user's is not found; by URL, then by id.
	other, err := client.New(ts.URL, client.WithToken(env.AddUser(t, "bo", nil)))
	require.NoError(t, err)
	assert.ErrorIs(t, other.DeleteWebhook(ctx, reg.ID), client.ErrNotFound)
	assert.ErrorIs(t, other.DeleteWebhookURL(ctx, reg.URL), client.ErrNotFound)
	require.NoError(t, ann.DeleteWebhookURL(ctx, reg.URL))
	assert.ErrorIs(t, ann.DeleteWebhook(ctx, reg.ID), client.ErrNotFound)
	hooks, err = ann.ListWebhooks(ctx)
	require.NoError(t, err)
	assert.Empty(t, hooks)
}
