package unionfind

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestForest(t *testing.T) {
	f := New(6)
	f[1] = 0 // {0 1}
	f[3] = 2 // {2 3}
	f[2] = 0 // {0 1 2 3}
	f = append(f, int32(len(f)))
	for _, c := range []struct{ x, root int32 }{{0, 0}, {1, 0}, {2, 0}, {3, 0}, {4, 4}, {5, 5}, {6, 6}} {
		assert.Equal(t, c.root, f.Find(c.x), "id %d", c.x)
	}
	assert.Equal(t, int32(0), f[3], "the path from 3 was halved")
}
