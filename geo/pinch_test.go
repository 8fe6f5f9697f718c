package geo

import (
	"testing"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSplitPinches(t *testing.T) {
	// A figure eight: two squares touching at (1, 1), one ring through it.
	eight := orb.Polygon{{{0, 0}, {1, 0}, {1, 1}, {2, 1}, {2, 2}, {1, 2}, {1, 1}, {0, 1}, {0, 0}}}
	require.Error(t, ValidatePolygon(eight))
	got := SplitPinches(eight)
	require.Len(t, got, 2)
	total := 0.0
	for _, p := range got {
		require.NoError(t, ValidatePolygon(p))
		total += Area(orb.MultiPolygon{p})
	}
	assert.InDelta(t, 2, total, 1e-12)

	// An exterior that pinches around a loop turning the other way: the
	// loop is a hole touching the exterior at one vertex.
	pinchedHole := orb.Polygon{{{0, 0}, {2, 0}, {1, 1}, {3, 1}, {2, 0}, {4, 0}, {4, 4}, {0, 4}, {0, 0}}}
	require.Error(t, ValidatePolygon(pinchedHole))
	got = SplitPinches(pinchedHole)
	require.Len(t, got, 1)
	require.Len(t, got[0], 2, "exterior and hole")
	require.NoError(t, ValidatePolygon(got[0]))
	assert.InDelta(t, 15, Area(orb.MultiPolygon{got[0]}), 1e-12)

	// A simple polygon comes back as it is.
	square := orb.Polygon{{{0, 0}, {1, 0}, {1, 1}, {0, 1}, {0, 0}}}
	assert.Equal(t, []orb.Polygon{square}, SplitPinches(square))
}
