package weather

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// MaxTableRows bounds the rows ReadTable accepts (about 270 years of days).
const MaxTableRows = 100000

// Table is a local daily weather table: one place, consecutive or not
// dates, read once into memory. It is a Source that ignores the query's
// point (a table describes one place; a caller choosing among tables does
// so by place). It is safe for concurrent use.
type Table struct {
	days  []Day          // by date
	index map[string]int // date → position in days
}

// columnNames maps accepted header names (lower case, without the unit) to
// variables: AgERA5's names, Open-Meteo's and short ones.
var columnNames = map[string]variable{
	"temperature_min": varTmin, "temperature_2m_min": varTmin, "tmin": varTmin, "min_temperature": varTmin,
	"temperature_max": varTmax, "temperature_2m_max": varTmax, "tmax": varTmax, "max_temperature": varTmax,
	"temperature_mean": varTmean, "temperature_2m_mean": varTmean, "tmean": varTmean, "mean_temperature": varTmean,
	"precipitation_flux": varPrecip, "precipitation_sum": varPrecip, "precipitation": varPrecip, "rain": varPrecip, "precip": varPrecip,
	"solar_radiation_flux": varRadiation, "shortwave_radiation_sum": varRadiation, "radiation": varRadiation,
	"et0_fao_evapotranspiration": varET0, "et0": varET0, "reference_evapotranspiration": varET0,
	"vapour_pressure": varVapour, "vapor_pressure": varVapour,
	"wind_speed": varWind, "wind_speed_10m_mean": varWind, "wind_speed_mean": varWind,
	"wind_speed_10m_max": varWindMax, "wind_speed_max": varWindMax,
}

// headerRe splits "name (unit)".
var headerRe = regexp.MustCompile(`^\s*([^()]+?)\s*(?:\(([^()]*)\))?\s*$`)

// tableColumn is one recognised column of a table.
type tableColumn struct {
	pos  int
	v    variable
	conv converter
}

// ReadTableFile reads the table at path (see ReadTable).
func ReadTableFile(path string) (*Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("weather table: %w", err)
	}
	defer f.Close()
	t, err := ReadTable(f)
	if err != nil {
		return nil, fmt.Errorf("weather table %s: %w", path, err)
	}
	return t, nil
}

// ReadTable reads a daily CSV: a header row whose first column is "date"
// and whose other columns are "name (unit)", then one row per date
// (YYYY-MM-DD, each at most once, in any order). The minimum and maximum
// temperature and the precipitation are required, in a unit the header
// names (K, °C or °F; mm, mm d-1 or m; …); the mean temperature, when
// absent, is (Tmin+Tmax)/2. Columns it does not know (dewpoint) are
// ignored; a known column with an unknown unit is an error. An empty cell
// in a required column is an error naming its row.
func ReadTable(r io.Reader) (*Table, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	cr.Comment = '#'
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrInvalid, err)
	}
	if len(header) == 0 || strings.ToLower(strings.TrimSpace(strings.TrimPrefix(header[0], "\ufeff"))) != "date" {
		return nil, fmt.Errorf("%w: the first column must be \"date\"", ErrInvalid)
	}
	var cols []tableColumn
	seen := map[variable]string{}
	for i, h := range header[1:] {
		m := headerRe.FindStringSubmatch(h)
		if m == nil {
			continue
		}
		v, ok := columnNames[strings.ToLower(m[1])]
		if !ok {
			continue
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("%w: columns %q and %q hold the same quantity", ErrInvalid, prev, h)
		}
		if m[2] == "" {
			return nil, fmt.Errorf("%w: column %q names no unit (want \"%s (unit)\")", ErrInvalid, h, m[1])
		}
		conv, err := unitConverter(v.kind(), m[2])
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", h, err)
		}
		seen[v] = h
		cols = append(cols, tableColumn{pos: i + 1, v: v, conv: conv})
	}
	for _, req := range []struct {
		v    variable
		name string
	}{{varTmin, "minimum temperature"}, {varTmax, "maximum temperature"}, {varPrecip, "precipitation"}} {
		if _, ok := seen[req.v]; !ok {
			return nil, fmt.Errorf("%w: no %s column", ErrInvalid, req.name)
		}
	}
	_, hasMean := seen[varTmean]
	t := &Table{index: map[string]int{}}
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		if len(t.days) >= MaxTableRows {
			return nil, fmt.Errorf("%w: more than %d rows", ErrInvalid, MaxTableRows)
		}
		date := strings.TrimSpace(rec[0])
		if _, err := time.Parse(time.DateOnly, date); err != nil {
			return nil, fmt.Errorf("%w: line %d: date %q: want YYYY-MM-DD", ErrInvalid, line, rec[0])
		}
		if _, dup := t.index[date]; dup {
			return nil, fmt.Errorf("%w: line %d: date %s appears twice", ErrInvalid, line, date)
		}
		d := Day{Date: date}
		for _, c := range cols {
			s := strings.TrimSpace(rec[c.pos])
			if s == "" || strings.EqualFold(s, "nan") || strings.EqualFold(s, "na") {
				switch c.v {
				case varTmin, varTmax, varPrecip, varTmean:
					return nil, fmt.Errorf("%w: line %d: %s is empty", ErrInvalid, line, header[c.pos])
				}
				continue
			}
			x, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, fmt.Errorf("%w: line %d: %s %q is not a number", ErrInvalid, line, header[c.pos], s)
			}
			c.v.set(&d, c.conv(x))
		}
		if !hasMean {
			d.TmeanC = (d.TminC + d.TmaxC) / 2
		}
		if err := checkDay(d); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		t.index[date] = len(t.days)
		t.days = append(t.days, d)
	}
	if len(t.days) == 0 {
		return nil, fmt.Errorf("%w: no rows", ErrInvalid)
	}
	sortDays(t.days)
	for i, d := range t.days {
		t.index[d.Date] = i
	}
	return t, nil
}

// Span is the first and last date of the table.
func (t *Table) Span() (first, last string) { return t.days[0].Date, t.days[len(t.days)-1].Date }

// All is every day of the table, by date (a copy).
func (t *Table) All() []Day { return append([]Day(nil), t.days...) }

// Daily returns the table's days q.From..q.To; a date the table lacks is a
// *RangeError naming it and the table's span.
func (t *Table) Daily(ctx context.Context, q Query) ([]Day, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	n := Days(q.From, q.To)
	out := make([]Day, 0, n)
	for i := range n {
		date := q.From.AddDate(0, 0, i).Format(time.DateOnly)
		j, ok := t.index[date]
		if !ok {
			first, last := t.Span()
			return nil, &RangeError{From: q.From.Format(time.DateOnly), To: q.To.Format(time.DateOnly), First: first, Last: last, Missing: date}
		}
		out = append(out, t.days[j])
	}
	return out, nil
}
