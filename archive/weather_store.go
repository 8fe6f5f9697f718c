package archive

import (
	"context"
	"time"

	"github.com/cropkit/cropkit/weather"
)

// WeatherStore is the weather cache of a Store.
type WeatherStore interface {
	// WeatherDays are the stored days of source and cell dated from..to
	// (inclusive), by date.
	WeatherDays(ctx context.Context, source, cell, from, to string) ([]CachedDay, error)
	// PutWeatherDays stores days (replacing stored ones of the same dates).
	PutWeatherDays(ctx context.Context, source, cell string, days []CachedDay) error
	// StaleWeather lists, per cell of source, the span of days not final
	// and fetched before cutoff.
	StaleWeather(ctx context.Context, source string, cutoff time.Time) ([]WeatherSpan, error)
}

// CachedDay is a stored day of weather.
type CachedDay struct {
	weather.Day
	Final     bool
	FetchedAt time.Time
}

// WeatherSpan is a cell's range of dates.
type WeatherSpan struct {
	Cell     string
	From, To string
}
