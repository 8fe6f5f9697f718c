package main

import (
	"bytes"
	"io"
	"sync"
	"time"
)

// bufferedLog gathers a server's log lines in memory and writes them in
// batches (every interval, at maxBuffered bytes, and on Close), so that a
// request's access-log line costs a copy instead of a write to a terminal
// or pipe under a lock that every request contends for. Error lines
// (slog's level=ERROR) are written at once, with what preceded them.
type bufferedLog struct {
	mu      sync.Mutex // guards buf
	buf     []byte
	writeMu sync.Mutex // orders the writes to w
	w       io.Writer
	stop    chan struct{}
	done    chan struct{}
}

// maxBuffered is the most a bufferedLog holds before a writer waits for a write.
const maxBuffered = 256 << 10

func newBufferedLog(w io.Writer, interval time.Duration) *bufferedLog {
	b := &bufferedLog{w: w, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(b.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				b.Flush()
			case <-b.stop:
				b.Flush()
				return
			}
		}
	}()
	return b
}

func (b *bufferedLog) Write(p []byte) (int, error) {
	b.mu.Lock()
	b.buf = append(b.buf, p...)
	full := len(b.buf) >= maxBuffered
	b.mu.Unlock()
	if full || bytes.Contains(p, []byte("level=ERROR")) {
		return len(p), b.Flush()
	}
	return len(p), nil
}

// Flush writes what is buffered.
func (b *bufferedLog) Flush() error {
	b.writeMu.Lock()
	defer b.writeMu.Unlock()
	b.mu.Lock()
	out := b.buf
	b.buf = nil
	b.mu.Unlock()
	if len(out) == 0 {
		return nil
	}
	_, err := b.w.Write(out)
	return err
}

// Close stops the periodic writes and writes what is left.
func (b *bufferedLog) Close() error {
	close(b.stop)
	<-b.done
	return nil
}
