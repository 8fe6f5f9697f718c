package stac_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/imagery"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/stac"
	"github.com/cropkit/cropkit/stac/stactest"
)

// realItemOutcome is what reading each of the 12 real items must give: the
// reference statistics (""), a refusal naming the reason, or otherSensor:
// an item of another sensor, which the Sentinel-2 chip served here cannot
// stand for (imagery's TestLandsatC2Item and TestSentinel1RTCItem serve
// these documents with their own sensor's pixels).
var realItemOutcome = map[string]string{
	"cdse-s2l2a-S2A_MSIL2A_20200301T090901":                   "JPEG 2000 only (CDSE): not supported",
	"cdse-s2l2a-S2A_MSIL2A_20241107T113311":                   "JPEG 2000 only (CDSE): not supported",
	"earthsearch-v0-s2l2acogs-S2A_28QCH_20200714_0_L2A":       "",
	"earthsearch-v1-landsat-LC08_L2SP_033032_20231008_02_T1":  "s3://usgs-landsat is a requester-pays bucket (AWS credentials needed): not supported",
	"earthsearch-v1-s1grd-S1A_IW_GRDH_1SSH_20250731T135702":   "Sentinel-1 GRD item: in radar geometry",
	"earthsearch-v1-s2c1l2a-S2B_T20EPT_20250731T131905_L2A":   "",
	"earthsearch-v1-s2l2a-S2A_32TMT_20200305_0_L2A":           "",
	"earthsearch-v1-s2l2a-S2A_32TMT_20200305_1_L2A":           "",
	"pc-landsat-LC09_L2SP_089090_20240417_02_T1":              otherSensor,
	"pc-s1rtc-S1A_IW_GRDH_1SDV_20240419T045904":               otherSensor,
	"pc-s2l2a-S2A_MSIL2A_20190101T000001_R116_T60VUK":         "",
	"pc-s2l2a-S2B_MSIL2A_20240419T095549_R122_T47XML_2024041": "",
}

const otherSensor = "read as its own sensor"

// fieldStats are a scene's statistics per field and index.
func fieldStats(t *testing.T, s *imagery.Scene, fields []geo.Feature, indices []string) map[string]imagery.Stats {
	t.Helper()
	out := map[string]imagery.Stats{}
	for i, f := range fields {
		ps, err := s.FieldProducts(context.Background(), f.Geometry, indices, nil)
		if errors.Is(err, imagery.ErrNoClearPixels) || errors.Is(err, imagery.ErrNoOverlap) {
			continue
		}
		require.NoError(t, err, "field %d", i)
		for _, p := range ps {
			out[f.Properties["name"].(string)+"/"+p.Index] = p.Stats
		}
	}
	return out
}

