// Package weather reads daily weather for a point and turns it into the
// quantities agronomists time their work by: growing degree days (thermal
// time), accumulated precipitation, frost days and heat days.
//
// # Sources
//
// A Source answers a Query (a point and an inclusive range of dates) with
// one Day per date. Two implementations:
//   - OpenMeteo: an Open-Meteo-compatible HTTP API (/v1/archive for the
//     past, /v1/forecast for the last days and the coming ones), with
//     retries and backoff on 408/429/5xx, a timeout per attempt, a bound on
//     the answer's size and the project's SSRF guard;
//   - Table: a local CSV of daily rows ("date" then one column per
//     variable, each header naming its unit in parentheses, as in
//     "temperature_min (K)"); units are converted to the package's (°C,
//     mm, MJ m-2 d-1, hPa, m s-1).
//
// # Thermal time
//
// Daily growing degree days follow the capped average method:
//
//	GDD = max(0, (min(Tmax, Tcap) + max(Tmin, Tbase)) / 2 − Tbase)
//
// where a crop without a cap uses Tmax unchanged. Crops lists the base and
// cap temperatures of common crops; Params overrides them. Accumulate sums
// GDD and precipitation day by day from the first day of the series and
// counts frost days (Tmin < 0 °C) and heat days (Tmax > 30 °C).
//
// # Grid cells
//
// CellOf snaps a point to the weather grid (0.1° by default, Open-Meteo's
// finest reanalysis grid): every point of a cell is answered with the
// weather of the cell's centre, so fields sharing a cell share one request.
package weather
