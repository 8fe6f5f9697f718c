package boundary_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/boundary"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/geo/crs"
	"github.com/cropkit/cropkit/internal/testenv"
)

// Co-registration of the labels (independent of any detector): the
// Flanders parcel labels sit 10–15 m north of where the imagery shows the
// parcels (../shared/data/README.md). Before scoring, the labels of each
// chip are moved by the whole-chip shift, in shiftStep steps within
// ±shiftRange metres, that minimises the pooled within-parcel NDVI variance
// over the season's clear dates.
const (
	shiftStep  = 2.0  // metres
	shiftRange = 30.0 // metres, each axis
	// labelRes is the grid, in metres, the labels are rasterized on to
	// weigh each 10 m pixel by the share of it a moved parcel covers.
	labelRes = 2.0
	// scoredMinHa: parcels of at least this area (in the chip) are scored;
	// the smaller ones (a few pixels, mostly slivers of parcels cut by
	// the chip edge) still count as labelled area for the object metrics.
	scoredMinHa = 0.5
)

// metreShift moves labels DX metres east and DY metres north.
type metreShift struct{ DX, DY float64 }

// varianceShift returns the shift of parcels that minimises the pooled
// within-parcel NDVI variance over the clear dates of the last season of
// scenes (dates with ≥ 99 % of the chip clear; a pixel counts with the
// share of it the moved parcel covers).
func varianceShift(t testing.TB, scenes []boundary.Scene, parcels []parcel, aoi orb.MultiPolygon) (metreShift, float64) {
	t.Helper()
	var dates []time.Time
	for _, s := range scenes {
		dates = append(dates, s.Date())
	}
	start, end, ok := boundary.LastSeason(dates)
	require.True(t, ok)
	g := scenes[0].Grid()
	var ndvi [][]float64 // per clear date, per pixel (NaN where not clear)
	for _, s := range scenes {
		if s.Date().Before(start) || s.Date().After(end) {
			continue
		}
		fr, err := s.ReadField(context.Background(), aoi, []string{"B04", "B08"})
		require.NoError(t, err)
		require.Equal(t, g.Cols*g.Rows, len(fr.Clear), "chip window")
		clear := 0
		for _, c := range fr.Clear {
			if c {
				clear++
			}
		}
		if clear < len(fr.Clear)*99/100 {
			continue
		}
		l := make([]float64, len(fr.Clear))
		for i := range l {
			l[i] = math.NaN()
			if b4, b8 := fr.Bands["B04"][i], fr.Bands["B08"][i]; fr.Clear[i] && b4+b8 > 0 {
				l[i] = (b8 - b4) / (b8 + b4)
			}
		}
		ndvi = append(ndvi, l)
	}
	require.NotEmpty(t, ndvi, "clear dates")
	// The parcels on a labelRes grid over the chip.
	k := int(math.Round(g.DX / labelRes))
	fine := geo.Grid{EPSG: g.EPSG, X0: g.X0, Y0: g.Y0, DX: labelRes, DY: labelRes, Cols: g.Cols * k, Rows: g.Rows * k}
	tr, err := crs.New(4326, g.EPSG)
	require.NoError(t, err)
	type cell struct{ r, c, p int }
	var cells []cell
	for pi, p := range parcels {
		mp, err := geo.Transform(p.geom, tr)
		require.NoError(t, err)
		for i, in := range geo.Rasterize(mp, fine) {
			if in {
				cells = append(cells, cell{i / fine.Cols, i % fine.Cols, pi})
			}
		}
	}
	n := g.Cols * g.Rows
	w := make([]float64, len(parcels)*n)
	steps := int(math.Round(shiftRange / shiftStep))
	best, bestCost := metreShift{}, math.Inf(1)
	for sy := -steps; sy <= steps; sy++ {
		for sx := -steps; sx <= steps; sx++ {
			clear(w)
			// Moved sx steps east and sy steps north: rows grow southwards.
			dc, dr := sx*int(shiftStep/labelRes), -sy*int(shiftStep/labelRes)
			for _, c := range cells {
				r, cc := c.r+dr, c.c+dc
				if r < 0 || cc < 0 || r >= fine.Rows || cc >= fine.Cols {
					continue
				}
				w[c.p*n+(r/k)*g.Cols+cc/k]++
			}
			var ss, tw float64
			for _, l := range ndvi {
				for p := range parcels {
					var sw, swv, swv2 float64
					for j, wj := range w[p*n : (p+1)*n] {
						if v := l[j]; wj > 0 && v == v {
							sw += wj
							swv += wj * v
							swv2 += wj * v * v
						}
					}
					if sw > 0 {
						ss += swv2 - swv*swv/sw
						tw += sw
					}
				}
			}
			if cost := ss / tw; cost < bestCost {
				best, bestCost = metreShift{float64(sx) * shiftStep, float64(sy) * shiftStep}, cost
			}
		}
	}
	return best, bestCost
}

