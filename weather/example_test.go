package weather_test

import (
	"fmt"
	"strings"

	"github.com/cropkit/cropkit/weather"
)

func ExampleAccumulate() {
	table, err := weather.ReadTable(strings.NewReader(`date,temperature_min (K),temperature_max (K),precipitation_flux (mm d-1)
2019-05-01,281.15,295.15,0
2019-05-02,285.15,305.15,4.5
`))
	if err != nil {
		panic(err)
	}
	p, _ := weather.ParamsFor("maize", nil, nil) // base 10 °C, cap 30 °C
	s := weather.Accumulate(table.All(), p)
	for _, r := range s.Rows {
		fmt.Printf("%s GDD %.2f cumulated %.2f rain %.1f mm\n", r.Date, r.GDD, r.GDDCum, r.PrecipitationCumMM)
	}
	fmt.Printf("heat days %d\n", s.Totals.HeatDays)
	// Output:
	// 2019-05-01 GDD 6.00 cumulated 6.00 rain 0.0 mm
	// 2019-05-02 GDD 11.00 cumulated 17.00 rain 4.5 mm
	// heat days 1
}
