package watch

import (
	"context"
	"io"
	"net/http"
	"sync"
)

// jobBound returns a client whose requests also end when job ends (its
// deadline or cancellation). Band files are read by readers that outlive
// the context that opened them (imagery keeps a scene's readers on a
// context without cancellation), so without it a slow band host would hold
// a job's worker past the job's timeout, while the queue runs the job again.
func jobBound(job context.Context, hc *http.Client) *http.Client {
	c := *hc
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c.Transport = jobTransport{job: job, base: base}
	return &c
}

// jobTransport cancels each request when its job's context ends.
type jobTransport struct {
	job  context.Context
	base http.RoundTripper
}

func (t jobTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := t.job.Err(); err != nil {
		return nil, context.Cause(t.job)
	}
	ctx, cancel := context.WithCancelCause(r.Context())
	stop := context.AfterFunc(t.job, func() { cancel(context.Cause(t.job)) })
	release := func() { stop(); cancel(nil) }
	resp, err := t.base.RoundTrip(r.WithContext(ctx))
	if err != nil {
		release()
		return nil, err
	}
	resp.Body = &releasingBody{ReadCloser: resp.Body, release: release}
	return resp, nil
}

// releasingBody releases its request's job watch when closed.
type releasingBody struct {
	io.ReadCloser
	once    sync.Once
	release func()
}

func (b *releasingBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.release)
	return err
}
