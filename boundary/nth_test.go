package boundary

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestNth(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]float64, 1001)
	for i := range random {
		random[i] = rng.Float64()
	}
	tests := []struct {
		name string
		v    []float64
	}{
		{"one", []float64{3}},
		{"two", []float64{2, 1}},
		{"sorted", []float64{1, 2, 3, 4, 5}},
		{"reversed", []float64{5, 4, 3, 2, 1}},
		{"ties", []float64{2, 2, 1, 2, 2, 0, 2}},
		{"all equal", []float64{7, 7, 7, 7}},
		{"random", random},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := slices.Sorted(slices.Values(tc.v))
			for k := range tc.v {
				assert.Equal(t, want[k], nth(slices.Clone(tc.v), k), "k=%d", k)
			}
		})
	}
}
