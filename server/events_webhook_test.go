package server_test

import (
	"encoding/json"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/api"
	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/webhook"
)

// Field events reach only the registrations that opted in, signed, once
// per event (a re-ingestion sends nothing again); a §6 receiver keeps
// getting only §6 payloads.
func TestFieldEventWebhooksRealScenes(t *testing.T) {
	sceneRoot := testenv.DataDir(t, "s2", "flanders-31UES")
	env, tok := webhookEnv(t, archive.WebhookOptions{AllowPrivate: true, RetryBase: 50 * time.Millisecond, Timeout: 2 * time.Second})
	h := env.Handler
	registerRealFields(t, h, tok, []string{"UES-03"}, []string{"ndvi"})
	plain, events := newReceiver(t, ack), newReceiver(t, ack)
	regPlain := registerHook(t, h, tok, plain.URL())
	r := do(t, h, "POST", "/notifications/register_webhook?events=true&url="+url.QueryEscape(events.URL())+"&token="+tok, "", nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	var regEvents struct {
		registered
		Events *bool `json:"events"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &regEvents))
	require.NotNil(t, regEvents.Events)
	assert.True(t, *regEvents.Events)

	dates := []string{"2019-03-22", "2019-04-01", "2019-04-21", "2019-05-16", "2019-06-10", "2019-06-20", "2019-06-30",
		"2019-07-05", "2019-07-20", "2019-07-25", "2019-07-30", "2019-08-24"}
	for _, d := range dates {
		ingest(t, env, filepath.Join(sceneRoot, d))
	}
	settled(t, h, tok, 20*time.Second)

	eventsOf := func(rc *receiver, secret string) (sixes int, evs []api.EventNotification) {
		for _, q := range rc.requests() {
			require.NoError(t, webhook.Verify(secret, q.Header, q.Body, webhook.VerifyOptions{}))
			var probe map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(q.Body, &probe))
			if _, ok := probe["type"]; !ok {
				sixes++
				continue
			}
			var ev api.EventNotification
			require.NoError(t, json.Unmarshal(q.Body, &ev))
			evs = append(evs, ev)
		}
		return sixes, evs
	}
	sixes, evs := eventsOf(plain, regPlain.Secret)
	assert.Equal(t, len(dates), sixes, "one §6 notification per date")
	assert.Empty(t, evs, "no event payload to a receiver that did not opt in")
	sixes, evs = eventsOf(events, regEvents.Secret)
	assert.Equal(t, len(dates), sixes)
	require.NotEmpty(t, evs)
	seen := map[string]int{}
	harvest := false
	for _, ev := range evs {
		assert.Equal(t, api.EventTopic, ev.Type)
		assert.Equal(t, "flanders", ev.Group)
		assert.Equal(t, "UES-03", ev.Field)
		seen[ev.Event.Index+ev.Event.Date+ev.Event.Kind]++
		if ev.Event.Kind == "drop" && ev.Event.Date == "2019-07-20" {
			harvest = true
			assert.Equal(t, "2019-07-25", ev.Event.ConfirmedBy)
			assert.Less(t, ev.Event.Observed, ev.Event.Lower)
		}
	}
	assert.True(t, harvest, "the harvest drop: %+v", evs)
	for k, n := range seen {
		assert.Equal(t, 1, n, "once per event: %s", k)
	}
	// The events the API lists are the ones notified.
	r = do(t, h, "GET", "/fields/events?field_name=UES-03", tok, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	var listed api.FieldEvents
	require.NoError(t, json.Unmarshal(r.Body, &listed))
	assert.Len(t, listed.Events, len(evs))

	// Re-ingesting the confirming date sends nothing again.
	before := len(events.requests())
	ingest(t, env, filepath.Join(sceneRoot, "2019-07-25"))
	settled(t, h, tok, 10*time.Second)
	assert.Len(t, events.requests(), before)

	r = do(t, h, "GET", "/notifications/list", tok, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	var list struct {
		Webhooks []struct {
			ID     int64    `json:"id"`
			Topics []string `json:"topics"`
		} `json:"webhooks"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &list))
	require.Len(t, list.Webhooks, 2)
	assert.Empty(t, list.Webhooks[0].Topics)
	assert.Equal(t, []string{api.EventTopic}, list.Webhooks[1].Topics)

	// Opting out.
	r = do(t, h, "POST", "/notifications/register_webhook?events=false&url="+url.QueryEscape(events.URL())+"&token="+tok, "", nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	r = do(t, h, "GET", "/notifications/list", tok, nil)
	list.Webhooks = nil // a fresh decode: omitted topics must not keep old values
	require.NoError(t, json.Unmarshal(r.Body, &list))
	require.Len(t, list.Webhooks, 2)
	assert.Empty(t, list.Webhooks[1].Topics)

	// A registration opting in later gets, with the field's next ingestion
	// (here 2019-08-24 again), the events confirmed within the 60 days
	// before that date (the same way an event whose enqueue a crash
	// interrupted goes out), each once.
	r = do(t, h, "POST", "/notifications/register_webhook?events=true&url="+url.QueryEscape(plain.URL())+"&token="+tok, "", nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	ingest(t, env, filepath.Join(sceneRoot, "2019-08-24"))
	settled(t, h, tok, 10*time.Second)
	_, evs = eventsOf(plain, regPlain.Secret)
	require.NotEmpty(t, evs)
	late := map[string]int{}
	for _, ev := range evs {
		assert.GreaterOrEqual(t, ev.Event.ConfirmedBy, "2019-06-25", "confirmed within 60 days of 2019-08-24: %+v", ev.Event)
		late[ev.Event.Date+ev.Event.Kind]++
	}
	assert.Equal(t, 1, late["2019-07-20drop"], "the harvest, once: %+v", evs)
}
