package main

import (
	"errors"
	"flag"
	"time"

	"github.com/cropkit/cropkit/archive"
)

// weatherOptions are the weather source flags of serve, watch and worker.
type weatherOptions struct {
	url, csv, attribution string
	allowPrivate          bool
	refresh               time.Duration
}

func addWeatherFlags(fs *flag.FlagSet) *weatherOptions {
	o := &weatherOptions{}
	fs.StringVar(&o.url, "weather-url", "", "Open-Meteo-compatible API base URL serving /v1/archive and /v1/forecast (empty: the public Open-Meteo API; \"none\": no weather)")
	fs.StringVar(&o.csv, "weather-csv", "", "daily weather CSV answering for every field instead of an API (date, then \"name (unit)\" columns)")
	fs.StringVar(&o.attribution, "weather-attribution", "", "credit shown with --weather-csv data (the table's licence)")
	fs.BoolVar(&o.allowPrivate, "weather-allow-private", false, "let --weather-url be on loopback, private and link-local addresses (a self-hosted Open-Meteo)")
	fs.DurationVar(&o.refresh, "weather-refresh", 24*time.Hour, "how often the job runner fetches again the provisional recent days of cached weather cells")
	return o
}

// config is the archive's weather configuration of the flags.
func (o *weatherOptions) config() (archive.WeatherConfig, error) {
	switch {
	case o.refresh <= 0:
		return archive.WeatherConfig{}, errors.New("--weather-refresh must be positive")
	case o.csv != "" && o.url != "":
		return archive.WeatherConfig{}, errors.New("give --weather-url or --weather-csv, not both")
	case o.csv != "":
		return archive.TableWeather(o.csv, o.attribution)
	case o.url == "none":
		return archive.WeatherConfig{}, nil
	}
	return archive.OpenMeteoWeather(o.url, o.allowPrivate)
}
