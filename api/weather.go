package api

// WeatherSeason is a field's (or a point's) daily weather with thermal
// time over a season: GET /fields/weather's JSON answer and the document
// `cropkit weather` writes. Sums run from the first day (From).
type WeatherSeason struct {
	// Field, From, To, Source and Attribution are set by the server
	// (the CLI writes only the keys below them).
	Field string `json:"field,omitempty"`
	// SeasonStart is the start_date of the metadata season used, if any.
	SeasonStart string `json:"season_start,omitempty"`
	From        string `json:"from,omitempty"`
	To          string `json:"to,omitempty"`
	// Source names the weather source ("open-meteo", "table"); Attribution
	// is the credit its licence asks to show with the data.
	Source      string `json:"source,omitempty"`
	Attribution string `json:"attribution,omitempty"`
	// Cell is the weather-grid cell whose weather the field gets
	// ("<size°>:<lat>:<lon>" of its centre).
	Cell string `json:"cell,omitempty"`

	Crop  string  `json:"crop"`
	BaseC float64 `json:"base_c"`
	// CapC is null for crops whose thermal time is not capped.
	CapC   *float64      `json:"cap_c"`
	Daily  []WeatherDay  `json:"daily"`
	Totals WeatherTotals `json:"totals"`
}

// WeatherDay is one day: weather in °C and mm, that day's growing degree
// days and the sums from the season's first day. The optional quantities
// are present when the source offers them.
type WeatherDay struct {
	Date               string  `json:"date"`
	TminC              float64 `json:"tmin_c"`
	TmaxC              float64 `json:"tmax_c"`
	TmeanC             float64 `json:"tmean_c"`
	PrecipitationMM    float64 `json:"precipitation_mm"`
	GDD                float64 `json:"gdd"`
	GDDCum             float64 `json:"gdd_cum"`
	PrecipitationCumMM float64 `json:"precipitation_cum_mm"`

	// FrostDay (Tmin < 0 °C) and HeatDay (Tmax > 30 °C) mark the days
	// the totals count (server answers only).
	FrostDay bool `json:"frost_day,omitempty"`
	HeatDay  bool `json:"heat_day,omitempty"`

	RadiationMJ       *float64 `json:"radiation_mj_m2,omitempty"`
	ET0MM             *float64 `json:"et0_mm,omitempty"`
	VapourPressureHPa *float64 `json:"vapour_pressure_hpa,omitempty"`
	WindSpeedMS       *float64 `json:"wind_speed_ms,omitempty"`
	WindMaxMS         *float64 `json:"wind_max_ms,omitempty"`
}

// WeatherTotals are a season's sums and counts: frost days have Tmin < 0
// °C, heat days Tmax > 30 °C.
type WeatherTotals struct {
	GDD             float64 `json:"gdd"`
	PrecipitationMM float64 `json:"precipitation_mm"`
	FrostDays       int     `json:"frost_days"`
	HeatDays        int     `json:"heat_days"`
}
