package archive

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/cropkit/cropkit/api"
	"github.com/cropkit/cropkit/imagery"
	"github.com/cropkit/cropkit/timeseries"
	"github.com/cropkit/cropkit/webhook"
)

// MaxSeriesDays bounds a daily series' span (one element per day).
const MaxSeriesDays = 20 * 366

// fieldSeries is a field's fitted series of one index from its stored
// usable products (the per-date statistics rows; no file is read).
type fieldSeries struct {
	field    Field
	index    string
	ix       imagery.Index
	model    *timeseries.Model
	products []Product
}

// series resolves u's field and index and fits the series of its usable
// products: ErrInvalid/ErrForbidden for an unknown or forbidden index,
// ErrNotFound for a missing field or one not registered for the index,
// ErrNoImagery without a usable product.
func (a *Archive) series(ctx context.Context, u User, fieldName, index string, withGeometry bool) (fieldSeries, error) {
	index = strings.ToLower(index)
	if err := a.CheckIndex(u, index); err != nil {
		return fieldSeries{}, err
	}
	f, err := a.Field(ctx, u, fieldName, withGeometry)
	if err != nil {
		return fieldSeries{}, err
	}
	if !slices.Contains(f.Indices, index) {
		return fieldSeries{}, NotFound("field %q is not registered for index %q", f.Name, index)
	}
	ps, err := a.UsableProducts(ctx, f, index, "", "")
	if err != nil {
		return fieldSeries{}, err
	}
	m, err := fitProducts(ps)
	if errors.Is(err, timeseries.ErrNoObservations) {
		return fieldSeries{}, NoImagery("no usable %s image of field %q (none ingested yet, or too little of it clear: clouds, or outside the scenes)", index, f.Name)
	}
	if err != nil {
		return fieldSeries{}, err
	}
	ix, _ := a.cat.Lookup(index)
	return fieldSeries{field: f, index: index, ix: ix, model: m, products: ps}, nil
}

// TimeSeriesQuery asks a field's daily series of one index from From to
// To (YYYY-MM-DD, inclusive; "" = the first / last usable image's date).
type TimeSeriesQuery struct {
	Field, Index, From, To string
}

// TimeSeries is the daily series of q's field and index: per day the
// usable observation (if any), the estimate and its 80 % interval
// (package timeseries; docs/timeseries.md).
func (a *Archive) TimeSeries(ctx context.Context, u User, q TimeSeriesQuery) (api.TimeSeries, error) {
	fs, err := a.series(ctx, u, q.Field, q.Index, false)
	if err != nil {
		return api.TimeSeries{}, err
	}
	from := cmp.Or(q.From, fs.products[0].Date)
	to := cmp.Or(q.To, fs.products[len(fs.products)-1].Date)
	start, end, err := seriesSpan(from, to)
	if err != nil {
		return api.TimeSeries{}, err
	}
	days, err := fs.model.Daily(start, end, timeseries.Options{Range: timeseries.PossibleRange(fs.ix)})
	if err != nil {
		return api.TimeSeries{}, Invalid("%v", err)
	}
	out := api.TimeSeries{FieldName: fs.field.Name, Index: fs.index, StartDate: from, EndDate: to, Series: make([]api.SeriesDay, len(days))}
	for i, d := range days {
		out.Series[i] = SeriesDay(d)
	}
	a.joinGDD(ctx, u, &out)
	return out, nil
}

// SeriesDay is the wire row of a day of a series (estimates rounded to 6 decimals).
func SeriesDay(d timeseries.Day) api.SeriesDay {
	r := func(v float64) float64 { return math.Round(v*1e6) / 1e6 }
	row := api.SeriesDay{Date: d.Date.Format(time.DateOnly), Estimate: r(d.Estimate), Lower: r(d.Lower), Upper: r(d.Upper)}
	if !math.IsNaN(d.Observed) {
		v, s := d.Observed, d.Sensor
		row.Observed, row.Sensor = &v, &s
	}
	return row
}

// seriesSpan parses a series' inclusive span and bounds it.
func seriesSpan(from, to string) (start, end time.Time, err error) {
	if start, err = time.Parse(time.DateOnly, from); err != nil {
		return start, end, Invalid("start date %q: want YYYY-MM-DD", from)
	}
	if end, err = time.Parse(time.DateOnly, to); err != nil {
		return start, end, Invalid("end date %q: want YYYY-MM-DD", to)
	}
	if end.Before(start) {
		return start, end, Invalid("end date %s is before start date %s", to, from)
	}
	if end.Sub(start) > MaxSeriesDays*24*time.Hour {
		return start, end, Invalid("%s to %s: a series spans at most %d days", from, to, MaxSeriesDays)
	}
	return start, end, nil
}

