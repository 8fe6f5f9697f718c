package zoning

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseLayers(t *testing.T) {
	day := func(s string) time.Time { d, _ := time.Parse(time.DateOnly, s); return d }
	specs, err := ParseLayers([]byte(`[
		{"type":"crop_health","weight":2,"date":"2019-06-20","index":"NDVI"},
		{"type":"crop_health","weight":1,"start_date":"2019-05-01","end_date":"2019-07-31","index":"ndre"},
		{"type":"custom","weight":1,"filename":"soil.shp","attribute":"clay"}]`))
	require.NoError(t, err)
	assert.Equal(t, []LayerSpec{
		{Type: CropHealth, Weight: 2, Index: "ndvi", Date: day("2019-06-20")},
		{Type: CropHealth, Weight: 1, Index: "ndre", StartDate: day("2019-05-01"), EndDate: day("2019-07-31")},
		{Type: Custom, Weight: 1, Filename: "soil.shp", Attribute: "clay"},
	}, specs)
	assert.False(t, specs[0].IsRange())
	assert.True(t, specs[1].IsRange())
}

func TestParseLayersErrors(t *testing.T) {
	tests := []struct {
		name, json string
		field      string // expected LayerError.Field, "" for a non-layer error
		contains   string
	}{
		{"not json", `{`, "", "not a JSON array"},
		{"object", `{"type":"crop_health"}`, "", "not a JSON array"},
		{"empty", `[]`, "", "at least one crop_health"},
		{"only custom", `[{"type":"custom","weight":1,"filename":"a.shp","attribute":"x"}]`, "", "at least one crop_health"},
		{"no type", `[{"weight":1,"date":"2019-06-20","index":"ndvi"}]`, "type", "missing"},
		{"bad type", `[{"type":"raster","weight":1}]`, "type", "neither"},
		{"no weight", `[{"type":"crop_health","date":"2019-06-20","index":"ndvi"}]`, "weight", "missing"},
		{"negative weight", `[{"type":"crop_health","weight":-1,"date":"2019-06-20","index":"ndvi"}]`, "weight", "between"},
		{"string weight", `[{"type":"crop_health","weight":"heavy","date":"2019-06-20","index":"ndvi"}]`, "", "not a JSON array"},
		{"zero weights", `[{"type":"crop_health","weight":0,"date":"2019-06-20","index":"ndvi"}]`, "", "all weights are 0"},
		{"no index", `[{"type":"crop_health","weight":1,"date":"2019-06-20"}]`, "index", "missing"},
		{"no date", `[{"type":"crop_health","weight":1,"index":"ndvi"}]`, "date", "missing"},
		{"bad date", `[{"type":"crop_health","weight":1,"date":"20/06/2019","index":"ndvi"}]`, "date", "YYYY-MM-DD"},
		{"both forms", `[{"type":"crop_health","weight":1,"date":"2019-06-20","start_date":"2019-06-01","end_date":"2019-06-30","index":"ndvi"}]`, "date", "not both"},
		{"start only", `[{"type":"crop_health","weight":1,"start_date":"2019-06-01","index":"ndvi"}]`, "end_date", "missing"},
		{"end only", `[{"type":"crop_health","weight":1,"end_date":"2019-06-01","index":"ndvi"}]`, "start_date", "missing"},
		{"reversed range", `[{"type":"crop_health","weight":1,"start_date":"2019-07-01","end_date":"2019-06-01","index":"ndvi"}]`, "end_date", "before"},
		{"custom without file", `[{"type":"crop_health","weight":1,"date":"2019-06-20","index":"ndvi"},{"type":"custom","weight":1,"attribute":"x"}]`, "filename", "missing"},
		{"custom csv", `[{"type":"crop_health","weight":1,"date":"2019-06-20","index":"ndvi"},{"type":"custom","weight":1,"filename":"a.csv","attribute":"x"}]`, "filename", "neither a .shp nor a .tif"},
		{"custom without attribute", `[{"type":"crop_health","weight":1,"date":"2019-06-20","index":"ndvi"},{"type":"custom","weight":1,"filename":"a.shp"}]`, "attribute", "missing"},
		{"trailing", `[{"type":"crop_health","weight":1,"date":"2019-06-20","index":"ndvi"}] x`, "", "trailing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseLayers([]byte(tc.json))
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInvalidLayers)
			assert.ErrorContains(t, err, tc.contains)
			var le *LayerError
			if tc.field != "" {
				require.True(t, errors.As(err, &le), "want *LayerError, got %v", err)
				assert.Equal(t, tc.field, le.Field)
			}
		})
	}
}

