package watch

import (
	"io"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the watcher's Prometheus metrics. Create them with
// NewMetrics on the registry the server exposes; a nil *Metrics records
// nothing.
type Metrics struct {
	Jobs     *prometheus.CounterVec // by kind and final state of an attempt
	Items    *prometheus.CounterVec // items ingested, by outcome
	Products prometheus.Counter     // products recorded (usable or not)
	Bytes    prometheus.Counter     // response bytes read from catalogues and assets
	Polls    *prometheus.CounterVec // polls by outcome
	// Searches counts catalogue searches by kind (poll, backfill) and
	// outcome (ok, error: the catalogue kept refusing or failing it).
	Searches *prometheus.CounterVec
	// BadItems counts items skipped as malformed, by where they were
	// caught (kind: search, a search page; ingest, a job queued earlier).
	BadItems *prometheus.CounterVec
	// Deliveries counts webhook delivery attempts by outcome; pass
	// ObserveDelivery as archive.WebhookOptions.Observe.
	Deliveries *prometheus.CounterVec
}

// NewMetrics registers the watcher's metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Jobs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cropkit_jobs_total",
			Help: "Job attempts by kind and state (completed, failed, cancelled, snoozed)."}, []string{"kind", "state"}),
		Items: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cropkit_items_ingested_total",
			Help: "Catalogue items ingested, by state (ingested, retrying, failed)."}, []string{"state"}),
		Products: prometheus.NewCounter(prometheus.CounterOpts{Name: "cropkit_products_ingested_total",
			Help: "Field products recorded from catalogue items (usable or not)."}),
		Bytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "cropkit_catalogue_bytes_read_total",
			Help: "Response body bytes read from STAC catalogues and their band files."}),
		Polls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cropkit_catalogue_polls_total",
			Help: "Catalogue polls by outcome (ok, error)."}, []string{"outcome"}),
		Searches: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cropkit_catalogue_searches_total",
			Help: "Catalogue searches by kind (poll, backfill) and outcome (ok, error)."}, []string{"kind", "outcome"}),
		BadItems: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cropkit_catalogue_bad_items_total",
			Help: "Catalogue items skipped as malformed (non-string id, non-finite bbox, no or far-future datetime), by where (search, ingest)."}, []string{"kind"}),
		Deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cropkit_webhook_deliveries_total",
			Help: "Webhook delivery attempts by outcome (delivered, rejected, error)."}, []string{"outcome"}),
	}
	reg.MustRegister(m.Jobs, m.Items, m.Products, m.Bytes, m.Polls, m.Searches, m.BadItems, m.Deliveries)
	return m
}

// ObserveDelivery counts one webhook delivery attempt.
func (m *Metrics) ObserveDelivery(outcome string) {
	if m != nil {
		m.Deliveries.WithLabelValues(outcome).Inc()
	}
}

func (m *Metrics) job(kind, state string) {
	if m != nil {
		m.Jobs.WithLabelValues(kind, state).Inc()
	}
}

func (m *Metrics) item(state string, products int) {
	if m != nil {
		m.Items.WithLabelValues(state).Inc()
		m.Products.Add(float64(products))
	}
}

func (m *Metrics) poll(err error) {
	if m == nil {
		return
	}
	if err != nil {
		m.Polls.WithLabelValues("error").Inc()
	} else {
		m.Polls.WithLabelValues("ok").Inc()
	}
}

func (m *Metrics) search(kind string, err error) {
	if m == nil {
		return
	}
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	m.Searches.WithLabelValues(kind, outcome).Inc()
}

func (m *Metrics) badItem(kind string) {
	if m != nil {
		m.BadItems.WithLabelValues(kind).Inc()
	}
}

// countingTransport counts the body bytes of every answer.
type countingTransport struct {
	base http.RoundTripper
	add  func(n int)
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err == nil && resp.Body != nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, add: t.add}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	add func(n int)
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.add(n)
	}
	return n, err
}
