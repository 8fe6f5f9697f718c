package client

import (
	"context"
	"strconv"

	"github.com/cropkit/cropkit/api"
)

// WeatherSeason is a field's daily weather with growing degree days and
// season totals (GET /fields/weather).
type WeatherSeason = api.WeatherSeason

// WeatherRequest selects a field's weather season. Without From, the
// field's metadata season (Season, or the latest started) gives the dates
// and, without Crop, the crop; Base and Cap override the crop table.
type WeatherRequest struct {
	FieldName string
	From, To  string // YYYY-MM-DD
	Season    string // a season's start_date
	Crop      string
	Base, Cap *float64 // °C
}

func (w WeatherRequest) query(format string) request {
	num := func(v *float64) string {
		if v == nil {
			return ""
		}
		return strconv.FormatFloat(*v, 'g', -1, 64)
	}
	return request{path: "/fields/weather", query: query("field_name", w.FieldName, "from", w.From, "to", w.To,
		"season", w.Season, "crop", w.Crop, "base", num(w.Base), "cap", num(w.Cap), "format", format)}
}

// Weather returns a field's daily weather, GDD and totals.
func (c *Client) Weather(ctx context.Context, w WeatherRequest) (WeatherSeason, error) {
	var out WeatherSeason
	err := c.call(ctx, w.query(""), &out)
	return out, err
}

// WeatherCSV returns the same as CSV (one row per day, then a "total" row).
func (c *Client) WeatherCSV(ctx context.Context, w WeatherRequest) (File, error) {
	return c.file(ctx, w.query("csv"))
}
