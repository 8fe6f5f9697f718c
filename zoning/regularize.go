package zoning

import (
	"context"
	"math"
)

// regularize relabels the clustered pixels to trade a little feature
// distance for spatially coherent zones (iterated conditional modes on a
// Potts model): each pixel takes the label l minimizing
//
//	‖f − c_l‖² + beta · s² · Σ_neighbours w · [label ≠ l]
//
// over its 8 neighbours among the clustered pixels (w = 1 for the 4 edge
// neighbours, 1/√2 for the diagonal ones), where s² is the mean squared
// distance of the pixels to their centres, so beta is free of the
// features' scale. Sweeps run in raster order until no label changes (at
// most maxSweeps), with the centres recomputed after each sweep. A pixel
// whose value sits between two zones goes to the one its neighbours are
// in; a lone outlier inside a zone keeps its label only when it is far
// from the zone's centre. labels is per pixel (1..k, 0 where not
// clustered), features per clustered pixel in the order of idx.
func regularize(ctx context.Context, labels []int32, idx []int, features []float64, dim, k, cols, rows int, beta float64) error {
	const maxSweeps = 10
	if beta <= 0 || len(idx) == 0 {
		return nil
	}
	pos := make([]int32, cols*rows) // clustered index + 1 per pixel
	for j, i := range idx {
		pos[i] = int32(j + 1)
	}
	centres := make([]float64, (k+1)*dim)
	update := func() float64 {
		cnt := make([]float64, k+1)
		clear(centres)
		for j, i := range idx {
			l := labels[i]
			cnt[l]++
			for d := range dim {
				centres[int(l)*dim+d] += features[j*dim+d]
			}
		}
		for l := 1; l <= k; l++ {
			for d := range dim {
				if cnt[l] > 0 {
					centres[l*dim+d] /= cnt[l]
				} else {
					centres[l*dim+d] = math.Inf(1) // empty: never chosen
				}
			}
		}
		var ss float64
		for j, i := range idx {
			ss += dist2Centre(features[j*dim:(j+1)*dim], centres[int(labels[i])*dim:])
		}
		return ss / float64(len(idx))
	}
	s2 := update()
	if s2 == 0 {
		return nil
	}
	diag := 1 / math.Sqrt2
	type nb struct {
		dc, dr int
		w      float64
	}
	nbs := []nb{{-1, 0, 1}, {1, 0, 1}, {0, -1, 1}, {0, 1, 1}, {-1, -1, diag}, {1, -1, diag}, {-1, 1, diag}, {1, 1, diag}}
	agree := make([]float64, k+1)
	size := make([]int, k+1)
	for _, i := range idx {
		size[labels[i]]++
	}
	for range maxSweeps {
		if err := ctx.Err(); err != nil {
			return err
		}
		changed := 0
		for j, i := range idx {
			c, r := i%cols, i/cols
			clear(agree)
			total := 0.0
			for _, n := range nbs {
				cc, rr := c+n.dc, r+n.dr
				if cc < 0 || cc >= cols || rr < 0 || rr >= rows {
					continue
				}
				q := rr*cols + cc
				if pos[q] == 0 {
					continue
				}
				agree[labels[q]] += n.w
				total += n.w
			}
			f := features[j*dim : (j+1)*dim]
			best, bestE := labels[i], math.Inf(1)
			for l := 1; l <= k; l++ {
				e := dist2Centre(f, centres[l*dim:]) + beta*s2*(total-agree[l])
				if e < bestE {
					best, bestE = int32(l), e
				}
			}
			// A zone keeps its last pixel: regularizing never removes a zone.
			if best != labels[i] && size[labels[i]] > 1 {
				size[labels[i]]--
				size[best]++
				labels[i] = best
				changed++
			}
		}
		update()
		if changed == 0 {
			break
		}
	}
	return nil
}

func dist2Centre(f, c []float64) float64 {
	var s float64
	for d, v := range f {
		x := v - c[d]
		s += x * x
	}
	return s
}
