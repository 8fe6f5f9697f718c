package boundary

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/paulmach/orb"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/geo/crs"
	"github.com/cropkit/cropkit/imagery"
)

// Scene is one acquisition Detect reads. *imagery.Scene satisfies it, so
// scenes may come from local folders, STAC items or any catalogue that
// opens them.
type Scene interface {
	ID() string
	Date() time.Time
	// Grid is the scene's reference grid (its CRS sets the working CRS).
	Grid() geo.Grid
	// ReadField reads bands and mask under a lon/lat (multi)polygon; only
	// the tiles under its window are read.
	ReadField(ctx context.Context, field orb.MultiPolygon, bands []string) (*imagery.FieldRaster, error)
}

// Defaults of Options (used where a field is 0).
const (
	DefaultMinAreaHa        = 0.2
	DefaultMinClearFraction = 0.9
	DefaultMaxPixels        = 300_000
	DefaultMergeThreshold   = 0.0475
	DefaultTextureWeight    = 1.0
	DefaultBandWeight       = 2.0
	DefaultMinGreenNDVI     = 0.5
	DefaultMinCoreFraction  = 0.15
	DefaultMinSegmentPixels = 8
	DefaultRefineIterations = 3
	DefaultMaxShiftPixels   = 2
	DefaultMaxDates         = 40
	DefaultMaxProfileDist   = 0.15
	DefaultMaxRadarDist     = 1.5
)

// Options tune Detect. The zero value is ready to use.
type Options struct {
	// Start and End bound the acquisition dates used (inclusive). When
	// both are zero, the last growing season with imagery is used (see
	// LastSeason); when one is zero it is open on that side.
	Start, End time.Time
	// MinAreaHa drops detected fields smaller than this (default 0.2 ha).
	MinAreaHa float64
	// MinClearFraction skips a date when fewer of the area's pixels are
	// clear (mask and no-data); default 0.9.
	MinClearFraction float64
	// MaxPixels bounds the area's window in scene pixels (default 300,000:
	// 2,500 ha at 10 m plus a margin); larger areas fail with ErrTooLarge.
	MaxPixels int
	// MergeThreshold stops region merging: adjacent regions merge, weakest
	// first, while the mean edge strength along their common border is at
	// most this. Default DefaultMergeThreshold.
	MergeThreshold float64
	// MinSegmentPixels: segments smaller than this are merged into the
	// neighbour across their weakest edge before filtering (default 8);
	// mixed pixels on field borders end up in a field this way.
	MinSegmentPixels int
	// TextureWeight lowers the merge cost by this times the smaller of the
	// two regions' mean inner edge strength, so textured fields hold
	// together (default 1; negative: border strength alone).
	TextureWeight float64
	// BandWeight weighs each of the four 10 m bands' reflectance
	// difference, scaled to NDVI's typical in-field difference, against
	// the NDVI difference in the edge strength (default 2; negative: NDVI
	// alone).
	BandWeight float64
	// MaxProfileDistance vetoes the merge of two regions (of a few pixels
	// or more) whose mean NDVI profiles over the season differ by more
	// than this (root mean square over the dates); default
	// DefaultMaxProfileDist, negative: no veto.
	MaxProfileDistance float64
	// Radar are Sentinel-1 acquisitions over the area (VV and VH
	// backscatter; *imagery.Scene reads them as linear power), optional.
	// Those dated within the season are resampled onto the optical grid
	// (the radar pixel under each optical pixel's centre; same CRS) and
	// their mean VV and VH per date join the regions' profiles: a merge
	// vetoed by the NDVI profiles (MaxProfileDistance) then goes ahead
	// when the radar profiles lie within MaxRadarDistance, as those of
	// one crop whose NDVI differed on some dates (a patchy emergence, a
	// date with haze) do. At most MaxDates radar dates, evenly spread.
	Radar []Scene
	// MaxRadarDistance, in dB: see Radar (default DefaultMaxRadarDist;
	// negative: the radar profiles do not lift the veto).
	MaxRadarDistance float64
	// MaxDates bounds the clear dates used, evenly spread over the season
	// (default 40): memory is about 12 bytes per pixel and date.
	MaxDates int
	// MaxShiftPixels bounds the whole-pixel shift each date may take to
	// align with the others (default 2; negative: no co-registration).
	MaxShiftPixels int
	// RefineIterations: times border pixels move to the adjacent region
	// with the closest NDVI profile (default 3; negative: none).
	RefineIterations int
	// MinGreenNDVI drops regions whose mean (over pixels) of the highest
	// clear NDVI of the season stays below it: surfaces never green
	// (default 0.5).
	MinGreenNDVI float64
	// MinCoreFraction drops thin regions: those whose share of pixels with
	// all four neighbours in the region is below it (default 0.15; a strip
	// two pixels wide has none).
	MinCoreFraction float64
	// SimplifyTolerance smooths the pixel staircases of the polygons with
	// this tolerance in metres, without gaps between neighbours
	// (geo.PolygonizeSimplified); 0 keeps pixel edges.
	SimplifyTolerance float64
}