// Phenology measures each season of u's field on its daily series of
// index: the field's metadata seasons (start date to 30 days after the
// harvest date), else the calendar growing season of every year its
// usable images cover (from at most 30 days after the season's start to
// at least 30 days before its end). Seasons without a growth cycle are
// left out.
func (a *Archive) Phenology(ctx context.Context, u User, fieldName, index string) (api.Phenology, error) {
	fs, err := a.series(ctx, u, fieldName, index, false)
	if err != nil {
		return api.Phenology{}, err
	}
	seasons, err := a.fieldSeasons(ctx, fs.field.ID)
	if err != nil {
		return api.Phenology{}, err
	}
	type window struct {
		season       timeseries.Season
		source, crop string
	}
	var windows []window
	for _, s := range seasons {
		start, err := time.Parse(time.DateOnly, s.StartDate)
		if err != nil {
			continue
		}
		var harvest time.Time
		if s.HarvestDate != "" {
			harvest, _ = time.Parse(time.DateOnly, s.HarvestDate)
		}
		windows = append(windows, window{timeseries.MetadataSeason(start, harvest), "metadata", s.CropType})
	}
	if len(windows) == 0 {
		lat := fs.field.Bound.Center()[1]
		first, _ := time.Parse(time.DateOnly, fs.products[0].Date)
		last, _ := time.Parse(time.DateOnly, fs.products[len(fs.products)-1].Date)
		for y := first.Year() - 1; y <= last.Year(); y++ {
			s := timeseries.CalendarSeason(y, lat)
			// Only seasons the images cover, give or take a month at
			// either end: a flat extrapolation is no season.
			if !first.After(s.From.AddDate(0, 0, 30)) && !last.Before(s.To.AddDate(0, 0, -30)) {
				windows = append(windows, window{season: s, source: "calendar"})
			}
		}
	}
	out := api.Phenology{FieldName: fs.field.Name, Index: fs.index, Seasons: []api.PhenologySeason{}}
	for _, w := range windows {
		days, err := fs.model.Daily(w.season.From, w.season.To, timeseries.Options{Range: timeseries.PossibleRange(fs.ix), Smooth: true})
		if err != nil {
			return api.Phenology{}, fmt.Errorf("phenology of field %q: %w", fs.field.Name, err)
		}
		m, err := timeseries.Phenology(days, w.season, timeseries.PhenologyOptions{})
		if errors.Is(err, timeseries.ErrNoSeason) {
			continue
		}
		if err != nil {
			return api.Phenology{}, fmt.Errorf("phenology of field %q: %w", fs.field.Name, err)
		}
		out.Seasons = append(out.Seasons, phenologySeason(m, w.source, w.crop))
	}
	return out, nil
}

// phenologySeason is the wire form of a season's metrics.
func phenologySeason(m timeseries.Metrics, source, crop string) api.PhenologySeason {
	date := func(t time.Time) *string {
		if t.IsZero() {
			return nil
		}
		s := t.Format(time.DateOnly)
		return &s
	}
	r := func(v float64) float64 { return math.Round(v*1e6) / 1e6 }
	return api.PhenologySeason{WindowStart: m.Season.From.Format(time.DateOnly), WindowEnd: m.Season.To.Format(time.DateOnly),
		Source: source, CropType: crop, Start: date(m.Start), Peak: m.Peak.Format(time.DateOnly), End: date(m.End),
		PeakValue: r(m.PeakValue), Amplitude: r(m.Amplitude), Integral: r(m.Integral), Cycles: m.Cycles}
}

// Events lists the abrupt changes (package timeseries' rule) of u's field
// in each of indices (nil: every index of the field u may use) whose date
// lies from from to to (inclusive, "" = open), by date then index.
// Indices without a usable image have none.
func (a *Archive) Events(ctx context.Context, u User, fieldName string, indices []string, from, to string) (api.FieldEvents, error) {
	f, err := a.Field(ctx, u, fieldName, false)
	if err != nil {
		return api.FieldEvents{}, err
	}
	if indices == nil {
		for _, ix := range f.Indices {
			if u.May(ix) {
				indices = append(indices, ix)
			}
		}
	}
	out := api.FieldEvents{FieldName: f.Name, Events: []api.FieldEvent{}}
	for _, index := range indices {
		fs, err := a.series(ctx, u, f.Name, index, false)
		if errors.Is(err, ErrNoImagery) {
			continue
		}
		if err != nil {
			return api.FieldEvents{}, err
		}
		evs, err := fs.model.Events(timeseries.EventOptions{Index: fs.index})
		if err != nil {
			return api.FieldEvents{}, err
		}
		for _, e := range evs {
			fe := fieldEvent(f.Name, e)
			if (from == "" || fe.Date >= from) && (to == "" || fe.Date <= to) {
				out.Events = append(out.Events, fe)
			}
		}
	}
	slices.SortStableFunc(out.Events, func(x, y api.FieldEvent) int {
		return cmp.Or(cmp.Compare(x.Date, y.Date), cmp.Compare(x.Index, y.Index))
	})
	return out, nil
}

