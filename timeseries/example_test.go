package timeseries_test

import (
	"fmt"
	"time"

	"github.com/cropkit/cropkit/timeseries"
)

// A field seen every ten days, with a 40-day cloudy gap: the daily series
// fills it, its interval wider inside the gap than on the observed days.
func ExampleDaily() {
	date := func(s string) time.Time { t, _ := time.Parse(time.DateOnly, s); return t }
	var obs []timeseries.Observation
	for _, o := range []struct {
		date  string
		ndvi  float64
		clear float64
	}{
		{"2019-03-12", 0.35, 1}, {"2019-03-22", 0.37, 1}, {"2019-04-01", 0.45, 1}, {"2019-04-11", 0.49, 1},
		{"2019-04-21", 0.60, 0.8}, {"2019-05-01", 0.64, 1}, {"2019-06-10", 0.86, 1}, {"2019-06-20", 0.83, 1},
		{"2019-06-30", 0.87, 1}, {"2019-07-10", 0.79, 1}, {"2019-07-20", 0.81, 1},
	} {
		obs = append(obs, timeseries.Observation{Date: date(o.date), Value: o.ndvi, Sensor: "sentinel-2a", Clear: o.clear})
	}
	days, err := timeseries.Daily(obs, date("2019-05-01"), date("2019-06-10"), timeseries.Options{Range: [2]float64{-1, 1}})
	if err != nil {
		panic(err)
	}
	for _, d := range []timeseries.Day{days[0], days[10], days[20], days[40]} {
		seen := "no image        "
		if d.Sensor != "" {
			seen = fmt.Sprintf("%s %.2f", d.Sensor, d.Observed)
		}
		fmt.Printf("%s %s  estimate %.2f  80 %% interval %.2f–%.2f\n", d.Date.Format(time.DateOnly), seen, d.Estimate, d.Lower, d.Upper)
	}
	// Output:
	// 2019-05-01 sentinel-2a 0.64  estimate 0.64  80 % interval 0.60–0.69
	// 2019-05-11 no image          estimate 0.70  80 % interval 0.65–0.76
	// 2019-05-21 no image          estimate 0.76  80 % interval 0.70–0.81
	// 2019-06-10 sentinel-2a 0.86  estimate 0.85  80 % interval 0.80–0.90
}
