package archive_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/archive/backend"
)

// IngestAllowPrivate lets an API caller's item URL be private, not the
// other hosts the item names: band files on another loopback port (or the
// metadata address) are refused before any request.
func TestIngestAllowPrivateIsScopedToTheItemURL(t *testing.T) {
	var otherHits atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { otherHits.Add(1) }))
	defer other.Close()
	for _, host := range []string{other.URL, "http://169.254.169.254"} {
		t.Run(host, func(t *testing.T) {
			item := fmt.Sprintf(`{"type":"Feature","stac_version":"1.0.0","id":"x","collection":"sentinel-2-l2a","bbox":[3,50,4,51],`+
				`"geometry":null,"properties":{"datetime":"2019-06-25T10:30:00Z","platform":"sentinel-2a"},`+
				`"assets":{"red":{"href":"%[1]s/B04.tif","type":"image/tiff; application=geotiff; profile=cloud-optimized","eo:bands":[{"name":"B04"}]},`+
				`"nir":{"href":"%[1]s/B08.tif","type":"image/tiff; application=geotiff; profile=cloud-optimized","eo:bands":[{"name":"B08"}]}},"links":[]}`, host)
			cat := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/geo+json")
				fmt.Fprint(w, item)
			}))
			defer cat.Close()
			core, err := backend.Open(context.Background(), t.TempDir(), true, archive.Config{IngestAllowPrivate: true})
			require.NoError(t, err)
			defer core.Close()
			_, err = core.Ingest(context.Background(), cat.URL+"/item.json", archive.IngestOptions{Untrusted: true})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "catalogue address")
			assert.Contains(t, err.Error(), "refused")
		})
	}
	assert.Zero(t, otherHits.Load())
}

// The operator's own ingestion (cropkit ingest URL: not Untrusted) allows
// the item URL's origin, not the other hosts the item names: band files on
// another loopback port are reached only when Config.IngestAllowHosts (or
// the SignURL's origin) names that port.
func TestOperatorIngestIsScopedToTheItemURL(t *testing.T) {
	for _, tc := range []struct {
		name      string
		untrusted bool
		allow     func(other string) archive.Config
		reached   bool
	}{
		{"operator, nothing allowed", false, func(string) archive.Config { return archive.Config{} }, false},
		{"operator, band host allowed", false, func(o string) archive.Config { return archive.Config{IngestAllowHosts: []string{o}} }, true},
		{"operator, band host is the sign URL's", false, func(o string) archive.Config { return archive.Config{SignURL: "http://" + o + "/api/sas/v1"} }, true},
		{"API caller, band host allowed", true, func(o string) archive.Config {
			return archive.Config{IngestAllowPrivate: true, IngestAllowHosts: []string{o}}
		}, true},
		{"API caller, private not allowed", true, func(o string) archive.Config { return archive.Config{IngestAllowHosts: []string{o}} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var otherHits atomic.Int32
			other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				otherHits.Add(1)
				http.Error(w, "no", http.StatusNotFound)
			}))
			defer other.Close()
			item := fmt.Sprintf(`{"type":"Feature","stac_version":"1.0.0","id":"x","collection":"sentinel-2-l2a","bbox":[3,50,4,51],`+
				`"geometry":null,"properties":{"datetime":"2019-06-25T10:30:00Z","platform":"sentinel-2a"},`+
				`"assets":{"red":{"href":"%[1]s/B04.tif","type":"image/tiff; application=geotiff; profile=cloud-optimized","eo:bands":[{"name":"B04"}]},`+
				`"nir":{"href":"%[1]s/B08.tif","type":"image/tiff; application=geotiff; profile=cloud-optimized","eo:bands":[{"name":"B08"}]}},"links":[]}`, other.URL)
			cat := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/geo+json")
				fmt.Fprint(w, item)
			}))
			defer cat.Close()
			core, err := backend.Open(context.Background(), t.TempDir(), true, tc.allow(other.Listener.Addr().String()))
			require.NoError(t, err)
			defer core.Close()
			_, err = core.Ingest(context.Background(), cat.URL+"/item.json", archive.IngestOptions{Untrusted: tc.untrusted})
			require.Error(t, err) // the band host answers 404 when reached
			if tc.reached {
				assert.Positive(t, otherHits.Load(), "%v", err)
				assert.NotContains(t, err.Error(), "refused")
				return
			}
			assert.Contains(t, err.Error(), "refused")
			assert.Zero(t, otherHits.Load())
		})
	}
}
