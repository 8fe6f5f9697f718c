package weather_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/weather"
)

// FuzzReadTable: any input is read or refused with ErrInvalid, never a
// panic; what is read holds finite, ordered days.
func FuzzReadTable(f *testing.F) {
	if data, err := os.ReadFile(testenv.DataDir(f, "weather", "flanders-31UES.csv")); err == nil {
		f.Add(string(data[:min(len(data), 2000)]))
	}
	f.Add("date,tmin (°C),tmax (°C),precipitation (mm)\n2020-05-01,4,16,1.2\n")
	f.Add("date,tmin (K),tmax (K),precipitation (m),wind_speed (km/h)\n2020-05-02,280,290,0.001,\n2020-05-01,273.15,283.15,0,3\n")
	f.Fuzz(func(t *testing.T, s string) {
		table, err := weather.ReadTable(strings.NewReader(s))
		if err != nil {
			return
		}
		days := table.All()
		for i, d := range days {
			if d.TmaxC < d.TminC || (i > 0 && days[i-1].Date >= d.Date) {
				t.Fatalf("day %d: %+v", i, d)
			}
		}
	})
}

// FuzzDecodeDaily: any answer body is decoded or refused, never a panic;
// decoded days are valid and ordered.
func FuzzDecodeDaily(f *testing.F) {
	f.Add(`{"daily_units":{"temperature_2m_max":"°C","temperature_2m_min":"°C","precipitation_sum":"mm"},"daily":{"time":["2019-05-01","2019-05-02"],"temperature_2m_max":[20,null],"temperature_2m_min":[10,null],"precipitation_sum":[0,null]}}`)
	f.Add(`{"daily_units":{"temperature_2m_max":"°F","temperature_2m_min":"°F","precipitation_sum":"inch","shortwave_radiation_sum":"MJ/m²"},"daily":{"time":["2019-05-01"],"temperature_2m_max":[70],"temperature_2m_min":[50],"precipitation_sum":[0.1],"shortwave_radiation_sum":[20.5]}}`)
	f.Add(`{"error":true,"reason":"Parameter 'start_date' is out of allowed range"}`)
	f.Fuzz(func(t *testing.T, s string) {
		var r weather.Response
		if json.Unmarshal([]byte(s), &r) != nil {
			return
		}
		days, err := weather.DecodeDaily(r)
		if err != nil {
			return
		}
		for i, d := range days {
			if d.TmaxC < d.TminC || (i > 0 && days[i-1].Date > d.Date) {
				t.Fatalf("day %d: %+v", i, d)
			}
		}
	})
}
