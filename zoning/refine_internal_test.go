package zoning

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// refineReference is refine as it was before it visited only candidate
// pixels: every pixel of the raster in every sweep, the regions labelled
// afresh and the means recomputed before each sweep. refine must give
// exactly its labels.
func refineReference(ctx context.Context, labels []int32, feat []float64, dim, k, cols, rows, minPixels int) error {
	const maxSweeps = 30
	n := cols * rows
	var id []int32
	var size []int
	var rl regionLabeller // its buffers serve every sweep
	regions := func() {
		var nr int
		id, nr = rl.label(labels, cols, rows)
		if cap(size) < nr {
			size = make([]int, nr)
		}
		size = size[:nr]
		clear(size)
		for _, r := range id {
			if r >= 0 {
				size[r]++
			}
		}
	}
	mean := make([]float64, (k+1)*dim)
	cnt := make([]float64, k+1)
	for range maxSweeps {
		if err := ctx.Err(); err != nil {
			return err
		}
		clear(mean)
		clear(cnt)
		for i, l := range labels {
			if l == 0 || math.IsNaN(feat[i*dim]) {
				continue
			}
			cnt[l]++
			for d := range dim {
				mean[int(l)*dim+d] += feat[i*dim+d]
			}
		}
		for l := 1; l <= k; l++ {
			for d := range dim {
				if cnt[l] > 0 {
					mean[l*dim+d] /= cnt[l]
				}
			}
		}
		regions()
		moved := 0
		for p := range n {
			a := labels[p]
			if a == 0 || math.IsNaN(feat[p*dim]) || size[id[p]]-1 < max(minPixels, 1) {
				continue
			}
			c, row := p%cols, p/cols
			// Most pixels lie inside their region: with no 4-neighbour of
			// another zone there is nothing to weigh.
			if insideZone(labels, cols, rows, p, a) {
				continue
			}
			best, bestQ := closestNeighbourZone(labels, feat, mean, cnt, dim, cols, p)
			if best == a || !staysConnected(labels, cols, rows, c, row) {
				continue
			}
			size[id[p]]--
			labels[p] = best
			id[p] = id[bestQ]
			size[id[p]]++
			moved++
		}
		if moved == 0 {
			break
		}
	}
	return nil
}

// refine gives exactly the labels of the full-raster sweeps, on random
// maps of blocky zones with noise, missing pixels and holes, one and two
// features, several minimum sizes.
func TestRefineMatchesFullSweeps(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, tc := range []struct{ cols, rows, k, dim, minPixels int }{
		{1, 30, 2, 1, 3}, {30, 1, 3, 1, 2}, {24, 18, 3, 1, 10}, {64, 48, 5, 1, 10}, {64, 48, 4, 2, 6},
		{150, 120, 5, 1, 10}, {97, 61, 8, 2, 1}, {200, 200, 3, 1, 25},
	} {
		for trial := range 8 {
			n := tc.cols * tc.rows
			labels := make([]int32, n)
			feat := make([]float64, n*tc.dim)
			bs := 1 + rng.IntN(8) // zone blocks of bs×bs pixels
			for p := range n {
				c, r := p%tc.cols, p/tc.cols
				labels[p] = 1 + int32((c/bs+2*(r/bs)+rng.IntN(2))%tc.k)
				for d := range tc.dim {
					feat[p*tc.dim+d] = float64(labels[p]) + rng.NormFloat64()*float64(1+d)
				}
				switch rng.IntN(40) {
				case 0:
					labels[p] = 0 // outside the mask
					feat[p*tc.dim] = math.NaN()
				case 1:
					feat[p*tc.dim] = math.NaN() // not clustered
				}
			}
			want := slices.Clone(labels)
			require.NoError(t, refineReference(context.Background(), want, feat, tc.dim, tc.k, tc.cols, tc.rows, tc.minPixels))
			got := slices.Clone(labels)
			require.NoError(t, refine(context.Background(), got, feat, tc.dim, tc.k, tc.cols, tc.rows, tc.minPixels))
			require.Equal(t, want, got, "%+v trial %d", tc, trial)
		}
	}
}

// refine's sweeps examine the pixels along zone boundaries, not the
// raster: on a 600×600 map of three zones with wavy edges all its sweeps
// together look at fewer pixels than one sweep of the whole raster did.
func TestRefineExaminesTheBoundary(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	cols, rows := 600, 600
	n := cols * rows
	labels := make([]int32, n)
	feat := make([]float64, n)
	for p := range n {
		x := float64(p%cols) / float64(cols)
		feat[p] = x + 0.01*rng.NormFloat64()
		// Zone edges off the features' ones, wavy: refinement moves them.
		y := float64(p/cols) / float64(rows)
		labels[p] = 1 + int32(min(2, int((x+0.01*math.Sin(20*y))*3)))
	}
	want := slices.Clone(labels)
	require.NoError(t, refineReference(context.Background(), want, feat, 1, 3, cols, rows, 10))
	examined, err := refineCounting(context.Background(), labels, feat, 1, 3, cols, rows, 10)
	require.NoError(t, err)
	assert.Equal(t, want, labels)
	assert.Greater(t, examined, 0)
	assert.Less(t, examined, n/3, "pixels examined over all sweeps (one full sweep examines n)")
}
