package archive

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A caller of freshness.current gets generations read after it called:
// every value a writer committed before the call is seen; concurrent
// callers share reads.
func TestFreshnessSeesEveryEarlierChange(t *testing.T) {
	var committed, reads atomic.Int64
	f := freshness{gap: 200 * time.Microsecond, read: func() (Generations, error) {
		reads.Add(1)
		g := Generations{Data: committed.Load()}
		time.Sleep(100 * time.Microsecond) // a query's time
		return g, nil
	}}
	stop := make(chan struct{})
	var writer sync.WaitGroup
	writer.Add(1)
	go func() {
		defer writer.Done()
		for {
			select {
			case <-stop:
				return
			default:
				committed.Add(1)
				time.Sleep(50 * time.Microsecond)
			}
		}
	}()
	const callers, calls = 50, 40
	var stale atomic.Int64
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range calls {
				before := committed.Load()
				g, err := f.current(context.Background())
				if err != nil || g.Data < before {
					stale.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	writer.Wait()
	assert.Zero(t, stale.Load(), "a call saw generations older than a change committed before it")
	assert.Less(t, reads.Load(), int64(callers*calls/4), "concurrent callers share reads")
}
