package boundary_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/boundary"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/geo/crs"
	"github.com/cropkit/cropkit/imagery"
)

// fakeScene is an in-memory acquisition on a UTM 31N grid: ndvi gives each
// pixel's NDVI (B08 = 0.3, B04 derived), clear its mask.
type fakeScene struct {
	id    string
	date  time.Time
	grid  geo.Grid
	ndvi  func(col, row int) float64
	clear func(col, row int) bool
	reads *int // band reads, counted when not nil
	// band, when set, gives a band's reflectance where it returns true.
	band func(name string, col, row int) (float64, bool)
	// missing names bands the scene lacks (ReadField fails on them).
	missing []string
}

func (s *fakeScene) ID() string      { return s.id }
func (s *fakeScene) Date() time.Time { return s.date }
func (s *fakeScene) Grid() geo.Grid  { return s.grid }

func (s *fakeScene) ReadField(_ context.Context, field orb.MultiPolygon, bands []string) (*imagery.FieldRaster, error) {
	t, err := crs.New(4326, s.grid.EPSG)
	if err != nil {
		return nil, err
	}
	mp, err := geo.Transform(field, t)
	if err != nil {
		return nil, err
	}
	win := s.grid.WindowFor(mp.Bound())
	if win.Empty() {
		return nil, imagery.ErrNoOverlap
	}
	sub := s.grid.Sub(win)
	in := geo.Rasterize(mp, sub)
	n := 0
	for _, v := range in {
		if v {
			n++
		}
	}
	if n == 0 {
		return nil, imagery.ErrNoOverlap
	}
	fr := &imagery.FieldRaster{Grid: sub, Window: win, InField: in, FieldPixels: n,
		Clear: make([]bool, len(in)), Bands: map[string][]float64{}}
	for i := range in {
		c, r := win.Col+i%win.Cols, win.Row+i/win.Cols
		fr.Clear[i] = s.clear == nil || s.clear(c, r)
	}
	for _, b := range bands {
		if slices.Contains(s.missing, b) {
			return nil, fmt.Errorf("%w: %s", imagery.ErrMissingBand, b)
		}
	}
	if len(bands) > 0 && s.reads != nil {
		*s.reads++
	}
	for _, b := range bands {
		v := make([]float64, len(in))
		for i := range v {
			c, r := win.Col+i%win.Cols, win.Row+i/win.Cols
			if s.band != nil {
				if x, ok := s.band(b, c, r); ok {
					v[i] = x
					continue
				}
			}
			nd := s.ndvi(c, r)
			switch b {
			case "B08":
				v[i] = 0.3
			case "B04":
				v[i] = 0.3 * (1 - nd) / (1 + nd)
			default:
				v[i] = 0.05
			}
		}
		fr.Bands[b] = v
	}
	return fr, nil
}

// utmGrid is a cols×rows grid of 10 m pixels near 4.06°E 50.745°N.
func utmGrid(cols, rows int) geo.Grid {
	return geo.Grid{EPSG: 32631, X0: 574680, Y0: 5622440, DX: 10, DY: 10, Cols: cols, Rows: rows}
}

// gridAOI is the lon/lat polygon of the whole grid, shrunk by 1 m.
func gridAOI(t testing.TB, g geo.Grid) orb.MultiPolygon {
	t.Helper()
	b := g.Bound()
	ring := orb.Ring{{b.Min[0] + 1, b.Min[1] + 1}, {b.Max[0] - 1, b.Min[1] + 1}, {b.Max[0] - 1, b.Max[1] - 1}, {b.Min[0] + 1, b.Max[1] - 1}, {b.Min[0] + 1, b.Min[1] + 1}}
	tr, err := crs.New(g.EPSG, 4326)
	require.NoError(t, err)
	mp, err := geo.Transform(orb.MultiPolygon{{ring}}, tr)
	require.NoError(t, err)
	return mp
}

