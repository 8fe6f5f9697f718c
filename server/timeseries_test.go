package server_test

import (
	"encoding/csv"
	"encoding/json"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/api"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/server"
	"github.com/cropkit/cropkit/server/servertest"
)

// The daily series (JSON and CSV), phenology and events of a field from
// real ingested scenes; bad parameters are 4xx in the one error shape.
func TestTimeSeriesEndpoints(t *testing.T) {
	sceneRoot := testenv.DataDir(t, "s2", "flanders-31UES")
	env := servertest.New(t, server.Config{})
	tok := env.AddUser(t, "farmer", nil)
	registerRealFields(t, env.Handler, tok, []string{"UES-03"}, []string{"ndvi"})
	for _, d := range []string{"2019-03-22", "2019-04-21", "2019-05-16", "2019-06-20", "2019-07-05", "2019-07-20", "2019-07-25", "2019-07-30", "2019-08-24", "2019-09-18"} {
		ingest(t, env, filepath.Join(sceneRoot, d))
	}
	r := do(t, env.Handler, "GET", "/fields/timeseries?field_name=UES-03&index=ndvi&start_date=2019-06-01&end_date=2019-06-30", tok, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	var ts api.TimeSeries
	require.NoError(t, json.Unmarshal(r.Body, &ts))
	assert.Equal(t, "UES-03", ts.FieldName)
	assert.Equal(t, "ndvi", ts.Index)
	require.Len(t, ts.Series, 30)
	june20 := ts.Series[19]
	require.Equal(t, "2019-06-20", june20.Date)
	require.NotNil(t, june20.Observed)
	assert.InDelta(t, 0.849754, *june20.Observed, 1e-6, "the README's GDAL reference mean")
	assert.Equal(t, "sentinel-2", *june20.Sensor)
	assert.Nil(t, ts.Series[0].Observed)
	for _, d := range ts.Series {
		assert.LessOrEqual(t, d.Lower, d.Estimate)
		assert.LessOrEqual(t, d.Estimate, d.Upper)
	}

	// from/to are synonyms; CSV has the same rows.
	r = do(t, env.Handler, "GET", "/fields/timeseries?field_name=UES-03&index=ndvi&from=2019-06-01&to=2019-06-30&format=csv", tok, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	assert.Equal(t, "text/csv; charset=utf-8", r.Header.Get("Content-Type"))
	recs, err := csv.NewReader(bytesReader(r.Body)).ReadAll()
	require.NoError(t, err)
	require.Len(t, recs, 31)
	assert.Equal(t, []string{"date", "observed", "sensor", "estimate", "lower", "upper"}, recs[0])
	assert.Equal(t, []string{"2019-06-20", strconv.FormatFloat(*june20.Observed, 'g', -1, 64), "sentinel-2"}, recs[20][:3])
	est, err := strconv.ParseFloat(recs[20][3], 64)
	require.NoError(t, err)
	assert.Equal(t, june20.Estimate, est)
	assert.Equal(t, "", recs[1][1], "no observation: an empty cell")

	r = do(t, env.Handler, "GET", "/fields/phenology?field_name=UES-03&index=ndvi", tok, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	var ph api.Phenology
	require.NoError(t, json.Unmarshal(r.Body, &ph))
	require.Len(t, ph.Seasons, 1)
	require.NotNil(t, ph.Seasons[0].End)
	assert.Equal(t, "2019-07", (*ph.Seasons[0].End)[:7], "winter wheat ends at harvest")

	r = do(t, env.Handler, "GET", "/fields/events?field_name=UES-03", tok, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	var ev api.FieldEvents
	require.NoError(t, json.Unmarshal(r.Body, &ev))
	require.NotEmpty(t, ev.Events)
	assert.Equal(t, "drop", ev.Events[0].Kind)
	assert.Equal(t, "2019-07", ev.Events[0].Date[:7], "%+v", ev.Events)

	for _, tt := range []struct {
		target string
		status int
	}{
		{"/fields/timeseries?field_name=UES-03", 400},
		{"/fields/timeseries?index=ndvi", 400},
		{"/fields/timeseries?field_name=UES-03&index=ndvi&format=xml", 400},
		{"/fields/timeseries?field_name=UES-03&index=ndvi&start_date=2019-06-30&end_date=2019-06-01", 400},
		{"/fields/timeseries?field_name=UES-03&index=ndvi&start_date=2019-06-01&from=2019-06-02", 400},
		{"/fields/timeseries?field_name=UES-03&index=ndvi&start_date=1900-01-01", 400},
		{"/fields/timeseries?field_name=UES-03&index=ndre", 404},
		{"/fields/timeseries?field_name=nope&index=ndvi", 404},
		{"/fields/phenology?field_name=UES-03", 400},
		{"/fields/events?field_name=nope", 404},
	} {
		r := do(t, env.Handler, "GET", tt.target, tok, nil)
		assert.Equal(t, tt.status, r.Status, "%s: %s", tt.target, r.Body)
		assert.NotEmpty(t, r.ErrorCode(t), tt.target)
	}
	r = do(t, env.Handler, "GET", "/fields/timeseries?field_name=UES-03&index=ndvi", "", nil)
	assert.Equal(t, 403, r.Status, "no token")
}
