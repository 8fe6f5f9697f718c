package watch_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/stac/stactest"
	"github.com/cropkit/cropkit/watch"
)

// An item of another sensor is never read as Sentinel-2: it fails at once
// with the sensor named, without a band request or a retry.
func TestRefusedItemFailsAtOnce(t *testing.T) {
	cat := stactest.New(t, stactest.Options{})
	// A sensor cropkit does not read (Landsat and Sentinel-1 RTC it does).
	landsat := stactest.Chips(t, place, "2019-06-20")[0]
	landsat.ID = "S3A_OL_2_LFR_20190620"
	landsat.Collection = "sentinel-3-olci-lfr-l2"
	landsat.Properties = map[string]any{"platform": "sentinel-3a"}
	cat.Publish(landsat)
	e := openEnv(t, t.TempDir())
	e.registerFields(t, "UES-01")
	startWatcher(t, e, cat, func(c *watch.Config) {
		c.Collection = "sentinel-3-olci-lfr-l2"
		c.MaxAttempts, c.RetryBase, c.RetryMax = 8, 10*time.Second, 10*time.Second
	})
	got := waitItems(t, e.core, 1, landsat.ID)
	assert.Equal(t, archive.ItemFailed, got[landsat.ID].State)
	assert.Contains(t, got[landsat.ID].Error, "Sentinel-3 item: not supported")
	assert.Zero(t, cat.ItemStats(landsat.ID).Requests, "no band request")
}

// With a token service (--sign-url), the watcher reads assets that refuse
// unsigned requests, with one token per collection, and records the
// unsigned item URL as the source.
func TestWatcherSignsAssets(t *testing.T) {
	cat := stactest.New(t, stactest.Options{AssetToken: "SECRET-SIG"})
	cat.Publish(stactest.Chips(t, place, "2019-06-20")...)
	e := openEnv(t, t.TempDir())
	e.registerFields(t, "UES-01", "UES-02")
	startWatcher(t, e, cat, func(c *watch.Config) { c.SignURL = cat.URL() + "/sas" })
	got := waitItems(t, e.core, 2, id("2019-06-20"))
	it := got[id("2019-06-20")]
	assert.Equal(t, archive.ItemIngested, it.State, it.Error)
	assert.NotContains(t, it.Source, "SECRET")
	st := cat.Stats()
	assert.Zero(t, st.Unsigned)
	assert.Positive(t, st.AssetRequests)
	assert.Equal(t, 1, st.Tokens)
}