func (o Options) withDefaults() Options {
	o.MinAreaHa = cmp.Or(o.MinAreaHa, DefaultMinAreaHa)
	o.MinClearFraction = cmp.Or(o.MinClearFraction, DefaultMinClearFraction)
	o.MaxPixels = cmp.Or(o.MaxPixels, DefaultMaxPixels)
	o.MergeThreshold = cmp.Or(o.MergeThreshold, DefaultMergeThreshold)
	o.MinSegmentPixels = cmp.Or(o.MinSegmentPixels, DefaultMinSegmentPixels)
	o.TextureWeight = max(cmp.Or(o.TextureWeight, DefaultTextureWeight), 0)            // negative: none
	o.BandWeight = max(cmp.Or(o.BandWeight, DefaultBandWeight), 0)                     // negative: NDVI only
	o.MaxProfileDistance = max(cmp.Or(o.MaxProfileDistance, DefaultMaxProfileDist), 0) // negative: none
	o.MaxRadarDistance = max(cmp.Or(o.MaxRadarDistance, DefaultMaxRadarDist), 0)       // negative: never lifts the veto
	if o.MaxDates <= 0 {
		o.MaxDates = DefaultMaxDates
	}
	o.MaxShiftPixels = cmp.Or(o.MaxShiftPixels, DefaultMaxShiftPixels)
	o.RefineIterations = cmp.Or(o.RefineIterations, DefaultRefineIterations)
	o.MinGreenNDVI = cmp.Or(o.MinGreenNDVI, DefaultMinGreenNDVI)
	o.MinCoreFraction = cmp.Or(o.MinCoreFraction, DefaultMinCoreFraction)
	return o
}

// Field is one detected field.
type Field struct {
	// Polygon is the field in EPSG:4326 (RFC 7946 winding).
	Polygon orb.Polygon
	// AreaHa is the geodesic area of Polygon in hectares.
	AreaHa float64
	// Confidence in [0, 1] is the contrast between the edge strength along
	// the field's border and inside it: (border − inside) / (border +
	// inside), clamped; 0 when the border is no stronger than the inside.
	Confidence float64
	// Pixels is the number of scene pixels of the field.
	Pixels int
}

// Result is what Detect found.
type Result struct {
	Fields []Field
	// Dates are the acquisition dates used, in order.
	Dates []time.Time
	// RadarDates are the dates of the Options.Radar scenes used, in order.
	RadarDates []time.Time
	// Skipped names each scene in the date range that was not used, with why.
	Skipped []string
	// Grid is the area's window of the scenes' grid, in the scene CRS.
	Grid geo.Grid
}

// LastSeason returns the last growing season (1 March to 31 October, UTC)
// holding at least one of dates, and false when none falls in a season.
func LastSeason(dates []time.Time) (start, end time.Time, ok bool) {
	year := 0
	for _, d := range dates {
		d = d.UTC()
		if m := d.Month(); m >= time.March && m <= time.October && d.Year() > year {
			year = d.Year()
		}
	}
	if year == 0 {
		return time.Time{}, time.Time{}, false
	}
	return time.Date(year, time.March, 1, 0, 0, 0, 0, time.UTC),
		time.Date(year, time.October, 31, 23, 59, 59, 0, time.UTC), true
}

