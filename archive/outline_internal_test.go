package archive

import (
	"slices"
	"testing"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
)

// QA: an update with the field's own ring reversed counted as a new
// outline and dropped its products. Orientation and starting vertex are not
// part of an outline; a moved vertex is.
func TestSameGeometryIgnoresOrientationAndStart(t *testing.T) {
	ring := orb.Ring{{4.06, 50.74}, {4.07, 50.74}, {4.075, 50.745}, {4.07, 50.75}, {4.06, 50.75}, {4.06, 50.74}}
	reversed := slices.Clone(ring)
	slices.Reverse(reversed)
	rotated := append(slices.Clone(ring[2:5]), ring[0], ring[1], ring[2])
	moved := slices.Clone(ring)
	moved[2] = orb.Point{4.076, 50.745}
	hole := orb.Ring{{4.064, 50.744}, {4.066, 50.744}, {4.066, 50.746}, {4.064, 50.744}}
	holeRev := slices.Clone(hole)
	slices.Reverse(holeRev)
	base := orb.MultiPolygon{{ring, hole}}
	for _, tc := range []struct {
		name  string
		other orb.MultiPolygon
		same  bool
	}{
		{"identical", orb.MultiPolygon{{ring, hole}}, true},
		{"outer reversed", orb.MultiPolygon{{reversed, hole}}, true},
		{"hole reversed", orb.MultiPolygon{{ring, holeRev}}, true},
		{"other start", orb.MultiPolygon{{rotated, hole}}, true},
		{"reversed and other start", orb.MultiPolygon{{canonicalRing(reversed), holeRev}}, true},
		{"vertex moved", orb.MultiPolygon{{moved, hole}}, false},
		{"hole dropped", orb.MultiPolygon{{ring}}, false},
	} {
		assert.Equal(t, tc.same, sameGeometry(base, tc.other), tc.name)
	}
}
