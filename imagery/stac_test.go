package imagery

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/imagery/geotiff"
)

func TestProjEPSG(t *testing.T) {
	tests := []struct {
		name       string
		code, epsg string
		want       int
	}{
		{"proj:code", `"EPSG:32631"`, ``, 32631},
		{"proj:code lower case", `"epsg:32633"`, ``, 32633},
		{"proj:epsg", ``, `32631`, 32631},
		{"proj:code wins", `"EPSG:32631"`, `32632`, 32631},
		{"non-EPSG proj:code falls back", `"IAU_2015:30100"`, `32632`, 32632},
		{"null", `null`, `null`, 0},
		{"fractional", ``, `326.5`, 0},
		{"absent", ``, ``, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, projEPSG(json.RawMessage(tt.code), json.RawMessage(tt.epsg)))
		})
	}
}

// rangeServer serves dir, recording every request; a GET without a Range
// header on a .tif fails the test (band files are read with Range GETs only).
type rangeServer struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []string
}

func newRangeServer(t *testing.T, dir string) *rangeServer {
	rs := &rangeServer{}
	files := http.FileServer(http.Dir(dir))
	rs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rs.mu.Lock()
		rs.reqs = append(rs.reqs, r.Method+" "+r.URL.Path+" "+r.Header.Get("Range"))
		rs.mu.Unlock()
		if strings.HasSuffix(r.URL.Path, ".tif") && r.Method == http.MethodGet && r.Header.Get("Range") == "" {
			t.Errorf("whole-file GET of %s", r.URL.Path)
		}
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(rs.Close)
	return rs
}

func (rs *rangeServer) requests() []string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return append([]string(nil), rs.reqs...)
}

// OpenSTACItem reads an item already in memory: the item itself is never
// requested, and the bands are read by Range GETs resolved against base.
func TestOpenSTACItem(t *testing.T) {
	dir := t.TempDir()
	writeSyntheticScene(t, dir, nil)
	rs := newRangeServer(t, dir)
	raw := []byte(`{"type":"Feature","id":"S2B_31UES_20220315_0_L2A","properties":{
		"datetime":"2022-03-15T10:56:31.123456Z","s2:processing_baseline":"05.09","earthsearch:boa_offset_applied":true,"proj:code":"EPSG:32631"},
		"assets":{"red":{"href":"B04.tif","raster:bands":[{"scale":0.0001,"offset":-0.1}]},"nir":{"href":"./B08.tif"},"scl":{"href":"SCL.tif"}}}`)

	s, err := OpenSTACItem(context.Background(), raw, rs.URL+"/collections/sentinel-2-l2a/items/x/../../../../item.json", SceneOptions{HTTPClient: rs.Client()})
	require.NoError(t, err)
	defer s.Close()
	assert.Equal(t, "S2B_31UES_20220315_0_L2A", s.ID())
	assert.Equal(t, time.Date(2022, 3, 15, 10, 56, 31, 123456000, time.UTC), s.Date())
	fr, err := s.ReadField(context.Background(), wholeChip(t), []string{"B04", "B08"})
	require.NoError(t, err)
	// raster:bands' −0.1 comes first (boa_offset_applied is only the third
	// rule); the nir asset without raster:bands takes boa_offset_applied.
	assert.InDelta(t, (1500+2-1000)/1e4, fr.Bands["B04"][2*8+5], 1e-15)
	assert.InDelta(t, (3000+50)/1e4, fr.Bands["B08"][2*8+5], 1e-15)
	for _, r := range rs.requests() {
		assert.NotContains(t, r, "item.json", "the item is not fetched again")
		assert.Regexp(t, `^GET /(B04|B08|SCL)\.tif bytes=\d+-\d+$`, r)
	}
}

func TestOpenSTACItemRefusesLocalAssets(t *testing.T) {
	for _, href := range []string{"file:///etc/passwd", "FILE:///etc/passwd"} {
		t.Run(href, func(t *testing.T) {
			raw := []byte(`{"type":"Feature","id":"x","properties":{"datetime":"2022-03-15T10:56:31Z"},"assets":{"red":{"href":"` + href + `"}}}`)
			_, err := OpenSTACItem(context.Background(), raw, "https://catalogue.example/items/x", SceneOptions{})
			require.ErrorIs(t, err, ErrLocalAsset)
		})
	}
	// A local item may name local files.
	dir := t.TempDir()
	writeSyntheticScene(t, dir, nil)
	raw := []byte(`{"type":"Feature","id":"x","properties":{"datetime":"2022-03-15T10:56:31Z"},"assets":{"red":{"href":"file://` + filepath.ToSlash(filepath.Join(dir, "B04.tif")) + `"}}}`)
	s, err := OpenSTACItem(context.Background(), raw, filepath.Join(dir, "item.json"), SceneOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"B04"}, s.Bands())
	require.NoError(t, s.Close())
}

// A band file without an EPSG code takes the item's proj:code (assets first,
// as CDSE writes it, then the item's properties).
func TestSTACProjCodeFallback(t *testing.T) {
	dir := t.TempDir()
	g := grid10
	g.EPSG = 0
	writeBand(t, dir, "B04", g, geotiff.Uint16, nil, b04)
	f, err := geotiff.OpenFile(filepath.Join(dir, "B04.tif"))
	require.NoError(t, err)
	require.Zero(t, f.Grid().EPSG, "the fixture must lack an EPSG code")
	require.NoError(t, f.Close())
	tests := []struct {
		name string
		item string
		want int
	}{
		{"properties proj:epsg", `{"properties":{"datetime":"2022-03-15T10:56:31Z","proj:epsg":32631},"assets":{"B04_10m":{"href":"B04.tif"}}}`, 32631},
		{"asset proj:code", `{"properties":{"datetime":"2022-03-15T10:56:31Z","proj:epsg":32632},"assets":{"B04_10m":{"href":"B04.tif","proj:code":"EPSG:32631"}}}`, 32631},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := OpenSTACItem(context.Background(), []byte(tt.item), filepath.Join(dir, "item.json"), SceneOptions{})
			require.NoError(t, err)
			defer s.Close()
			assert.Equal(t, tt.want, s.Grid().EPSG)
			assert.Equal(t, geo.Grid{EPSG: tt.want, X0: g.X0, Y0: g.Y0, DX: 10, DY: 10, Cols: 8, Rows: 8}, s.Grid())
		})
	}
	_, err = OpenSTACItem(context.Background(), []byte(`{"properties":{"datetime":"2022-03-15T10:56:31Z"},"assets":{"red":{"href":"B04.tif"}}}`), filepath.Join(dir, "item.json"), SceneOptions{})
	assert.ErrorContains(t, err, "no EPSG code")
}

// An s3-only asset outside the public buckets is refused with the reason.
func TestOpenSTACItemS3Only(t *testing.T) {
	_, err := OpenSTACItem(context.Background(), []byte(`{"properties":{"datetime":"2024-06-01T10:00:00Z"},"assets":{"B04_10m":{"href":"s3://eodata/B04.tif"}}}`), "https://stac.example/items/x", SceneOptions{})
	require.ErrorIs(t, err, ErrUnreadableAsset)
	assert.ErrorContains(t, err, `band B04: s3://eodata is not a known public bucket: not supported`)
}
