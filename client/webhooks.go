package client

import (
	"context"
	"strconv"

	"github.com/cropkit/cropkit/api"
)

// WebhookRegistration is the answer of RegisterWebhook (spec §2.7, plus the
// registration's id and, when it was created now, its signing secret).
type WebhookRegistration = api.WebhookRegistered

// Webhook is one of the caller's registered URLs.
type Webhook = api.Webhook

// WebhookDelivery is one notification to one registered URL with every
// attempt; its Notification method decodes a §6 payload.
type WebhookDelivery = api.WebhookDelivery

// RegisterWebhook registers url to receive the §6 notification of every new
// image of the caller's fields (spec §4.5). Registering a URL again is
// idempotent. The URL must be absolute http(s) without credentials, and not a
// private address unless the server allows it (else ErrBadRequest).
func (c *Client) RegisterWebhook(ctx context.Context, url string) (WebhookRegistration, error) {
	var out WebhookRegistration
	return out, c.call(ctx, request{path: "/notifications/register_webhook", query: query("url", url)}, &out)
}

// SetWebhookEvents registers url (as RegisterWebhook does) and opts it in
// to field-event notifications (api.EventNotification: drops and rises of
// a field's series, once per event) or out of them. Registrations that
// never opt in receive only §6 notifications.
func (c *Client) SetWebhookEvents(ctx context.Context, url string, on bool) (WebhookRegistration, error) {
	var out WebhookRegistration
	return out, c.call(ctx, request{path: "/notifications/register_webhook", query: query("url", url, "events", strconv.FormatBool(on))}, &out)
}

// ListWebhooks lists the caller's registrations, oldest first (no secrets).
func (c *Client) ListWebhooks(ctx context.Context) ([]Webhook, error) {
	var out api.WebhookList
	return out.Webhooks, c.call(ctx, request{path: "/notifications/list"}, &out)
}

// DeleteWebhook deletes the caller's registration id and cancels its pending
// notifications; ErrNotFound when the caller has no such registration.
func (c *Client) DeleteWebhook(ctx context.Context, id int64) error {
	return c.call(ctx, request{path: "/notifications/delete", query: query("id", strconv.FormatInt(id, 10))}, nil)
}

// DeleteWebhookURL is DeleteWebhook by registered URL.
func (c *Client) DeleteWebhookURL(ctx context.Context, url string) error {
	return c.call(ctx, request{path: "/notifications/delete", query: query("url", url)}, nil)
}

// WebhookDeliveries lists the caller's most recent notifications, newest
// first, with their attempts: at most limit (0: the server's default, 100).
func (c *Client) WebhookDeliveries(ctx context.Context, limit int) ([]WebhookDelivery, error) {
	q := query()
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out api.WebhookDeliveries
	return out.Deliveries, c.call(ctx, request{path: "/notifications/deliveries", query: q}, &out)
}
