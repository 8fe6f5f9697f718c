package geo

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSieveValuesAndIntoLargeOnly(t *testing.T) {
	nan := math.NaN()
	// A 1-pixel region of label 3 (value 0.9) between a large label 1
	// (value 0.1, 6 pixels) and a smaller label 2 (value 0.85, 3 pixels,
	// below the minimum of 4 but kept as the last region of its label).
	labels := []int32{
		1, 1, 1, 3, 2, 2, 2,
		1, 1, 1, 0, 0, 0, 0,
	}
	values := []float64{
		0.1, 0.1, 0.1, 0.9, 0.85, 0.85, 0.85,
		0.1, 0.1, 0.1, nan, nan, nan, nan,
	}
	tests := []struct {
		name string
		opts SieveOptions
		want int32 // the label the single pixel takes
	}{
		{"largest neighbour", SieveOptions{MinPixels: 4, KeepLabels: false}, 1},
		{"closest value", SieveOptions{MinPixels: 4, Values: values}, 2},
		{"closest value, only into large regions", SieveOptions{MinPixels: 4, Values: values, IntoLargeOnly: true}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := append([]int32(nil), labels...)
			require.NoError(t, SieveWithOptions(l, 7, 2, tc.opts))
			assert.Equal(t, tc.want, l[3])
		})
	}
	// IntoLargeOnly leaves a small region whose neighbours are all small.
	l := []int32{1, 2, 3}
	require.NoError(t, SieveWithOptions(l, 3, 1, SieveOptions{MinPixels: 2, IntoLargeOnly: true}))
	assert.Equal(t, []int32{1, 2, 3}, l)
	require.NoError(t, SieveWithOptions(l, 3, 1, SieveOptions{MinPixels: 2}))
	assert.NotEqual(t, []int32{1, 2, 3}, l, "the default merges small regions into each other")
	assert.Error(t, SieveWithOptions([]int32{1, 2}, 2, 1, SieveOptions{MinPixels: 2, Values: []float64{1}}))
}
