package imagery

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/internal/testenv"
)

// TestBandDecibelsMatchLog checks, on every Sentinel-1 date of both chips
// (whole chip as the field), that vv and vh taken from the dB values as
// read (FieldRaster.decibels) equal Compute's 10·log10 of the linear power
// to 1e-12 relative, per pixel and in every statistic, and that the
// shortcut is taken at all.
func TestBandDecibelsMatchLog(t *testing.T) {
	ctx := context.Background()
	cat := NewCatalogue()
	for _, place := range []string{"flanders-31UES", "flanders-31UDS"} {
		root := testenv.DataDir(t, "s1", place)
		entries, err := os.ReadDir(root)
		require.NoError(t, err)
		require.NotEmpty(t, entries)
		checked := 0
		for _, e := range entries {
			s, err := OpenScene(ctx, filepath.Join(root, e.Name()), SceneOptions{})
			require.NoError(t, err)
			g := s.Grid()
			chip := orb.MultiPolygon{{{{g.X0 + 1, g.Y0 - 1}, {g.X0 + g.DX*float64(g.Cols) - 1, g.Y0 - 1},
				{g.X0 + g.DX*float64(g.Cols) - 1, g.Y0 - g.DY*float64(g.Rows) + 1}, {g.X0 + 1, g.Y0 - g.DY*float64(g.Rows) + 1}, {g.X0 + 1, g.Y0 - 1}}}}
			fr, release, err := s.readProjected(ctx, chip, []string{"VV", "VH"}, []string{"VV", "VH"}, 2)
			require.NoError(t, err)
			release()
			require.NoError(t, s.Close())
			logged := *fr
			logged.decibels = nil
			for _, name := range []string{"vv", "vh"} {
				ix, ok := cat.Lookup(name)
				require.True(t, ok)
				require.NotNil(t, fr.bandDecibels(ix), "%s %s: the dB values as read are used", e.Name(), name)
				got, err := fr.Product(ix)
				require.NoError(t, err)
				want, err := logged.Product(ix)
				require.NoError(t, err)
				require.Equal(t, want.Stats.Num, got.Stats.Num)
				for i, w := range want.Values {
					if math.IsNaN(w) {
						require.True(t, math.IsNaN(got.Values[i]), "%s %s pixel %d", e.Name(), name, i)
						continue
					}
					if w == got.Values[i] {
						continue
					}
					require.InEpsilon(t, w, got.Values[i], 1e-12, "%s %s pixel %d", e.Name(), name, i)
				}
				checked++
				ws, gs := want.Stats, got.Stats
				for k, pair := range [][2]float64{{ws.Mean, gs.Mean}, {ws.Median, gs.Median}, {ws.P25, gs.P25}, {ws.P75, gs.P75}, {ws.Min, gs.Min}, {ws.Max, gs.Max}, {ws.Std, gs.Std}} {
					if pair[0] != pair[1] {
						assert.InEpsilon(t, pair[0], pair[1], 1e-12, "%s %s statistic %d", e.Name(), name, k)
					}
				}
			}
		}
		assert.Equal(t, 2*len(entries), checked, place)
	}
}
