package archive

import (
	"github.com/cropkit/cropkit/api"
	"github.com/cropkit/cropkit/weather"
)

// WeatherSeasonJSON is the wire form of a season. With optional, each day
// carries the quantities the source offers beyond temperature and rain
// (radiation, ET0, vapour pressure, wind); without, only the keys the CLI
// document names.
func WeatherSeasonJSON(s weather.Season, optional bool) api.WeatherSeason {
	out := api.WeatherSeason{Crop: s.Crop, BaseC: s.BaseC, Daily: make([]api.WeatherDay, len(s.Rows)),
		Totals: api.WeatherTotals{GDD: s.Totals.GDD, PrecipitationMM: s.Totals.PrecipitationMM, FrostDays: s.Totals.FrostDays, HeatDays: s.Totals.HeatDays}}
	if s.CapC != nil {
		c := *s.CapC
		out.CapC = &c
	}
	for i, r := range s.Rows {
		d := api.WeatherDay{Date: r.Date, TminC: r.TminC, TmaxC: r.TmaxC, TmeanC: r.TmeanC, PrecipitationMM: r.PrecipitationMM,
			GDD: r.GDD, GDDCum: r.GDDCum, PrecipitationCumMM: r.PrecipitationCumMM}
		if optional {
			d.FrostDay, d.HeatDay = r.TminC < weather.FrostBelowC, r.TmaxC > weather.HeatAboveC
			d.RadiationMJ, d.ET0MM, d.VapourPressureHPa, d.WindSpeedMS, d.WindMaxMS = r.RadiationMJ, r.ET0MM, r.VapourPressureHPa, r.WindSpeedMS, r.WindMaxMS
		}
		out.Daily[i] = d
	}
	return out
}

// API is the wire form of a field's weather season, with the optional
// quantities, the season's dates, the cell and the source's attribution.
func (fw FieldWeather) API() api.WeatherSeason {
	out := WeatherSeasonJSON(fw.Season, true)
	out.Field, out.SeasonStart, out.From, out.To = fw.Field.Name, fw.SeasonStart, fw.From, fw.To
	out.Source, out.Attribution, out.Cell = fw.Source, fw.Attribution, fw.Cell
	return out
}
