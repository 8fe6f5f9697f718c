package weather_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/internal/netguard"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/weather"
	"github.com/cropkit/cropkit/weather/weathertest"
)

func f(x float64) *float64 { return &x }

func TestGDD(t *testing.T) {
	maize, err := weather.ParamsFor("Maize", nil, nil)
	require.NoError(t, err)
	beet, err := weather.ParamsFor("sugar_beets", nil, nil)
	require.NoError(t, err)
	for _, tc := range []struct {
		name       string
		p          weather.Params
		tmin, tmax float64
		want       float64
	}{
		{"maize warm day", maize, 14, 26, 10},            // (26+14)/2-10
		{"maize cap", maize, 20, 36, 15},                 // (30+20)/2-10
		{"maize cold night", maize, 4, 20, 5},            // (20+10)/2-10
		{"maize cold day", maize, -2, 8, 0},              // (8+10)/2-10 < 0
		{"sugar beet no cap", beet, 20, 36, 25},          // (36+20)/2-3
		{"sugar beet below base", beet, -5, 3, 0},        // (3+3)/2-3
		{"tmin above cap", maize, 32, 34, 21},            // (30+32)/2-10, as the formula says
		{"override", weather.Params{BaseC: 6}, 4, 12, 3}, // (12+6)/2-6
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.InDelta(t, tc.want, tc.p.GDD(tc.tmin, tc.tmax), 1e-12)
		})
	}
}

func TestParamsFor(t *testing.T) {
	for _, tc := range []struct {
		crop      string
		base, cap *float64
		wantBase  float64
		wantCap   *float64
		wantName  string
		err       string
	}{
		{crop: "maize", wantBase: 10, wantCap: f(30), wantName: "maize"},
		{crop: "Winter-Wheat", wantBase: 0, wantCap: f(26), wantName: "Winter-Wheat"},
		{crop: "winter barley", wantBase: 0, wantCap: f(26), wantName: "winter barley"},
		{crop: "barley", wantBase: 0, wantCap: f(26), wantName: "barley"},
		{crop: "sugar beet", wantBase: 3, wantName: "sugar beet"},
		{crop: " potatoes", wantBase: 7, wantName: "potatoes"},
		{crop: "permanent_grassland", wantBase: 5, wantName: "permanent_grassland"},
		{crop: "maize", base: f(8), wantBase: 8, wantCap: f(30), wantName: "maize"},
		{crop: "potato", cap: f(28), wantBase: 7, wantCap: f(28), wantName: "potato"},
		{crop: "sunflower", base: f(6), wantBase: 6, wantName: "sunflower"},
		{crop: "sunflower", err: "not in the table"},
		{crop: "", err: "crop or a base"},
		{crop: "maize", cap: f(5), err: "above the base"},
		{crop: "maize", base: f(100), err: "outside"},
	} {
		t.Run(tc.crop, func(t *testing.T) {
			p, err := weather.ParamsFor(tc.crop, tc.base, tc.cap)
			if tc.err != "" {
				require.ErrorIs(t, err, weather.ErrInvalid)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantName, p.Crop)
			assert.Equal(t, tc.wantBase, p.BaseC)
			assert.Equal(t, tc.wantCap, p.CapC)
		})
	}
}

func TestAccumulateCounts(t *testing.T) {
	days := []weather.Day{
		{Date: "2020-01-01", TminC: -3, TmaxC: 5, PrecipitationMM: 1.5},
		{Date: "2020-01-02", TminC: 0, TmaxC: 31, PrecipitationMM: 0},
		{Date: "2020-01-03", TminC: 12, TmaxC: 30, PrecipitationMM: 2.25},
	}
	s := weather.Accumulate(days, weather.Params{BaseC: 10, CapC: f(30)})
	assert.Equal(t, []float64{0, 10, 11}, []float64{s.Rows[0].GDD, s.Rows[1].GDD, s.Rows[2].GDD})
	assert.Equal(t, []float64{0, 10, 21}, []float64{s.Rows[0].GDDCum, s.Rows[1].GDDCum, s.Rows[2].GDDCum})
	assert.Equal(t, 3.75, s.Rows[2].PrecipitationCumMM)
	assert.Equal(t, weather.Totals{GDD: 21, PrecipitationMM: 3.75, FrostDays: 1, HeatDays: 1}, s.Totals)
}

