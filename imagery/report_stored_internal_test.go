package imagery

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestScanIndexValues(t *testing.T) {
	rep := Report{Index: "ndvi", Cols: 3, Rows: 2,
		Values: []float64{0.81234567, math.NaN(), -0.25, 1e-7, 0, 0.5},
		Stats:  Stats{Mean: 0.4, Num: 5, FieldPixels: 6}, Date: time.Date(2019, 6, 20, 0, 0, 0, 0, time.UTC)}
	doc, err := json.Marshal(rep)
	require.NoError(t, err)
	var want Report
	require.NoError(t, json.Unmarshal(doc, &want))

	got, ok := scanIndexValues(doc, "ndvi", 6)
	require.True(t, ok, "%s", doc)
	require.Len(t, got, 6)
	for i := range got {
		if math.IsNaN(want.Values[i]) {
			assert.True(t, math.IsNaN(got[i]), "pixel %d", i)
		} else {
			assert.Equal(t, want.Values[i], got[i], "pixel %d", i)
		}
	}
	for _, tc := range []struct {
		name  string
		doc   string
		index string
		n     int
	}{
		{"wrong count", string(doc), "ndvi", 5},
		{"other index", string(doc), "evi", 6},
		{"3-D", `{"ndvi":[[[1]]]}`, "ndvi", 1},
		{"not an array", `{"ndvi":1}`, "ndvi", 1},
		{"bad number", `{"ndvi":[[1,x]]}`, "ndvi", 2},
		{"bad null", `{"ndvi":[[nul]]}`, "ndvi", 1},
		{"truncated", `{"ndvi":[[1,2]`, "ndvi", 2},
		{"flat", `{"ndvi":[1,2]}`, "ndvi", 2},
	} {
		_, ok := scanIndexValues([]byte(tc.doc), tc.index, tc.n)
		assert.False(t, ok, tc.name)
	}
	v, ok := scanIndexValues([]byte(`{"ndvi":[[1,null],[2.5,-3]]}`), "ndvi", 4)
	require.True(t, ok)
	assert.Equal(t, []float64{1, 2.5, -3}, []float64{v[0], v[2], v[3]})
	assert.True(t, math.IsNaN(v[1]))
}

func BenchmarkScanIndexValues(b *testing.B) {
	const n = 1000 * 1000
	rep := Report{Index: "ndvi", Cols: 1000, Rows: 1000, Values: make([]float64, n)}
	for i := range rep.Values {
		rep.Values[i] = math.Round(float64(i%9973)/9973*1e6) / 1e6
	}
	doc, err := json.Marshal(rep)
	require.NoError(b, err)
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			if _, ok := scanIndexValues(doc, "ndvi", n); !ok {
				b.Fatal("scan failed")
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			var r Report
			if err := json.Unmarshal(doc, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestSetReportVariation(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		mv   float64
		prev string
		want string
	}{
		{`{"ndvi":[[0.1,null]],"mean":0.1,"mean_variation":null,"date":"2019-06-20"}`, 12.5, "2019-06-15",
			`{"ndvi":[[0.1,null]],"mean":0.1,"mean_variation":12.5,"previous_date":"2019-06-15","date":"2019-06-20"}`},
		{`{"mean":0.1,"mean_variation":3.25,"previous_date":"2019-01-01"}`, 0, "",
			`{"mean":0.1,"mean_variation":0,"previous_date":null}`},
	} {
		got, err := SetReportVariation([]byte(tc.doc), tc.mv, tc.prev)
		require.NoError(t, err)
		assert.Equal(t, tc.want, string(got))
	}
	_, err := SetReportVariation([]byte(`{"mean":1}`), 1, "")
	assert.Error(t, err)
}
