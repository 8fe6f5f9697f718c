package server

import (
	"bytes"
	"encoding/csv"
	"net/http"
	"strconv"

	"github.com/cropkit/cropkit/archive"
)

// timeseriesRoutes are the daily series, phenology and events of a field.
func (s *Server) timeseriesRoutes() []route {
	return []route{
		{methods: readable, paths: []string{"/fields/timeseries"}, access: user, handle: s.handleTimeSeries},
		{methods: readable, paths: []string{"/fields/phenology"}, access: user, handle: s.handlePhenology},
		{methods: readable, paths: []string{"/fields/events"}, access: user, handle: s.handleEvents},
	}
}

// seriesRange reads start_date/end_date, with from/to as synonyms that
// must agree when both spellings are given.
func seriesRange(p params) (from, to string, err error) {
	if from, to, err = dateRange(p); err != nil {
		return "", "", err
	}
	for _, syn := range []struct {
		name, other string
		dst         *string
	}{{"from", "start_date", &from}, {"to", "end_date", &to}} {
		v, ok, err := p.date(syn.name)
		if err != nil {
			return "", "", err
		}
		if !ok {
			continue
		}
		if *syn.dst != "" && *syn.dst != v {
			return "", "", badRequest("parameters %s (%s) and %s (%s) disagree: give one", syn.name, v, syn.other, *syn.dst)
		}
		*syn.dst = v
	}
	if from != "" && to != "" && to < from {
		return "", "", badRequest("end date %s is before start date %s", to, from)
	}
	return from, to, nil
}

// handleTimeSeries answers a field's daily series of one index (JSON, or
// CSV with format=csv: date, observed, sensor, estimate, lower, upper).
func (s *Server) handleTimeSeries(w http.ResponseWriter, r *http.Request, c *call) error {
	name, err := c.params.required("field_name")
	if err != nil {
		return err
	}
	index, err := c.params.required("index")
	if err != nil {
		return err
	}
	from, to, err := seriesRange(c.params)
	if err != nil {
		return err
	}
	format, err := c.params.format()
	if err != nil {
		return err
	}
	ts, err := s.core.TimeSeries(r.Context(), c.user, archive.TimeSeriesQuery{Field: name, Index: index, From: from, To: to})
	if err != nil {
		return err
	}
	if format != "csv" {
		return writeJSON(w, http.StatusOK, ts)
	}
	var buf bytes.Buffer
	cw := csv.NewWriter(&buf)
	cw.Write([]string{"date", "observed", "sensor", "estimate", "lower", "upper"})
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for _, d := range ts.Series {
		obs, sensor := "", ""
		if d.Observed != nil {
			obs, sensor = num(*d.Observed), csvText(*d.Sensor)
		}
		cw.Write([]string{d.Date, obs, sensor, num(d.Estimate), num(d.Lower), num(d.Upper)})
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	return writeFile(w, buf.Bytes(), archive.SafeFileName(ts.FieldName)+"_"+ts.Index+"_timeseries.csv", "")
}

// handlePhenology answers a field's phenology per season for one index.
func (s *Server) handlePhenology(w http.ResponseWriter, r *http.Request, c *call) error {
	name, err := c.params.required("field_name")
	if err != nil {
		return err
	}
	index, err := c.params.required("index")
	if err != nil {
		return err
	}
	ph, err := s.core.Phenology(r.Context(), c.user, name, index)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, ph)
}

// handleEvents answers a field's events (all its indices, or index/indices).
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request, c *call) error {
	name, err := c.params.required("field_name")
	if err != nil {
		return err
	}
	indices, err := agreeingLists(c.params, "index", "indices")
	if err != nil {
		return err
	}
	from, to, err := seriesRange(c.params)
	if err != nil {
		return err
	}
	ev, err := s.core.Events(r.Context(), c.user, name, indices, from, to)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, ev)
}
