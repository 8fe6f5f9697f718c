package imagery

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/geo"
)

func gridOf(cols, rows int) geo.Grid {
	return geo.Grid{EPSG: 32631, X0: 574680, Y0: 5622440, DX: 10, DY: 10, Cols: cols, Rows: rows}
}

func TestFieldRasterProduct(t *testing.T) {
	nan := math.NaN()
	// 3×2 window: pixel 0 outside the field, 1 masked by the scene mask,
	// 2 no data in B04, 3 index not finite (0/0), 4 and 5 clear.
	fr := &FieldRaster{
		Grid:        gridOf(3, 2),
		InField:     []bool{false, true, true, true, true, true},
		FieldPixels: 5,
		Clear:       []bool{true, false, true, true, true, true},
		Bands: map[string][]float64{
			"B08": {0.4, 0.4, 0.4, 0, 0.3, 0.5},
			"B04": {0.1, 0.1, nan, 0, 0.1, 0.1},
		},
	}
	ix, _ := NewCatalogue().Lookup("ndvi")
	p, err := fr.Product(ix)
	require.NoError(t, err)
	assert.Equal(t, "ndvi", p.Index)
	assert.Equal(t, 2, p.Stats.Num)
	assert.Equal(t, 5, p.Stats.FieldPixels)
	assert.InDelta(t, 40, p.Stats.CloudCover, 1e-12, "2 of 5 field pixels masked (mask, no data)")
	assert.InDelta(t, (0.5+4.0/6)/2, p.Stats.Mean, 1e-15)
	for i := 0; i < 4; i++ {
		assert.True(t, math.IsNaN(p.Values[i]), "pixel %d", i)
	}
	assert.InDelta(t, 0.5, p.Values[4], 1e-15)
	assert.InDelta(t, 4.0/6, p.Values[5], 1e-15)

	_, err = fr.Product(Index{Name: "x", Bands: []string{"B11"}, Compute: normalizedDifference})
	assert.ErrorIs(t, err, ErrMissingBand)
}

func TestReportJSON(t *testing.T) {
	nan := math.NaN()
	r := Report{
		Index:  "ndre",
		Bounds: [2][2]float64{{50.7, 4.06}, {50.8, 4.07}},
		Cols:   2, Rows: 2,
		Values: []float64{nan, 0.25, 0.5, 1e-7},
		Stats:  Stats{Mean: 0.25, Median: 0.25, Std: 0.2, Min: 1e-7, Max: 0.5, P25: 0.125, P75: 0.375, Num: 3, FieldPixels: 4, CloudCover: 25},
		Date:   time.Date(2019, 6, 20, 10, 57, 3, 0, time.UTC),
	}
	b, err := json.Marshal(r)
	require.NoError(t, err)
	assert.JSONEq(t, `{"bounds":[[50.7,4.06],[50.8,4.07]],"ndre":[[null,0.25],[0.5,0]],
		"mean":0.25,"median":0.25,"std":0.2,"min":1e-7,"max":0.5,"p25":0.125,"p75":0.375,"num":3,
		"mean_variation":0,"previous_date":null,"date":"2019-06-20","field_pixels":4,"cloud_cover":25}`, string(b))

	var back Report
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, "ndre", back.Index)
	assert.Equal(t, 2, back.Cols)
	assert.Equal(t, r.Stats, back.Stats)
	assert.Nil(t, back.MeanVariation)
	assert.True(t, math.IsNaN(back.Values[0]))
	assert.Equal(t, []float64{0.25, 0.5, 0}, back.Values[1:])
	assert.Equal(t, "2019-06-20", back.Date.Format("2006-01-02"))

	mv := -12.5
	r.MeanVariation = &mv
	b, err = json.Marshal(r)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"mean_variation":-12.5`)

	// Pixels are rounded to 6 decimals, statistics keep full float64.
	r.Values[1], r.Stats.Mean = 0.8497542973072505, 0.8497542973072505
	b, err = json.Marshal(r)
	require.NoError(t, err)
	assert.Contains(t, string(b), `[null,0.849754]`)
	assert.Contains(t, string(b), `"mean":0.8497542973072505`)

	r.Values = r.Values[:3]
	_, err = json.Marshal(r)
	assert.Error(t, err)
}

func TestAppendPixel(t *testing.T) {
	for v, want := range map[float64]string{
		0: "0", 1: "1", -1: "-1", 0.5: "0.5", -0.25: "-0.25", 0.8497542973072505: "0.849754",
		0.0000004: "0", 0.0000005: "0.000001", -0.0000012: "-0.000001", 1234.5678901: "1234.56789",
		0.9999996: "1", 3272.727272727: "3272.727273", 2e9: "2000000000", math.NaN(): "null", math.Inf(-1): "null",
	} {
		assert.Equal(t, want, string(appendPixel(nil, v)), "%v", v)
	}
}
