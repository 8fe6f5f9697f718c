package server_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/server"
	"github.com/cropkit/cropkit/server/servertest"
)

// The history (JSON and CSV) equals the per-date downloads on real scenes.
func TestHistoryEqualsDownloads(t *testing.T) {
	sceneRoot := testenv.DataDir(t, "s2", "flanders-31UES")
	env := servertest.New(t, server.Config{})
	tok := env.AddUser(t, "farmer", nil)
	registerRealFields(t, env.Handler, tok, []string{"UES-03"}, []string{"ndvi", "ndre"})
	for _, d := range []string{"2019-05-16", "2019-06-20", "2019-06-25", "2019-07-05"} {
		ingest(t, env, filepath.Join(sceneRoot, d))
	}
	r := do(t, env.Handler, "GET", "/fields/history?field_name=UES-03&start_date=2019-06-01", tok, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	var hist struct {
		Indices map[string][]archive.HistoryRow `json:"indices"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &hist))
	require.Len(t, hist.Indices, 2)
	rows := 0
	for ix, list := range hist.Indices {
		require.NotEmpty(t, list, ix)
		for _, row := range list {
			assert.GreaterOrEqual(t, row.Date, "2019-06-01")
			d := do(t, env.Handler, "GET", fmt.Sprintf("/download/%s/json?field_name=UES-03&date=%s", ix, row.Date), tok, nil)
			require.Equal(t, 200, d.Status)
			require.Equal(t, row.Date, d.Header.Get("X-Image-Date"), "a usable date downloads as itself")
			doc := d.JSON(t)
			for k, v := range map[string]float64{"mean": row.Mean, "median": row.Median, "std": row.Std, "min": row.Min, "max": row.Max,
				"p25": row.P25, "p75": row.P75, "cloud_cover": row.CloudCover, "mean_variation": row.MeanVariation} {
				assert.Equal(t, doc[k], v, "%s %s %s", ix, row.Date, k)
			}
			assert.Equal(t, doc["num"], float64(row.Num))
			if row.PreviousDate == nil {
				assert.Nil(t, doc["previous_date"])
			} else {
				assert.Equal(t, doc["previous_date"], *row.PreviousDate)
			}
			rows++
		}
	}
	// The 2019-06-20 row compares with 2019-05-16, before start_date.
	require.NotNil(t, hist.Indices["ndvi"][0].PreviousDate)
	assert.Equal(t, "2019-05-16", *hist.Indices["ndvi"][0].PreviousDate)

	r = do(t, env.Handler, "GET", "/fields/history?field_name=UES-03&start_date=2019-06-01&format=csv", tok, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	assert.Equal(t, "text/csv; charset=utf-8", r.Header.Get("Content-Type"))
	recs, err := csv.NewReader(bytesReader(r.Body)).ReadAll()
	require.NoError(t, err)
	require.Len(t, recs, rows+1)
	assert.Equal(t, []string{"field_name", "index", "date", "mean"}, recs[0][:4])
	for _, rec := range recs[1:] {
		var row archive.HistoryRow
		for _, h := range hist.Indices[rec[1]] {
			if h.Date == rec[2] {
				row = h
			}
		}
		mean, err := strconv.ParseFloat(rec[3], 64)
		require.NoError(t, err)
		assert.Equal(t, row.Mean, mean, "%v", rec)
	}

	r = do(t, env.Handler, "GET", "/fields/history?field_name=UES-03&index=evi", tok, nil)
	assert.Equal(t, 404, r.Status, "not registered for evi")
	r = do(t, env.Handler, "GET", "/fields/history?field_name=UES-03&format=xml", tok, nil)
	assert.Equal(t, 400, r.Status)
}

// BenchmarkHistory5Years: a field with 5 years of 5-day revisits (365
// usable dates) answered from the stored rows.
func BenchmarkHistory5Years(b *testing.B) {
	env := servertest.New(b, server.Config{})
	tok := env.AddUser(b, "farmer", nil)
	ctx := context.Background()
	u, err := env.Archive.UserByName(ctx, "farmer")
	require.NoError(b, err)
	f, err := env.Archive.Store().InsertField(ctx, archive.Field{OwnerID: u.ID, Name: "f", Indices: []string{"ndvi"},
		Geometry: mustPolygon(b)}, 0)
	require.NoError(b, err)
	day := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 365 {
		d := day.AddDate(0, 0, 5*i).Format(time.DateOnly)
		p := archive.Product{FieldID: f.ID, Index: "ndvi", Date: d, Usable: true, Mean: 0.5 + float64(i%7)/100, Num: 100, FieldPixels: 100,
			Grid: geo.Grid{EPSG: 32631, DX: 10, DY: 10, Cols: 10, Rows: 10}, IngestedAt: time.Now(), Bundle: "products/x", Digest: d}
		_, err := env.Archive.Store().RecordProducts(ctx, archive.ProductRecord{Field: f, Date: d, Products: []archive.Product{p}})
		require.NoError(b, err)
	}
	b.ResetTimer()
	for b.Loop() {
		r := do(b, env.Server, "GET", "/fields/history?field_name=f", tok, nil)
		if r.Status != 200 {
			b.Fatalf("%d %s", r.Status, r.Body)
		}
	}
}