// scoreRow is one parcel's best match against the co-registered labels.
type scoreRow struct {
	chip, name, crop string
	clipped          bool
	areaHa           float64 // in the chip, after the shift
	iou, rawIoU      float64
	confidence       float64
}

// chipScore is one chip's detections against its co-registered labels.
type chipScore struct {
	shift metreShift
	rows  []scoreRow // every parcel
	// Object counts at IoU > 0.5 over the labelled area.
	tp, predicted, labelled int
}

// scoreChip rasterizes the parcels moved by sh and the detected fields on
// a 1 m grid over the chip and returns, per parcel, the IoU of the best
// matching field, and the object counts: a detected field is a
// prediction when most of it lies in the labelled area (the union of the
// moved parcels), a true positive when it has IoU > 0.5 with a parcel
// (each parcel and field matched at most once, which IoU > 0.5 implies).
func scoreChip(t testing.TB, chip string, g geo.Grid, parcels []parcel, fields []boundary.Field, sh metreShift) chipScore {
	t.Helper()
	const res = 1.0
	fine := geo.Grid{EPSG: g.EPSG, X0: g.X0, Y0: g.Y0, DX: res, DY: res,
		Cols: int(float64(g.Cols) * g.DX / res), Rows: int(float64(g.Rows) * g.DY / res)}
	tr, err := crs.New(4326, g.EPSG)
	require.NoError(t, err)
	det := make([]int32, fine.Cols*fine.Rows)
	for i := range det {
		det[i] = -1
	}
	detArea := make([]int, len(fields))
	for k, f := range fields {
		mp, err := geo.Transform(orb.MultiPolygon{f.Polygon}, tr)
		require.NoError(t, err)
		for i, in := range geo.Rasterize(mp, fine) {
			if in {
				det[i] = int32(k)
				detArea[k]++
			}
		}
	}
	dr, dc := int(math.Round(-sh.DY/res)), int(math.Round(sh.DX/res))
	labelledBy := make([]int, len(fields)) // per field, its area in the labelled area
	labelled := make([]bool, len(det))
	cs := chipScore{shift: sh}
	matched := make([]bool, len(fields))
	for _, p := range parcels {
		mp, err := geo.Transform(p.geom, tr)
		require.NoError(t, err)
		mask := geo.Rasterize(mp, fine)
		score := func(dr, dc int) (iou, conf float64, area, best int) {
			inter := make([]int, len(fields))
			for i, in := range mask {
				if !in {
					continue
				}
				r, c := i/fine.Cols+dr, i%fine.Cols+dc
				if r < 0 || c < 0 || r >= fine.Rows || c >= fine.Cols {
					continue // moved out of the chip: not labelled here
				}
				area++
				if k := det[r*fine.Cols+c]; k >= 0 {
					inter[k]++
				}
			}
			best, conf = -1, math.NaN()
			for k, n := range inter {
				if n == 0 {
					continue
				}
				if v := float64(n) / float64(area+detArea[k]-n); v > iou {
					iou, conf, best = v, fields[k].Confidence, k
				}
			}
			return iou, conf, area, best
		}
		iou, conf, area, best := score(dr, dc)
		raw, _, _, _ := score(0, 0)
		for i, in := range mask {
			r, c := i/fine.Cols+dr, i%fine.Cols+dc
			if in && r >= 0 && c >= 0 && r < fine.Rows && c < fine.Cols {
				labelled[r*fine.Cols+c] = true
			}
		}
		cs.rows = append(cs.rows, scoreRow{chip: chip, name: p.name, crop: p.crop, clipped: p.clipped,
			areaHa: float64(area) * res * res / 10_000, iou: iou, rawIoU: raw, confidence: conf})
		cs.labelled++
		if iou > 0.5 && !matched[best] {
			matched[best] = true
			cs.tp++
		}
	}
	for i, k := range det {
		if k >= 0 && labelled[i] {
			labelledBy[k]++
		}
	}
	for k := range fields {
		if 2*labelledBy[k] > detArea[k] {
			cs.predicted++
		}
	}
	return cs
}

