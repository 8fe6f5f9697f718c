package stac_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/imagery"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/stac"
)

// A catalogue cannot make cropkit read this machine's files: whatever the
// item's self link says (file://, s3://), its base is the URL it was fetched
// from, file:// hrefs are refused before any open, and no error carries a
// local file's bytes or tells whether it exists (defects 5 and 7).
func TestRemoteItemNeverReadsLocalFiles(t *testing.T) {
	chip := testenv.DataDir(t, "s2", "flanders-31UES", "2019-06-20")
	local := t.TempDir()
	for _, b := range []string{"B04", "B08", "SCL"} {
		data, err := os.ReadFile(filepath.Join(chip, b+".tif"))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(local, b+".tif"), data, 0o600))
	}
	secret := filepath.Join(local, "shadow")
	require.NoError(t, os.WriteFile(secret, []byte("root:$6$secrethash:19000:0:99999:7:::\n"), 0o600))
	dirURL := "file://" + filepath.ToSlash(local)

	item := func(self string, assets map[string]string) string {
		var as []string
		for k, h := range assets {
			as = append(as, `"`+k+`":{"href":"`+h+`","type":"image/tiff; application=geotiff"}`)
		}
		return `{"type":"Feature","stac_version":"1.0.0","id":"hostile","collection":"sentinel-2-l2a",
			"properties":{"datetime":"2019-06-20T10:57:03Z","platform":"sentinel-2a"},"geometry":null,
			"links":[{"rel":"self","href":"` + self + `"}],"assets":{` + strings.Join(as, ",") + `}}`
	}
	docs := map[string]string{
		"file-self-file-assets": item(dirURL+"/item.json", map[string]string{"red": dirURL + "/B04.tif", "nir": dirURL + "/B08.tif", "scl": dirURL + "/SCL.tif"}),
		"s3-self-file-assets":   item("s3://sentinel-cogs/x/item.json", map[string]string{"red": dirURL + "/B04.tif", "nir": dirURL + "/B08.tif", "scl": dirURL + "/SCL.tif"}),
		"file-self-relative":    item(dirURL+"/item.json", map[string]string{"red": "B04.tif", "nir": "B08.tif", "scl": "SCL.tif"}),
		"secret-file":           item(dirURL+"/item.json", map[string]string{"red": dirURL + "/shadow", "nir": dirURL + "/B08.tif"}),
		"secret-path":           item(dirURL+"/item.json", map[string]string{"red": secret, "nir": filepath.Join(local, "missing.tif")}),
	}
	var (
		mu       sync.Mutex
		requests []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests = append(requests, r.URL.Path)
		mu.Unlock()
		if doc, ok := docs[strings.TrimPrefix(r.URL.Path, "/items/")]; ok {
			w.Write([]byte(doc))
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := stac.NewClient(true, 5*time.Second)
	for name := range docs {
		t.Run(name, func(t *testing.T) {
			u := srv.URL + "/items/" + name
			it, err := c.GetItem(ctx, u)
			require.NoError(t, err)
			assert.Equal(t, u, it.Base)
			assert.Empty(t, it.Self, "a self link off the catalogue's origin is not kept")
			_, err = c.OpenScene(ctx, it, imagery.SceneOptions{})
			require.Error(t, err, "a remote item never opens local files")
			// The same item given by URL (cropkit index --scene URL).
			_, err2 := imagery.OpenScene(ctx, u, imagery.SceneOptions{})
			require.Error(t, err2)
			for _, e := range []error{err, err2} {
				assert.NotContains(t, e.Error(), "root:")
				assert.NotContains(t, e.Error(), "byte order")
				assert.NotContains(t, e.Error(), "no such file")
				if strings.Contains(name, "file-assets") || name == "secret-file" {
					assert.ErrorIs(t, e, imagery.ErrLocalAsset)
				}
			}
		})
	}
	// A path href is a path on the catalogue's server: asked there, a 404.
	mu.Lock()
	defer mu.Unlock()
	assert.Contains(t, requests, filepath.ToSlash(secret))
}
