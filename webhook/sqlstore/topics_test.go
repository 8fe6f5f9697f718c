package sqlstore_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/webhook"
	"github.com/cropkit/cropkit/webhook/sqlstore"
)

// A topic's notifications go only to the registrations subscribed to it,
// once per key; §6 notifications still go to every registration.
func TestTopicsSubscribeAndEnqueueOnce(t *testing.T) {
	forEachBackend(t, func(t *testing.T, bk backend) {
		ctx := context.Background()
		s, _ := bk.newStore(t)
		plain, err := s.Register(ctx, "ann", "https://a.example/hook")
		require.NoError(t, err)
		events, err := s.Register(ctx, "ann", "https://b.example/hook")
		require.NoError(t, err)
		require.NoError(t, s.Subscribe(ctx, "ann", events.ID, "field.event", true))
		require.NoError(t, s.Subscribe(ctx, "ann", events.ID, "field.event", true), "idempotent")
		require.ErrorIs(t, s.Subscribe(ctx, "bob", events.ID, "field.event", true), sqlstore.ErrNotFound)

		on, err := s.Subscribed(ctx, "ann", "field.event")
		require.NoError(t, err)
		assert.True(t, on)
		on, err = s.Subscribed(ctx, "bob", "field.event")
		require.NoError(t, err)
		assert.False(t, on)

		regs, err := s.List(ctx, "ann")
		require.NoError(t, err)
		require.Len(t, regs, 2)
		assert.Empty(t, regs[0].Topics)
		assert.Equal(t, []string{"field.event"}, regs[1].Topics)

		body := []byte(`{"type":"field.event"}`)
		n, err := s.EnqueueTopic(ctx, "ann", "field.event", "evt_1_ndvi_2019-07-20_drop", body)
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		n, err = s.EnqueueTopic(ctx, "ann", "field.event", "evt_1_ndvi_2019-07-20_drop", body)
		require.NoError(t, err)
		assert.Equal(t, 0, n, "the same key again: nothing")
		_, err = s.EnqueueTopic(ctx, "ann", "field.event", "bad key!", body)
		require.Error(t, err)
		n, err = s.Enqueue(ctx, "ann", webhook.Payload{Field: "f", Data: []webhook.Update{{Index: "ndvi", Date: "2019-07-20 10:50:00 GMT"}}})
		require.NoError(t, err)
		assert.Equal(t, 2, n, "§6 notifications reach every registration")

		ds, err := s.Deliveries(ctx, "ann", 10)
		require.NoError(t, err)
		topic := 0
		for _, d := range ds {
			if strings.HasPrefix(d.MessageID, "msg_evt_") {
				topic++
				assert.Equal(t, "msg_evt_1_ndvi_2019-07-20_drop_"+strconv.FormatInt(events.ID, 10), d.MessageID)
				assert.Equal(t, events.ID, d.RegistrationID)
				assert.NotEqual(t, plain.ID, d.RegistrationID)
			}
		}
		assert.Equal(t, 1, topic)

		require.NoError(t, s.Subscribe(ctx, "ann", events.ID, "field.event", false))
		on, err = s.Subscribed(ctx, "ann", "field.event")
		require.NoError(t, err)
		assert.False(t, on)
		require.NoError(t, s.Subscribe(ctx, "ann", events.ID, "field.event", true))
		require.NoError(t, s.Delete(ctx, "ann", events.ID))
		on, err = s.Subscribed(ctx, "ann", "field.event")
		require.NoError(t, err)
		assert.False(t, on, "a deleted registration's subscriptions go with it")
	})
}
