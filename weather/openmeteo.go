package weather

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cropkit/cropkit/internal/httpretry"
	"github.com/cropkit/cropkit/internal/netguard"
)

// The public Open-Meteo endpoints, used when OpenMeteo.BaseURL is empty.
const (
	PublicArchiveURL  = "https://archive-api.open-meteo.com/v1/archive"
	PublicForecastURL = "https://api.open-meteo.com/v1/forecast"
)

// Defaults of the OpenMeteo fields left zero.
const (
	DefaultTimeout      = 30 * time.Second
	DefaultMaxRetries   = 4
	DefaultBaseBackoff  = 500 * time.Millisecond
	DefaultMaxBackoff   = 30 * time.Second
	DefaultMaxBytes     = 8 << 20
	DefaultArchiveDelay = 7
)

// OpenMeteoAttribution is the credit Open-Meteo's licence (CC BY 4.0) asks for.
const OpenMeteoAttribution = "Weather data by Open-Meteo.com (CC BY 4.0)"

// dailyVariables are asked of the API, in Open-Meteo's names, with the
// variable each fills.
var dailyVariables = []struct {
	name string
	v    variable
}{
	{"temperature_2m_max", varTmax},
	{"temperature_2m_min", varTmin},
	{"temperature_2m_mean", varTmean},
	{"precipitation_sum", varPrecip},
	{"shortwave_radiation_sum", varRadiation},
	{"et0_fao_evapotranspiration", varET0},
	{"wind_speed_10m_max", varWindMax},
}

// OpenMeteo is a Source reading an Open-Meteo-compatible API: days older
// than ArchiveDelay days before today from /v1/archive (reanalysis), later
// ones from /v1/forecast, each range in one request. It is safe for
// concurrent use; its fields must not change while in use.
type OpenMeteo struct {
	// BaseURL, when set, serves both endpoints: BaseURL+"/v1/archive" and
	// BaseURL+"/v1/forecast" (a self-hosted Open-Meteo, a test fixture).
	// Empty means the public endpoints PublicArchiveURL and PublicForecastURL.
	// A BaseURL ending in /v1/archive or /v1/forecast is that one endpoint,
	// asked for every date in one request. A query in BaseURL (apikey=… of
	// a commercial instance) is sent with every request.
	BaseURL string
	// HTTPClient makes the requests; nil means the guard's client
	// (netguard: no proxy, no redirects, special addresses refused at
	// connect time unless allowed).
	HTTPClient *http.Client
	// Guard checks URLs and connections; nil means netguard.New("weather"),
	// which refuses loopback, private, link-local and metadata addresses.
	Guard *netguard.Guard
	// AllowPrivate lets BaseURL's origin (only) be a loopback or private
	// address: a self-hosted instance the operator named.
	AllowPrivate bool
	// Timeout bounds one attempt (connect, answer, body); 0 means DefaultTimeout.
	Timeout time.Duration
	// MaxRetries after a transport error, 408, 429 or 5xx; 0 means
	// DefaultMaxRetries, negative none.
	MaxRetries int
	// BaseBackoff doubles each retry with full jitter up to MaxBackoff;
	// zero means the defaults. A Retry-After header sets the delay (capped).
	BaseBackoff, MaxBackoff time.Duration
	// MaxBytes bounds an answer's body; 0 means DefaultMaxBytes.
	MaxBytes int64
	// ArchiveDelay is how many days before today the archive endpoint is
	// assumed complete; 0 means DefaultArchiveDelay.
	ArchiveDelay int
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// UserAgent is sent when not empty.
	UserAgent string

	hcOnce sync.Once
	hc     *http.Client
}

// UpstreamError is an answer of the API that was not data: its status and
// Open-Meteo's "reason" (or the body's start). After the retries a 408,
// 429 or 5xx matches ErrUnavailable; another 4xx (the API refused the
// query: dates outside its range, a bad parameter) matches ErrInvalid.
type UpstreamError struct {
	URL      string
	Status   int
	Reason   string
	Attempts int
}

func (e *UpstreamError) Error() string {
	s := fmt.Sprintf("weather: %s: HTTP %d", e.URL, e.Status)
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	if e.Attempts > 1 {
		s += fmt.Sprintf(" (after %d attempts)", e.Attempts)
	}
	return s
}

