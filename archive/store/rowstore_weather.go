// This file holds the weather cache's schema and queries, on both
// databases (see rowStore): days of a weather source per grid cell.

package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cropkit/cropkit/archive"
)

// migrationWeatherSQLite is appended to migrations (sqlite.go) and
// migrationWeatherPostgres to pgMigrations (postgres.go). A day is final
// when it was fetched long enough after its date that the source will not
// revise it; other days are refreshed (see Archive.RefreshWeather).
const (
	migrationWeatherSQLite = `CREATE TABLE weather_days (
		source     TEXT NOT NULL,
		cell       TEXT NOT NULL,
		date       TEXT NOT NULL,
		day        TEXT NOT NULL,
		final      INTEGER NOT NULL,
		fetched_at TEXT NOT NULL,
		PRIMARY KEY (source, cell, date)
	);
	CREATE INDEX weather_days_provisional ON weather_days (source, final, fetched_at);`
	migrationWeatherPostgres = `CREATE TABLE weather_days (
		source     TEXT NOT NULL,
		cell       TEXT NOT NULL,
		date       TEXT NOT NULL,
		day        TEXT NOT NULL,
		final      INTEGER NOT NULL,
		fetched_at TIMESTAMPTZ NOT NULL,
		PRIMARY KEY (source, cell, date)
	);
	CREATE INDEX weather_days_provisional ON weather_days (source, final, fetched_at);`
)

func (s *rowStore) WeatherDays(ctx context.Context, source, cell, from, to string) ([]archive.CachedDay, error) {
	what := "weather days of " + cell
	rows, err := s.read(ctx, `SELECT day, final, fetched_at FROM weather_days
		WHERE source = ? AND cell = ? AND date >= ? AND date <= ? ORDER BY date`, source, cell, from, to)
	if err != nil {
		return nil, s.d.wrap(what, err)
	}
	defer rows.Close()
	var out []archive.CachedDay
	for rows.Next() {
		var (
			c     archive.CachedDay
			raw   string
			final int
		)
		if err := rows.Scan(&raw, &final, dbTime{&c.FetchedAt}); err != nil {
			return nil, s.d.wrap(what, err)
		}
		if err := json.Unmarshal([]byte(raw), &c.Day); err != nil {
			return nil, fmt.Errorf("%s: stored day: %w", what, err)
		}
		c.Final = final != 0
		out = append(out, c)
	}
	return out, s.d.wrapOrNil(what, rows.Err())
}

func (s *rowStore) PutWeatherDays(ctx context.Context, source, cell string, days []archive.CachedDay) error {
	what := "store weather days of " + cell
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.d.wrap(what, err)
	}
	defer tx.Rollback()
	q := s.q(`INSERT INTO weather_days (source, cell, date, day, final, fetched_at) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (source, cell, date) DO UPDATE SET day = excluded.day, final = excluded.final, fetched_at = excluded.fetched_at`)
	for _, d := range days {
		raw, err := json.Marshal(d.Day)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		final := 0
		if d.Final {
			final = 1
		}
		if _, err := tx.ExecContext(ctx, q, source, cell, d.Date, string(raw), final, s.d.stamp(d.FetchedAt)); err != nil {
			return s.d.wrap(what, err)
		}
	}
	return s.d.wrapOrNil(what, tx.Commit())
}

func (s *rowStore) StaleWeather(ctx context.Context, source string, cutoff time.Time) ([]archive.WeatherSpan, error) {
	what := "stale weather"
	rows, err := s.read(ctx, `SELECT cell, MIN(date), MAX(date) FROM weather_days
		WHERE source = ? AND final = 0 AND fetched_at < ? GROUP BY cell ORDER BY cell`, source, s.d.stamp(cutoff))
	if err != nil {
		return nil, s.d.wrap(what, err)
	}
	defer rows.Close()
	var out []archive.WeatherSpan
	for rows.Next() {
		var w archive.WeatherSpan
		if err := rows.Scan(&w.Cell, &w.From, &w.To); err != nil {
			return nil, s.d.wrap(what, err)
		}
		out = append(out, w)
	}
	return out, s.d.wrapOrNil(what, rows.Err())
}