// blocks is a synthetic season: the grid is cut into bw×bh-pixel blocks,
// each a field with its own sowing date (NDVI ramps from 0.2 to 0.85 at a
// block-specific time), plus noise from seed; block (0, 0) stays bare (a
// yard).
func blocks(g geo.Grid, bw, bh, dates int, seed uint64) []boundary.Scene {
	rng := rand.New(rand.NewPCG(seed, 1))
	nbx, nby := (g.Cols+bw-1)/bw, (g.Rows+bh-1)/bh
	sow := make([]float64, nbx*nby)
	for i := range sow {
		// Neighbours sow at least about a month apart.
		sow[i] = math.Mod(0.05+0.37*float64(i%nbx)+0.61*float64(i/nbx), 1)
	}
	noise := make([][]float64, dates)
	for d := range noise {
		noise[d] = make([]float64, g.Cols*g.Rows)
		for i := range noise[d] {
			noise[d][i] = 0.02 * rng.NormFloat64()
		}
	}
	var out []boundary.Scene
	for d := range dates {
		day := time.Date(2019, time.March, 15, 10, 50, 0, 0, time.UTC).AddDate(0, 0, 200*d/dates)
		tt := float64(d) / float64(dates-1)
		out = append(out, &fakeScene{
			id: fmt.Sprintf("S%02d", d), date: day, grid: g,
			ndvi: func(c, r int) float64 {
				b := (r/bh)*nbx + c/bw
				if b == 0 {
					return 0.1 + noise[d][r*g.Cols+c]
				}
				x := (tt - sow[b]) * 12
				return 0.2 + 0.65/(1+math.Exp(-x)) + noise[d][r*g.Cols+c]
			},
		})
	}
	return out
}

func TestDetectSyntheticBlocks(t *testing.T) {
	g := utmGrid(40, 30)
	scenes := blocks(g, 20, 15, 12, 7)
	res, err := boundary.Detect(context.Background(), scenes, gridAOI(t, g), boundary.Options{})
	require.NoError(t, err)
	assert.Len(t, res.Dates, 12)
	// Four 20×15 blocks; the bare one is dropped as never green.
	require.Len(t, res.Fields, 3)
	for _, f := range res.Fields {
		assert.Equal(t, 300, f.Pixels)
		assert.InDelta(t, 3.0, f.AreaHa, 0.02, "300 px of 100 m² on the sphere")
		assert.Greater(t, f.Confidence, 0.5)
		require.NoError(t, geo.ValidatePolygon(f.Polygon))
	}
}

func TestDetectSkipsCloudyDatesAndOutOfSeason(t *testing.T) {
	g := utmGrid(40, 30)
	scenes := blocks(g, 20, 15, 12, 3)
	scenes[4].(*fakeScene).clear = func(c, r int) bool { return c >= 30 } // mostly cloudy
	// A scene of the previous season: outside the default date range.
	old := *scenes[0].(*fakeScene)
	old.id, old.date = "OLD", old.date.AddDate(-1, 0, 0)
	scenes = append(scenes, &old)
	res, err := boundary.Detect(context.Background(), scenes, gridAOI(t, g), boundary.Options{})
	require.NoError(t, err)
	assert.Len(t, res.Dates, 11)
	assert.Equal(t, []string{"S04: 25% clear"}, res.Skipped)
	for _, d := range res.Dates {
		assert.Equal(t, 2019, d.Year())
	}
}

func TestDetectErrors(t *testing.T) {
	g := utmGrid(40, 30)
	scenes := blocks(g, 20, 15, 4, 1)
	far := geo.Grid{EPSG: 32631, X0: 600000, Y0: 5622440, DX: 10, DY: 10, Cols: 10, Rows: 10}
	cloudy := blocks(g, 20, 15, 3, 1)
	for _, s := range cloudy {
		s.(*fakeScene).clear = func(int, int) bool { return false }
	}
	tests := []struct {
		name   string
		scenes []boundary.Scene
		aoi    orb.MultiPolygon
		opts   boundary.Options
		want   error
	}{
		{"empty area", scenes, nil, boundary.Options{}, boundary.ErrEmptyAOI},
		{"no overlap", scenes, gridAOI(t, far), boundary.Options{}, boundary.ErrEmptyAOI},
		{"too large", scenes, gridAOI(t, g), boundary.Options{MaxPixels: 500}, boundary.ErrTooLarge},
		{"all cloudy", cloudy, gridAOI(t, g), boundary.Options{}, boundary.ErrNoImagery},
		{"no season", nil, gridAOI(t, g), boundary.Options{}, boundary.ErrNoImagery},
		{"empty range", scenes, gridAOI(t, g), boundary.Options{Start: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}, boundary.ErrEmptyAOI},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := boundary.Detect(context.Background(), tc.scenes, tc.aoi, tc.opts)
			require.ErrorIs(t, err, tc.want)
		})
	}
}

