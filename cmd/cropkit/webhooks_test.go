package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/archive/backend"
	"github.com/cropkit/cropkit/archive/store"
	"github.com/cropkit/cropkit/client"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/webhook"
)

// TestCropkitProcess is not a test: startServeProcess runs the test binary with
// it to get a real `cropkit` process (arguments after "--") that can be killed.
func TestCropkitProcess(t *testing.T) {
	if os.Getenv("CROPKIT_TEST_PROCESS") != "1" {
		t.Skip("runs only as the cropkit subprocess of other tests")
	}
	i := slices.Index(os.Args, "--")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[i+1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// cropkitProcess is a `cropkit serve` subprocess.
type cropkitProcess struct {
	cmd  *exec.Cmd
	base string
	done chan error
}

// startServeProcess starts `cropkit serve` on a free loopback port over dataDir and
// waits until it listens.
func startServeProcess(t *testing.T, dataDir string, args ...string) *cropkitProcess {
	t.Helper()
	return startCropkitProcess(t, "cropkit listening on ", append([]string{"serve", "--addr", "127.0.0.1:0", "--data", dataDir}, args...)...)
}

// startCropkitProcess starts `cropkit ARGS...` and waits for the stdout line
// starting with ready; for serve, base is the URL that follows it.
func startCropkitProcess(t *testing.T, ready string, args ...string) *cropkitProcess {
	t.Helper()
	argv := append([]string{"-test.run=^TestCropkitProcess$", "--"}, args...)
	cmd := exec.Command(os.Args[0], argv...)
	cmd.Env = append(os.Environ(), "CROPKIT_TEST_PROCESS=1")
	logFile, err := os.CreateTemp(t.TempDir(), args[0]+"-*.log")
	require.NoError(t, err)
	t.Cleanup(func() { logFile.Close() })
	cmd.Stderr = logFile
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &cropkitProcess{cmd: cmd, done: make(chan error, 1)}
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), ready); ok {
				listening <- strings.Fields(rest + " .")[0]
			}
		}
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-p.done
		}
	})
	select {
	case p.base = <-listening:
	case err := <-p.done:
		log, _ := os.ReadFile(logFile.Name())
		t.Fatalf("cropkit %s exited before it was ready: %v\n%s", args[0], err, log)
	case <-time.After(30 * time.Second):
		t.Fatalf("cropkit %s was not ready within 30 s", args[0])
	}
	return p
}

// hookReceiver records notifications and acknowledges them once up.
type hookReceiver struct {
	srv  *httptest.Server
	up   atomic.Bool
	mu   sync.Mutex
	reqs []receivedHook
}

type receivedHook struct {
	header http.Header
	body   []byte
	status int
}

func newHookReceiver(t *testing.T, up bool) *hookReceiver {
	rc := &hookReceiver{}
	rc.up.Store(up)
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		status := http.StatusServiceUnavailable
		if rc.up.Load() {
			status = http.StatusOK
		}
		rc.mu.Lock()
		rc.reqs = append(rc.reqs, receivedHook{header: r.Header.Clone(), body: body, status: status})
		rc.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *hookReceiver) requests() []receivedHook {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.reqs)
}

// acked are the webhook-ids the receiver acknowledged, with how often.
func (rc *hookReceiver) acked() map[string]int {
	out := map[string]int{}
	for _, q := range rc.requests() {
		if q.status == http.StatusOK {
			out[q.header.Get("webhook-id")]++
		}
	}
	return out
}

func TestServeWebhooksSurviveKillAndRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts cropkit serve twice")
	}
	sceneRoot := testenv.DataDir(t, "s2", "flanders-31UES")
	fieldsData, err := os.ReadFile(filepath.Join(testenv.DataDir(t, "fields"), "flanders-31UES.geojson"))
	require.NoError(t, err)
	feats, err := geo.ReadFeatures(fieldsData)
	require.NoError(t, err)
	ctx := context.Background()

	// A data directory with an admin, a farmer and two of the farmer's fields.
	dir := t.TempDir()
	st, err := backend.Open(ctx, dir, true, archive.Config{})
	require.NoError(t, err)
	adminTok, _, err := st.EnsureAdmin(ctx)
	require.NoError(t, err)
	farmer, err := st.CreateUser(ctx, archive.NewUser{Name: "farmer"})
	require.NoError(t, err)
	farmerTok, err := st.CreateToken(ctx, "farmer")
	require.NoError(t, err)
	var fieldNames []string
	for _, f := range feats {
		if f.Name == "UES-03" || f.Name == "UES-12" {
			_, err := st.Store().InsertField(ctx, archive.Field{OwnerID: farmer.ID, Name: f.Name, Group: "g", Indices: []string{"ndvi", "evi"}, Geometry: f.Geometry}, 0)
			require.NoError(t, err)
			fieldNames = append(fieldNames, f.Name)
		}
	}
	require.Len(t, fieldNames, 2)
	require.NoError(t, st.Close())

	serveArgs := []string{"--webhook-retry-base", "50ms", "--webhook-timeout", "2s", "--webhook-allow-private"}
	up, down := newHookReceiver(t, true), newHookReceiver(t, false)

	// First run: register both receivers, ingest; "up" acknowledges, "down" fails.
	p1 := startServeProcess(t, dir, serveArgs...)
	farmerC, err := client.New(p1.base, client.WithToken(farmerTok))
	require.NoError(t, err)
	regUp, err := farmerC.RegisterWebhook(ctx, up.srv.URL+"/hook")
	require.NoError(t, err)
	regDown, err := farmerC.RegisterWebhook(ctx, down.srv.URL+"/hook")
	require.NoError(t, err)
	adminC, err := client.New(p1.base, client.WithToken(adminTok))
	require.NoError(t, err)
	_, err = adminC.IngestScene(ctx, filepath.Join(sceneRoot, "2019-06-20"), "")
	require.NoError(t, err)
	// Kill once "up" has both notifications recorded as delivered and
	// "down" has failed twice (its next attempt is ~3 s away, so none is in flight).
	require.Eventually(t, func() bool {
		ds, err := farmerC.WebhookDeliveries(ctx, 0)
		if err != nil || len(ds) != 4 {
			return false
		}
		for _, d := range ds {
			if d.RegistrationID == regUp.ID && d.Status != webhook.StatusDelivered ||
				d.RegistrationID == regDown.ID && len(d.Attempts) < 2 {
				return false
			}
		}
		return true
	}, 15*time.Second, 10*time.Millisecond)
	require.NoError(t, p1.cmd.Process.Signal(syscall.SIGKILL))
	<-p1.done
	firstAcked := up.acked()
	require.Len(t, firstAcked, 2)
	require.Empty(t, down.acked())

	// While no server runs, `cropkit ingest` adds a date: its notifications
	// wait in the outbox with the two undelivered ones.
	code, out, errOut := runCmd(t, "", "ingest", "--data", dir, filepath.Join(sceneRoot, "2019-07-05"))
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "2019-07-05")
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, store.DBFile)+"?mode=ro")
	require.NoError(t, err)
	var pending int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM webhook_deliveries WHERE status = 'pending'`).Scan(&pending))
	require.NoError(t, db.Close())
	assert.Equal(t, 6, pending, "2 failed for down + 2 new for each receiver")

	// Restart on the same data directory with both receivers up: every
	// notification arrives, nothing acknowledged is sent again.
	down.up.Store(true)
	p2 := startServeProcess(t, dir, serveArgs...)
	farmerC, err = client.New(p2.base, client.WithToken(farmerTok))
	require.NoError(t, err)
	var ds []client.WebhookDelivery
	require.Eventually(t, func() bool {
		ds, err = farmerC.WebhookDeliveries(ctx, 0)
		if err != nil || len(ds) != 8 {
			return false
		}
		for _, d := range ds {
			if d.Status != webhook.StatusDelivered {
				return false
			}
		}
		return true
	}, 20*time.Second, 20*time.Millisecond)

	ids := map[string]client.WebhookDelivery{}
	for _, d := range ds {
		ids[d.MessageID] = d
	}
	require.Len(t, ids, 8)
	for name, rc := range map[string]*hookReceiver{"up": up, "down": down} {
		reg := map[string]client.WebhookRegistration{"up": regUp, "down": regDown}[name]
		acked := rc.acked()
		assert.Len(t, acked, 4, "%s: every notification acknowledged", name)
		perField := map[string]int{}
		for _, q := range rc.requests() {
			id := q.header.Get("webhook-id")
			d, ok := ids[id]
			require.True(t, ok, "%s: unknown webhook-id %s", name, id)
			assert.Equal(t, reg.ID, d.RegistrationID)
			require.NoError(t, webhook.Verify(reg.Secret, q.header, q.body, webhook.VerifyOptions{}))
			var p webhook.Payload
			require.NoError(t, json.Unmarshal(q.body, &p))
			sent, err := d.Notification()
			require.NoError(t, err)
			assert.Equal(t, sent, p, "%s: a retry sends the same payload under the same id", name)
			if q.status == http.StatusOK {
				perField[p.Field+" "+p.Data[0].Date[:len("2006-01-02")]]++ // date part of the acquisition time
			}
		}
		for _, f := range fieldNames {
			for _, date := range []string{"2019-06-20", "2019-07-05"} {
				assert.Equal(t, 1, perField[f+" "+date], "%s: %s %s", name, f, date)
			}
		}
	}
	for id, n := range up.acked() {
		assert.Equal(t, 1, n, "acknowledged once: %s", id)
	}
	for id := range firstAcked {
		assert.Equal(t, 1, up.acked()[id], "not sent again after the restart: %s", id)
	}

	// A graceful stop.
	require.NoError(t, p2.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-p2.done:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("cropkit serve did not stop on SIGTERM")
	}
}

func TestServeWebhookFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--webhook-timeout", "0s"},
		{"--webhook-retry-base", "-1s"},
		{"--webhook-concurrency", "0"},
	} {
		code, _, errOut := runCmd(t, "", append([]string{"serve", "--data", t.TempDir()}, args...)...)
		assert.Equal(t, 1, code, "%v", args)
		assert.Contains(t, errOut, "must be positive", "%v", args)
	}
}
