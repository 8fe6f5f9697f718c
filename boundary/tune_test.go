package boundary_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/cropkit/cropkit/boundary"
)

// TestTuneParameters reruns the leave-one-chip-out cross-validation that
// chose the defaults of MergeThreshold and MaxProfileDistance on the two
// labelled Flanders chips (a few minutes; opt-in):
//
//	BOUNDARY_TUNE=1 go test -run TestTuneParameters -v ./boundary
//
// Every setting of the grid is scored on each chip against its labels
// co-registered by the variance criterion (TestDetectFlandersCoregistered).
// For each chip held out, the setting with the best objective on the
// other chip (median IoU of its scored parcels plus half the share at
// IoU ≥ 0.5) is scored on the held-out chip; the pooled held-out score is
// the cross-validated estimate. The defaults are the same selection made
// on both chips pooled.
func TestTuneParameters(t *testing.T) {
	if os.Getenv("BOUNDARY_TUNE") == "" {
		t.Skip("set BOUNDARY_TUNE=1 to run the cross-validation")
	}
	chips := openCoregistered(t)
	type setting struct{ threshold, dist, radar float64 }
	var grid []setting
	for _, th := range []float64{0.045, 0.0475, 0.05, 0.055} {
		for _, d := range []float64{-1, 0.1, 0.12, 0.15, 0.2} {
			for _, r := range []float64{0, 1, 1.25, 1.5, 2, 3} { // 0: no radar scenes
				if d < 0 && r != 0 {
					continue // no veto to lift
				}
				grid = append(grid, setting{th, d, r})
			}
		}
	}
	scores := make([][]chipScore, len(grid)) // per setting, per chip
	for k, s := range grid {
		opts := boundary.Options{MergeThreshold: s.threshold, MaxProfileDistance: s.dist, MaxRadarDistance: s.radar}
		if s.radar == 0 {
			opts.Radar = []boundary.Scene{} // optical only
		}
		own, _, _ := detectScored(t, chips, opts)
		scores[k] = own
		var line strings.Builder
		var all summary
		for c, cs := range own {
			var one summary
			one.add(cs)
			all.add(cs)
			_, _, f1 := one.prf()
			fmt.Fprintf(&line, "  %s median %.3f share %.2f F1 %.2f;", chips[c].name, one.median(), one.share(), f1)
		}
		_, _, f1 := all.prf()
		fmt.Printf("threshold %.4f veto %5.2f radar %5.2f:%s both median %.3f share %.2f F1 %.2f\n",
			s.threshold, s.dist, s.radar, line.String(), all.median(), all.share(), f1)
	}
	objective := func(cs chipScore) float64 {
		var s summary
		s.add(cs)
		return s.median() + s.share()/2
	}
	var held summary
	for out := range chips {
		best := 0
		for k := range grid {
			if objective(scores[k][1-out]) > objective(scores[best][1-out]) {
				best = k
			}
		}
		held.add(scores[best][out])
		var one summary
		one.add(scores[best][out])
		fmt.Printf("held out %s: chose threshold %.4f, veto %.2f, radar %.2f on %s; held-out %v\n",
			chips[out].name, grid[best].threshold, grid[best].dist, grid[best].radar, chips[1-out].name, one)
	}
	fmt.Printf("cross-validated (both held-out chips pooled): %v\n", held)
	// The defaults: the same selection on both chips pooled.
	pooled := func(k int) float64 {
		var s summary
		for _, cs := range scores[k] {
			s.add(cs)
		}
		return s.median() + s.share()/2
	}
	best := 0
	for k := range grid {
		if pooled(k) > pooled(best) {
			best = k
		}
	}
	fmt.Printf("selected on both chips (the defaults): threshold %.4f, veto %.2f, radar %.2f\n",
		grid[best].threshold, grid[best].dist, grid[best].radar)
}
