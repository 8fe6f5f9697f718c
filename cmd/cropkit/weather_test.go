package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/weather"
	"github.com/cropkit/cropkit/weather/weathertest"
)

// runWeatherCLI runs `cropkit weather args...` and returns its exit code,
// stderr and the decoded --out document (keys kept as the JSON has them).
func runWeatherCLI(t *testing.T, args ...string) (int, string, map[string]any) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out.json")
	var stderr strings.Builder
	code := run(context.Background(), append(append([]string{"weather"}, args...), "--out", out), strings.NewReader(""), io.Discard, &stderr)
	data, err := os.ReadFile(out)
	if err != nil {
		return code, stderr.String(), nil
	}
	var doc map[string]any
	require.NoError(t, json.Unmarshal(data, &doc))
	return code, stderr.String(), doc
}

func TestWeatherCLI(t *testing.T) {
	csv := testenv.DataDir(t, "weather", "flanders-31UDS.csv")
	table, err := weather.ReadTableFile(csv)
	require.NoError(t, err)
	srv := weathertest.New(table.All())
	defer srv.Close()
	for _, tc := range []struct {
		crop     string
		extra    []string
		base     float64
		cap      any
		from, to string
	}{
		{crop: "maize", base: 10, cap: 30.0, from: "2018-04-25", to: "2018-10-10"},
		{crop: "winter wheat", base: 0, cap: 26.0, from: "2017-10-20", to: "2018-07-20"},
		{crop: "sugar beet", base: 3, cap: nil, from: "2018-03-20", to: "2018-10-30"},
		{crop: "winter_barley", base: 0, cap: 26.0, from: "2017-10-01", to: "2018-07-10"},
		{crop: "Potato", base: 7, cap: nil, from: "2018-04-15", to: "2018-09-20"},
		{crop: "grassland", base: 5, cap: nil, from: "2018-03-01", to: "2018-10-31"},
		{crop: "maize", extra: []string{"--base", "8", "--cap", "32"}, base: 8, cap: 32.0, from: "2018-05-01", to: "2018-05-31"},
		{crop: "sunflower", extra: []string{"--base", "6"}, base: 6, cap: nil, from: "2018-05-01", to: "2018-09-30"},
	} {
		t.Run(tc.crop+"/"+tc.from, func(t *testing.T) {
			code, stderr, doc := runWeatherCLI(t, append([]string{"--csv", csv, "--from", tc.from, "--to", tc.to, "--crop", tc.crop}, tc.extra...)...)
			require.Equal(t, 0, code, stderr)
			assert.Equal(t, tc.crop, doc["crop"], "the crop as given")
			assert.Equal(t, tc.base, doc["base_c"])
			assert.Equal(t, tc.cap, doc["cap_c"])
			assert.Contains(t, doc, "cap_c", "cap_c is always present, null without a cap")
			daily := doc["daily"].([]any)
			from, _ := weather.ParseDate(tc.from)
			to, _ := weather.ParseDate(tc.to)
			require.Len(t, daily, weather.Days(from, to))
			first := daily[0].(map[string]any)
			assert.Equal(t, tc.from, first["date"])
			assert.ElementsMatch(t, []string{"date", "tmin_c", "tmax_c", "tmean_c", "precipitation_mm", "gdd", "gdd_cum", "precipitation_cum_mm"}, keys(first))
			assert.Equal(t, first["gdd"], first["gdd_cum"], "sums start at --from")
			last := daily[len(daily)-1].(map[string]any)
			totals := doc["totals"].(map[string]any)
			assert.ElementsMatch(t, []string{"gdd", "precipitation_mm", "frost_days", "heat_days"}, keys(totals))
			assert.Equal(t, last["gdd_cum"], totals["gdd"])
			assert.Equal(t, last["precipitation_cum_mm"], totals["precipitation_mm"])
			// An independent sum of the rows.
			var g, p, frost, heat float64
			for _, r := range daily {
				m := r.(map[string]any)
				g += m["gdd"].(float64)
				p += m["precipitation_mm"].(float64)
				if m["tmin_c"].(float64) < 0 {
					frost++
				}
				if m["tmax_c"].(float64) > 30 {
					heat++
				}
			}
			assert.InDelta(t, g, totals["gdd"], 1e-9)
			assert.InDelta(t, p, totals["precipitation_mm"], 1e-9)
			assert.Equal(t, frost, totals["frost_days"])
			assert.Equal(t, heat, totals["heat_days"])

			// The same through an Open-Meteo-compatible API.
			code, stderr, viaAPI := runWeatherCLI(t, append([]string{"--url", srv.URL, "--lat", "50.81", "--lon", "3.02", "--from", tc.from, "--to", tc.to, "--crop", tc.crop}, tc.extra...)...)
			require.Equal(t, 0, code, stderr)
			assert.Equal(t, doc, viaAPI)
		})
	}
}

func keys(m map[string]any) []string {
	var k []string
	for key := range m {
		k = append(k, key)
	}
	return k
}

