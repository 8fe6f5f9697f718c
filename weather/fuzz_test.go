package weather_test

import (
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
