package archive

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"time"

	"github.com/cropkit/cropkit/api"
	"github.com/cropkit/cropkit/metadata"
	"github.com/cropkit/cropkit/weather"
)

// Defaults of WeatherConfig.
const (
	// DefaultWeatherRecentDays: days fetched less than this many days after
	// their date are provisional (forecast, preliminary reanalysis) and
	// refreshed; older ones are final.
	DefaultWeatherRecentDays = 7
	// DefaultWeatherRefresh is how old a provisional day's fetch may be
	// before it is fetched again (on use, or by RefreshWeather).
	DefaultWeatherRefresh = 24 * time.Hour
	// SeriesWeatherWait bounds how long a time series waits for weather its
	// cell does not have stored yet: the fetch goes on in the background
	// and a later request finds the days stored.
	SeriesWeatherWait = time.Second
	// weatherFillTimeout bounds one background fill (the source's retries
	// included); weatherFillBackoff is how long a failed fill is not tried
	// again for the same cell and days.
	weatherFillTimeout = 5 * time.Minute
	weatherFillBackoff = time.Minute
)

// WeatherConfig is the archive's weather source.
type WeatherConfig struct {
	// Source gives the days; nil means the archive serves no weather.
	Source weather.Source
	// Name identifies the source in the cache: days stored under one name
	// are reused by every process configured with it.
	Name string
	// Attribution is the credit the source's licence asks for.
	Attribution string
	// Cache stores fetched days in the archive's database, per grid cell:
	// for remote sources. A local table is read directly.
	Cache bool
	// CellDegrees is the weather grid's spacing; 0 means weather.DefaultCellDegrees.
	CellDegrees float64
	// RecentDays and Refresh: see DefaultWeatherRecentDays and DefaultWeatherRefresh.
	RecentDays int
	Refresh    time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// OpenMeteoWeather is the configuration of an Open-Meteo-compatible API at
// baseURL ("" means the public endpoints), cached per 0.1° cell.
func OpenMeteoWeather(baseURL string, allowPrivate bool) (WeatherConfig, error) {
	om := &weather.OpenMeteo{BaseURL: baseURL, AllowPrivate: allowPrivate, UserAgent: "cropkit"}
	if err := om.Validate(); err != nil {
		return WeatherConfig{}, Invalid("%v", err)
	}
	name := "open-meteo"
	if baseURL != "" {
		// Without its query: an apikey is no part of the name shown and stored.
		base, _, _ := strings.Cut(baseURL, "?")
		name += " " + strings.TrimRight(base, "/")
	}
	return WeatherConfig{Source: om, Name: name, Attribution: weather.OpenMeteoAttribution, Cache: true}, nil
}

// TableWeather is the configuration of a local daily CSV table (see
// weather.ReadTable), which answers for every field.
func TableWeather(path, attribution string) (WeatherConfig, error) {
	t, err := weather.ReadTableFile(path)
	if err != nil {
		return WeatherConfig{}, err
	}
	return WeatherConfig{Source: t, Name: "table " + path, Attribution: attribution}, nil
}

// weatherState is the archive's weather source and its per-cell locks.
type weatherState struct {
	cfg WeatherConfig
	// cells orders, within this process, the fetches of one cell (striped
	// by the cell's key): fields sharing a cell wait for the first fetch
	// and then find its days stored.
	cells [64]sync.Mutex

	// stop ends the background fills (close); fillsWG waits for them.
	stop    context.Context
	cancel  context.CancelFunc
	fillsWG sync.WaitGroup
	// fills are the background fetches of time series' weather by cell and
	// days, one at a time each; a failed one stays until its retryAt.
	fillsMu sync.Mutex
	fills   map[string]*weatherFill
}

// weatherFill is one background fetch of a cell's days (fillWeather).
type weatherFill struct {
	done    chan struct{} // closed when days and err are set
	days    []weather.Day
	err     error
	retryAt time.Time
}

func newWeatherState(cfg WeatherConfig) *weatherState {
	if cfg.RecentDays <= 0 {
		cfg.RecentDays = DefaultWeatherRecentDays
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = DefaultWeatherRefresh
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Name == "" {
		cfg.Name = "weather"
	}
	stop, cancel := context.WithCancel(context.Background())
	return &weatherState{cfg: cfg, stop: stop, cancel: cancel, fills: map[string]*weatherFill{}}
}

// close cancels the background fills and waits for them to end.
func (w *weatherState) close() {
	if w == nil {
		return
	}
	w.cancel()
	w.fillsWG.Wait()
}

// fill starts fetch in the background under key unless one runs (or
// failed less than weatherFillBackoff ago), and returns it.
func (w *weatherState) fill(key string, fetch func(context.Context) ([]weather.Day, error)) *weatherFill {
	w.fillsMu.Lock()
	defer w.fillsMu.Unlock()
	if f, ok := w.fills[key]; ok {
		select {
		case <-f.done:
			if time.Now().Before(f.retryAt) {
				return f
			}
		default:
			return f // still running
		}
	}
	f := &weatherFill{done: make(chan struct{})}
	w.fills[key] = f
	w.fillsWG.Add(1)
	go func() {
		defer w.fillsWG.Done()
		ctx, cancel := context.WithTimeout(w.stop, weatherFillTimeout)
		defer cancel()
		days, err := fetch(ctx)
		w.fillsMu.Lock()
		f.days, f.err = days, err
		if err == nil {
			delete(w.fills, key) // stored: later requests read the cache
		} else {
			f.retryAt = time.Now().Add(weatherFillBackoff)
		}
		w.fillsMu.Unlock()
		close(f.done)
	}()
	return f
}

func (w *weatherState) lock(cell string) *sync.Mutex {
	h := fnv.New32a()
	h.Write([]byte(cell))
	return &w.cells[h.Sum32()%uint32(len(w.cells))]
}

func (w *weatherState) today() time.Time { return w.cfg.Now().UTC().Truncate(24 * time.Hour) }

// WeatherSource names the configured weather source and its attribution
// ("" when none is configured).
func (a *Archive) WeatherSource() (name, attribution string) {
	if a.weather == nil || a.weather.cfg.Source == nil {
		return "", ""
	}
	return a.weather.cfg.Name, a.weather.cfg.Attribution
}

// WeatherCell is the grid cell whose weather a point gets.
func (a *Archive) WeatherCell(lat, lon float64) weather.Cell {
	size := 0.0
	if a.weather != nil {
		size = a.weather.cfg.CellDegrees
	}
	return weather.CellOf(lat, lon, size)
}

// WeatherDays returns one day per date from..to of the weather at the
// centre of the grid cell holding (lat, lon). With a cached source, days
// stored for the cell are reused and the missing or stale ones fetched in
// one request for the cell (the span from the first to the last of them);
// only complete answers are stored, so an upstream failure is reported,
// never recorded. When the source fails (ErrBusy) and only stale days were
// to be fetched again, the stored ones answer.
func (a *Archive) WeatherDays(ctx context.Context, lat, lon float64, from, to time.Time) ([]weather.Day, error) {
	if a.weather == nil || a.weather.cfg.Source == nil {
		return nil, errorf(ErrBusy, "no weather source is configured")
	}
	w := a.weather
	cell := a.WeatherCell(lat, lon)
	clat, clon := cell.Centre()
	q := weather.Query{Lat: clat, Lon: clon, From: from, To: to}
	if err := q.Validate(); err != nil {
		return nil, weatherError(err)
	}
	if !w.cfg.Cache {
		days, err := w.cfg.Source.Daily(ctx, q)
		return days, weatherError(err)
	}
	key := cell.Key()
	mu := w.lock(key)
	mu.Lock()
	defer mu.Unlock()
	fromS, toS := from.Format(time.DateOnly), to.Format(time.DateOnly)
	cached, err := a.store.WeatherDays(ctx, w.cfg.Name, key, fromS, toS)
	if err != nil {
		return nil, err
	}
	now := w.cfg.Now()
	byDate := make(map[string]weather.Day, len(cached))
	for _, c := range cached {
		if c.Final || now.Sub(c.FetchedAt) < w.cfg.Refresh {
			byDate[c.Date] = c.Day
		}
	}
	var first, last time.Time
	n := weather.Days(from, to)
	for i := range n {
		d := from.AddDate(0, 0, i)
		if _, ok := byDate[d.Format(time.DateOnly)]; !ok {
			if first.IsZero() {
				first = d
			}
			last = d
		}
	}
	if !first.IsZero() {
		if err := a.fetchWeather(ctx, key, clat, clon, first, last, byDate); err != nil {
			// Stale provisional days still answer while the source fails
			// (their refresh is tried again next time); missing ones cannot.
			if len(cached) < n || !errors.Is(err, ErrBusy) {
				return nil, err
			}
			a.log.WarnContext(ctx, "weather refresh failed: serving the stored days", "cell", key, "err", err)
			for _, c := range cached {
				byDate[c.Date] = c.Day
			}
		}
	}
	out := make([]weather.Day, n)
	for i := range n {
		out[i] = byDate[from.AddDate(0, 0, i).Format(time.DateOnly)]
	}
	return out, weatherError(weather.Complete(out, from, to))
}

// weatherDaysBy is WeatherDays for a caller that must not wait on the
// source beyond deadline (the time series' GDD column); a zero deadline
// is WeatherDays. A local table answers directly. With a cached source the
// stored days answer when every day is stored (provisional ones even when
// stale: their refresh is the daily RefreshWeather's and /fields/weather's
// business); otherwise the missing days are fetched in the background (one
// fetch per cell and days at a time, a failure not retried for a minute)
// and waited for until deadline; after it the answer is ErrBusy, and a
// later call finds the days stored.
func (a *Archive) weatherDaysBy(ctx context.Context, lat, lon float64, from, to, deadline time.Time) ([]weather.Day, error) {
	if deadline.IsZero() || a.weather == nil || a.weather.cfg.Source == nil || !a.weather.cfg.Cache {
		return a.WeatherDays(ctx, lat, lon, from, to)
	}
	w := a.weather
	cell := a.WeatherCell(lat, lon)
	if err := (weather.Query{Lat: lat, Lon: lon, From: from, To: to}).Validate(); err != nil {
		return nil, weatherError(err)
	}
	key := cell.Key()
	fromS, toS := from.Format(time.DateOnly), to.Format(time.DateOnly)
	// Without the cell's lock: a fill in progress holds it.
	cached, err := a.store.WeatherDays(ctx, w.cfg.Name, key, fromS, toS)
	if err != nil {
		return nil, err
	}
	byDate := make(map[string]weather.Day, len(cached))
	for _, c := range cached {
		byDate[c.Date] = c.Day
	}
	n := weather.Days(from, to)
	out := make([]weather.Day, n)
	complete := true
	for i := range n {
		d, ok := byDate[from.AddDate(0, 0, i).Format(time.DateOnly)]
		if !ok {
			complete = false
			break
		}
		out[i] = d
	}
	if complete {
		return out, weatherError(weather.Complete(out, from, to))
	}
	f := w.fill(key+" "+fromS+" "+toS, func(ctx context.Context) ([]weather.Day, error) {
		days, err := a.WeatherDays(ctx, lat, lon, from, to)
		if err != nil && ctx.Err() == nil {
			a.log.WarnContext(ctx, "weather for a time series", "cell", key, "from", fromS, "to", toS, "err", err)
		}
		return days, err
	})
	wait := time.NewTimer(time.Until(deadline))
	defer wait.Stop()
	select {
	case <-f.done:
		return f.days, f.err
	case <-wait.C:
		return nil, &Error{Kind: ErrBusy, Msg: fmt.Sprintf("the weather of cell %s is being fetched", key), RetryAfter: 5}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// fetchWeather asks the source for from..to at the cell centre, stores the
// answer and adds it to byDate. The caller holds the cell's lock.
func (a *Archive) fetchWeather(ctx context.Context, key string, lat, lon float64, from, to time.Time, byDate map[string]weather.Day) error {
	w := a.weather
	days, err := w.cfg.Source.Daily(ctx, weather.Query{Lat: lat, Lon: lon, From: from, To: to})
	if err != nil {
		return weatherError(err)
	}
	if err := weather.Complete(days, from, to); err != nil {
		return weatherError(err)
	}
	now := w.cfg.Now().UTC()
	finalBefore := now.Truncate(24*time.Hour).AddDate(0, 0, -w.cfg.RecentDays).Format(time.DateOnly)
	rows := make([]CachedDay, len(days))
	for i, d := range days {
		rows[i] = CachedDay{Day: d, Final: d.Date < finalBefore, FetchedAt: now}
		byDate[d.Date] = d
	}
	if err := a.store.PutWeatherDays(ctx, w.cfg.Name, key, rows); err != nil {
		return err
	}
	a.log.InfoContext(ctx, "weather fetched", "cell", key, "from", from.Format(time.DateOnly), "to", to.Format(time.DateOnly), "days", len(days))
	return nil
}

// RefreshWeather fetches again, in one request per cell, the provisional
// days (see DefaultWeatherRecentDays) whose fetch is older than the
// refresh interval, so that recent days converge to the source's final
// values. It returns the cells refreshed; a failing cell is logged and the
// others still refreshed (the first error is returned).
func (a *Archive) RefreshWeather(ctx context.Context) (int, error) {
	if a.weather == nil || a.weather.cfg.Source == nil || !a.weather.cfg.Cache {
		return 0, nil
	}
	w := a.weather
	stale, err := a.store.StaleWeather(ctx, w.cfg.Name, w.cfg.Now().Add(-w.cfg.Refresh))
	if err != nil {
		return 0, err
	}
	var firstErr error
	n := 0
	for _, s := range stale {
		var lat, lon, size float64
		if _, err := fmt.Sscanf(s.Cell, "%g:%g:%g", &size, &lat, &lon); err != nil {
			continue // a key of another format: not ours to refresh
		}
		from, err1 := weather.ParseDate(s.From)
		to, err2 := weather.ParseDate(s.To)
		if err1 != nil || err2 != nil {
			continue
		}
		// Through WeatherDays: the cell's lock, and only the days still stale.
		if _, err := a.WeatherDays(ctx, lat, lon, from, to); err != nil {
			a.log.WarnContext(ctx, "weather refresh", "cell", s.Cell, "err", err)
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		n++
	}
	return n, firstErr
}

// RunWeatherRefresh calls RefreshWeather now and every interval until ctx
// ends (failures are logged); interval ≤ 0 means a day.
func (a *Archive) RunWeatherRefresh(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = 24 * time.Hour
	}
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			if n, err := a.RefreshWeather(ctx); err != nil && ctx.Err() == nil {
				a.log.WarnContext(ctx, "weather refresh", "cells", n, "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// weatherError maps the weather package's kinds to the archive's: a bad
// query or dates outside the source's data are ErrInvalid, a failing
// source ErrBusy (retry later).
func weatherError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, weather.ErrInvalid), errors.Is(err, weather.ErrOutOfRange):
		return &Error{Kind: ErrInvalid, Msg: err.Error()}
	case errors.Is(err, weather.ErrUnavailable):
		return &Error{Kind: ErrBusy, Msg: err.Error(), RetryAfter: 60}
	}
	return err
}

// WeatherRequest selects a field's season of weather. Without From, the
// season is the field's metadata season starting on Season (or, when
// empty, the latest season started by today): from its start_date to its
// harvest_date, or today. Crop, when empty, is the season's crop_type;
// BaseC and CapC override the crop table.
type WeatherRequest struct {
	Field    string
	Season   string // a season's start_date
	From, To string // YYYY-MM-DD
	Crop     string
	BaseC    *float64
	CapC     *float64
}

// FieldWeather is a field's weather season.
type FieldWeather struct {
	Field       Field
	SeasonStart string // "" when From/To were given
	From, To    string
	Cell        string
	Source      string
	Attribution string
	weather.Season
}

// FieldWeather computes the daily weather, growing degree days and
// accumulations of u's field over a season (see WeatherRequest), at the
// weather cell of the centre of the field's bounding box.
func (a *Archive) FieldWeather(ctx context.Context, u User, req WeatherRequest) (FieldWeather, error) {
	return a.fieldWeather(ctx, u, req, time.Time{})
}

// fieldWeather is FieldWeather waiting on the source until deadline at
// most (weatherDaysBy; zero: as long as the source takes).
func (a *Archive) fieldWeather(ctx context.Context, u User, req WeatherRequest, deadline time.Time) (FieldWeather, error) {
	f, err := a.Field(ctx, u, req.Field, false)
	if err != nil {
		return FieldWeather{}, err
	}
	out := FieldWeather{Field: f}
	crop := req.Crop
	today := time.Now().UTC().Truncate(24 * time.Hour)
	if a.weather != nil {
		today = a.weather.today()
	}
	from, to := req.From, req.To
	if from == "" {
		seasons, err := a.fieldSeasons(ctx, f.ID)
		if err != nil {
			return FieldWeather{}, err
		}
		rec, err := pickSeason(seasons, req.Season, today.Format(time.DateOnly))
		if err != nil {
			return FieldWeather{}, err
		}
		out.SeasonStart, from = rec.StartDate, rec.StartDate
		if to == "" {
			to = rec.HarvestDate
		}
		if crop == "" {
			crop = rec.CropType
		}
	} else if req.Season != "" {
		return FieldWeather{}, Invalid("give a season or from/to, not both")
	}
	if to == "" || to > today.Format(time.DateOnly) && req.To == "" {
		to = today.Format(time.DateOnly)
	}
	fromT, err := weather.ParseDate(from)
	if err != nil {
		return FieldWeather{}, Invalid("from: %v", err)
	}
	toT, err := weather.ParseDate(to)
	if err != nil {
		return FieldWeather{}, Invalid("to: %v", err)
	}
	if toT.Before(fromT) {
		if req.To == "" && fromT.After(today) {
			return FieldWeather{}, Invalid("the season starts on %s, after today (%s): give to for a forecast", from, today.Format(time.DateOnly))
		}
		return FieldWeather{}, Invalid("the season ends (%s) before it starts (%s)", to, from)
	}
	if crop == "" && req.BaseC == nil {
		return FieldWeather{}, Invalid("the field's season names no crop_type: give crop or base")
	}
	params, err := weather.ParamsFor(crop, req.BaseC, req.CapC)
	if err != nil {
		return FieldWeather{}, weatherError(err)
	}
	c := f.Bound.Center()
	days, err := a.weatherDaysBy(ctx, c[1], c[0], fromT, toT, deadline)
	if err != nil {
		return FieldWeather{}, err
	}
	out.From, out.To = from, to
	out.Cell = a.WeatherCell(c[1], c[0]).Key()
	out.Source, out.Attribution = a.WeatherSource()
	out.Season = weather.Accumulate(days, params)
	return out, nil
}

// pickSeason is the season starting on start, or (start "") the latest
// season started by today.
func pickSeason(seasons metadata.Seasons, start, today string) (metadata.Record, error) {
	if len(seasons) == 0 {
		return metadata.Record{}, Invalid("the field has no metadata season: register one (start_date, crop_type) or give from and to")
	}
	if start != "" {
		rec, ok := seasons.Get(start)
		if !ok {
			return metadata.Record{}, NotFound("the field has no season starting on %s", start)
		}
		return rec, nil
	}
	best := seasons[0]
	for _, s := range seasons {
		if s.StartDate <= today {
			best = s
		}
	}
	return best, nil
}

// GDDDay is one day's growing degree days and their sum from the season's start.
type GDDDay struct {
	GDD, GDDCum float64
}

// FieldGDD is the daily thermal time of u's field by date over the season
// req selects (see FieldWeather), for joining with the field's index time
// series.
func (a *Archive) FieldGDD(ctx context.Context, u User, req WeatherRequest) (map[string]GDDDay, error) {
	fw, err := a.FieldWeather(ctx, u, req)
	if err != nil {
		return nil, err
	}
	out := make(map[string]GDDDay, len(fw.Rows))
	for _, r := range fw.Rows {
		out[r.Date] = GDDDay{GDD: r.GDD, GDDCum: r.GDDCum}
	}
	return out, nil
}

// FieldGDDSpan is the daily thermal time of u's field on the dates from..to
// (YYYY-MM-DD, inclusive) that fall in one of its metadata seasons: each
// season accumulated from its own start_date with its crop_type, up to its
// harvest_date or today. Dates in no season (or in a season without a
// crop_type) are absent. This is the join of /fields/timeseries' GDD
// column: an index date gets the GDD accumulated by then in its season.
// It never waits on the weather source for long: days not stored yet are
// fetched in the background and waited for SeriesWeatherWait at most in
// all, after which the answer is ErrBusy and a later call finds them.
func (a *Archive) FieldGDDSpan(ctx context.Context, u User, fieldName, from, to string) (map[string]GDDDay, error) {
	deadline := time.Now().Add(SeriesWeatherWait)
	_, seasons, err := a.Seasons(ctx, u, fieldName)
	if err != nil {
		return nil, err
	}
	today := time.Now().UTC().Truncate(24 * time.Hour)
	if a.weather != nil {
		today = a.weather.today()
	}
	out := map[string]GDDDay{}
	for _, s := range seasons {
		end := s.HarvestDate
		if end == "" || end > today.Format(time.DateOnly) {
			end = today.Format(time.DateOnly)
		}
		if s.CropType == "" || s.StartDate > to || end < from || end < s.StartDate {
			continue
		}
		fw, err := a.fieldWeather(ctx, u, WeatherRequest{Field: fieldName, Season: s.StartDate}, deadline)
		if err != nil {
			return nil, fmt.Errorf("season %s: %w", s.StartDate, err)
		}
		for _, r := range fw.Rows {
			if r.Date >= from && r.Date <= to {
				out[r.Date] = GDDDay{GDD: r.GDD, GDDCum: r.GDDCum}
			}
		}
	}
	return out, nil
}

// joinGDD adds the thermal time of the field's seasons (FieldGDDSpan) to
// a daily series. Weather is an addition to the series: without a weather
// source, a season with a crop_type or an answer from the source, the
// series goes out without the column (the failure is logged).
func (a *Archive) joinGDD(ctx context.Context, u User, ts *api.TimeSeries) {
	if name, _ := a.WeatherSource(); name == "" || len(ts.Series) == 0 {
		return
	}
	span, err := a.FieldGDDSpan(ctx, u, ts.FieldName, ts.StartDate, ts.EndDate)
	if err != nil {
		a.log.InfoContext(ctx, "time series without GDD", "field", ts.FieldName, "err", err)
		return
	}
	for i := range ts.Series {
		if g, ok := span[ts.Series[i].Date]; ok {
			ts.Series[i].GDD, ts.Series[i].GDDCum = &g.GDD, &g.GDDCum
		}
	}
}
