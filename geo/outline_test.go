package geo

import (
	"testing"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestValidateOutline(t *testing.T) {
	square := func(x, y, d float64) orb.Polygon {
		return orb.Polygon{{{x, y}, {x + d, y}, {x + d, y + d}, {x, y + d}, {x, y}}}
	}
	for _, tc := range []struct {
		name    string
		mp      orb.MultiPolygon
		limits  OutlineLimits
		wantErr string
	}{
		{"a field", orb.MultiPolygon{square(4.06, 50.74, 0.01)}, OutlineLimits{}, ""},
		{"too many parts", orb.MultiPolygon{square(4.06, 50.74, 0.001), square(4.07, 50.74, 0.001)}, OutlineLimits{Parts: 1}, "2 polygons; at most 1 per field"},
		{"box too large", orb.MultiPolygon{square(4.0, 50.0, 0.01), square(5.0, 51.0, 0.01)}, OutlineLimits{ExtentHa: 1000}, "at most 1000 ha per field"},
		{"default extent", orb.MultiPolygon{square(4.0, 50.0, 0.01), square(8.0, 54.0, 0.01)}, OutlineLimits{}, "at most 100000 ha per field"},
		{"not lon/lat", orb.MultiPolygon{square(400000, 5600000, 100)}, OutlineLimits{}, "lon"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateOutline(tc.mp, tc.limits)
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.wantErr)
		})
	}
}
