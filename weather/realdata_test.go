package weather_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/weather"
)

// referenceScript recomputes a season from the CSV with Python's csv
// module and plain arithmetic: K → °C, the capped-average GDD, running sums
// and counts. It shares no code with the package.
const referenceScript = `
import csv, json, sys
path, start, end = sys.argv[1], sys.argv[2], sys.argv[3]
days = []
with open(path, newline="") as f:
    for r in csv.DictReader(f):
        if start <= r["date"] <= end:
            days.append(r)
out = []
for spec in sys.argv[4:]:
    b, c = spec.split("/")
    base = float(b)
    cap = None if c == "none" else float(c)
    rows = []
    gcum = pcum = 0.0
    frost = heat = 0
    for r in days:
        tmin = float(r["temperature_min (K)"]) - 273.15
        tmax = float(r["temperature_max (K)"]) - 273.15
        tmean = float(r["temperature_mean (K)"]) - 273.15
        p = float(r["precipitation_flux (mm d-1)"])
        hi = tmax if cap is None else min(tmax, cap)
        g = max(0.0, (hi + max(tmin, base)) / 2 - base)
        gcum += g
        pcum += p
        frost += tmin < 0
        heat += tmax > 30
        rows.append(dict(date=r["date"], tmin=tmin, tmax=tmax, tmean=tmean, p=p, gdd=g, gcum=gcum, pcum=pcum))
    out.append(dict(rows=rows, gdd=gcum, p=pcum, frost=frost, heat=heat))
json.dump(out, sys.stdout)
`

type reference struct {
	Rows []struct {
		Date                      string
		Tmin, Tmax, Tmean, P, GDD float64
		Gcum                      float64 `json:"gcum"`
		Pcum                      float64 `json:"pcum"`
	}
	GDD, P      float64
	Frost, Heat int
}

func TestSeasonMatchesIndependentComputation(t *testing.T) {
	python := testenv.RequireTool(t, "python3")
	seasons := []struct{ table, from, to string }{
		{"flanders-31UDS.csv", "2017-10-15", "2018-07-31"}, // a winter cereal season: frost days
		{"flanders-31UDS.csv", "2018-04-20", "2018-10-15"}, // a maize season of the 2018 heat: heat days
		{"flanders-31UES.csv", "2018-10-01", "2019-08-10"},
		{"flanders-31UES.csv", "2019-03-15", "2019-10-31"},
	}
	crops := weather.Crops()
	require.Len(t, crops, 8)
	for _, s := range seasons {
		path := testenv.DataDir(t, "weather", s.table)
		table, err := weather.ReadTableFile(path)
		require.NoError(t, err)
		from, _ := weather.ParseDate(s.from)
		to, _ := weather.ParseDate(s.to)
		days, err := table.Daily(context.Background(), weather.Query{Lat: 50.8, Lon: 3.0, From: from, To: to})
		require.NoError(t, err)
		require.Len(t, days, weather.Days(from, to))
		var sawFrost, sawHeat bool
		args := []string{"-c", referenceScript, path, s.from, s.to}
		params := make([]weather.Params, len(crops))
		for i, c := range crops {
			params[i], err = weather.ParamsFor(c.Name, nil, nil)
			require.NoError(t, err)
			capArg := "none"
			if params[i].CapC != nil {
				capArg = jsonNumber(*params[i].CapC)
			}
			args = append(args, jsonNumber(params[i].BaseC)+"/"+capArg)
		}
		out, err := exec.Command(python, args...).Output()
		require.NoError(t, err)
		var refs []reference
		require.NoError(t, json.Unmarshal(out, &refs))
		require.Len(t, refs, len(crops))
		for i, c := range crops {
			t.Run(s.table+"/"+s.from+"/"+c.Name, func(t *testing.T) {
				ref, p := refs[i], params[i]
				season := weather.Accumulate(days, p)
				require.Len(t, season.Rows, len(ref.Rows))
				for i, r := range season.Rows {
					want := ref.Rows[i]
					require.Equal(t, want.Date, r.Date)
					assert.InDelta(t, want.Tmin, r.TminC, 1e-9, r.Date)
					assert.InDelta(t, want.Tmax, r.TmaxC, 1e-9, r.Date)
					assert.InDelta(t, want.Tmean, r.TmeanC, 1e-9, r.Date)
					assert.InDelta(t, want.P, r.PrecipitationMM, 1e-9, r.Date)
					assert.InDelta(t, want.GDD, r.GDD, 1e-9, r.Date)
					assert.InDelta(t, want.Gcum, r.GDDCum, 1e-9, r.Date)
					assert.InDelta(t, want.Pcum, r.PrecipitationCumMM, 1e-9, r.Date)
				}
				assert.InDelta(t, ref.GDD, season.Totals.GDD, 1e-9)
				assert.InDelta(t, ref.P, season.Totals.PrecipitationMM, 1e-9)
				assert.Equal(t, ref.Frost, season.Totals.FrostDays)
				assert.Equal(t, ref.Heat, season.Totals.HeatDays)
				assert.Greater(t, season.Totals.GDD, 100.0, "a season has thermal time")
				sawFrost = sawFrost || season.Totals.FrostDays > 0
				sawHeat = sawHeat || season.Totals.HeatDays > 0
			})
		}
		if s.from == "2017-10-15" {
			assert.True(t, sawFrost, "the winter season has frost days")
		}
		if s.from == "2018-04-20" {
			assert.True(t, sawHeat, "summer 2018 has heat days")
		}
	}
}

func jsonNumber(x float64) string {
	b, _ := json.Marshal(x)
	return string(b)
}

// TestTableUnits: the AgERA5 header units are converted (K → °C,
// J m-2 d-1 → MJ m-2), and the optional columns are read.
func TestTableUnits(t *testing.T) {
	table, err := weather.ReadTableFile(testenv.DataDir(t, "weather", "flanders-31UDS.csv"))
	require.NoError(t, err)
	first, last := table.Span()
	assert.Equal(t, "2017-08-01", first)
	assert.Equal(t, "2018-11-30", last)
	d := table.All()[0] // 2017-08-01,286.5,295.9,291,284,0.09,1.709e+07,13.07,1.7
	assert.InDelta(t, 13.35, d.TminC, 1e-9)
	assert.InDelta(t, 22.75, d.TmaxC, 1e-9)
	assert.InDelta(t, 17.85, d.TmeanC, 1e-9)
	assert.InDelta(t, 0.09, d.PrecipitationMM, 1e-12)
	require.NotNil(t, d.RadiationMJ)
	assert.InDelta(t, 17.09, *d.RadiationMJ, 1e-9)
	require.NotNil(t, d.VapourPressureHPa)
	assert.InDelta(t, 13.07, *d.VapourPressureHPa, 1e-12)
	require.NotNil(t, d.WindSpeedMS)
	assert.InDelta(t, 1.7, *d.WindSpeedMS, 1e-12)
	assert.Nil(t, d.ET0MM)
	assert.Len(t, table.All(), 487)
}
