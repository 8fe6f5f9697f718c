package zoning

import (
	"context"
	"encoding/gob"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRealZoneCandidates measures the zoning candidates of the README's
// table on the cases of TestRealZoneQuality (without tiling: VR and
// regions of the label raster). It is long, so it runs only with
// CROPKIT_ZONE_CANDIDATES=1; CROPKIT_ZONE_CACHE=FILE keeps the cases and
// the peer's numbers between runs.
func TestRealZoneCandidates(t *testing.T) {
	if os.Getenv("CROPKIT_ZONE_CANDIDATES") == "" {
		t.Skip("set CROPKIT_ZONE_CANDIDATES=1 to measure the candidates")
	}
	type cache struct {
		Cases []vrCase
		Peer  [][]peerResult
	}
	var cc cache
	path := os.Getenv("CROPKIT_ZONE_CACHE")
	if f, err := os.Open(path); err == nil {
		require.NoError(t, gob.NewDecoder(f).Decode(&cc))
		f.Close()
	} else {
		cc.Cases = loadVRCases(t)
		cc.Peer = peerVR(t, cc.Cases)
		if path != "" {
			f, err := os.Create(path)
			require.NoError(t, err)
			require.NoError(t, gob.NewEncoder(f).Encode(cc))
			require.NoError(t, f.Close())
		}
	}
	type cand struct {
		name string
		opts Options
		pipe pipeline
	}
	cands := []cand{
		{"3×3 mean, sieve into largest (before)", Options{}, pipeline{smooth: 1}},
		{"3×3 mean, sieve into closest zone", Options{}, pipeline{smooth: 1, variant: variant{mergeByValue: true}}},
		{"no smoothing, sieve into largest", Options{}, pipeline{smooth: -1}},
		{"no smoothing, sieve into closest zone", Options{}, pipeline{smooth: -1, variant: variant{mergeByValue: true}}},
		{"no smoothing, sieve into closest zone, refine", Options{}, pipeline{smooth: -1, variant: variant{mergeByValue: true, refine: true}}},
		{"Potts ICM β=0.5, sieve into closest zone, refine", Options{}, pipeline{smooth: -1, variant: variant{beta: 0.5, mergeByValue: true, refine: true}}},
		{"Potts ICM β=2, sieve into closest zone, refine", Options{}, pipeline{smooth: -1, variant: variant{beta: 2, mergeByValue: true, refine: true}}},
		{"no smoothing, sieve into closest large zone (1 pass), refine", Options{}, pipeline{smooth: -1, variant: variant{mergeByValue: true, intoLarge: true, sievePasses: 1, refine: true}}},
		{"3×3 mean, sieve into closest large zone (1 pass), refine", Options{}, pipeline{smooth: 1, variant: variant{mergeByValue: true, intoLarge: true, sievePasses: 1, refine: true}}},
		{"best VR of exact + Lloyd k-means × 5 post-processings", Options{}, withStarts(withCap(defaultPipeline(), 0), 0)},
		{"same + 16 single Lloyd runs (fields ≤ 5,000 px)", Options{}, withCap(defaultPipeline(), 0)},
		{"same, best of ≤ 2k regions within 0.02 on fields ≥ 5k MMU", Options{}, withCapMin(defaultPipeline(), 5)},
		{"same, best of ≤ 2k regions within 0.02 on fields ≥ 2k MMU (default)", Options{}, defaultPipeline()},
	}
	if only := os.Getenv("CROPKIT_ZONE_ONLY"); only != "" {
		var keep []cand
		for _, c := range cands {
			if strings.Contains(c.name, only) {
				keep = append(keep, c)
			}
		}
		cands = keep
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| candidate | median VR | median VR / k-means | below peer | median polygons k=2…6 |\n|---|---|---|---|---|\n")
	for _, cd := range cands {
		var ours, kms []float64
		polys := map[int][]float64{}
		below := 0
		for i, c := range cc.Cases {
			layers := []Layer{{Name: "ndvi", Type: CropHealth, Values: c.Values, Weight: 1}}
			for j, k := range vrKs {
				o := cd.opts
				o.Zones, o.Seed = k, 1
				res, err := computeWith(context.Background(), c.Grid, c.Mask, layers, o, cd.pipe)
				require.NoError(t, err)
				vr, np := vrOf(c, res.Labels)
				ours = append(ours, vr)
				kms = append(kms, cc.Peer[i][j].KMeansVR)
				polys[k] = append(polys[k], float64(np))
				if vr < cc.Peer[i][j].PeerVR-1e-9 {
					below++
					if os.Getenv("CROPKIT_ZONE_VERBOSE") != "" {
						t.Logf("%s: %s k=%d ours %.4f (%d regions) peer %.4f (%d) k-means %.4f", cd.name, c.Name, k, vr, np, cc.Peer[i][j].PeerVR, cc.Peer[i][j].PeerPolygons, cc.Peer[i][j].KMeansVR)
					}
				}
			}
		}
		var ps []string
		for _, k := range vrKs {
			ps = append(ps, fmt.Sprintf("%.1f", median(polys[k])))
		}
		fmt.Fprintf(&b, "| %s | %.3f | %.3f | %d of %d | %s |\n", cd.name, median(ours), median(ours)/median(kms), below, len(ours), strings.Join(ps, ", "))
	}
	var pv, pk []float64
	for i := range cc.Cases {
		for j := range vrKs {
			pv = append(pv, cc.Peer[i][j].PeerVR)
			pk = append(pk, cc.Peer[i][j].KMeansVR)
		}
	}
	fmt.Fprintf(&b, "| peer (k-means + 10-pixel sieve) | %.3f | %.3f | | |\n| unconstrained k-means | %.3f | 1 | | |\n", median(pv), median(pv)/median(pk), median(pk))
	t.Log("\n" + b.String())
}

func withStarts(p pipeline, n int) pipeline { p.extraStarts = n; return p }

func withCap(p pipeline, c float64) pipeline { p.capSlack = c; return p }

func withCapMin(p pipeline, c int) pipeline { p.capMinUnits = c; return p }