func TestDetectReadsBandsOfClearDatesOnly(t *testing.T) {
	g := utmGrid(40, 30)
	scenes := blocks(g, 20, 15, 6, 5)
	reads := 0
	for i, s := range scenes {
		s.(*fakeScene).reads = &reads
		if i%2 == 1 {
			s.(*fakeScene).clear = func(int, int) bool { return false }
		}
	}
	res, err := boundary.Detect(context.Background(), scenes, gridAOI(t, g), boundary.Options{})
	require.NoError(t, err)
	assert.Len(t, res.Dates, 3)
	assert.Equal(t, 3, reads, "bands are read for clear dates only")
}

func TestDetectMaxDatesSpreadsDates(t *testing.T) {
	g := utmGrid(40, 30)
	scenes := blocks(g, 20, 15, 9, 5)
	res, err := boundary.Detect(context.Background(), scenes, gridAOI(t, g), boundary.Options{MaxDates: 3})
	require.NoError(t, err)
	require.Len(t, res.Dates, 3)
	assert.Equal(t, []time.Time{scenes[0].Date(), scenes[4].Date(), scenes[8].Date()}, res.Dates)
}

func TestDetectCoregistersShiftedDates(t *testing.T) {
	g := utmGrid(40, 30)
	scenes := blocks(g, 20, 15, 12, 11)
	// Three dates displaced by one pixel east: without co-registration
	// they blur the borders and split off one-pixel strips.
	for _, i := range []int{3, 6, 9} {
		s := scenes[i].(*fakeScene)
		f := s.ndvi
		s.ndvi = func(c, r int) float64 { return f(max(c-1, 0), r) }
	}
	tests := []struct {
		shift  int
		pixels int
	}{{2, 300}, {-1, 0}}
	for _, tc := range tests {
		res, err := boundary.Detect(context.Background(), scenes, gridAOI(t, g), boundary.Options{MaxShiftPixels: tc.shift, RefineIterations: -1})
		require.NoError(t, err)
		exact := 0
		for _, f := range res.Fields {
			if f.Pixels == 300 {
				exact++
			}
		}
		if tc.pixels == 300 {
			assert.Equal(t, 3, exact, "shift %d", tc.shift)
		} else {
			assert.Less(t, exact, 3, "shift %d", tc.shift)
		}
	}
}

func TestFeatureCollectionJSON(t *testing.T) {
	res := &boundary.Result{Fields: []boundary.Field{{
		Polygon: orb.Polygon{{{4, 50}, {4.001, 50}, {4.001, 50.001000001234}, {4, 50}}}, AreaHa: 0.3571234, Confidence: 0.81234,
	}}}
	js, err := json.Marshal(res)
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"FeatureCollection","features":[{"type":"Feature","id":1,
		"geometry":{"type":"Polygon","coordinates":[[[4,50],[4.001,50],[4.001,50.001],[4,50]]]},
		"properties":{"area_ha":0.3571,"confidence":0.812}}]}`, string(js))
	empty, err := json.Marshal(&boundary.Result{})
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"FeatureCollection","features":[]}`, string(empty))
}

func TestLastSeason(t *testing.T) {
	d := func(s string) time.Time { v, _ := time.Parse(time.DateOnly, s); return v }
	tests := []struct {
		dates      []time.Time
		start, end string
		ok         bool
	}{
		{[]time.Time{d("2018-08-04"), d("2019-06-20"), d("2019-11-27")}, "2019-03-01", "2019-10-31", true},
		{[]time.Time{d("2018-07-01"), d("2019-02-01")}, "2018-03-01", "2018-10-31", true},
		{[]time.Time{d("2019-01-10"), d("2019-12-01")}, "", "", false},
	}
	for _, tc := range tests {
		start, end, ok := boundary.LastSeason(tc.dates)
		require.Equal(t, tc.ok, ok)
		if ok {
			assert.Equal(t, tc.start, start.Format(time.DateOnly))
			assert.Equal(t, tc.end, end.Format(time.DateOnly))
		}
	}
}

// BenchmarkDetect2500ha runs Detect on a 500×500-pixel (2,500 ha) area
// with 30 clear dates of 25 ha fields.
func BenchmarkDetect2500ha(b *testing.B) {
	g := utmGrid(500, 500)
	scenes := blocks(g, 50, 50, 30, 9)
	aoi := gridAOI(b, g)
	b.ResetTimer()
	for range b.N {
		res, err := boundary.Detect(context.Background(), scenes, aoi, boundary.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Fields) == 0 {
			b.Fatalf("%d fields", len(res.Fields))
		}
	}
}