// The 12 real item documents, served retargeted onto a Flanders chip with
// the archives' offsets in their pixels: each gives the folder scene's
// statistics (offset rule included) or a refusal naming the reason, and
// the Planetary Computer-like host is only ever asked with a token.
func TestRealItems(t *testing.T) {
	chip := testenv.DataDir(t, "s2", "flanders-31UES", "2019-06-20")
	data, err := os.ReadFile(testenv.DataDir(t, "fields", "flanders-31UES.geojson"))
	require.NoError(t, err)
	fields, err := geo.ReadFeatures(data)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	indices := []string{"ndvi", "ndmi"} // 10 m and 20 m bands
	ref, err := imagery.OpenScene(ctx, chip, imagery.SceneOptions{})
	require.NoError(t, err)
	want := fieldStats(t, ref, fields, indices)
	require.NoError(t, ref.Close())
	require.NotEmpty(t, want)

	ri := stactest.ServeRealItems(t, chip)
	require.Len(t, ri.Items, len(realItemOutcome))
	blobHost := strings.TrimPrefix(ri.BlobURL, "http://")
	for _, mode := range []struct {
		name string
		host func(string) bool
	}{
		{"sign every host (--sign-url)", func(string) bool { return true }},
		{"sign the blob host only", func(h string) bool { return h+":"+strings.Split(blobHost, ":")[1] == blobHost }},
	} {
		t.Run(mode.name, func(t *testing.T) {
			c := stac.NewClient(true, 10*time.Second)
			c.Signer = &stac.SASSigner{URL: ri.SignURL}
			c.SignHost = mode.host
			tokensBefore := ri.TokenRequests()
			shifted := 0
			for _, it := range ri.Items {
				t.Run(it.Name, func(t *testing.T) {
					outcome, ok := "", false
					for prefix, o := range realItemOutcome {
						if strings.HasPrefix(it.Name, prefix) {
							outcome, ok = o, true
						}
					}
					require.True(t, ok, "no expected outcome for %s", it.Name)
					if outcome == otherSensor {
						t.Skip("a Sentinel-2 chip cannot stand for this sensor's pixels (see imagery's sensor item tests)")
					}
					item, err := c.GetItem(ctx, it.URL)
					require.NoError(t, err)
					assert.Equal(t, it.URL, item.Base, "the base is the URL the item was fetched from")
					s, err := c.OpenScene(ctx, item, imagery.SceneOptions{})
					if outcome != "" {
						require.Error(t, err)
						assert.Contains(t, err.Error(), outcome)
						assert.True(t, errors.Is(err, imagery.ErrUnsupportedSensor) || errors.Is(err, imagery.ErrUnreadableAsset), "%v", err)
						assert.NotContains(t, err.Error(), "not a TIFF")
						return
					}
					require.NoError(t, err)
					defer s.Close()
					if it.Shifted {
						shifted++
					}
					got := fieldStats(t, s, fields, indices)
					require.Len(t, got, len(want))
					for k, w := range want {
						assert.InDelta(t, w.Mean, got[k].Mean, 1e-12, "%s mean", k)
						assert.InDelta(t, w.Median, got[k].Median, 1e-12, "%s median", k)
						assert.Equal(t, w.Num, got[k].Num, "%s count", k)
					}
				})
			}
			assert.Equal(t, 3, shifted, "Earth Search _1 and sentinel-2-c1-l2a, Planetary Computer 05.10 carry the offset")
			assert.Zero(t, ri.Unsigned(), "Planetary Computer hrefs are requested only signed")
			assert.Positive(t, ri.BlobRequests())
			assert.Equal(t, int64(1), ri.TokenRequests()-tokensBefore, "one token for sentinel-2-l2a, cached")
		})
	}
}

// A token the asset host refuses (expired early, revoked) is replaced once;
// tokens never appear in errors.
func TestSignerResignsOn403(t *testing.T) {
	chip := testenv.DataDir(t, "s2", "flanders-31UES", "2019-06-20")
	ri := stactest.ServeRealItems(t, chip)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := stac.NewClient(true, 10*time.Second)
	signer := &stac.SASSigner{URL: ri.SignURL}
	c.Signer, c.SignHost = signer, func(string) bool { return true }
	it := ri.Item(t, "pc-s2l2a-S2B")
	item, err := c.GetItem(ctx, it.URL)
	require.NoError(t, err)
	tok, err := signer.Token(ctx, "sentinel-2-l2a", false)
	require.NoError(t, err)
	ri.RevokeTokens()
	s, err := c.OpenScene(ctx, item, imagery.SceneOptions{})
	require.NoError(t, err, "a 403 re-signs once")
	require.NoError(t, s.Close())
	assert.Equal(t, int64(2), ri.TokenRequests())
	tok2, err := signer.Token(ctx, "sentinel-2-l2a", false)
	require.NoError(t, err)
	assert.NotEqual(t, tok, tok2)

	// A token service that keeps issuing refused tokens: the error names the
	// status, not the token.
	bad := &stac.SASSigner{URL: ri.SignURL}
	c2 := stac.NewClient(true, 10*time.Second)
	c2.Signer, c2.SignHost = revoking{bad, ri}, func(string) bool { return true }
	_, err = c2.OpenScene(ctx, item, imagery.SceneOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "403")
	assert.NotContains(t, err.Error(), "sig=")
	assert.NotContains(t, err.Error(), "st=")
}

// revoking is a Signer whose tokens are revoked as soon as issued.
type revoking struct {
	s  *stac.SASSigner
	ri *stactest.RealItems
}

func (r revoking) Token(ctx context.Context, collection string, refresh bool) (string, error) {
	tok, err := r.s.Token(ctx, collection, refresh)
	r.ri.RevokeTokens()
	return tok, err
}
