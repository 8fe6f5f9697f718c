package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/geo/crs"
	"github.com/cropkit/cropkit/imagery/geotiff"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/server"
	"github.com/cropkit/cropkit/server/servertest"
)

// allIndices are the eight indices of the spec.
var allIndices = []string{"ndvi", "ndwi", "chi", "ndre", "savi", "lai", "evi", "nirv"}

// gridFields registers n×n square fields of side px pixels, spread evenly
// over grid g, for the admin account; coordinates go to lon/lat.
func gridFields(tb testing.TB, st archive.Store, g geo.Grid, n, px int, indices []string) {
	tb.Helper()
	ctx := context.Background()
	admin, err := st.UserByName(ctx, "admin")
	require.NoError(tb, err)
	tr, err := crs.New(g.EPSG, 4326)
	require.NoError(tb, err)
	stepC, stepR := g.Cols/n, g.Rows/n
	require.GreaterOrEqual(tb, stepC, px, "fields overlap")
	for i := range n {
		for j := range n {
			x0 := g.X0 + float64(i*stepC+1)*g.DX
			y0 := g.Y0 - float64(j*stepR+1)*g.DY
			x1, y1 := x0+float64(px)*g.DX, y0-float64(px)*g.DY
			ring := orb.Ring{}
			for _, p := range [][2]float64{{x0, y1}, {x1, y1}, {x1, y0}, {x0, y0}, {x0, y1}} {
				lon, lat := tr.Transform(p[0], p[1])
				ring = append(ring, orb.Point{lon, lat})
			}
			_, err := st.InsertField(ctx, archive.Field{OwnerID: admin.ID, Name: fmt.Sprintf("f%02d-%02d", i, j),
				Indices: indices, Geometry: orb.MultiPolygon{{ring}}}, 0)
			require.NoError(tb, err)
		}
	}
}

func benchIngest(b *testing.B, sceneDir string, date time.Time, px int) {
	f, err := geotiff.OpenFile(filepath.Join(sceneDir, "B04.tif"))
	require.NoError(b, err)
	g := f.Grid()
	f.Close()
	env := servertest.New(b, server.Config{})
	gridFields(b, env.Archive.Store(), g, 10, px, allIndices)
	ctx := context.Background()
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		res, err := env.Archive.Ingest(ctx, sceneDir, archive.IngestOptions{Date: date})
		require.NoError(b, err)
		require.Equal(b, 100, res.Fields)
		require.Equal(b, 800, res.Usable+res.Unusable)
	}
	b.ReportMetric(float64(800*b.N)/time.Since(start).Seconds(), "products/s")
}

// BenchmarkIngest100Fields8Indices is one scene's ingestion for 100 fields
// × the 8 spec indices: read, compute, PNG + JSON + GeoTIFF written, rows recorded.
func BenchmarkIngest100Fields8Indices(b *testing.B) {
	b.Run("peers-small-2048px/30x30px-fields", func(b *testing.B) {
		if _, err := os.Stat("/tmp/peers-data/.done"); err != nil {
			b.Skip("peers data /tmp/peers-data/small not generated")
		}
		benchIngest(b, "/tmp/peers-data/small", time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC), 30)
	})
	b.Run("flanders-64px/6x6px-fields", func(b *testing.B) {
		benchIngest(b, testenv.DataDir(b, "s2", "flanders-31UES", "2019-06-20"), time.Time{}, 6)
	})
}

// BenchmarkDownloadJSON measures §2.5 JSON downloads of a real field
// (UES-03, 352 pixels, 5 dates): through the handler in-process, and over
// loopback HTTP with keep-alive; both report requests per second.
func BenchmarkDownloadJSON(b *testing.B) {
	sceneRoot := testenv.DataDir(b, "s2", "flanders-31UES")
	env := servertest.New(b, server.Config{})
	fields := flandersFields(b)
	ctx := context.Background()
	admin, err := env.Archive.UserByName(ctx, "admin")
	require.NoError(b, err)
	_, err = env.Archive.Store().InsertField(ctx, archive.Field{OwnerID: admin.ID, Name: "UES-03", Indices: []string{"ndvi"}, Geometry: fields["UES-03"].Geometry}, 0)
	require.NoError(b, err)
	for _, d := range []string{"2019-04-21", "2019-05-16", "2019-06-20", "2019-07-05", "2019-07-30"} {
		_, err := env.Archive.Ingest(ctx, filepath.Join(sceneRoot, d), archive.IngestOptions{})
		require.NoError(b, err)
	}
	target := "/download/ndvi/json?field_name=UES-03&date=2019-06-25"

	b.Run("handler", func(b *testing.B) {
		start, cpu := time.Now(), testenv.ProcessCPU()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				req := httptest.NewRequest("POST", target, nil)
				req.Header.Set("Authorization", "Bearer "+env.AdminToken)
				rec := httptest.NewRecorder()
				env.Server.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
			}
		})
		reportRate(b, start, cpu)
	})
	b.Run("loopback", func(b *testing.B) {
		ts := httptest.NewServer(env.Server)
		defer ts.Close()
		tr := &http.Transport{MaxIdleConnsPerHost: 64}
		hc := &http.Client{Transport: tr}
		defer tr.CloseIdleConnections()
		start, cpu := time.Now(), testenv.ProcessCPU()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				req, _ := http.NewRequest("POST", ts.URL+target, nil)
				req.Header.Set("Authorization", "Bearer "+env.AdminToken)
				resp, err := hc.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
		})
		reportRate(b, start, cpu)
	})
}

// reportRate reports requests per second since start and the process's
// CPU per request since cpu (testenv.ProcessCPU): the CPU figure is what
// to compare on a shared machine, where other work slows the wall clock.
func reportRate(b *testing.B, start time.Time, cpu time.Duration) {
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
	b.ReportMetric(float64(testenv.ProcessCPU()-cpu)/float64(time.Microsecond)/float64(b.N), "cpu-µs/req")
}
