package server

import (
	"cmp"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/cropkit/cropkit/api"
	"github.com/cropkit/cropkit/archive"
)

// maxItemsListed bounds /scenes/list.
const maxItemsListed = 1000

// monitoring is the server's Prometheus instrumentation (nil without
// Config.Metrics).
type monitoring struct {
	latency *prometheus.HistogramVec
	metrics http.Handler
	// observers caches latency's series by label values (seriesKey): a
	// map lookup instead of hashing the label strings per request.
	observers sync.Map
}

type seriesKey struct {
	route, method string
	code          int
}

func (m *monitoring) observer(route, method string, code int) prometheus.Observer {
	k := seriesKey{route, method, code}
	if o, ok := m.observers.Load(k); ok {
		return o.(prometheus.Observer)
	}
	o := m.latency.WithLabelValues(route, method, strconv.Itoa(code))
	m.observers.Store(k, o)
	return o
}

func newMonitoring(reg *prometheus.Registry) *monitoring {
	if reg == nil {
		return nil
	}
	m := &monitoring{
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "cropkit_http_request_duration_seconds",
			Help:    "HTTP request latency by route pattern, method and status code.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}},
			[]string{"route", "method", "code"}),
		metrics: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}),
	}
	reg.MustRegister(m.latency)
	return m
}

// monitoringRoutes are the admin's view of the monitoring watcher.
func (s *Server) monitoringRoutes() []route {
	return []route{
		{methods: readable, paths: []string{"/scenes/list"}, access: admin, handle: s.handleScenesList},
	}
}

func (s *Server) handleScenesList(w http.ResponseWriter, r *http.Request, c *call) error {
	q := archive.ItemQuery{Limit: 100}
	if v, ok, err := c.params.float("limit"); err != nil {
		return err
	} else if ok {
		if v != float64(int(v)) || v < 1 || v > maxItemsListed {
			return badRequest("parameter limit must be an integer in 1..%d, got %v", maxItemsListed, v)
		}
		q.Limit = int(v)
	}
	col, _, err := c.params.str("collection")
	if err != nil {
		return err
	}
	q.Collection = col
	items, err := s.core.SceneItems(r.Context(), q)
	if err != nil {
		return err
	}
	fields, err := s.core.Store().Fields(r.Context(), 0)
	if err != nil {
		return err
	}
	names := make(map[int64]api.SceneItemField, len(fields))
	for _, f := range fields {
		names[f.ID] = api.SceneItemField{Owner: f.Owner, Field: f.Name}
	}
	out := api.SceneItemList{Items: make([]api.SceneItem, 0, len(items))}
	for _, it := range items {
		si := api.SceneItem{ID: it.ID, Collection: it.Collection, Datetime: it.Datetime, Updated: it.Updated, Source: it.Source,
			Fields: []api.SceneItemField{}, Usable: it.Usable, State: it.State, Error: it.Error, IngestedAt: it.IngestedAt}
		for id := range it.Fields {
			if n, ok := names[id]; ok {
				si.Fields = append(si.Fields, n)
			}
		}
		slices.SortFunc(si.Fields, func(a, b api.SceneItemField) int {
			return cmp.Or(cmp.Compare(a.Owner, b.Owner), cmp.Compare(a.Field, b.Field))
		})
		out.Items = append(out.Items, si)
	}
	return writeJSON(w, http.StatusOK, out)
}

// instrument serves GET /metrics (an administrator's token, as for every
// admin operation; outside the API document, since its answer is
// Prometheus text) and records each request's latency under its route
// pattern, so that paths with values do not make one series each.
func (s *Server) instrument(next http.Handler) http.Handler {
	if s.mon == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := track(w)
		route := "/metrics"
		if r.URL.Path == "/metrics" {
			s.serveMetrics(sw, r)
		} else {
			next.ServeHTTP(sw, r)
			// The mux set the pattern it routed by (dispatch passes r on):
			// no second routing of the request here.
			route = r.Pattern
			if route == "" || route == unroutedPattern {
				route = "unmatched"
			}
		}
		code := sw.status
		if code == 0 {
			code = http.StatusOK
		}
		s.mon.observer(route, r.Method, code).Observe(time.Since(sw.start).Seconds())
	})
}

func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		writeError(w, &Error{Status: http.StatusMethodNotAllowed, Code: api.CodeMethodNotAllowed, Message: "method " + r.Method + " not allowed on /metrics (allowed: GET)"})
		return
	}
	tok, err := requestToken(r)
	if err == nil && tok == "" {
		err = forbidden("missing token: /metrics needs an administrator's token (Authorization: Bearer)")
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	u, _, err := s.core.Authenticate(r.Context(), tok)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !u.Admin {
		s.fail(w, r, forbidden("operation reserved to administrators"))
		return
	}
	s.mon.metrics.ServeHTTP(w, r)
}
