package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/weather"
)

const weatherUsage = `usage: cropkit weather (--csv FILE | [--url URL] --lat LAT --lon LON) --from YYYY-MM-DD --to YYYY-MM-DD --crop NAME --out OUT.json [flags]

Computes daily growing degree days (GDD), accumulated GDD and precipitation,
frost days (Tmin < 0 °C) and heat days (Tmax > 30 °C) from --from to --to
(inclusive; sums start at --from), with the same library the server uses
(package weather). GDD = max(0, (min(Tmax, Tcap) + max(Tmin, Tbase))/2 − Tbase).

Weather comes from a local daily CSV (--csv: a "date" column, then columns
named "name (unit)", e.g. AgERA5's "temperature_min (K)"; units are
converted) or an Open-Meteo-compatible API (--url: a base URL serving
/v1/archive and /v1/forecast, or one of those endpoints; without --url the
public Open-Meteo API) at --lat/--lon.

Crops (base/cap °C): maize 10/30, winter wheat 0/26, winter barley 0/26,
barley 0/26, wheat 0/26, sugar beet 3/-, potato 7/-, grassland 5/-.
--base and --cap override them; another crop needs --base. cap_c is null
in the output for a crop without a cap.

Writes {"crop", "base_c", "cap_c", "daily": [{"date", "tmin_c", "tmax_c",
"tmean_c", "precipitation_mm", "gdd", "gdd_cum", "precipitation_cum_mm"}, ...],
"totals": {"gdd", "precipitation_mm", "frost_days", "heat_days"}}.

`

// optionalFloat is a float flag that records whether it was given.
type optionalFloat struct{ v *float64 }

func (o *optionalFloat) String() string {
	if o == nil || o.v == nil {
		return ""
	}
	return strconv.FormatFloat(*o.v, 'g', -1, 64)
}

func (o *optionalFloat) Set(s string) error {
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("want a number")
	}
	o.v = &x
	return nil
}

// runWeather writes the thermal time of a date range to --out.
func runWeather(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("weather", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, weatherUsage); fs.PrintDefaults() }
	csvPath := fs.String("csv", "", "daily weather CSV (date, then \"name (unit)\" columns)")
	baseURL := fs.String("url", "", "Open-Meteo-compatible API base URL (default: the public Open-Meteo API)")
	lat := fs.String("lat", "", "latitude of the point (with --url), degrees")
	lon := fs.String("lon", "", "longitude of the point (with --url), degrees")
	fromS := fs.String("from", "", "first day (YYYY-MM-DD); sums start here")
	toS := fs.String("to", "", "last day (YYYY-MM-DD), inclusive")
	crop := fs.String("crop", "", "crop of the base/cap table (maize, winter wheat, winter barley, barley, sugar beet, potato, grassland) or any name with --base")
	var base, capC optionalFloat
	fs.Var(&base, "base", "base temperature Tbase in °C (overrides the crop's)")
	fs.Var(&capC, "cap", "cap temperature Tcap in °C (overrides the crop's)")
	out := fs.String("out", "", "output JSON file ('-' for stdout)")
	timeout := fs.Duration("timeout", weather.DefaultTimeout, "timeout of one API request attempt")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	switch {
	case *fromS == "" || *toS == "":
		return errors.New("--from and --to are required")
	case *out == "":
		return errors.New("--out is required")
	case *crop == "" && base.v == nil:
		return errors.New("--crop (or --base) is required")
	case *csvPath != "" && (*baseURL != "" || *lat != "" || *lon != ""):
		return errors.New("give --csv or --url/--lat/--lon, not both")
	case *csvPath == "" && (*lat == "" || *lon == ""):
		return errors.New("--csv FILE, or --lat and --lon (with --url or the public API), is required")
	}
	from, err := weather.ParseDate(*fromS)
	if err != nil {
		return fmt.Errorf("--from: %w", err)
	}
	to, err := weather.ParseDate(*toS)
	if err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	params, err := weather.ParamsFor(*crop, base.v, capC.v)
	if err != nil {
		return err
	}
	q := weather.Query{From: from, To: to}
	var src weather.Source
	if *csvPath != "" {
		t, err := weather.ReadTableFile(*csvPath)
		if err != nil {
			return err
		}
		src = t
	} else {
		if q.Lat, err = strconv.ParseFloat(*lat, 64); err != nil {
			return fmt.Errorf("--lat %q: want degrees", *lat)
		}
		if q.Lon, err = strconv.ParseFloat(*lon, 64); err != nil {
			return fmt.Errorf("--lon %q: want degrees", *lon)
		}
		// The URL is the operator's own choice: loopback and private
		// addresses (a self-hosted Open-Meteo) are allowed.
		om := &weather.OpenMeteo{BaseURL: *baseURL, AllowPrivate: true, Timeout: *timeout, UserAgent: "cropkit"}
		if err := om.Validate(); err != nil {
			return fmt.Errorf("--url: %w", err)
		}
		src = om
	}
	days, err := src.Daily(ctx, q)
	if err != nil {
		return err
	}
	doc := archive.WeatherSeasonJSON(weather.Accumulate(days, params), false)
	data, err := json.MarshalIndent(doc, "", " ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if *out == "-" {
		_, err = stdout.Write(data)
		return err
	}
	if err := os.WriteFile(*out, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", *out, err)
	}
	fmt.Fprintf(stderr, "%s..%s %s: %d days, GDD %.1f, precipitation %.1f mm, %d frost days, %d heat days → %s\n",
		*fromS, *toS, params.Crop, len(doc.Daily), doc.Totals.GDD, doc.Totals.PrecipitationMM, doc.Totals.FrostDays, doc.Totals.HeatDays, *out)
	return nil
}