// Detect finds field polygons in aoi (EPSG:4326) from scenes. Fields are
// made of the pixels whose centre lies inside aoi, so along a slanted edge
// of aoi they may stick out by up to half a pixel. Scenes outside
// the date range, without overlap, on another grid than the first usable
// scene, or with too few clear pixels are skipped (Result.Skipped). It fails
// with ErrEmptyAOI, ErrTooLarge or ErrNoImagery (errors.Is).
func Detect(ctx context.Context, scenes []Scene, aoi orb.MultiPolygon, opts Options) (*Result, error) {
	o := opts.withDefaults()
	acc, res, start, end, err := readSeason(ctx, scenes, aoi, o)
	if err != nil {
		return nil, err
	}
	acc.coregister(o.MaxShiftPixels)
	var rad *radar
	if len(o.Radar) > 0 {
		if rad, err = readRadar(ctx, o.Radar, aoi, start, end, acc, o.MaxDates, res); err != nil {
			return nil, err
		}
	}
	labels, n, edges, err := segment(acc, rad, o)
	if err != nil {
		return nil, err
	}
	fields, err := fields(acc, labels, n, edges, o)
	if err != nil {
		return nil, err
	}
	res.Fields = fields
	return res, nil
}

// readSeason reads the clear dates of the season (o with defaults) over
// aoi into profiles; the Result it returns has all but the fields. start
// and end are the season's bounds (zero: open).
func readSeason(ctx context.Context, scenes []Scene, aoi orb.MultiPolygon, o Options) (*profiles, *Result, time.Time, time.Time, error) {
	var start, end time.Time
	fail := func(err error) (*profiles, *Result, time.Time, time.Time, error) {
		return nil, nil, start, end, err
	}
	if len(aoi) == 0 {
		return fail(ErrEmptyAOI)
	}
	start, end = o.Start, o.End
	if start.IsZero() && end.IsZero() {
		dates := make([]time.Time, len(scenes))
		for i, s := range scenes {
			dates[i] = s.Date()
		}
		var ok bool
		if start, end, ok = LastSeason(dates); !ok {
			return fail(fmt.Errorf("%w: no scene in a growing season (March to October)", ErrNoImagery))
		}
	}
	order := make([]Scene, 0, len(scenes))
	for _, s := range scenes {
		d := s.Date()
		if (!start.IsZero() && d.Before(start)) || (!end.IsZero() && d.After(end)) {
			continue
		}
		order = append(order, s)
	}
	slices.SortStableFunc(order, func(a, b Scene) int { return a.Date().Compare(b.Date()) })

	res := &Result{}
	// Pass 1: the mask alone (no band is read) picks the clear dates and
	// the grid.
	var picks []Scene
	var ref *imagery.FieldRaster
	for _, s := range order {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		if ref == nil {
			if err := checkSize(s, aoi, o.MaxPixels); err != nil {
				return fail(err)
			}
		}
		fr, err := s.ReadField(ctx, aoi, nil)
		switch {
		case errors.Is(err, imagery.ErrNoOverlap):
			res.Skipped = append(res.Skipped, s.ID()+": no overlap")
			continue
		case err != nil:
			return fail(fmt.Errorf("read scene %s: %w", s.ID(), err))
		}
		if ref == nil {
			ref = fr
		} else if fr.Grid != ref.Grid {
			res.Skipped = append(res.Skipped, s.ID()+": other grid")
			continue
		}
		n := 0
		for i, in := range fr.InField {
			if in && fr.Clear[i] {
				n++
			}
		}
		frac := float64(n) / float64(max(fr.FieldPixels, 1))
		if frac < o.MinClearFraction {
			res.Skipped = append(res.Skipped, fmt.Sprintf("%s: %.0f%% clear", s.ID(), 100*frac))
			continue
		}
		picks = append(picks, s)
	}
	if ref == nil {
		return fail(fmt.Errorf("%w: no scene between %s and %s overlaps it", ErrEmptyAOI,
			start.Format(time.DateOnly), end.Format(time.DateOnly)))
	}
	if len(picks) == 0 {
		return fail(fmt.Errorf("%w: none of %d scene(s) between %s and %s is %.0f%% clear", ErrNoImagery,
			len(order), start.Format(time.DateOnly), end.Format(time.DateOnly), 100*o.MinClearFraction))
	}
	// More clear dates than MaxDates: keep MaxDates spread evenly in time.
	if len(picks) > o.MaxDates {
		kept := make([]Scene, 0, o.MaxDates)
		for k := range o.MaxDates {
			kept = append(kept, picks[k*(len(picks)-1)/max(o.MaxDates-1, 1)])
		}
		for _, s := range picks {
			if !slices.Contains(kept, s) {
				res.Skipped = append(res.Skipped, s.ID()+": over MaxDates")
			}
		}
		picks = kept
	}
	// Pass 2: the NDVI of the clear dates.
	acc := newProfiles(ref)
	valid := make([]bool, len(ref.InField))
	for _, s := range picks {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		fr, err := s.ReadField(ctx, aoi, reflBands[:])
		if errors.Is(err, imagery.ErrMissingBand) {
			// Without the visible bands the date still gives its NDVI.
			fr, err = s.ReadField(ctx, aoi, ndviBands)
		}
		if err != nil {
			return fail(fmt.Errorf("read scene %s: %w", s.ID(), err))
		}
		if fr.Grid != ref.Grid {
			return fail(fmt.Errorf("read scene %s: window %v differs from its mask's", s.ID(), fr.Window))
		}
		for i := range valid {
			valid[i] = ref.InField[i] && fr.Clear[i]
			for _, b := range ndviBands {
				valid[i] = valid[i] && finite(fr.Bands[b][i])
			}
			valid[i] = valid[i] && fr.Bands["B04"][i]+fr.Bands["B08"][i] > 0
		}
		acc.add(fr, valid)
		res.Dates = append(res.Dates, s.Date())
	}
	res.Grid = ref.Grid
	return acc, res, start, end, nil
}