// Unwrap makes errors.Is match ErrUnavailable or ErrInvalid (see UpstreamError).
func (e *UpstreamError) Unwrap() error {
	if retryableStatus(e.Status) {
		return ErrUnavailable
	}
	return ErrInvalid
}

func retryableStatus(s int) bool {
	return s == http.StatusRequestTimeout || s == http.StatusTooManyRequests || s >= 500
}

func (o *OpenMeteo) client() *http.Client {
	if o.HTTPClient != nil {
		return o.HTTPClient
	}
	o.hcOnce.Do(func() { o.hc = o.guard().Client(o.timeout()) })
	return o.hc
}

// guard is Guard (or the strict weather guard), with BaseURL's origin
// allowed when AllowPrivate.
func (o *OpenMeteo) guard() *netguard.Guard {
	g := o.Guard
	if g == nil {
		g = netguard.New("weather")
	}
	if o.AllowPrivate && o.BaseURL != "" {
		if ag, err := g.Allow(o.BaseURL); err == nil {
			g = ag
		}
	}
	return g
}

func (o *OpenMeteo) timeout() time.Duration { return cmpOr(o.Timeout, DefaultTimeout) }

func cmpOr[T int | int64 | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

func (o *OpenMeteo) endpoints() (archive, forecast string) {
	if o.BaseURL == "" {
		return PublicArchiveURL, PublicForecastURL
	}
	// A query (a commercial instance's apikey=…) goes with every request.
	b, query, _ := strings.Cut(o.BaseURL, "?")
	b = strings.TrimRight(b, "/")
	if query != "" {
		query = "?" + query
	}
	if strings.HasSuffix(b, "/v1/archive") || strings.HasSuffix(b, "/v1/forecast") {
		return b + query, b + query // one endpoint serves every date
	}
	return b + "/v1/archive" + query, b + "/v1/forecast" + query
}

// Validate checks BaseURL with the SSRF guard's URL rules.
func (o *OpenMeteo) Validate() error {
	a, f := o.endpoints()
	g := o.guard()
	for _, u := range []string{a, f} {
		if err := g.CheckURL(u); err != nil {
			return fmt.Errorf("weather source: %w", err)
		}
	}
	return nil
}

// Daily asks the archive endpoint for the dates before today−ArchiveDelay
// and the forecast endpoint for the others (one request each, only those
// needed). A date the API answers with nulls (not yet in the archive) is a
// *RangeError.
func (o *OpenMeteo) Daily(ctx context.Context, q Query) ([]Day, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	today := now().UTC().Truncate(24 * time.Hour)
	split := today.AddDate(0, 0, -cmpOr(o.ArchiveDelay, DefaultArchiveDelay)) // first date of the forecast endpoint
	archiveURL, forecastURL := o.endpoints()
	var days []Day
	if archiveURL == forecastURL {
		split = q.To.AddDate(0, 0, 1)
	}
	if q.From.Before(split) {
		to := q.To
		if !to.Before(split) {
			to = split.AddDate(0, 0, -1)
		}
		d, err := o.fetch(ctx, archiveURL, q.Lat, q.Lon, q.From, to)
		if err != nil {
			return nil, err
		}
		days = append(days, d...)
	}
	if !q.To.Before(split) {
		from := q.From
		if from.Before(split) {
			from = split
		}
		d, err := o.fetch(ctx, forecastURL, q.Lat, q.Lon, from, q.To)
		if err != nil {
			return nil, err
		}
		days = append(days, d...)
	}
	if err := Complete(days, q.From, q.To); err != nil {
		return nil, err
	}
	return days, nil
}

// requiredVariables are the daily variables thermal time needs.
var requiredVariables = []string{"temperature_2m_max", "temperature_2m_min", "precipitation_sum"}

// QueryURL is the request of one range at endpoint: the daily variables in
// °C, mm, m/s, dates in UTC.
func QueryURL(endpoint string, lat, lon float64, from, to time.Time) string {
	names := make([]string, len(dailyVariables))
	for i, v := range dailyVariables {
		names[i] = v.name
	}
	return queryURL(endpoint, lat, lon, from, to, names)
}

func queryURL(endpoint string, lat, lon float64, from, to time.Time, names []string) string {
	endpoint, query, _ := strings.Cut(endpoint, "?")
	v, _ := url.ParseQuery(query) // the endpoint's own parameters (apikey); ours replace any of the same name
	if v == nil {
		v = url.Values{}
	}
	v.Set("latitude", strconv.FormatFloat(lat, 'f', -1, 64))
	v.Set("longitude", strconv.FormatFloat(lon, 'f', -1, 64))
	v.Set("start_date", from.Format(time.DateOnly))
	v.Set("end_date", to.Format(time.DateOnly))
	v.Set("daily", strings.Join(names, ","))
	v.Set("timezone", "UTC")
	v.Set("temperature_unit", "celsius")
	v.Set("precipitation_unit", "mm")
	v.Set("wind_speed_unit", "ms")
	return endpoint + "?" + v.Encode()
}

// Response is Open-Meteo's JSON answer (the parts read), and its error
// shape ({"error": true, "reason": "…"}).
type Response struct {
	Latitude   float64                    `json:"latitude"`
	Longitude  float64                    `json:"longitude"`
	Timezone   string                     `json:"timezone,omitempty"`
	DailyUnits map[string]string          `json:"daily_units,omitempty"`
	Daily      map[string]json.RawMessage `json:"daily,omitempty"`
	Error      bool                       `json:"error,omitempty"`
	Reason     string                     `json:"reason,omitempty"`
}

func (o *OpenMeteo) fetch(ctx context.Context, endpoint string, lat, lon float64, from, to time.Time) ([]Day, error) {
	body, err := o.get(ctx, QueryURL(endpoint, lat, lon, from, to))
	var ue *UpstreamError
	if errors.As(err, &ue) && ue.Status == http.StatusBadRequest && strings.Contains(ue.Reason, "WeatherVariable") {
		// An API (or a version of it) without one of the optional daily
		// variables refuses the whole query: ask again for the required ones.
		body, err = o.get(ctx, queryURL(endpoint, lat, lon, from, to, requiredVariables))
	}
	if err != nil {
		return nil, err
	}
	var r Response
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("%w: %s: decode: %v", ErrUnavailable, endpoint, err)
	}
	days, err := DecodeDaily(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", endpoint, err)
	}
	return days, nil
}