// BenchmarkDetect2500haRadar is BenchmarkDetect2500ha with 40 Sentinel-1
// dates on a 20 m grid (Options.Radar).
func BenchmarkDetect2500haRadar(b *testing.B) {
	g := utmGrid(500, 500)
	scenes := blocks(g, 50, 50, 30, 9)
	rg := geo.Grid{EPSG: g.EPSG, X0: g.X0, Y0: g.Y0, DX: 20, DY: 20, Cols: 250, Rows: 250}
	var radar []boundary.Scene
	for d := range 40 {
		radar = append(radar, &fakeScene{id: fmt.Sprintf("R%02d", d), grid: rg,
			date: time.Date(2019, time.March, 16, 17, 30, 0, 0, time.UTC).AddDate(0, 0, 5*d),
			band: func(name string, c, r int) (float64, bool) {
				return math.Pow(10, (-10-float64((c/25+r/25+d)%5))/10), true
			}})
	}
	aoi := gridAOI(b, g)
	b.ResetTimer()
	for range b.N {
		res, err := boundary.Detect(context.Background(), scenes, aoi, boundary.Options{Radar: radar})
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Fields) == 0 || len(res.RadarDates) != 40 {
			b.Fatalf("%d fields, %d radar dates", len(res.Fields), len(res.RadarDates))
		}
	}
}

func TestDetectDropsThinStrips(t *testing.T) {
	g := utmGrid(40, 30)
	scenes := blocks(g, 20, 15, 12, 5)
	// A hedge: a two-pixel column, green all season, across the blocks.
	for _, s := range scenes {
		fs := s.(*fakeScene)
		f := fs.ndvi
		fs.ndvi = func(c, r int) float64 {
			if c == 9 || c == 10 {
				return 0.9
			}
			return f(c, r)
		}
	}
	tests := []struct {
		name  string
		core  float64
		strip bool
	}{{"default drops it", 0, false}, {"no thinness filter keeps it", -1, true}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := boundary.Detect(context.Background(), scenes, gridAOI(t, g), boundary.Options{MinCoreFraction: tc.core})
			require.NoError(t, err)
			found := false
			for _, f := range res.Fields {
				found = found || f.Pixels == 60
			}
			assert.Equal(t, tc.strip, found)
		})
	}
}

func TestDetectClipsToAOI(t *testing.T) {
	g := utmGrid(40, 30)
	scenes := blocks(g, 20, 15, 12, 5)
	// A triangle over the grid: fields hold the pixels whose centre lies
	// inside, so they follow its edge within half a pixel diagonal.
	b := g.Bound()
	tri := orb.Ring{{b.Min[0] + 1, b.Min[1] + 1}, {b.Max[0] - 1, b.Min[1] + 1}, {b.Max[0] - 1, b.Max[1] - 1}, {b.Min[0] + 1, b.Min[1] + 1}}
	tr, err := crs.New(g.EPSG, 4326)
	require.NoError(t, err)
	aoi, err := geo.Transform(orb.MultiPolygon{{tri}}, tr)
	require.NoError(t, err)
	res, err := boundary.Detect(context.Background(), scenes, aoi, boundary.Options{})
	require.NoError(t, err)
	require.NotEmpty(t, res.Fields)
	total := 0.0
	for _, f := range res.Fields {
		in, err := geo.Contains(aoi, orb.MultiPolygon{f.Polygon}, 1e-4) // degrees: 7 to 11 m
		require.NoError(t, err)
		assert.True(t, in, "field inside the triangle")
		total += f.AreaHa
	}
	assert.Less(t, total, 1.02*geo.GeodesicArea(aoi)/1e4)
	assert.Greater(t, total, 0.5*geo.GeodesicArea(aoi)/1e4)
}

func TestDetectSkipsOtherGridAndHonoursCancel(t *testing.T) {
	g := utmGrid(40, 30)
	scenes := blocks(g, 20, 15, 6, 5)
	// The same place on a grid offset by half a pixel: another grid.
	odd := *scenes[2].(*fakeScene)
	odd.id, odd.grid = "ODD", geo.Grid{EPSG: 32631, X0: g.X0 - 5, Y0: g.Y0 + 5, DX: 10, DY: 10, Cols: 41, Rows: 31}
	res, err := boundary.Detect(context.Background(), append(scenes, &odd), gridAOI(t, g), boundary.Options{})
	require.NoError(t, err)
	assert.Contains(t, res.Skipped, "ODD: other grid")
	assert.Len(t, res.Dates, 6)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = boundary.Detect(ctx, scenes, gridAOI(t, g), boundary.Options{})
	require.ErrorIs(t, err, context.Canceled)
}

