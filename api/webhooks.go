package api

import (
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// WebhookDateLayout is the layout of WebhookUpdate.Date:
// "YYYY-MM-DD HH:MM:SS GMT" (spec §6).
const WebhookDateLayout = "2006-01-02 15:04:05 GMT"

// WebhookPayload is the notification body of spec §6: one per field per
// ingestion, with one WebhookUpdate per index that the ingestion produced
// for that field. Package webhook signs and sends it (webhook.Payload).
type WebhookPayload struct {
	Group string          `json:"group"`
	Field string          `json:"field"`
	Data  []WebhookUpdate `json:"data"`
}

// WebhookUpdate is one index product of the ingestion.
type WebhookUpdate struct {
	Index string `json:"index"`
	Date  string `json:"date"` // acquisition time, WebhookDateLayout in UTC
	// Sensor names the image's sensor ("sentinel-2a", "landsat-8",
	// "sentinel-1a", …): an extra member beside the spec's (§6).
	Sensor  string         `json:"sensor,omitempty"`
	Content WebhookContent `json:"content"`
}

// WebhookContent holds the field statistics of one index image.
type WebhookContent struct {
	Mean float64 `json:"mean"`
	// MeanVariation is the percent change of Mean versus the previous usable
	// image of the same field and index (imagery.MeanVariation); 0 for the
	// first image, whose PreviousDate is null — the spec types it as a number.
	MeanVariation float64 `json:"mean_variation"`
	// PreviousDate is the date (YYYY-MM-DD) of the image MeanVariation
	// compares with; nil (JSON null) for the first image.
	PreviousDate *string `json:"previous_date"`
	Median       float64 `json:"median"`
	Std          float64 `json:"std"`
	Min          float64 `json:"min"`
	Max          float64 `json:"max"`
	P25          float64 `json:"p25"`
	P75          float64 `json:"p75"`
}

// Validate reports whether p can be sent: field and every index named, dates
// in WebhookDateLayout and all statistics finite (JSON has no NaN).
func (p WebhookPayload) Validate() error {
	if p.Field == "" {
		return fmt.Errorf("webhook payload: empty field")
	}
	if len(p.Data) == 0 {
		return fmt.Errorf("webhook payload for field %q: no updates", p.Field)
	}
	for i, u := range p.Data {
		if u.Index == "" {
			return fmt.Errorf("webhook payload for field %q: update %d: empty index", p.Field, i)
		}
		if _, err := time.Parse(WebhookDateLayout, u.Date); err != nil {
			return fmt.Errorf("webhook payload for field %q: update %d (%s): parse webhook date %q: %w", p.Field, i, u.Index, u.Date, err)
		}
		c := u.Content
		vals := []struct {
			name string
			v    float64
		}{{"mean", c.Mean}, {"mean_variation", c.MeanVariation}, {"median", c.Median}, {"std", c.Std}, {"min", c.Min}, {"max", c.Max}, {"p25", c.P25}, {"p75", c.P75}}
		for _, s := range vals {
			if math.IsNaN(s.v) || math.IsInf(s.v, 0) {
				return fmt.Errorf("webhook payload for field %q: update %d (%s): %s is %v", p.Field, i, u.Index, s.name, s.v)
			}
		}
	}
	return nil
}

// Marshal validates p and encodes it as compact JSON, the exact bytes that
// are stored, signed and sent.
func (p WebhookPayload) Marshal() ([]byte, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encode webhook payload for field %q: %w", p.Field, err)
	}
	return b, nil
}

// WebhookStatus is the state of a delivery.
type WebhookStatus string

// Delivery states.
const (
	WebhookPending   WebhookStatus = "pending"   // waiting for its next attempt
	WebhookDelivered WebhookStatus = "delivered" // a 2xx reply was received
	WebhookFailed    WebhookStatus = "failed"    // given up: schedule exhausted, 410, or address refused
	WebhookCancelled WebhookStatus = "cancelled" // its registration was deleted or disabled first
)

// WebhookAttempt is one try to deliver a notification.
type WebhookAttempt struct {
	At         time.Time     `json:"at"`
	StatusCode int           `json:"status_code,omitempty"` // 0 when no response was received
	Error      string        `json:"error,omitempty"`       // why the attempt failed, empty on success
	Duration   time.Duration `json:"duration_ns"`
	Response   string        `json:"response,omitempty"` // start of the reply body
}

// Webhook is one of the caller's registered URLs (/notifications/list; no
// secret).
type Webhook struct {
	ID        int64     `json:"id"`
	Username  string    `json:"username"`
	URL       string    `json:"url"`
	CreatedAt time.Time `json:"created_at"`
	// Disabled is set when the receiver answered 410 Gone; register the URL
	// again to enable it.
	Disabled       bool      `json:"disabled"`
	DisabledAt     time.Time `json:"disabled_at,omitzero"`
	DisabledReason string    `json:"disabled_reason,omitempty"`
	// Topics are the notifications opted in to beyond §6 (EventTopic).
	Topics []string `json:"topics,omitempty"`
}

// WebhookList answers /notifications/list.
type WebhookList struct {
	Webhooks []Webhook `json:"webhooks"`
}

// WebhookDelivery is one notification to one registered URL with every
// attempt (/notifications/deliveries).
type WebhookDelivery struct {
	ID             int64  `json:"id"`
	MessageID      string `json:"message_id"` // the webhook-id header, the same on every attempt
	RegistrationID int64  `json:"registration_id"`
	URL            string `json:"url"`
	// Status is pending, delivered, failed or cancelled.
	Status        WebhookStatus    `json:"status"`
	CreatedAt     time.Time        `json:"created_at"`
	NextAttemptAt time.Time        `json:"next_attempt_at,omitzero"` // pending only
	FinishedAt    time.Time        `json:"finished_at,omitzero"`
	LastError     string           `json:"last_error,omitempty"`
	Attempts      []WebhookAttempt `json:"attempts"`
	// Payload is the exact body that was signed and sent: a §6
	// WebhookPayload, or an EventNotification for registrations opted in
	// to EventTopic. Notification decodes the former.
	Payload json.RawMessage `json:"payload"`
}

// Notification decodes d's payload as a §6 notification.
func (d WebhookDelivery) Notification() (WebhookPayload, error) {
	var p WebhookPayload
	if err := json.Unmarshal(d.Payload, &p); err != nil {
		return WebhookPayload{}, fmt.Errorf("decode payload of webhook delivery %d: %w", d.ID, err)
	}
	return p, nil
}

// WebhookDeliveries answers /notifications/deliveries, newest first.
type WebhookDeliveries struct {
	Deliveries []WebhookDelivery `json:"deliveries"`
}