// fieldEvent is the wire form of an event of field name.
func fieldEvent(name string, e timeseries.Event) api.FieldEvent {
	r := func(v float64) float64 { return math.Round(v*1e6) / 1e6 }
	return api.FieldEvent{FieldName: name, Date: e.Date.Format(time.DateOnly), Kind: e.Kind, Index: e.Index, Sensor: e.Sensor,
		Magnitude: r(e.Magnitude), Observed: r(e.Observed), Expected: r(e.Expected), Lower: r(e.Lower), Upper: r(e.Upper),
		ConfirmedBy: e.ConfirmedBy.Format(time.DateOnly)}
}

// fitProducts fits the series of a field's usable products of one index.
func fitProducts(ps []Product) (*timeseries.Model, error) {
	obs := make([]timeseries.Observation, 0, len(ps))
	for _, p := range ps {
		d, err := time.Parse(time.DateOnly, p.Date)
		if err != nil || p.FieldPixels == 0 {
			continue
		}
		obs = append(obs, timeseries.Observation{Date: d, Value: p.Mean, Sensor: productSensor(p),
			Clear: float64(p.Num) / float64(p.FieldPixels)})
	}
	return timeseries.Fit(obs)
}

// EventRenotifyDays is how far back an ingestion looks for confirmed
// events not yet notified (notifyEvents).
const EventRenotifyDays = 60

// SetWebhookEvents opts u's webhook registration id in to field-event
// notifications (on) or out of them. ErrNotFound for another user's.
func (a *Archive) SetWebhookEvents(ctx context.Context, u User, id int64, on bool) error {
	err := a.hooks.outbox.Subscribe(ctx, u.Name, id, api.EventTopic, on)
	if errors.Is(err, webhook.ErrRegistrationNotFound) {
		return NotFound("webhook %d not found", id)
	}
	return err
}

// notifyEvents enqueues the field events known once the usable products
// of date are recorded — those it triggers, and those confirmed from
// EventRenotifyDays before it up to it — to the owner's webhooks that
// opted in to them (api.EventNotification). Each event goes out once per
// registration: its webhook-id derives from the field, index, event date
// and kind, so a re-ingestion, or a later date recomputing the same event,
// adds nothing; and an event whose enqueue a crash interrupted (after the
// products' commit) goes out with the field's next date within the window.
func (a *Archive) notifyEvents(ctx context.Context, f Field, date string, products []imagery.Product) (int, error) {
	on, err := a.hooks.outbox.Subscribed(ctx, f.Owner, api.EventTopic)
	if err != nil || !on {
		return 0, err
	}
	day, err := time.Parse(time.DateOnly, date)
	if err != nil {
		return 0, fmt.Errorf("field events of %s: %w", date, err)
	}
	n := 0
	for _, p := range products {
		ps, err := a.UsableProducts(ctx, f, p.Index, "", "")
		if err != nil {
			return n, err
		}
		m, err := fitProducts(ps)
		if errors.Is(err, timeseries.ErrNoObservations) {
			continue
		}
		if err != nil {
			return n, err
		}
		evs, err := m.Events(timeseries.EventOptions{Index: p.Index})
		if err != nil {
			return n, err
		}
		since := day.AddDate(0, 0, -EventRenotifyDays).Format(time.DateOnly)
		for _, e := range evs {
			fe := fieldEvent(f.Name, e)
			if fe.Date != date && (fe.ConfirmedBy < since || fe.ConfirmedBy > date) {
				continue
			}
			body, err := json.Marshal(api.EventNotification{Type: api.EventTopic, Group: f.Group, Field: f.Name, Event: fe})
			if err != nil {
				return n, err
			}
			key := fmt.Sprintf("evt_%d_%s_%s_%s", f.ID, fe.Index, fe.Date, fe.Kind)
			k, err := a.hooks.outbox.EnqueueTopic(ctx, f.Owner, api.EventTopic, key, body)
			if err != nil {
				return n, err
			}
			n += k
		}
	}
	return n, nil
}