func TestPrescriptionDoses(t *testing.T) {
	zones := []Zone{
		{ID: 1, RasterVal: 0.40, AreaHa: 2},
		{ID: 2, RasterVal: 0.60, AreaHa: 5},
		{ID: 3, RasterVal: 0.80, AreaHa: 3},
	}
	tests := []struct {
		name       string
		p          Prescription
		increasing bool
		base       float64
	}{
		{"n default compensates", Prescription{Type: NFertilizer}, false, 120},
		{"seeding default proportional", Prescription{Type: Seeding}, true, 80000},
		{"n proportional", Prescription{Type: NFertilizer, Strategy: Proportional, BaseRate: 100}, true, 100},
		{"tight clamp", Prescription{Type: NFertilizer, BaseRate: 100, MinRate: 95, MaxRate: 102, Gain: 1}, false, 100},
		{"base only, above the default range", Prescription{Type: NFertilizer, BaseRate: 200}, false, 200},
		{"seeding base only, below the default range", Prescription{Type: Seeding, BaseRate: 40000}, true, 40000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := tc.p.Doses(zones)
			require.NoError(t, err)
			require.Len(t, d, 3)
			var mean, area float64
			p := tc.p.WithDefaults()
			for i, z := range zones {
				mean += d[i] * z.AreaHa
				area += z.AreaHa
				assert.GreaterOrEqual(t, d[i], p.MinRate)
				assert.LessOrEqual(t, d[i], p.MaxRate)
			}
			assert.InDelta(t, tc.base, mean/area, 1e-9*tc.base, "area-weighted mean equals base_rate")
			if p.MinRate < p.BaseRate {
				if tc.increasing {
					assert.True(t, d[0] <= d[1] && d[1] <= d[2] && d[0] < d[2], "%v", d)
				} else {
					assert.True(t, d[0] >= d[1] && d[1] >= d[2] && d[0] > d[2], "%v", d)
				}
			}
		})
	}
	// The unclamped rule in numbers: v̄ = 0.62, s = 0.14, compensate, gain 0.2.
	d, err := Prescription{Type: NFertilizer}.Doses(zones)
	require.NoError(t, err)
	assert.InDeltaSlice(t, []float64{120 * (1 + 0.2*0.22/0.14), 120 * (1 + 0.2*0.02/0.14), 120 * (1 - 0.2*0.18/0.14)}, d, 1e-6)
	// One zone, or no spread: base rate.
	d, err = Prescription{Type: Seeding}.Doses([]Zone{{ID: 1, RasterVal: 0.5, AreaHa: 1}})
	require.NoError(t, err)
	assert.Equal(t, []float64{80000}, d)
}

func TestPrescriptionDefaultRangeFollowsBase(t *testing.T) {
	for _, tc := range []struct {
		p        Prescription
		min, max float64
	}{
		{Prescription{Type: NFertilizer}, 60, 180},
		{Prescription{Type: Seeding}, 60000, 100000},
		{Prescription{Type: NFertilizer, BaseRate: 200}, 100, 300},
		{Prescription{Type: NFertilizer, BaseRate: 40}, 20, 60},
		{Prescription{Type: Seeding, BaseRate: 120000}, 90000, 150000},
		{Prescription{Type: NFertilizer, BaseRate: 200, MinRate: 150}, 150, 300},
		{Prescription{Type: NFertilizer, BaseRate: 200, MaxRate: 210}, 100, 210},
	} {
		p := tc.p.WithDefaults()
		assert.Equal(t, [2]float64{tc.min, tc.max}, [2]float64{p.MinRate, p.MaxRate}, "%+v", tc.p)
	}
	// Base 200 alone used to give 200 everywhere (range min(60,200)..max(180,200)).
	zones := []Zone{{ID: 1, RasterVal: 0.4, AreaHa: 2}, {ID: 2, RasterVal: 0.8, AreaHa: 2}}
	d, err := Prescription{Type: NFertilizer, BaseRate: 200}.Doses(zones)
	require.NoError(t, err)
	assert.InDeltaSlice(t, []float64{240, 160}, d, 1e-9)
}

func TestPrescriptionInvalid(t *testing.T) {
	for _, p := range []Prescription{
		{Type: "manure"},
		{Type: NFertilizer, Strategy: "random"},
		{Type: NFertilizer, BaseRate: 200, MaxRate: 150},
		{Type: NFertilizer, BaseRate: 50, MinRate: 60},
		{Type: Seeding, BaseRate: -1},
		// min = base (or base = max) forces every dose to base: a flat map.
		{Type: NFertilizer, BaseRate: 100, MinRate: 100, MaxRate: 150},
		{Type: NFertilizer, BaseRate: 100, MinRate: 50, MaxRate: 100},
		{Type: NFertilizer, BaseRate: 200, MaxRate: 180},
	} {
		_, err := p.Doses([]Zone{{ID: 1, AreaHa: 1}})
		assert.ErrorIs(t, err, ErrInvalidPrescription, "%+v", p)
	}
}