// DecodeDaily turns an answer's daily arrays into days, converting the
// units daily_units names. Days whose minimum or maximum temperature or
// precipitation is null are left out (not yet in the archive); the mean
// temperature, when null or not served, is (Tmin+Tmax)/2.
func DecodeDaily(r Response) ([]Day, error) {
	var dates []string
	if raw, ok := r.Daily["time"]; !ok || json.Unmarshal(raw, &dates) != nil {
		return nil, fmt.Errorf("%w: the answer has no daily time array", ErrUnavailable)
	}
	if len(dates) > MaxDays {
		return nil, fmt.Errorf("%w: %d days in the answer", ErrUnavailable, len(dates))
	}
	type column struct {
		v    variable
		vals []*float64
		conv converter
	}
	var cols []column
	for _, dv := range dailyVariables {
		raw, ok := r.Daily[dv.name]
		if !ok {
			continue
		}
		var vals []*float64
		if err := json.Unmarshal(raw, &vals); err != nil {
			return nil, fmt.Errorf("%w: daily %s: %v", ErrUnavailable, dv.name, err)
		}
		if len(vals) != len(dates) {
			return nil, fmt.Errorf("%w: daily %s has %d values for %d dates", ErrUnavailable, dv.name, len(vals), len(dates))
		}
		unit, ok := r.DailyUnits[dv.name]
		if !ok {
			return nil, fmt.Errorf("%w: daily_units has no unit of %s", ErrUnavailable, dv.name)
		}
		conv, err := unitConverter(dv.v.kind(), unit)
		if err != nil {
			return nil, fmt.Errorf("daily %s: %w", dv.name, err)
		}
		cols = append(cols, column{dv.v, vals, conv})
	}
	days := make([]Day, 0, len(dates))
	for i, date := range dates {
		if _, err := time.Parse(time.DateOnly, date); err != nil {
			return nil, fmt.Errorf("%w: daily time %q is not a date", ErrUnavailable, date)
		}
		d := Day{Date: date}
		var have [varWindMax + 1]bool
		for _, c := range cols {
			if p := c.vals[i]; p != nil {
				c.v.set(&d, c.conv(*p))
				have[c.v] = true
			}
		}
		if !have[varTmin] || !have[varTmax] || !have[varPrecip] {
			continue
		}
		if !have[varTmean] {
			d.TmeanC = (d.TminC + d.TmaxC) / 2
		}
		if err := checkDay(d); err != nil {
			return nil, err
		}
		days = append(days, d)
	}
	sortDays(days)
	return days, nil
}

