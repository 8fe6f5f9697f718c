package zoning

import (
	"errors"
	"testing"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseParcel(t *testing.T) {
	field := orb.MultiPolygon{{{{4.0, 50.0}, {4.01, 50.0}, {4.01, 50.01}, {4.0, 50.01}, {4.0, 50.0}}}}
	ok := `{"type":"Polygon","coordinates":[[[4.002,50.002],[4.008,50.002],[4.008,50.008],[4.002,50.008],[4.002,50.002]]]}`
	mp, err := ParseParcel([]byte(ok), field)
	require.NoError(t, err)
	assert.Len(t, mp, 1)
	feature := `{"type":"Feature","properties":{"name":"p"},"geometry":` + ok + `}`
	_, err = ParseParcel([]byte(feature), field)
	require.NoError(t, err)
	// Along the field's border: inside.
	border := `{"type":"Polygon","coordinates":[[[4.0,50.0],[4.01,50.0],[4.01,50.005],[4.0,50.005],[4.0,50.0]]]}`
	_, err = ParseParcel([]byte(border), field)
	require.NoError(t, err)
	// The documented tolerance: 5e-7° (about 5 cm) over the border is
	// inside, 5e-6° (about 50 cm) is not.
	over := func(d string) string {
		return `{"type":"Polygon","coordinates":[[[4.005,50.005],[4.01` + d + `,50.005],[4.01` + d + `,50.008],[4.005,50.008],[4.005,50.005]]]}`
	}
	_, err = ParseParcel([]byte(over("00005")), field)
	require.NoError(t, err, "within the tolerance")
	_, err = ParseParcel([]byte(over("0005")), field)
	assert.ErrorIs(t, err, ErrInvalidParcel, "beyond the tolerance")

	tests := []struct{ name, json, reason string }{
		{"not json", `{`, "GeoJSON"},
		{"point", `{"type":"Point","coordinates":[4,50]}`, "Point"},
		{"two polygons", `{"type":"MultiPolygon","coordinates":[[[[4.002,50.002],[4.003,50.002],[4.003,50.003],[4.002,50.002]]],[[[4.005,50.005],[4.006,50.005],[4.006,50.006],[4.005,50.005]]]]}`, "one Polygon"},
		{"not closed", `{"type":"Polygon","coordinates":[[[4.002,50.002],[4.008,50.002],[4.008,50.008],[4.002,50.008]]]}`, "closed"},
		{"three points", `{"type":"Polygon","coordinates":[[[4.002,50.002],[4.008,50.002],[4.002,50.002]]]}`, "4"},
		{"bow tie", `{"type":"Polygon","coordinates":[[[4.002,50.002],[4.008,50.008],[4.008,50.002],[4.002,50.008],[4.002,50.002]]]}`, "intersect"},
		{"outside", `{"type":"Polygon","coordinates":[[[4.005,50.005],[4.02,50.005],[4.02,50.008],[4.005,50.008],[4.005,50.005]]]}`, "inside the field"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseParcel([]byte(tc.json), field)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInvalidParcel)
			var pe *ParcelError
			require.True(t, errors.As(err, &pe))
			assert.Contains(t, pe.Reason, tc.reason)
		})
	}
}