func TestReadTable(t *testing.T) {
	for _, tc := range []struct {
		name, csv string
		err       string
		check     func(t *testing.T, d weather.Day)
	}{
		{name: "celsius without mean", csv: "date,tmin (°C),tmax (°C),precipitation (mm)\n2020-05-01,4,16,1.2\n",
			check: func(t *testing.T, d weather.Day) { assert.Equal(t, 10.0, d.TmeanC) }},
		{name: "fahrenheit, inch, km/h, kPa, W m-2",
			csv: "date,Tmin (F),Tmax (°F),rain (inch),wind_speed (km/h),vapour_pressure (kPa),radiation (W m-2)\n2020-05-01,32,50,1,36,1.2,100\n",
			check: func(t *testing.T, d weather.Day) {
				assert.InDelta(t, 0, d.TminC, 1e-12)
				assert.InDelta(t, 10, d.TmaxC, 1e-12)
				assert.InDelta(t, 25.4, d.PrecipitationMM, 1e-12)
				assert.InDelta(t, 10, *d.WindSpeedMS, 1e-12)
				assert.InDelta(t, 12, *d.VapourPressureHPa, 1e-12)
				assert.InDelta(t, 8.64, *d.RadiationMJ, 1e-12)
			}},
		{name: "unsorted dates", csv: "date,tmin (K),tmax (K),precipitation (m)\n2020-05-02,280,290,0.001\n2020-05-01,273.15,283.15,0\n",
			check: func(t *testing.T, d weather.Day) {
				assert.Equal(t, "2020-05-01", d.Date)
				assert.InDelta(t, 0, d.TminC, 1e-9)
			}},
		{name: "no date column", csv: "day,tmin (K)\n", err: `first column must be "date"`},
		{name: "unknown unit", csv: "date,tmin (Rankine),tmax (K),precipitation (mm)\n", err: `unknown unit "Rankine"`},
		{name: "no unit", csv: "date,tmin,tmax (K),precipitation (mm)\n", err: "names no unit"},
		{name: "no precipitation", csv: "date,tmin (K),tmax (K)\n2020-01-01,270,280\n", err: "no precipitation column"},
		{name: "bad date", csv: "date,tmin (K),tmax (K),precipitation (mm)\n2020-02-30,270,280,0\n", err: "line 2: date"},
		{name: "duplicate date", csv: "date,tmin (K),tmax (K),precipitation (mm)\n2020-02-01,270,280,0\n2020-02-01,270,280,0\n", err: "appears twice"},
		{name: "empty cell", csv: "date,tmin (K),tmax (K),precipitation (mm)\n2020-02-01,,280,0\n", err: "is empty"},
		{name: "not a number", csv: "date,tmin (K),tmax (K),precipitation (mm)\n2020-02-01,x,280,0\n", err: "not a number"},
		{name: "absurd value", csv: "date,tmin (°C),tmax (°C),precipitation (mm)\n2020-02-01,270,280,0\n", err: "outside"},
		{name: "tmax below tmin", csv: "date,tmin (°C),tmax (°C),precipitation (mm)\n2020-02-01,10,5,0\n", err: "below tmin"},
		{name: "no rows", csv: "date,tmin (K),tmax (K),precipitation (mm)\n", err: "no rows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table, err := weather.ReadTable(strings.NewReader(tc.csv))
			if tc.err != "" {
				require.ErrorIs(t, err, weather.ErrInvalid)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			tc.check(t, table.All()[0])
		})
	}
}

func TestTableOutOfRange(t *testing.T) {
	table, err := weather.ReadTableFile(testenv.DataDir(t, "weather", "flanders-31UES.csv"))
	require.NoError(t, err)
	from, _ := weather.ParseDate("2019-11-01")
	to, _ := weather.ParseDate("2019-12-05")
	_, err = table.Daily(context.Background(), weather.Query{From: from, To: to})
	require.ErrorIs(t, err, weather.ErrOutOfRange)
	var re *weather.RangeError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "2019-12-01", re.Missing)
	assert.Equal(t, "2018-08-01", re.First)
	assert.Equal(t, "2019-11-30", re.Last)
	_, err = table.Daily(context.Background(), weather.Query{From: to, To: from})
	require.ErrorIs(t, err, weather.ErrInvalid)
}

func TestCellOf(t *testing.T) {
	for _, tc := range []struct {
		lat, lon float64
		key      string
	}{
		{50.745, 4.06, "0.1:50.7:4.1"},
		{50.7499, 4.0499, "0.1:50.7:4"},
		{50.76, 4.14, "0.1:50.8:4.1"},
		{-33.87, -70.66, "0.1:-33.9:-70.7"},
	} {
		assert.Equal(t, tc.key, weather.CellOf(tc.lat, tc.lon, 0).Key())
	}
	assert.Equal(t, "0.25:50.75:4", weather.CellOf(50.745, 4.06, 0.25).Key())
}

func fixtureDays(t *testing.T) []weather.Day {
	table, err := weather.ReadTableFile(testenv.DataDir(t, "weather", "flanders-31UES.csv"))
	require.NoError(t, err)
	return table.All()
}