// get GETs u with retries and returns the body of a 2xx answer.
func (o *OpenMeteo) get(ctx context.Context, u string) ([]byte, error) {
	retries := o.MaxRetries
	switch {
	case retries < 0:
		retries = 0
	case retries == 0:
		retries = DefaultMaxRetries
	}
	for attempt := 0; ; attempt++ {
		body, wait, err := o.once(ctx, u)
		if err == nil {
			return body, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("weather: GET %s: %w", redactURL(u), ctx.Err())
		}
		var ue *UpstreamError
		if errors.As(err, &ue) {
			ue.Attempts = attempt + 1
			if !retryableStatus(ue.Status) {
				return nil, err
			}
		} else if errors.Is(err, netguard.ErrForbiddenAddress) || errors.Is(err, netguard.ErrInvalidURL) || errors.Is(err, errTooLarge) {
			return nil, err
		}
		if attempt >= retries {
			if ue != nil {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %d attempts: %w", ErrUnavailable, attempt+1, err)
		}
		t := time.NewTimer(o.backoff(attempt, wait))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("weather: GET %s: %w", redactURL(u), ctx.Err())
		case <-t.C:
		}
	}
}

var errTooLarge = errors.New("weather: answer too large")

func (o *OpenMeteo) backoff(attempt int, retryAfter time.Duration) time.Duration {
	base, maxB := cmpOr(o.BaseBackoff, DefaultBaseBackoff), cmpOr(o.MaxBackoff, DefaultMaxBackoff)
	if retryAfter > 0 {
		return min(retryAfter, maxB)
	}
	d := base << min(attempt, 30)
	if d <= 0 || d > maxB {
		d = maxB
	}
	return time.Duration(rand.Int64N(int64(d)) + 1)
}

func (o *OpenMeteo) once(ctx context.Context, u string) ([]byte, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, o.timeout())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("weather: GET %s: %w", u, err)
	}
	req.Header.Set("Accept", "application/json")
	if o.UserAgent != "" {
		req.Header.Set("User-Agent", o.UserAgent)
	}
	shown := redactURL(u)
	resp, err := o.client().Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = shown
		}
		return nil, 0, fmt.Errorf("weather: GET %s: %w", shown, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		reason := strings.TrimSpace(string(msg))
		var r Response
		if json.Unmarshal(msg, &r) == nil && r.Reason != "" {
			reason = r.Reason
		}
		return nil, retryAfter(resp.Header.Get("Retry-After")), &UpstreamError{URL: shown, Status: resp.StatusCode, Reason: reason, Attempts: 1}
	}
	limit := cmpOr(o.MaxBytes, DefaultMaxBytes)
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, 0, fmt.Errorf("weather: GET %s: read: %w", shown, err)
	}
	if int64(len(data)) > limit {
		return nil, 0, fmt.Errorf("%w: %w: GET %s: more than %d bytes", ErrUnavailable, errTooLarge, shown, limit)
	}
	return data, 0, nil
}

// redactURL hides the values of credential-like query parameters
// (apikey=…) in a URL shown in errors and logs.
func redactURL(u string) string {
	base, query, ok := strings.Cut(u, "?")
	if !ok {
		return u
	}
	v, err := url.ParseQuery(query)
	if err != nil {
		return base + "?…"
	}
	for k := range v {
		l := strings.ToLower(k)
		if strings.Contains(l, "key") || strings.Contains(l, "token") || strings.Contains(l, "secret") {
			v.Set(k, "REDACTED")
		}
	}
	return base + "?" + v.Encode()
}

// retryAfter is a Retry-After header's delay (0 when absent or unreadable).
func retryAfter(v string) time.Duration {
	d, _ := httpretry.ParseRetryAfter(v, time.Now())
	return d
}