// chipData is one Flanders chip opened with its labels and their
// co-registration shift.
type chipData struct {
	name    string
	scenes  []boundary.Scene
	radar   []boundary.Scene // Sentinel-1
	parcels []parcel
	grid    geo.Grid
	aoi     orb.MultiPolygon
	shift   metreShift
	cost    float64
}

// openCoregistered opens both Flanders chips and co-registers their labels.
func openCoregistered(t testing.TB) []chipData {
	var out []chipData
	for _, chip := range flanders {
		scenes := openChip(t, testenv.DataDir(t, "s2", chip))
		g := scenes[0].Grid()
		cd := chipData{name: chip, scenes: scenes, radar: openRadar(t, chip), parcels: readParcels(t, testenv.DataDir(t, "fields", chip+".geojson")),
			grid: g, aoi: chipAOI(t, g)}
		cd.shift, cd.cost = varianceShift(t, scenes, cd.parcels, cd.aoi)
		out = append(out, cd)
	}
	return out
}

// issueShift is the shift the issue's independent check found on both
// chips (10 m south); the test scores against it as well.
var issueShift = metreShift{0, -10}

// summary is the score of a set of chips.
type summary struct {
	scored                  []scoreRow // parcels ≥ scoredMinHa
	tp, predicted, labelled int
}

func (s *summary) add(cs chipScore) {
	for _, r := range cs.rows {
		if r.areaHa >= scoredMinHa {
			s.scored = append(s.scored, r)
		}
	}
	s.tp, s.predicted, s.labelled = s.tp+cs.tp, s.predicted+cs.predicted, s.labelled+cs.labelled
}

func (s summary) ious() []float64 {
	var v []float64
	for _, r := range s.scored {
		v = append(v, r.iou)
	}
	return v
}

func (s summary) median() float64 { return median(s.ious()) }

// share is the share of scored parcels at IoU ≥ 0.5.
func (s summary) share() float64 {
	n := 0
	for _, r := range s.scored {
		if r.iou >= 0.5 {
			n++
		}
	}
	return float64(n) / float64(max(len(s.scored), 1))
}

// prf is FTW's object precision, recall and F1 at IoU > 0.5.
func (s summary) prf() (precision, recall, f1 float64) {
	precision, recall = float64(s.tp)/float64(max(s.predicted, 1)), float64(s.tp)/float64(max(s.labelled, 1))
	return precision, recall, 2 * precision * recall / math.Max(precision+recall, 1e-12)
}

func (s summary) String() string {
	p, r, f1 := s.prf()
	return fmt.Sprintf("%d scored parcels: median IoU %.3f, share IoU ≥ 0.5 %.0f%%; objects at IoU > 0.5: %d matched of %d predicted, %d labelled: precision %.2f, recall %.2f, F1 %.2f",
		len(s.scored), s.median(), 100*s.share(), s.tp, s.predicted, s.labelled, p, r, f1)
}

// detectScored runs Detect on each chip and scores it against the labels
// moved by the chip's co-registration shift and by issueShift.
func detectScored(t testing.TB, chips []chipData, opts boundary.Options) (own, issue []chipScore, log []string) {
	for _, cd := range chips {
		start := time.Now()
		o := opts
		if o.Radar == nil {
			o.Radar = cd.radar
		} else if len(o.Radar) == 0 {
			o.Radar = nil // optical only
		}
		res, err := boundary.Detect(context.Background(), cd.scenes, cd.aoi, o)
		require.NoError(t, err)
		log = append(log, fmt.Sprintf("%s: %d optical and %d radar dates, %d fields in %v", cd.name, len(res.Dates), len(res.RadarDates), len(res.Fields), time.Since(start).Round(time.Millisecond)))
		own = append(own, scoreChip(t, cd.name, cd.grid, cd.parcels, res.Fields, cd.shift))
		issue = append(issue, scoreChip(t, cd.name, cd.grid, cd.parcels, res.Fields, issueShift))
	}
	return own, issue, log
}

// TestDetectFlandersCoregistered is the acceptance test of issue 23: the
// labels of each Flanders chip co-registered with the imagery by the
// variance criterion (varianceShift, no detector involved), then for each
// scored parcel (≥ 0.5 ha in the chip: 21 parcels) the IoU of the best
// matching detected field; goal median ≥ 0.75 with ≥ 80 % at IoU ≥ 0.5,
// required both with the labels moved by the criterion's shift and by
// the issue's 10 m south, with the chips' Sentinel-1 dates (Options.Radar)
// and without (the endpoint's optical-only detection). It also reports
// FTW's object-level precision, recall and F1 at IoU > 0.5 over the
// labelled area (all 30 parcels).
//
// The criterion is nearly flat between 10 and 20 m south (the labels sit
// about 15 m north; a pixel-aligned label moved 10 or 20 m fits as well):
// it finds 20 m on 31UES and 10 m on 31UDS.
func TestDetectFlandersCoregistered(t *testing.T) {
	chips := openCoregistered(t)
	var b strings.Builder
	for _, cd := range chips {
		fmt.Fprintf(&b, "%s: labels co-registered by %+.0f m east, %+.0f m north (pooled within-parcel NDVI variance %.5f)\n",
			cd.name, cd.shift.DX, cd.shift.DY, cd.cost)
	}
	assert.Equal(t, metreShift{0, -20}, chips[0].shift, "%s: co-registration shift", chips[0].name)
	assert.Equal(t, metreShift{0, -10}, chips[1].shift, "%s: co-registration shift", chips[1].name)
	for _, run := range []struct {
		name string
		opts boundary.Options
	}{
		{"optical and radar", boundary.Options{}},
		{"optical only (what the endpoint serves)", boundary.Options{Radar: []boundary.Scene{}}},
	} {
		own, issue, log := detectScored(t, chips, run.opts)
		fmt.Fprintf(&b, "\n%s:\n", run.name)
		for _, l := range log {
			fmt.Fprintln(&b, l)
		}
		var so, si summary
		for k := range own {
			so.add(own[k])
			si.add(issue[k])
		}
		fmt.Fprintf(&b, "| parcel | crop | ha | cut by chip edge | IoU | IoU, labels 10 m south | IoU, raw labels | confidence |\n|---|---|---|---|---|---|---|---|\n")
		for k, r := range so.scored {
			fmt.Fprintf(&b, "| %s | %s | %.2f | %v | %.3f | %.3f | %.3f | %.2f |\n", r.name, r.crop, r.areaHa, r.clipped, r.iou, si.scored[k].iou, r.rawIoU, r.confidence)
		}
		fmt.Fprintf(&b, "labels co-registered per chip: %v\nlabels 10 m south:             %v\n", so, si)
		for _, s := range []summary{so, si} {
			assert.Len(t, s.scored, 21, "%s: scored parcels", run.name)
			assert.GreaterOrEqual(t, s.share(), 0.8, "%s: share at IoU ≥ 0.5", run.name)
			assert.GreaterOrEqual(t, s.median(), 0.75, "%s: median IoU", run.name)
		}
	}
	t.Log("\n" + b.String())
}