// segment splits the area into regions (labels 0…n−1 per pixel, −1
// outside the area) and returns them with the pixel edges they were
// judged by: region merging, absorption of small segments, border
// refinement and a sieve.
func segment(acc *profiles, rad *radar, o Options) (labels []int32, n int, edges []edge, err error) {
	acc.weighBands(o.BandWeight)
	g := newRegions(acc, o.TextureWeight, o.MaxProfileDistance, rad, o.MaxRadarDistance)
	g.mergeBelow(o.MergeThreshold)
	g.absorbSmall(int32(o.MinSegmentPixels))
	labels = g.labels()
	refine(acc, labels, o.RefineIterations)
	cols, rows := acc.cols, acc.rows
	components(labels, cols, rows)
	if err := geo.Sieve(labels, cols, rows, o.MinSegmentPixels, -1); err != nil {
		return nil, 0, nil, fmt.Errorf("sieve regions: %w", err)
	}
	return labels, components(labels, cols, rows), g.edges, nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// checkSize fails with ErrTooLarge when aoi's window on s holds more than max pixels.
func checkSize(s Scene, aoi orb.MultiPolygon, max int) error {
	g := s.Grid()
	t, err := crs.New(4326, g.EPSG)
	if err != nil {
		return fmt.Errorf("project area to EPSG:%d: %w", g.EPSG, err)
	}
	mp, err := geo.Transform(aoi, t)
	if err != nil {
		return fmt.Errorf("project area to EPSG:%d: %w", g.EPSG, err)
	}
	b := mp.Bound()
	cols, rows := math.Ceil((b.Max[0]-b.Min[0])/g.DX)+1, math.Ceil((b.Max[1]-b.Min[1])/g.DY)+1
	if n := cols * rows; n > float64(max) {
		return fmt.Errorf("%w: %.0f pixels at %g m, at most %d", ErrTooLarge, n, g.DX, max)
	}
	return nil
}
