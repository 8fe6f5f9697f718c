// Package weathertest serves daily weather in Open-Meteo's API shape on
// loopback, for tests of clients of Open-Meteo-compatible APIs.
package weathertest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cropkit/cropkit/weather"
)

// Server is a loopback Open-Meteo-compatible API over fixed days: GET
// /v1/archive and /v1/forecast with latitude, longitude, start_date,
// end_date, daily (comma-separated names) and optional timezone and unit
// parameters. Like the real API it answers 400 with {"error": true,
// "reason": "…"} for a missing or malformed parameter, an unknown daily
// variable, end_date before start_date and dates outside its data. Every
// location gets the same days.
type Server struct {
	*httptest.Server
	days  map[string]weather.Day
	first string
	last  string

	// Refuse lists daily variables answered as unknown (an older or
	// smaller API); set it before the first request.
	Refuse []string

	requests atomic.Int64
	mu       sync.Mutex
	failures []int // statuses answered to the next requests, in order
	queries  []string
	held     chan struct{} // while non-nil, requests wait for it to close (Hold)
}

// Hold makes requests wait without an answer (a hanging upstream) until
// Release or until their client gives up.
func (s *Server) Hold() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held == nil {
		s.held = make(chan struct{})
	}
}

// Release lets the held requests, and later ones, be answered.
func (s *Server) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held != nil {
		close(s.held)
		s.held = nil
	}
}

// New starts a Server over days; Close it when done.
func New(days []weather.Day) *Server {
	s := &Server{days: map[string]weather.Day{}}
	for _, d := range days {
		s.days[d.Date] = d
		if s.first == "" || d.Date < s.first {
			s.first = d.Date
		}
		if d.Date > s.last {
			s.last = d.Date
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/archive", s.serve)
	mux.HandleFunc("GET /v1/forecast", s.serve)
	s.Server = httptest.NewServer(mux)
	return s
}

// Requests counts the requests served (failed ones included).
func (s *Server) Requests() int { return int(s.requests.Load()) }

// Queries are the raw query strings served, in order.
func (s *Server) Queries() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.queries...)
}

// FailNext makes the next n requests answer status (429, 500, 503…) with
// the API's error shape.
func (s *Server) FailNext(status, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.failures = append(s.failures, status)
	}
}

// variables the server knows, with the unit it reports and how a Day holds it.
var variables = map[string]struct {
	unit  string
	value func(weather.Day) *float64
}{
	"temperature_2m_max":         {"°C", func(d weather.Day) *float64 { return &d.TmaxC }},
	"temperature_2m_min":         {"°C", func(d weather.Day) *float64 { return &d.TminC }},
	"temperature_2m_mean":        {"°C", func(d weather.Day) *float64 { return &d.TmeanC }},
	"precipitation_sum":          {"mm", func(d weather.Day) *float64 { return &d.PrecipitationMM }},
	"shortwave_radiation_sum":    {"MJ/m²", func(d weather.Day) *float64 { return d.RadiationMJ }},
	"et0_fao_evapotranspiration": {"mm", func(d weather.Day) *float64 { return d.ET0MM }},
	"wind_speed_10m_max":         {"m/s", func(d weather.Day) *float64 { return d.WindMaxMS }},
	"wind_speed_10m_mean":        {"m/s", func(d weather.Day) *float64 { return d.WindSpeedMS }},
}

func fail(w http.ResponseWriter, status int, reason string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": true, "reason": reason})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	s.mu.Lock()
	s.queries = append(s.queries, r.URL.RawQuery)
	var status int
	if len(s.failures) > 0 {
		status, s.failures = s.failures[0], s.failures[1:]
	}
	held := s.held
	s.mu.Unlock()
	if held != nil {
		select {
		case <-held:
		case <-r.Context().Done():
			return
		}
	}
	if status != 0 {
		if status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "0")
		}
		fail(w, status, fmt.Sprintf("Simulated failure %d", status))
		return
	}
	q := r.URL.Query()
	var coords [2]float64
	for i, name := range []string{"latitude", "longitude"} {
		v := q.Get(name)
		if v == "" {
			fail(w, http.StatusBadRequest, fmt.Sprintf("Parameter '%s' is missing", name))
			return
		}
		x, err := strconv.ParseFloat(v, 64)
		lim := 90.0 * float64(i+1)
		if err != nil || x < -lim || x > lim {
			fail(w, http.StatusBadRequest, fmt.Sprintf("Parameter '%s' must be a number in [-%v, %v]", name, lim, lim))
			return
		}
		coords[i] = x
	}
	var dates [2]string
	for i, name := range []string{"start_date", "end_date"} {
		v := q.Get(name)
		if v == "" {
			fail(w, http.StatusBadRequest, fmt.Sprintf("Parameter '%s' is missing", name))
			return
		}
		if _, err := time.Parse(time.DateOnly, v); err != nil {
			fail(w, http.StatusBadRequest, fmt.Sprintf("Invalid date format. Make sure to use 'YYYY-MM-DD' for '%s'", name))
			return
		}
		if v < s.first || v > s.last {
			fail(w, http.StatusBadRequest, fmt.Sprintf("Parameter '%s' is out of allowed range from %s to %s", name, s.first, s.last))
			return
		}
		dates[i] = v
	}
	if dates[1] < dates[0] {
		fail(w, http.StatusBadRequest, "End-date must be larger or equals than start-date")
		return
	}
	if tz := q.Get("timezone"); tz != "" && tz != "auto" {
		if _, err := time.LoadLocation(tz); err != nil {
			fail(w, http.StatusBadRequest, "Invalid timezone")
			return
		}
	}
	names := strings.Split(q.Get("daily"), ",")
	if q.Get("daily") == "" {
		fail(w, http.StatusBadRequest, "Parameter 'daily' is missing")
		return
	}
	for _, n := range names {
		if _, ok := variables[n]; !ok || slices.Contains(s.Refuse, n) {
			fail(w, http.StatusBadRequest, fmt.Sprintf("Cannot initialize WeatherVariable from invalid String value %s", n))
			return
		}
	}
	from, _ := time.Parse(time.DateOnly, dates[0])
	to, _ := time.Parse(time.DateOnly, dates[1])
	var times []string
	for d := from; !d.After(to); d = d.AddDate(0, 0, 1) {
		times = append(times, d.Format(time.DateOnly))
	}
	daily := map[string]any{"time": times}
	units := map[string]string{"time": "iso8601"}
	for _, n := range names {
		vals := make([]*float64, len(times))
		for i, t := range times {
			if d, ok := s.days[t]; ok {
				vals[i] = variables[n].value(d)
			}
		}
		daily[n] = vals
		units[n] = variables[n].unit
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"latitude": coords[0], "longitude": coords[1], "generationtime_ms": 0.1, "utc_offset_seconds": 0,
		"timezone": "GMT", "timezone_abbreviation": "GMT", "elevation": 30.0,
		"daily_units": units, "daily": daily,
	})
}
