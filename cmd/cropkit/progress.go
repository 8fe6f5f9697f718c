package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress reports a long run's advance on stderr: a progress bar on a
// terminal, else a plain line every few seconds (logs, CI), and nothing for
// runs that end quickly.
type progress struct {
	mu      sync.Mutex
	w       io.Writer
	what    string
	total   int
	done    int
	bar     *progressbar.ProgressBar
	last    time.Time
	started time.Time
	every   time.Duration
}

func newProgress(w io.Writer, what string, total int) *progress {
	p := &progress{w: w, what: what, total: total, started: time.Now(), last: time.Now(), every: 5 * time.Second}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(what),
			progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true), progressbar.OptionClearOnFinish(),
			progressbar.OptionThrottle(100*time.Millisecond))
	}
	return p
}

// Add counts n more units done.
func (p *progress) Add(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	if p.bar != nil {
		p.bar.Add(n)
		return
	}
	if now := time.Now(); now.Sub(p.last) >= p.every && p.done < p.total {
		p.last = now
		fmt.Fprintf(p.w, "%s: %d/%d (%s)\n", p.what, p.done, p.total, now.Sub(p.started).Round(time.Second))
	}
}

// Set sets the count done (for callbacks that report totals).
func (p *progress) Set(done int) {
	p.mu.Lock()
	d := done - p.done
	p.mu.Unlock()
	if d > 0 {
		p.Add(d)
	}
}

// Finish clears the bar.
func (p *progress) Finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		p.bar.Finish()
	}
}
