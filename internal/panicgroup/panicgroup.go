// Package panicgroup runs goroutines like errgroup.Group (bounded with
// SetLimit) and hands a panic in one of them to the goroutine that waits
// for them: library code that spreads a step over the cores keeps the
// behaviour of running it in the caller's goroutine, where a server's
// recoverer turns a panic into a 500 instead of the process ending.
package panicgroup

import (
	"fmt"
	"runtime/debug"
	"sync"

	"golang.org/x/sync/errgroup"
)

// Group is a set of goroutines; the zero value is ready to use.
type Group struct {
	g     errgroup.Group
	once  sync.Once
	first *Panic
}

// Panic is what Wait panics with: the first goroutine's panic value and
// its stack.
type Panic struct {
	Value any
	Stack []byte
}

func (p *Panic) Error() string {
	return fmt.Sprintf("panic in a worker goroutine: %v\n\n%s", p.Value, p.Stack)
}

// Unwrap returns the panic value when it is an error (a runtime.Error).
func (p *Panic) Unwrap() error {
	err, _ := p.Value.(error)
	return err
}

// SetLimit bounds the goroutines running at once (see errgroup.Group.SetLimit).
func (g *Group) SetLimit(n int) { g.g.SetLimit(n) }

// Go runs f in a new goroutine, waiting for a slot under the limit.
func (g *Group) Go(f func()) {
	g.g.Go(func() error {
		defer func() {
			if v := recover(); v != nil {
				p := &Panic{Value: v, Stack: debug.Stack()}
				g.once.Do(func() { g.first = p })
			}
		}()
		f()
		return nil
	})
}

// Wait waits for every goroutine, then panics with a *Panic when one of
// them panicked (the first to).
func (g *Group) Wait() {
	g.g.Wait()
	if g.first != nil {
		panic(g.first)
	}
}