// twoCrops is a synthetic season of two fields side by side (columns
// below and from half the width) with the same NDVI calendar but another
// colour: B02 and B03 are 0.03 higher on the right, as between grass and
// a leguminous crop of the same greenness.
func twoCrops(g geo.Grid, dates int, seed uint64) []boundary.Scene {
	rng := rand.New(rand.NewPCG(seed, 2))
	noise := func() []float64 {
		v := make([]float64, g.Cols*g.Rows)
		for i := range v {
			v[i] = rng.NormFloat64()
		}
		return v
	}
	var out []boundary.Scene
	for d := range dates {
		nn, nb, ng := noise(), noise(), noise()
		tt := float64(d) / float64(dates-1)
		out = append(out, &fakeScene{
			id: fmt.Sprintf("S%02d", d), grid: g,
			date: time.Date(2019, time.March, 15, 10, 50, 0, 0, time.UTC).AddDate(0, 0, 200*d/dates),
			ndvi: func(c, r int) float64 {
				return 0.2 + 0.65/(1+math.Exp(-(tt-0.4)*12)) + 0.02*nn[r*g.Cols+c]
			},
			band: func(name string, c, r int) (float64, bool) {
				v := 0.0
				if c >= g.Cols/2 {
					v = 0.03
				}
				switch name {
				case "B02":
					return 0.03 + v + 0.002*nb[r*g.Cols+c], true
				case "B03":
					return 0.05 + v + 0.002*ng[r*g.Cols+c], true
				}
				return 0, false
			},
		})
	}
	return out
}

func TestDetectBandsTellEquallyGreenCropsApart(t *testing.T) {
	g := utmGrid(40, 30)
	tests := []struct {
		name    string
		opts    boundary.Options
		missing []string
		pixels  []int
	}{
		// No co-registration: NDVI, which it aligns by, has no edge here.
		{"the visible bands split them", boundary.Options{MaxShiftPixels: -1}, nil, []int{600, 600}},
		{"NDVI alone merges them", boundary.Options{MaxShiftPixels: -1, BandWeight: -1}, nil, []int{1200}},
		{"scenes without the visible bands fall back to NDVI", boundary.Options{MaxShiftPixels: -1}, []string{"B02", "B03"}, []int{1200}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			scenes := twoCrops(g, 12, 3)
			for _, s := range scenes {
				s.(*fakeScene).missing = tc.missing
			}
			res, err := boundary.Detect(context.Background(), scenes, gridAOI(t, g), tc.opts)
			require.NoError(t, err)
			assert.Len(t, res.Dates, 12)
			var pixels []int
			for _, f := range res.Fields {
				pixels = append(pixels, f.Pixels)
			}
			assert.Equal(t, tc.pixels, pixels)
		})
	}
}

// TestDetectProfileVetoKeepsCropsApart: two fields with crop calendars a
// month and a half apart, joined by a gradual transition ten pixels wide
// (mixed pixels, a headland sown in between), so no single pixel edge is
// strong. Border strength alone merges them through the transition; the
// veto on the regions' mean NDVI profiles keeps them apart.
func TestDetectProfileVetoKeepsCropsApart(t *testing.T) {
	g := utmGrid(60, 30)
	const ramp = 10
	rng := rand.New(rand.NewPCG(7, 3))
	var scenes []boundary.Scene
	for d := range 16 {
		tt := float64(d) / 15
		noise := make([]float64, g.Cols*g.Rows)
		for i := range noise {
			noise[i] = 0.02 * rng.NormFloat64()
		}
		scenes = append(scenes, &fakeScene{
			id: fmt.Sprintf("S%02d", d), grid: g,
			date: time.Date(2019, time.March, 15, 10, 50, 0, 0, time.UTC).AddDate(0, 0, 200*d/16),
			ndvi: func(c, r int) float64 {
				w := min(max(float64(c-(g.Cols-ramp)/2)/ramp, 0), 1) // 0 left, 1 right
				left := 0.2 + 0.65/(1+math.Exp(-(tt-0.3)*12))
				right := 0.2 + 0.65/(1+math.Exp(-(tt-0.55)*12))
				return (1-w)*left + w*right + noise[r*g.Cols+c]
			},
		})
	}
	for _, tc := range []struct {
		name   string
		opts   boundary.Options
		fields int
	}{
		{"border strength alone merges them", boundary.Options{MaxShiftPixels: -1, BandWeight: -1, MaxProfileDistance: -1}, 1},
		{"the profile veto keeps them apart", boundary.Options{MaxShiftPixels: -1, BandWeight: -1}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := boundary.Detect(context.Background(), scenes, gridAOI(t, g), tc.opts)
			require.NoError(t, err)
			var pixels []int
			for _, f := range res.Fields {
				pixels = append(pixels, f.Pixels)
			}
			require.Len(t, res.Fields, tc.fields, "pixels %v", pixels)
			if tc.fields == 2 {
				// Each keeps its own side and about half the transition.
				for _, p := range pixels {
					assert.InDelta(t, g.Cols*g.Rows/2, p, float64(6*g.Rows), "pixels %v", pixels)
				}
			}
		})
	}
}

