package archive

import (
	"context"
	"net/http"
	"time"
)

// Item states recorded for catalogue items (SceneItem.State).
const (
	// ItemIngested: every field the item covers was ingested.
	ItemIngested = "ingested"
	// ItemRetrying: an attempt failed and the job will be retried.
	ItemRetrying = "retrying"
	// ItemFailed: the last attempt failed; the item is tried again only when
	// the catalogue updates it.
	ItemFailed = "failed"
)

// SceneItem is a catalogue item the watcher ingested (or tried to).
type SceneItem struct {
	Collection string
	ID         string
	Datetime   time.Time // acquisition
	// Updated is the catalogue's "updated" of the version ingested ("" when
	// the catalogue gives none): a different value makes it ingested again.
	Updated string
	Source  string // the item's URL
	// Fields maps each field ingested from this item to the outline version
	// read, so a field whose outline changed is ingested again.
	Fields map[int64]int64
	// Usable counts the usable products whose scene is this item (computed).
	Usable     int
	State      string
	Error      string
	IngestedAt time.Time
}

// ItemQuery selects recorded items, newest acquisition first.
type ItemQuery struct {
	Collection string // "" = every collection
	Limit      int    // 0 = no limit
}

// RecordItem stores the outcome of one item's ingestion.
func (a *Archive) RecordItem(ctx context.Context, it SceneItem) error {
	if it.IngestedAt.IsZero() {
		it.IngestedAt = time.Now().UTC()
	}
	return a.store.RecordItem(ctx, it)
}

// SceneItems lists the recorded items matching q.
func (a *Archive) SceneItems(ctx context.Context, q ItemQuery) ([]SceneItem, error) {
	return a.store.SceneItems(ctx, q)
}

// observedTransport reports the outcome of each webhook delivery attempt
// (metrics); the SSRF guard stays in the base transport.
type observedTransport struct {
	base    http.RoundTripper
	observe func(outcome string)
}

func (t observedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	switch {
	case err != nil:
		t.observe("error")
	case resp.StatusCode >= 200 && resp.StatusCode <= 299:
		t.observe("delivered")
	default:
		t.observe("rejected")
	}
	return resp, err
}
