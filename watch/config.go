// Package watch monitors a STAC catalogue for new imagery of the registered
// fields: a field registered (or re-outlined) gets the items since the
// backfill start ingested for it, and every poll ingests the items that
// appeared since the last one for all the fields they cover. Catalogue
// polls, per-field backfills and per-item ingestions are durable jobs on a
// river queue (github.com/riverqueue/river) in the archive's own database:
// they survive restarts, are retried with backoff, and an item is ingested
// once per (item, field set). The archive notifies only products whose
// content changed, so a re-ingested item notifies nobody.
package watch

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Defaults of the Config fields left zero.
const (
	DefaultCollection = "sentinel-2-l2a"
	DefaultPoll       = time.Hour
	DefaultBackfill   = 90 * 24 * time.Hour
	DefaultMaxCloud   = 80.0
	// DefaultMargin is how far before the newest ingested acquisition a poll
	// searches: catalogues publish items hours or days after acquisition.
	DefaultMargin     = 10 * 24 * time.Hour
	DefaultFieldCheck = 2 * time.Second
	DefaultWorkers    = 2
	// DefaultJobTimeout bounds one job; with RescueMargin and river's
	// rescuer interval (30 s) a dead worker's job runs again within a minute.
	DefaultJobTimeout = 20 * time.Second
	// DefaultStopGrace is how long a stopping watcher lets running jobs
	// finish before cancelling them (SIGTERM stays prompt).
	DefaultStopGrace = 3 * time.Second
	// RescueMargin is how long after its timeout a job still "running" is
	// taken for one whose worker died.
	RescueMargin       = 5 * time.Second
	DefaultMaxAttempts = 8
	DefaultRetryBase   = 30 * time.Second
	DefaultRetryMax    = 6 * time.Hour
)

// ErrConfig marks an invalid configuration.
var ErrConfig = errors.New("watch: invalid configuration")

// Backfill is how far back a newly registered field's history is ingested:
// a moving window (Since) or a fixed date (From), From winning when set.
type Backfill struct {
	Since time.Duration
	From  time.Time
}

// Start is the backfill start at now.
func (b Backfill) Start(now time.Time) time.Time {
	if !b.From.IsZero() {
		return b.From
	}
	since := b.Since
	if since <= 0 {
		since = DefaultBackfill
	}
	return now.Add(-since)
}

// String is the flag form of b.
func (b Backfill) String() string {
	if !b.From.IsZero() {
		return b.From.Format(time.DateOnly)
	}
	if b.Since%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(b.Since/(24*time.Hour)), 10) + "d"
	}
	return b.Since.String()
}

// ParseBackfill reads "90d" (days), a Go duration ("36h") or a date
// "YYYY-MM-DD" (UTC).
func ParseBackfill(s string) (Backfill, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return Backfill{From: t}, nil
	}
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n <= 0 {
			return Backfill{}, fmt.Errorf("%w: backfill %q: want a number of days such as 90d, a duration or YYYY-MM-DD", ErrConfig, s)
		}
		return Backfill{Since: time.Duration(n) * 24 * time.Hour}, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return Backfill{}, fmt.Errorf("%w: backfill %q: want a number of days such as 90d, a duration or YYYY-MM-DD", ErrConfig, s)
	}
	return Backfill{Since: d}, nil
}

// Set implements flag.Value.
func (b *Backfill) Set(s string) error {
	v, err := ParseBackfill(s)
	if err != nil {
		return err
	}
	*b = v
	return nil
}