// TestDetectRadarLiftsTheVeto: one crop whose left and right parts follow
// NDVI calendars a month and a half apart (a patchy emergence), joined by
// a gradual transition, with Sentinel-1 dates on a 20 m grid. The NDVI
// profile veto alone splits it; radar profiles that agree lift the veto,
// radar profiles 3 dB apart (two crops) do not, and radar on another CRS
// is skipped.
func TestDetectRadarLiftsTheVeto(t *testing.T) {
	g := utmGrid(60, 30)
	const ramp = 10
	rng := rand.New(rand.NewPCG(11, 4))
	var optical []boundary.Scene
	for d := range 16 {
		tt := float64(d) / 15
		noise := make([]float64, g.Cols*g.Rows)
		for i := range noise {
			noise[i] = 0.02 * rng.NormFloat64()
		}
		optical = append(optical, &fakeScene{
			id: fmt.Sprintf("S%02d", d), grid: g,
			date: time.Date(2019, time.March, 15, 10, 50, 0, 0, time.UTC).AddDate(0, 0, 200*d/16),
			ndvi: func(c, r int) float64 {
				w := min(max(float64(c-(g.Cols-ramp)/2)/ramp, 0), 1)
				left := 0.2 + 0.65/(1+math.Exp(-(tt-0.3)*12))
				right := 0.2 + 0.65/(1+math.Exp(-(tt-0.55)*12))
				return (1-w)*left + w*right + noise[r*g.Cols+c]
			},
		})
	}
	// radar is 30 Sentinel-1 dates on a 20 m grid (epsg), the right half
	// offset by rightDB (backscatter −10 dB VV, −17 dB VH, ±0.5 dB noise).
	radar := func(rightDB float64, epsg int) []boundary.Scene {
		rg := geo.Grid{EPSG: epsg, X0: g.X0, Y0: g.Y0, DX: 20, DY: 20, Cols: g.Cols / 2, Rows: g.Rows / 2}
		var out []boundary.Scene
		for d := range 30 {
			tt := float64(d) / 29
			noise := make([]float64, rg.Cols*rg.Rows)
			for i := range noise {
				noise[i] = 0.5 * rng.NormFloat64()
			}
			out = append(out, &fakeScene{
				id: fmt.Sprintf("R%02d", d), grid: rg,
				date: time.Date(2019, time.March, 16, 17, 30, 0, 0, time.UTC).AddDate(0, 0, 6*d),
				band: func(name string, c, r int) (float64, bool) {
					db := -10 + 3*math.Sin(6*tt) + noise[r*rg.Cols+c]
					if name == "VH" {
						db -= 7
					}
					if 20*c >= 10*g.Cols/2 {
						db += rightDB
					}
					return math.Pow(10, db/10), true
				},
			})
		}
		return out
	}
	for _, tc := range []struct {
		name          string
		radar         []boundary.Scene
		fields, dates int
	}{
		{"without radar the veto splits it", nil, 2, 0},
		{"radar that agrees lifts the veto", radar(0, 32631), 1, 30},
		{"radar 3 dB apart keeps the veto", radar(3, 32631), 2, 30},
		{"radar on another CRS is skipped", radar(0, 32632), 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := boundary.Detect(context.Background(), optical, gridAOI(t, g),
				boundary.Options{MaxShiftPixels: -1, BandWeight: -1, Radar: tc.radar})
			require.NoError(t, err)
			var pixels []int
			for _, f := range res.Fields {
				pixels = append(pixels, f.Pixels)
			}
			assert.Len(t, res.Fields, tc.fields, "pixels %v", pixels)
			assert.Len(t, res.RadarDates, tc.dates)
		})
	}
}