func TestWeatherCLIErrors(t *testing.T) {
	csv := testenv.DataDir(t, "weather", "flanders-31UES.csv")
	var stderr strings.Builder
	assert.Equal(t, 0, run(context.Background(), []string{"weather", "-h"}, strings.NewReader(""), io.Discard, &stderr))
	assert.Contains(t, stderr.String(), "--csv FILE")
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--csv", csv, "--from", "2019-11-01", "--to", "2019-12-10", "--crop", "maize"}, "no data for 2019-12-01 (asked 2019-11-01..2019-12-10, the source holds 2018-08-01..2019-11-30)"},
		{[]string{"--csv", csv, "--from", "2018-07-01", "--to", "2018-08-10", "--crop", "maize"}, "no data for 2018-07-01"},
		{[]string{"--csv", csv, "--from", "2019-05-10", "--to", "2019-05-01", "--crop", "maize"}, "is before from"},
		{[]string{"--csv", csv, "--from", "2019-5-1", "--to", "2019-05-01", "--crop", "maize"}, "--from: weather: invalid: date \"2019-5-1\": want YYYY-MM-DD"},
		{[]string{"--csv", csv, "--from", "2019-05-01", "--to", "2019-05-02", "--crop", "sunflower"}, "give its base temperature"},
		{[]string{"--csv", csv, "--from", "2019-05-01", "--to", "2019-05-02"}, "--crop (or --base) is required"},
		{[]string{"--from", "2019-05-01", "--to", "2019-05-02", "--crop", "maize"}, "--csv FILE, or --lat and --lon"},
		{[]string{"--csv", "/nonexistent.csv", "--from", "2019-05-01", "--to", "2019-05-02", "--crop", "maize"}, "no such file"},
		{[]string{"--url", "ftp://x", "--lat", "50", "--lon", "4", "--from", "2019-05-01", "--to", "2019-05-02", "--crop", "maize"}, "scheme"},
	} {
		code, stderr, doc := runWeatherCLI(t, tc.args...)
		assert.Equal(t, 1, code, tc.args)
		assert.Contains(t, stderr, tc.msg)
		assert.Nil(t, doc, "no output on error")
	}
}

// serve's weather flags: an Open-Meteo-compatible API whose answers are
// kept in the data directory (a restart fetches nothing), or a local table.
func TestServeWeatherFlags(t *testing.T) {
	csvPath := testenv.DataDir(t, "weather", "flanders-31UES.csv")
	table, err := weather.ReadTableFile(csvPath)
	require.NoError(t, err)
	upstream := weathertest.New(table.All())
	defer upstream.Close()
	dir := t.TempDir()
	get := func(base, tok, query string) (int, map[string]any) {
		req, _ := http.NewRequest("GET", base+"/fields/weather?"+query, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var doc map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&doc))
		return resp.StatusCode, doc
	}
	post := func(base, tok, path, body string) {
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, 201, resp.StatusCode, path)
	}
	out, stop := startServe(t, "--data", dir, "--weather-url", upstream.URL, "--weather-allow-private")
	base := listenURL.FindStringSubmatch(out.String())[1]
	tok := regexp.MustCompile(`ADMIN TOKEN: (\S+)`).FindStringSubmatch(out.String())[1]
	post(base, tok, "/fields/register", `{"field_name":"p","geometry":{"type":"Polygon","coordinates":[[[4.06,50.74],[4.061,50.74],[4.061,50.741],[4.06,50.741],[4.06,50.74]]]}}`)
	post(base, tok, "/fields/metadata/register", `{"field_name":"p","start_date":"2019-04-01","harvest_date":"2019-08-31","crop_type":"potato"}`)
	code, doc := get(base, tok, "field_name=p")
	require.Equal(t, 200, code, doc)
	assert.Equal(t, "potato", doc["crop"])
	assert.Equal(t, weather.OpenMeteoAttribution, doc["attribution"])
	totals := doc["totals"]
	assert.Equal(t, 1, upstream.Requests())
	assert.Equal(t, 0, stop())

	out, stop = startServe(t, "--data", dir, "--weather-url", upstream.URL, "--weather-allow-private")
	base = listenURL.FindStringSubmatch(out.String())[1]
	code, doc = get(base, tok, "field_name=p")
	require.Equal(t, 200, code, doc)
	assert.Equal(t, totals, doc["totals"])
	assert.Equal(t, 1, upstream.Requests(), "a restart fetches nothing")
	assert.Equal(t, 0, stop())

	out, stop = startServe(t, "--data", dir, "--weather-csv", csvPath, "--weather-attribution", "Contains modified Copernicus Climate Change Service information 2019")
	base = listenURL.FindStringSubmatch(out.String())[1]
	code, doc = get(base, tok, "field_name=p")
	require.Equal(t, 200, code, doc)
	assert.Equal(t, totals, doc["totals"], "the table gives the numbers the API gave")
	assert.Contains(t, doc["attribution"], "Copernicus")
	assert.Equal(t, 1, upstream.Requests())
	assert.Equal(t, 0, stop())

	code, _, errOut := runCmd(t, "", "serve", "--data", dir, "--weather-url", upstream.URL, "--weather-csv", csvPath)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "not both")
	code, _, errOut = runCmd(t, "", "serve", "--data", dir, "--weather-url", upstream.URL)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "weather address 127.0.0.1 refused: loopback address", "a loopback URL needs --weather-allow-private")
}
