package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/server"
	"github.com/cropkit/cropkit/server/servertest"
)

// TestLoad50Clients is the bounded load test: 50 concurrent clients over
// loopback HTTP, a fixed number of mixed requests each (downloads, lists,
// field registrations), while an administrator ingests a scene. Every
// answer must succeed; latency percentiles are logged.
func TestLoad50Clients(t *testing.T) {
	sceneRoot := testenv.DataDir(t, "s2", "flanders-31UES")
	env := servertest.New(t, server.Config{})
	tok := env.AddUser(t, "farmer", nil)
	names := []string{"UES-03", "UES-07", "UES-12", "UES-14"}
	registerRealFields(t, env.Handler, tok, names, []string{"ndvi", "ndre"})
	ingest(t, env, filepath.Join(sceneRoot, "2019-06-20"))
	srv := httptest.NewServer(env.Server)
	defer srv.Close()

	const clients, perClient = 50, 20
	httpc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}, Timeout: 30 * time.Second}
	var (
		mu        sync.Mutex
		latencies []time.Duration
		failures  []string
		wg        sync.WaitGroup
	)
	send := func(method, path string, body string, want int) {
		req, err := http.NewRequestWithContext(context.Background(), method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			panic(err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		start := time.Now()
		resp, err := httpc.Do(req)
		d := time.Since(start)
		mu.Lock()
		defer mu.Unlock()
		latencies = append(latencies, d)
		if err != nil {
			failures = append(failures, fmt.Sprintf("%s %s: %v", method, path, err))
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			failures = append(failures, fmt.Sprintf("%s %s: %d", method, path, resp.StatusCode))
		}
	}
	start := time.Now()
	wg.Add(1)
	go func() { // an ingestion during the load
		defer wg.Done()
		ingest(t, env, filepath.Join(sceneRoot, "2019-07-05"))
	}()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perClient {
				field := names[(c+i)%len(names)]
				switch i % 5 {
				case 0, 1:
					send("GET", "/download/ndvi/json?field_name="+field+"&date=2019-06-20", "", 200)
				case 2:
					send("GET", "/download/ndre/image?field_name="+field, "", 200)
				case 3:
					send("GET", "/files/list?field_name="+field, "", 200)
				default:
					send("POST", "/fields/register", fmt.Sprintf(`{"field_name":"load-%d-%d","indices":"ndvi",
						"geometry":{"type":"Polygon","coordinates":[[[4.06,50.74],[4.061,50.74],[4.061,50.741],[4.06,50.74]]]}}`, c, i), 201)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	require.Empty(t, failures)
	require.Len(t, latencies, clients*perClient)
	slices.Sort(latencies)
	p := func(q float64) time.Duration { return latencies[int(q*float64(len(latencies)-1))] }
	t.Logf("%d requests from %d clients in %s (%.0f/s): p50 %s, p90 %s, p99 %s, max %s",
		len(latencies), clients, elapsed.Round(time.Millisecond), float64(len(latencies))/elapsed.Seconds(),
		p(0.5), p(0.9), p(0.99), latencies[len(latencies)-1])
	assert.Less(t, p(0.99), 10*time.Second)
}
