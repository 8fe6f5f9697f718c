// Package webhook notifies farm software when new imagery products exist for
// a field: the §6 notification payload, Standard Webhooks signing and
// verification, URL validation with an SSRF guard, and a Dispatcher that
// delivers a durable outbox with retries.
//
// Storage lives behind the Store interface; webhook/sqlstore implements it on
// the server's SQLite database so that notifications are enqueued in the same
// transaction that stores the products.
package webhook

import (
	"fmt"
	"time"

	"github.com/cropkit/cropkit/api"
)

// DateLayout is the layout of Update.Date: "YYYY-MM-DD HH:MM:SS GMT" (spec §6).
const DateLayout = api.WebhookDateLayout

// The §6 notification's wire shapes are package api's; Payload's Validate
// and Marshal (api.WebhookPayload) are what this package checks, signs and
// stores.
type (
	// Payload is the notification body of spec §6: one per field per
	// ingestion, with one Update per index that the ingestion produced.
	Payload = api.WebhookPayload
	// Update is one index product of the ingestion.
	Update = api.WebhookUpdate
	// Content holds the field statistics of one index image.
	Content = api.WebhookContent
)

// FormatDate formats t in UTC with DateLayout.
func FormatDate(t time.Time) string {
	return t.UTC().Format(DateLayout)
}

// ParseDate parses a DateLayout string as UTC.
func ParseDate(s string) (time.Time, error) {
	t, err := time.Parse(DateLayout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("parse webhook date %q: %w", s, err)
	}
	return t, nil
}
