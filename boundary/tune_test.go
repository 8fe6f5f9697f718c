package boundary_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/cropkit/cropkit/boundary"
)

// TestTuneParameters reruns the sweep that chose DefaultMergeThreshold and
// DefaultTextureWeight on the Flanders chips (about a minute; opt-in):
//
//	BOUNDARY_TUNE=1 go test -run TestTuneParameters -v ./boundary
//
// It prints, per setting, the median IoU and the count at IoU ≥ 0.5 of the
// parcels fully inside the chips and the median over all parcels. The
// defaults were picked where both medians are high and stay so for the
// neighbouring settings (a plateau, not a lone peak).
func TestTuneParameters(t *testing.T) {
	if os.Getenv("BOUNDARY_TUNE") == "" {
		t.Skip("set BOUNDARY_TUNE=1 to run the parameter sweep")
	}
	chips := openChips(t)
	for _, tex := range []float64{-1, 0.5, 1, 1.5} {
		for _, th := range []float64{0.04, 0.05, 0.06, 0.07, 0.08, 0.1, 0.13} {
			rows, _ := evalOpened(t, chips, boundary.Options{MergeThreshold: th, TextureWeight: tex})
			var in, all []float64
			n5 := 0
			for _, r := range rows {
				all = append(all, r.iou)
				if !r.clipped {
					in = append(in, r.iou)
					if r.iou >= 0.5 {
						n5++
					}
				}
			}
			fmt.Printf("texture %4.1f threshold %.2f: inside median %.3f (%d/%d at ≥ 0.5), all median %.3f\n",
				tex, th, median(in), n5, len(in), median(all))
		}
	}
}
