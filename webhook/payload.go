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
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// DateLayout is the layout of Update.Date: "YYYY-MM-DD HH:MM:SS GMT" (spec §6).
const DateLayout = "2006-01-02 15:04:05 GMT"

// Payload is the notification body of spec §6: one per field per ingestion,
// with one Update per index that the ingestion produced for that field.
type Payload struct {
	Group string   `json:"group"`
	Field string   `json:"field"`
	Data  []Update `json:"data"`
}

// Update is one index product of the ingestion.
type Update struct {
	Index string `json:"index"`
	Date  string `json:"date"` // acquisition time, DateLayout in UTC
	// Sensor names the image's sensor ("sentinel-2a", "landsat-8",
	// "sentinel-1a", …): an extra member beside the spec's (§6).
	Sensor  string  `json:"sensor,omitempty"`
	Content Content `json:"content"`
}

// Content holds the field statistics of one index image.
type Content struct {
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

// Validate reports whether p can be sent: field and every index named, dates
// in DateLayout and all statistics finite (JSON has no NaN).
func (p Payload) Validate() error {
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
		if _, err := ParseDate(u.Date); err != nil {
			return fmt.Errorf("webhook payload for field %q: update %d (%s): %w", p.Field, i, u.Index, err)
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
func (p Payload) Marshal() ([]byte, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encode webhook payload for field %q: %w", p.Field, err)
	}
	return b, nil
}
