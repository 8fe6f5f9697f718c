package watch

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Radar collections are searched without a cloud cover limit; optical
// ones keep it.
func TestMaxCloudNotForRadar(t *testing.T) {
	w := &Watcher{cfg: Config{MaxCloud: 50}}
	for c, radar := range map[string]bool{"sentinel-1-rtc": true, "sentinel-1-grd": true, "SENTINEL-1": true,
		"sentinel-2-l2a": false, "landsat-c2-l2": false, "sentinel-2-c1-l2a": false} {
		assert.Equal(t, radar, RadarCollection(c), c)
		if radar {
			assert.Nil(t, w.maxCloud(c), c)
		} else {
			assert.Equal(t, 50.0, *w.maxCloud(c), c)
		}
	}
}
