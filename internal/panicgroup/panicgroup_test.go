package panicgroup

import (
	"errors"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGroupRunsAll(t *testing.T) {
	var g Group
	g.SetLimit(2)
	var n atomic.Int64
	for range 100 {
		g.Go(func() { n.Add(1) })
	}
	g.Wait()
	assert.Equal(t, int64(100), n.Load())
}

// A goroutine's panic reaches the waiting goroutine, where recover sees
// it (value, stack and, for a runtime error, the error), after every
// other goroutine has finished.
func TestGroupPanicReachesWaiter(t *testing.T) {
	var g Group
	var done atomic.Int64
	for i := range 10 {
		g.Go(func() {
			if i == 3 {
				var s []int
				_ = s[i] // index out of range
			}
			done.Add(1)
		})
	}
	got := func() (p any) {
		defer func() { p = recover() }()
		g.Wait()
		return nil
	}()
	require.IsType(t, &Panic{}, got)
	pe := got.(*Panic)
	var re runtime.Error
	assert.True(t, errors.As(pe, &re), "%v", pe.Value)
	assert.Contains(t, string(pe.Stack), "panicgroup")
	assert.Contains(t, pe.Error(), "index out of range")
	assert.Equal(t, int64(9), done.Load(), "the other goroutines ran to the end")
}
