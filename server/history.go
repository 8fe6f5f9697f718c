package server

import (
	"bytes"
	"encoding/csv"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/cropkit/cropkit/api"
	"github.com/cropkit/cropkit/archive"
)

// handleHistory answers a field's index statistics through time (one row
// per usable date) as JSON or CSV, from the stored products only.
func (s *Server) handleHistory(w http.ResponseWriter, r *http.Request, c *call) error {
	name, err := c.params.required("field_name")
	if err != nil {
		return err
	}
	indices, err := agreeingLists(c.params, "index", "indices")
	if err != nil {
		return err
	}
	from, to, err := dateRange(c.params)
	if err != nil {
		return err
	}
	format, err := c.params.format()
	if err != nil {
		return err
	}
	sensor, _, err := c.params.str("sensor")
	if err != nil {
		return err
	}
	f, hist, err := s.core.HistoryFor(r.Context(), c.user, archive.HistoryQuery{Field: name, Indices: indices, From: from, To: to, Sensor: sensor})
	if err != nil {
		return err
	}
	if format != "csv" {
		return writeJSON(w, http.StatusOK, api.History{FieldName: f.Name, Indices: hist})
	}
	var buf bytes.Buffer
	cw := csv.NewWriter(&buf)
	cw.Write([]string{"field_name", "index", "date", "mean", "median", "std", "min", "max", "p25", "p75", "num",
		"field_pixels", "cloud_cover", "mean_variation", "previous_date", "scene", "sensor"})
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	names := make([]string, 0, len(hist))
	for ix := range hist {
		names = append(names, ix)
	}
	slices.Sort(names)
	for _, ix := range names {
		for _, row := range hist[ix] {
			prev := ""
			if row.PreviousDate != nil {
				prev = *row.PreviousDate
			}
			cw.Write([]string{csvText(f.Name), csvText(ix), csvText(row.Date), num(row.Mean), num(row.Median), num(row.Std), num(row.Min), num(row.Max),
				num(row.P25), num(row.P75), strconv.Itoa(row.Num), strconv.Itoa(row.FieldPixels), num(row.CloudCover),
				num(row.MeanVariation), csvText(prev), csvText(row.Scene), csvText(row.Sensor)})
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	return writeFile(w, buf.Bytes(), archive.SafeFileName(f.Name)+"_history.csv", "")
}

// csvText defuses a text cell a spreadsheet would run as a formula (OWASP's
// CSV injection rule): a leading =, +, -, @, tab or carriage return gets a
// ' in front. Only text cells go through it: numbers, negative ones
// included, stay numbers.
func csvText(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// agreeingLists is the list given by one or both of two synonymous
// parameters (index= and indices=): both given must name the same set, else a
// 400 naming both (no silent choice of one).
func agreeingLists(p params, a, b string) ([]string, error) {
	la, okA, err := p.list(a)
	if err != nil {
		return nil, err
	}
	lb, okB, err := p.list(b)
	if err != nil {
		return nil, err
	}
	switch {
	case !okA:
		return lb, nil
	case !okB:
		return la, nil
	}
	sa, sb := slices.Clone(la), slices.Clone(lb)
	slices.Sort(sa)
	slices.Sort(sb)
	if !slices.Equal(slices.Compact(sa), slices.Compact(sb)) {
		return nil, badRequest("parameters %s (%s) and %s (%s) disagree: give one", a, strings.Join(la, ","), b, strings.Join(lb, ","))
	}
	return la, nil
}
