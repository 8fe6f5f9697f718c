package render_test

import (
	"bytes"
	"encoding/json"
	"image/png"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/api"
	"github.com/cropkit/cropkit/colormap"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/imagery"
	"github.com/cropkit/cropkit/render"
)

func TestRenderer(t *testing.T) {
	grid := geo.Grid{EPSG: 32631, X0: 574680, Y0: 5622440, DX: 10, DY: 10, Cols: 3, Rows: 2}
	values := []float64{0.2, 0.5, math.NaN(), 0.7, 0.9, 0.4}
	p := imagery.Product{Index: "ndvi", Date: time.Date(2019, 6, 20, 0, 0, 0, 0, time.UTC), Grid: grid, Values: values,
		Stats: imagery.ComputeStats(values)}
	r := render.New(imagery.NewCatalogue())

	want, err := colormap.Lookup("ndvi", [2]float64{-1, 1})
	require.NoError(t, err)
	got, err := r.Colormap("ndvi")
	require.NoError(t, err)
	assert.Equal(t, want, got, "the spec's ndvi colormap")

	var buf bytes.Buffer
	require.NoError(t, r.PNG(&buf, p))
	img, err := png.Decode(&buf)
	require.NoError(t, err)
	assert.Equal(t, 3, img.Bounds().Dx())
	assert.Equal(t, 2, img.Bounds().Dy())
	_, _, _, alpha := img.At(2, 0).RGBA()
	assert.Zero(t, alpha, "the NaN pixel is transparent")

	for _, tc := range []struct {
		name     string
		prev     *render.Previous
		wantPrev *string
		wantMV   float64
	}{
		{"first image", nil, nil, 0},
		{"after another", &render.Previous{Mean: p.Stats.Mean / 2, Date: "2019-06-10"}, ptr("2019-06-10"), 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := r.Report(nil, p, tc.prev)
			require.NoError(t, err)
			var rep api.Report
			require.NoError(t, json.Unmarshal(doc, &rep))
			assert.Equal(t, "ndvi", rep.Index)
			assert.Equal(t, "2019-06-20", rep.Date)
			assert.Equal(t, 3, rep.Cols)
			assert.Equal(t, 2, rep.Rows)
			assert.InDelta(t, 0.5, rep.Median, 1e-12)
			assert.True(t, math.IsNaN(rep.Values[2]))
			assert.Equal(t, tc.wantPrev, rep.PreviousDate)
			assert.InDelta(t, tc.wantMV, rep.MeanVariation, 1e-9)
		})
	}
}

func ptr(s string) *string { return &s }
