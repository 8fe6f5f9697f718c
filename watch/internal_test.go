package watch

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A job rescued once runs again at once (its worker died); a job rescued
// again backs off like a failure, so a stuck job cannot loop.
func TestRetryPolicyRescued(t *testing.T) {
	p := retryPolicy{base: time.Minute, max: time.Hour, rescueAfter: 25 * time.Second}
	longAgo := time.Now().Add(-time.Minute)
	recent := time.Now()
	tests := []struct {
		name     string
		attempt  int
		at       *time.Time
		atOnce   bool
		minDelay time.Duration
	}{
		{"first rescue", 1, &longAgo, true, 0},
		{"rescued again", 3, &longAgo, false, 2 * time.Minute},
		{"plain failure", 1, &recent, false, 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := p.NextRetry(&rivertype.JobRow{Attempt: tt.attempt, AttemptedAt: tt.at})
			if tt.atOnce {
				assert.WithinDuration(t, time.Now(), next, time.Second)
				return
			}
			assert.GreaterOrEqual(t, time.Until(next), tt.minDelay-time.Second)
		})
	}
}

// An ingestion already running in this process is snoozed, not run twice.
func TestIngestionNotRunTwiceAtOnce(t *testing.T) {
	w := &Watcher{running: map[string]bool{}, cfg: Config{JobTimeout: 7 * time.Second}, log: discard()}
	args := IngestArgs{Collection: "c", ItemID: "item", Updated: "u"}
	key := args.Collection + "\x00" + args.ItemID + "\x00" + args.Updated
	require.True(t, w.begin(key))
	err := (&ingestWorker{w: w}).Work(context.Background(), &river.Job[IngestArgs]{JobRow: &rivertype.JobRow{Attempt: 2, MaxAttempts: 3}, Args: args})
	var snooze *river.JobSnoozeError
	require.ErrorAs(t, err, &snooze)
	assert.Equal(t, 7*time.Second, snooze.Duration)
	w.end(key)
	assert.True(t, w.begin(key))
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }
