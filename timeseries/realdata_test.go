package timeseries_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/imagery"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/timeseries"
)

// chip is one real chip's fields and their observations of one index.
type chip struct {
	name   string
	fields []string
	props  []map[string]any
	obs    [][]timeseries.Observation // per field, every scene with a clear pixel
}

// loadChip measures index over the chip's fields in every scene folder of
// dir (a sensor's folder of date folders), with the server's mask (the
// stored products /fields/timeseries, phenology and events read).
func loadChip(t *testing.T, place, sensorDir, index string) chip {
	t.Helper()
	return loadChipMasked(t, place, sensorDir, index, nil)
}

// loadChipMasked is loadChip with the SCL classes masked (nil: the default).
func loadChipMasked(t *testing.T, place, sensorDir, index string, maskClasses []int) chip {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.DataDir(t, "fields"), place+".geojson"))
	require.NoError(t, err)
	feats, err := geo.ReadFeatures(data)
	require.NoError(t, err)
	c := chip{name: place}
	var geoms []orb.MultiPolygon
	for _, f := range feats {
		c.fields = append(c.fields, f.Properties["name"].(string))
		c.props = append(c.props, f.Properties)
		geoms = append(geoms, f.Geometry)
	}
	dir := testenv.DataDir(t, sensorDir, place)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	ctx := context.Background()
	var scenes []*imagery.Scene
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		s, err := imagery.OpenScene(ctx, filepath.Join(dir, e.Name()), imagery.SceneOptions{MaskClasses: maskClasses})
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		scenes = append(scenes, s)
	}
	c.obs, err = timeseries.SceneObservations(ctx, scenes, geoms, index, timeseries.SceneOptions{})
	require.NoError(t, err)
	return c
}

// usableClear is the archive's usability rule (archive.DefaultMinClear):
// the observations the CLI and the server give the series.
const usableClear = 0.6

// growing is the calendar growing season test: March to October.
func growing(d time.Time) bool { return d.Month() >= time.March && d.Month() <= time.October }

// cvResult accumulates squared errors of the methods compared.
type cvResult struct {
	dates                      int // withheld dates scored
	n, covered                 int
	model, carry, linear       float64
	gapN, gapCovered           int
	gapModel, gapCarry, gapLin float64
}

func (r cvResult) row(name string) string {
	rm, rc, rl := math.Sqrt(r.model/float64(r.n)), math.Sqrt(r.carry/float64(r.n)), math.Sqrt(r.linear/float64(r.n))
	s := fmt.Sprintf("%-16s dates=%2d n=%3d  RMSE model %.4f carry %.4f linear %.4f  ratio/carry %.3f ratio/linear %.3f  coverage %.1f%%",
		name, r.dates, r.n, rm, rc, rl, rm/rc, rm/rl, 100*float64(r.covered)/float64(r.n))
	if r.gapN > 0 {
		gm, gc, gl := math.Sqrt(r.gapModel/float64(r.gapN)), math.Sqrt(r.gapCarry/float64(r.gapN)), math.Sqrt(r.gapLin/float64(r.gapN))
		s += fmt.Sprintf("\n%-16s gaps≥20 d: n=%3d  RMSE model %.4f carry %.4f linear %.4f  ratio/carry %.3f ratio/linear %.3f  coverage %.1f%%",
			"", r.gapN, gm, gc, gl, gm/gc, gm/gl, 100*float64(r.gapCovered)/float64(r.gapN))
	}
	return s
}

func (r *cvResult) add(o cvResult) {
	r.dates += o.dates
	r.n += o.n
	r.covered += o.covered
	r.model += o.model
	r.carry += o.carry
	r.linear += o.linear
	r.gapN += o.gapN
	r.gapCovered += o.gapCovered
	r.gapModel += o.gapModel
	r.gapCarry += o.gapCarry
	r.gapLin += o.gapLin
}

// crossValidate withholds every third growing-season date clear over most
// fields (three folds, each date withheld once), gives the rest of the
// usable observations to the series and scores the withheld (field, date)
// pairs where the field is ≥ 90 % clear.
func crossValidate(t *testing.T, c chip, extra func(field int, given []timeseries.Observation) []timeseries.Observation) cvResult {
	t.Helper()
	var total cvResult
	for _, r := range crossValidateFolds(t, c, extra) {
		total.add(r)
	}
	return total
}

// crossValidateFolds is crossValidate's result per fold.
func crossValidateFolds(t *testing.T, c chip, extra func(field int, given []timeseries.Observation) []timeseries.Observation) [3]cvResult {
	t.Helper()
	// dates clear over most fields
	clearCount := map[string]int{}
	for _, obs := range c.obs {
		for _, o := range obs {
			if o.Clear >= 0.9 {
				clearCount[o.Date.Format(time.DateOnly)]++
			}
		}
	}
	var dates []string
	for d, n := range clearCount {
		day, _ := time.Parse(time.DateOnly, d)
		if 2*n > len(c.fields) && growing(day) {
			dates = append(dates, d)
		}
	}
	sort.Strings(dates)
	var folds [3]cvResult
	for fold := range 3 {
		total := &folds[fold]
		withheld := map[string]bool{}
		for i := fold; i < len(dates); i += 3 {
			withheld[dates[i]] = true
		}
		total.dates = len(withheld)
		givens := make([][]timeseries.Observation, len(c.obs))
		truths := make([][]timeseries.Observation, len(c.obs))
		for fi, obs := range c.obs {
			for _, o := range obs {
				if withheld[o.Date.Format(time.DateOnly)] {
					if o.Clear >= 0.9 {
						truths[fi] = append(truths[fi], o)
					}
					continue
				}
				givens[fi] = append(givens[fi], o)
			}
			givens[fi] = timeseries.Usable(givens[fi], usableClear)
		}
		for fi := range c.obs {
			given, truth := givens[fi], truths[fi]
			if len(truth) == 0 || len(given) < 2 {
				continue
			}
			all := given
			if extra != nil {
				all = append(append([]timeseries.Observation(nil), all...), extra(fi, given)...)
			}
			m, err := timeseries.Fit(all)
			require.NoError(t, err)
			from, to := truth[0].Date, truth[len(truth)-1].Date
			days, err := m.Daily(from, to, timeseries.Options{Range: [2]float64{-1, 1}})
			require.NoError(t, err)
			for _, o := range truth {
				d := days[int(o.Date.Sub(from).Hours()/24+0.5)]
				require.Equal(t, o.Date.Format(time.DateOnly), d.Date.Format(time.DateOnly))
				prev, next := -1, -1
				for i, g := range given {
					if g.Date.Before(o.Date) {
						prev = i
					} else if next < 0 {
						next = i
					}
				}
				if prev < 0 || next < 0 {
					continue // no carry-forward or interpolation possible
				}
				p, n := given[prev], given[next]
				carry := p.Value
				w := o.Date.Sub(p.Date).Hours() / n.Date.Sub(p.Date).Hours()
				lin := p.Value + w*(n.Value-p.Value)
				em, ec, el := d.Estimate-o.Value, carry-o.Value, lin-o.Value
				in := o.Value >= d.Lower && o.Value <= d.Upper
				total.n++
				total.model += em * em
				total.carry += ec * ec
				total.linear += el * el
				if in {
					total.covered++
				}
				if n.Date.Sub(p.Date) >= 20*24*time.Hour {
					total.gapN++
					total.gapModel += em * em
					total.gapCarry += ec * ec
					total.gapLin += el * el
					if in {
						total.gapCovered++
					}
				}
			}
		}
	}
	return folds
}

// TestCrossValidationRealData is the acceptance measured on both
// Flanders chips: withheld clear growing-season dates, three folds.
func TestCrossValidationRealData(t *testing.T) {
	var all cvResult
	for _, place := range []string{"flanders-31UDS", "flanders-31UES"} {
		// The strict mask, as cropkit timeseries reads Sentinel-2 (and as
		// the data README counts clear pixels).
		c := loadChipMasked(t, place, "s2", "ndvi", imagery.StrictMaskClasses())
		var r cvResult
		for i, f := range crossValidateFolds(t, c, nil) {
			t.Log("\n" + f.row(fmt.Sprintf("%s/%d", place, i)))
			// No withheld set strays far above linear interpolation: on the
			// strict mask's clean observations linear interpolation is hard
			// to beat (single folds 0.98–1.03; the smoother alone reached
			// 1.05 on the server's mask).
			assert.LessOrEqual(t, math.Sqrt(f.model/float64(f.n)), 1.04*math.Sqrt(f.linear/float64(f.n)), "%s fold %d: RMSE vs linear interpolation", place, i)
			r.add(f)
		}
		t.Log("\n" + r.row(place))
		all.add(r)
	}
	t.Log("\n" + all.row("both chips"))
	rm, rc, rl := math.Sqrt(all.model/float64(all.n)), math.Sqrt(all.carry/float64(all.n)), math.Sqrt(all.linear/float64(all.n))
	require.Less(t, rm, 0.8*rc, "RMSE vs carry-forward")
	require.LessOrEqual(t, rm, rl, "RMSE vs linear interpolation")
	cov := float64(all.covered) / float64(all.n)
	require.GreaterOrEqual(t, cov, 0.7)
	require.LessOrEqual(t, cov, 0.9)
}
