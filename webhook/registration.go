package webhook

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/cropkit/cropkit/api"
)

// The records a registration store (webhook/sqlstore) keeps and lists: they
// live here so a program can hold and answer them without a database.

// ErrRegistrationNotFound is returned when the owner has no such registration.
var ErrRegistrationNotFound = errors.New("webhook registration not found")

// ErrRegistrationLimit is returned when the owner already has the maximum
// number of registrations.
var ErrRegistrationLimit = errors.New("webhook registration limit reached")

// Registration is one URL registered by an owner.
type Registration struct {
	ID    int64  `json:"id"`
	Owner string `json:"username"`
	URL   string `json:"url"`
	// Secret is the signing secret; only set by Register when it created
	// the registration (the secret is shown once).
	Secret         string    `json:"secret,omitempty"`
	Created        bool      `json:"-"`
	CreatedAt      time.Time `json:"created_at"`
	Disabled       bool      `json:"disabled"`
	DisabledAt     time.Time `json:"disabled_at,omitzero"`
	DisabledReason string    `json:"disabled_reason,omitempty"`
	// Topics are the notifications the registration opted in to beyond
	// the §6 product notifications every registration gets (e.g.
	// "field.event"); see sqlstore.Store.Subscribe.
	Topics []string `json:"topics,omitempty"`
}

// DeliveryState is one delivery as listed to its owner, with every attempt.
type DeliveryState struct {
	ID             int64     `json:"id"`
	MessageID      string    `json:"message_id"`
	RegistrationID int64     `json:"registration_id"`
	URL            string    `json:"url"`
	Status         Status    `json:"status"`
	CreatedAt      time.Time `json:"created_at"`
	NextAttemptAt  time.Time `json:"next_attempt_at,omitzero"` // pending only
	FinishedAt     time.Time `json:"finished_at,omitzero"`
	LastError      string    `json:"last_error,omitempty"`
	Payload        []byte    `json:"-"`
	Attempts       []Attempt `json:"attempts"`
}

// API is r as /notifications/list answers it (without the secret).
func (r Registration) API() api.Webhook {
	return api.Webhook{
		ID: r.ID, Username: r.Owner, URL: r.URL, CreatedAt: r.CreatedAt,
		Disabled: r.Disabled, DisabledAt: r.DisabledAt, DisabledReason: r.DisabledReason,
		Topics: r.Topics,
	}
}

// API is d as /notifications/deliveries answers it, with its payload.
func (d DeliveryState) API() api.WebhookDelivery {
	return api.WebhookDelivery{
		ID: d.ID, MessageID: d.MessageID, RegistrationID: d.RegistrationID, URL: d.URL,
		Status: d.Status, CreatedAt: d.CreatedAt, NextAttemptAt: d.NextAttemptAt,
		FinishedAt: d.FinishedAt, LastError: d.LastError, Attempts: d.Attempts,
		Payload: json.RawMessage(d.Payload),
	}
}