func mustDate(s string) time.Time {
	d, err := weather.ParseDate(s)
	if err != nil {
		panic(err)
	}
	return d
}

func TestOpenMeteoMatchesTable(t *testing.T) {
	days := fixtureDays(t)
	srv := weathertest.New(days)
	defer srv.Close()
	now := func() time.Time { return time.Date(2019, 10, 10, 12, 0, 0, 0, time.UTC) }
	om := &weather.OpenMeteo{BaseURL: srv.URL, AllowPrivate: true, Now: now}
	got, err := om.Daily(context.Background(), weather.Query{Lat: 50.745, Lon: 4.06, From: mustDate("2019-09-20"), To: mustDate("2019-10-12")})
	require.NoError(t, err)
	require.Len(t, got, 23)
	want := days[len(days)-72 : len(days)-49] // 2019-09-20..2019-10-12
	require.Equal(t, "2019-09-20", want[0].Date)
	for i := range got {
		assert.Equal(t, want[i].Date, got[i].Date)
		assert.Equal(t, want[i].TminC, got[i].TminC)
		assert.Equal(t, want[i].TmaxC, got[i].TmaxC)
		assert.Equal(t, want[i].TmeanC, got[i].TmeanC)
		assert.Equal(t, want[i].PrecipitationMM, got[i].PrecipitationMM)
		assert.Equal(t, *want[i].RadiationMJ, *got[i].RadiationMJ)
	}
	q := srv.Queries()
	require.Len(t, q, 2, "the archive for the past, the forecast for the last week")
	assert.Contains(t, q[0], "start_date=2019-09-20")
	assert.Contains(t, q[0], "end_date=2019-10-02")
	assert.Contains(t, q[1], "start_date=2019-10-03")
	assert.Contains(t, q[1], "end_date=2019-10-12")
	assert.Contains(t, q[0], "daily=temperature_2m_max%2Ctemperature_2m_min%2Ctemperature_2m_mean%2Cprecipitation_sum")
	assert.Contains(t, q[0], "timezone=UTC")
}

func TestOpenMeteoEndpoints(t *testing.T) {
	days := fixtureDays(t)
	srv := weathertest.New(days)
	defer srv.Close()
	q := weather.Query{Lat: 50.745, Lon: 4.06, From: mustDate("2019-05-01"), To: mustDate("2019-05-03")}
	for _, base := range []string{srv.URL + "/v1/forecast", srv.URL + "/?apikey=k", srv.URL + "/v1/archive/?apikey=k"} {
		got, err := (&weather.OpenMeteo{BaseURL: base, AllowPrivate: true}).Daily(context.Background(), q)
		require.NoError(t, err, base)
		assert.Len(t, got, 3)
	}
	srv.FailNext(500, 1)
	_, err := (&weather.OpenMeteo{BaseURL: srv.URL + "/?apikey=secret1", AllowPrivate: true, MaxRetries: -1}).Daily(context.Background(), q)
	require.ErrorIs(t, err, weather.ErrUnavailable)
	assert.NotContains(t, err.Error(), "secret1", "the key stays out of errors")
	assert.Contains(t, err.Error(), "apikey=REDACTED")
	qs := srv.Queries()
	require.Len(t, qs, 4)
	assert.NotContains(t, qs[0], "apikey")
	assert.Contains(t, qs[1], "apikey=k")
	assert.Contains(t, qs[2], "apikey=k")
	assert.Contains(t, qs[2], "start_date=2019-05-01")
}

