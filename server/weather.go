package server

import (
	"bytes"
	"encoding/csv"
	"net/http"
	"strconv"

	"github.com/cropkit/cropkit/api"
	"github.com/cropkit/cropkit/archive"
)

// handleWeather answers a field's daily weather, growing degree days and
// season totals (GET/POST /fields/weather) as JSON or CSV.
func (s *Server) handleWeather(w http.ResponseWriter, r *http.Request, c *call) error {
	name, err := c.params.required("field_name")
	if err != nil {
		return err
	}
	req := archive.WeatherRequest{Field: name}
	for _, d := range []struct {
		dst       *string
		name, syn string
	}{{&req.From, "from", "start_date"}, {&req.To, "to", "end_date"}} {
		a, _, err := c.params.date(d.name)
		if err != nil {
			return err
		}
		b, _, err := c.params.date(d.syn)
		if err != nil {
			return err
		}
		switch {
		case a != "" && b != "" && a != b:
			return badRequest("parameters %s (%s) and %s (%s) disagree: give one", d.name, a, d.syn, b)
		case a != "":
			*d.dst = a
		default:
			*d.dst = b
		}
	}
	if req.From != "" && req.To != "" && req.To < req.From {
		return badRequest("to %s is before from %s", req.To, req.From)
	}
	if req.Season, _, err = c.params.date("season"); err != nil {
		return err
	}
	if req.Crop, _, err = c.params.str("crop"); err != nil {
		return err
	}
	for _, o := range []struct {
		dst  **float64
		name string
	}{{&req.BaseC, "base"}, {&req.CapC, "cap"}} {
		v, ok, err := c.params.float(o.name)
		if err != nil {
			return err
		}
		if ok {
			*o.dst = &v
		}
	}
	format, err := c.params.format()
	if err != nil {
		return err
	}
	fw, err := s.core.FieldWeather(r.Context(), c.user, req)
	if err != nil {
		return err
	}
	doc := fw.API()
	if format != "csv" {
		return writeJSON(w, http.StatusOK, doc)
	}
	data, err := weatherCSV(doc)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	return writeFile(w, data, archive.SafeFileName(doc.Field)+"_weather.csv", "")
}

// weatherCSV writes one row per day, then a "total" row holding the
// season's sums and the counts of frost and heat days.
func weatherCSV(doc api.WeatherSeason) ([]byte, error) {
	var buf bytes.Buffer
	cw := csv.NewWriter(&buf)
	cw.Write([]string{"field_name", "crop", "date", "tmin_c", "tmax_c", "tmean_c", "precipitation_mm", "gdd", "gdd_cum",
		"precipitation_cum_mm", "frost_day", "heat_day", "radiation_mj_m2", "et0_mm", "vapour_pressure_hpa", "wind_speed_ms", "wind_max_ms"})
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	opt := func(v *float64) string {
		if v == nil {
			return ""
		}
		return num(*v)
	}
	flag := func(b bool) string {
		if b {
			return "1"
		}
		return "0"
	}
	field, crop := csvText(doc.Field), csvText(doc.Crop)
	for _, d := range doc.Daily {
		cw.Write([]string{field, crop, d.Date, num(d.TminC), num(d.TmaxC), num(d.TmeanC), num(d.PrecipitationMM), num(d.GDD), num(d.GDDCum),
			num(d.PrecipitationCumMM), flag(d.FrostDay), flag(d.HeatDay),
			opt(d.RadiationMJ), opt(d.ET0MM), opt(d.VapourPressureHPa), opt(d.WindSpeedMS), opt(d.WindMaxMS)})
	}
	t := doc.Totals
	cw.Write([]string{field, crop, "total", "", "", "", num(t.PrecipitationMM), num(t.GDD), num(t.GDD), num(t.PrecipitationMM),
		strconv.Itoa(t.FrostDays), strconv.Itoa(t.HeatDays), "", "", "", "", ""})
	cw.Flush()
	return buf.Bytes(), cw.Error()
}