func TestOpenMeteoFailures(t *testing.T) {
	days := fixtureDays(t)
	q := weather.Query{Lat: 50.745, Lon: 4.06, From: mustDate("2019-05-01"), To: mustDate("2019-05-31")}
	fast := func(url string) *weather.OpenMeteo {
		return &weather.OpenMeteo{BaseURL: url, AllowPrivate: true, MaxRetries: 2, BaseBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}
	}
	t.Run("429 then data", func(t *testing.T) {
		srv := weathertest.New(days)
		defer srv.Close()
		srv.FailNext(http.StatusTooManyRequests, 2)
		got, err := fast(srv.URL).Daily(context.Background(), q)
		require.NoError(t, err)
		assert.Len(t, got, 31)
		assert.Equal(t, 3, srv.Requests())
	})
	t.Run("5xx after the retries", func(t *testing.T) {
		srv := weathertest.New(days)
		defer srv.Close()
		srv.FailNext(http.StatusServiceUnavailable, 10)
		_, err := fast(srv.URL).Daily(context.Background(), q)
		require.ErrorIs(t, err, weather.ErrUnavailable)
		var ue *weather.UpstreamError
		require.ErrorAs(t, err, &ue)
		assert.Equal(t, 503, ue.Status)
		assert.Equal(t, 3, ue.Attempts)
		assert.Equal(t, 3, srv.Requests())
	})
	t.Run("400 not retried", func(t *testing.T) {
		srv := weathertest.New(days)
		defer srv.Close()
		late := q
		late.From, late.To = mustDate("2020-01-01"), mustDate("2020-01-31")
		_, err := fast(srv.URL).Daily(context.Background(), late)
		require.ErrorIs(t, err, weather.ErrInvalid)
		assert.Contains(t, err.Error(), "out of allowed range")
		assert.Equal(t, 1, srv.Requests())
	})
	t.Run("nulls are missing days", func(t *testing.T) {
		srv := weathertest.New(days[:len(days)-10]) // ends 2019-11-20
		defer srv.Close()
		srv2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"daily_units":{"temperature_2m_max":"°C","temperature_2m_min":"°C","precipitation_sum":"mm"},` +
				`"daily":{"time":["2019-05-01","2019-05-02"],"temperature_2m_max":[20,null],"temperature_2m_min":[10,null],"precipitation_sum":[0,null]}}`))
		}))
		defer srv2.Close()
		q2 := q
		q2.To = mustDate("2019-05-02")
		_, err := fast(srv2.URL).Daily(context.Background(), q2)
		var re *weather.RangeError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, "2019-05-02", re.Missing)
	})
	t.Run("answer too large", func(t *testing.T) {
		srv := weathertest.New(days)
		defer srv.Close()
		om := fast(srv.URL)
		om.MaxBytes = 1000
		_, err := om.Daily(context.Background(), q)
		require.ErrorIs(t, err, weather.ErrUnavailable)
		assert.Contains(t, err.Error(), "more than 1000 bytes")
		assert.Equal(t, 1, srv.Requests(), "not retried")
	})
	t.Run("an API without the optional variables", func(t *testing.T) {
		srv := weathertest.New(days)
		defer srv.Close()
		srv.Refuse = []string{"temperature_2m_mean", "et0_fao_evapotranspiration"}
		got, err := fast(srv.URL).Daily(context.Background(), q)
		require.NoError(t, err)
		require.Len(t, got, 31)
		assert.Equal(t, (got[0].TminC+got[0].TmaxC)/2, got[0].TmeanC, "the mean from the extremes")
		assert.Nil(t, got[0].RadiationMJ)
		assert.Equal(t, 2, srv.Requests())
		assert.Contains(t, srv.Queries()[1], "daily=temperature_2m_max%2Ctemperature_2m_min%2Cprecipitation_sum&")
	})
	t.Run("SSRF guard", func(t *testing.T) {
		srv := weathertest.New(days)
		defer srv.Close()
		om := &weather.OpenMeteo{BaseURL: srv.URL}
		_, err := om.Daily(context.Background(), q)
		require.ErrorIs(t, err, netguard.ErrForbiddenAddress)
		assert.Equal(t, 0, srv.Requests())
		_, err = (&weather.OpenMeteo{BaseURL: "http://169.254.169.254"}).Daily(context.Background(), q)
		require.ErrorIs(t, err, netguard.ErrForbiddenAddress)
	})
}

func TestFixtureRefusesLikeOpenMeteo(t *testing.T) {
	srv := weathertest.New(fixtureDays(t))
	defer srv.Close()
	for _, tc := range []struct{ query, reason string }{
		{"longitude=4&start_date=2019-01-01&end_date=2019-01-02&daily=temperature_2m_max", "Parameter 'latitude' is missing"},
		{"latitude=50&longitude=4&start_date=2019-1-1&end_date=2019-01-02&daily=temperature_2m_max", "Invalid date format"},
		{"latitude=50&longitude=4&start_date=2019-01-03&end_date=2019-01-02&daily=temperature_2m_max", "End-date must be larger"},
		{"latitude=50&longitude=4&start_date=2019-01-01&end_date=2019-01-02&daily=snow", "invalid String value snow"},
		{"latitude=95&longitude=4&start_date=2019-01-01&end_date=2019-01-02&daily=temperature_2m_max", "Parameter 'latitude' must be"},
		{"latitude=50&longitude=4&start_date=2019-01-01&end_date=2019-01-02&daily=temperature_2m_max&timezone=Mars/Olympus", "Invalid timezone"},
	} {
		resp, err := http.Get(srv.URL + "/v1/archive?" + tc.query)
		require.NoError(t, err)
		var body struct {
			Error  bool
			Reason string
		}
		require.NoError(t, decodeJSON(resp, &body))
		assert.Equal(t, 400, resp.StatusCode)
		assert.True(t, body.Error)
		assert.Contains(t, body.Reason, tc.reason)
	}
}

func decodeJSON(resp *http.Response, v any) error {
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}
