package main

import (
	"bytes"
	"context"
	"image/png"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/archive/backend"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/internal/demodata"
	"github.com/cropkit/cropkit/internal/testenv"
)

// runCmd runs one command line and returns its exit code, stdout and stderr.
func runCmd(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

func TestUserAndTokenCommands(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	code, out, errOut := runCmd(t, "hunter22 pass\n", "user", "add", "alice", "--data", dir, "--indices", "ndvi, NDRE", "--password-stdin")
	require.Equal(t, 0, code, errOut)
	tok := lastLine(out)
	assert.Regexp(t, `^[A-Za-z0-9_-]{43}$`, tok)

	st, err := backend.Open(ctx, dir, false, archive.Config{})
	require.NoError(t, err)
	defer st.Close()
	u, _, err := st.Authenticate(ctx, tok)
	require.NoError(t, err)
	assert.Equal(t, "alice", u.Name)
	assert.Equal(t, []string{"ndvi", "ndre"}, u.Indices)
	assert.False(t, u.Admin)
	_, err = st.CheckPassword(ctx, "alice", "hunter22 pass")
	require.NoError(t, err)

	code, out, errOut = runCmd(t, "", "token", "create", "alice", "--data", dir)
	require.Equal(t, 0, code, errOut)
	tok2 := lastLine(out)
	assert.NotEqual(t, tok, tok2)
	u, _, err = st.Authenticate(ctx, tok2)
	require.NoError(t, err)
	assert.Equal(t, "alice", u.Name)

	// Tokens are listed (never their secrets) and revoked.
	code, out, errOut = runCmd(t, "", "token", "list", "alice", "--data", dir)
	require.Equal(t, 0, code, errOut)
	assert.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 3, out)
	assert.NotContains(t, out, tok)
	code, out, errOut = runCmd(t, "", "token", "revoke", "alice", "--data", dir, "--all")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "revoked 2 token(s)")
	_, _, err = st.Authenticate(ctx, tok2)
	assert.ErrorIs(t, err, archive.ErrUnauthenticated)

	for _, tc := range []struct {
		stdin string
		args  []string
		msg   string
	}{
		{"", []string{"user", "add", "alice", "--data", dir}, "already exists"},
		{"", []string{"user", "add", "bob", "--data", dir, "--indices", "ndvi,nope"}, "unknown index"},
		{"", []string{"user", "add", "--data", dir}, "usage"},
		{"", []string{"user", "remove", "bob"}, "usage"},
		{"\n", []string{"user", "add", "bob", "--data", dir, "--password-stdin"}, "empty password"},
		{"", []string{"token", "create", "nobody", "--data", dir}, "not found"},
		{"", []string{"token", "list"}, "usage"},
		{"", []string{"token", "create", "alice", "--data", dir + "-typo"}, "--data " + dir + "-typo: no cropkit data directory"},
		{"", []string{"ingest", "--data", dir + "-typo", "scene"}, "--data " + dir + "-typo"},
		{"", []string{"token", "revoke", "alice", "--data", dir}, "--id N or --all"},
	} {
		code, _, errOut := runCmd(t, tc.stdin, tc.args...)
		assert.Equal(t, 1, code, "%v", tc.args)
		assert.Contains(t, errOut, tc.msg, "%v", tc.args)
	}
}

func TestIngestCommand(t *testing.T) {
	sceneRoot := testenv.DataDir(t, "s2", "flanders-31UES")
	dir := t.TempDir()
	ctx := context.Background()
	st, err := backend.Open(ctx, dir, true, archive.Config{})
	require.NoError(t, err)
	_, _, err = st.EnsureAdmin(ctx)
	require.NoError(t, err)
	admin, err := st.UserByName(ctx, "admin")
	require.NoError(t, err)
	feats, err := geo.ReadFeatures(demodata.Fields())
	require.NoError(t, err)
	_, err = st.Store().InsertField(ctx, archive.Field{OwnerID: admin.ID, Name: feats[0].Name, Indices: []string{"ndvi", "evi"}, Geometry: feats[0].Geometry}, 0)
	require.NoError(t, err)
	require.NoError(t, st.Close())

	code, out, errOut := runCmd(t, "", "ingest", "--data", dir, filepath.Join(sceneRoot, "2019-06-20"), filepath.Join(sceneRoot, "2019-06-25"))
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3)
	assert.Contains(t, lines[2], "ingested 2 scene(s): 2 field images, 2 usable products, 2 unusable")
	assert.Contains(t, lines[0], "2019-06-20")
	assert.Contains(t, lines[0], "1 fields, 2 usable, 0 unusable")
	assert.Contains(t, lines[1], "0 usable, 2 unusable")

	code, _, errOut = runCmd(t, "", "ingest", "--data", dir, filepath.Join(sceneRoot, "no-such-date"))
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "no-such-date")
	code, _, errOut = runCmd(t, "", "ingest", "--data", dir)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "usage")
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startServe runs "cropkit serve" until the returned stop is called, and
// waits for it to print its URL.
func startServe(t *testing.T, args ...string) (out *syncBuffer, stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out = &syncBuffer{}
	errOut := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...), strings.NewReader(""), out, errOut)
	}()
	deadline := time.Now().Add(90 * time.Second)
	for !strings.Contains(out.String(), "listening on") {
		select {
		case code := <-done:
			cancel()
			t.Fatalf("serve exited with %d: %s %s", code, out, errOut)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("serve did not start: %s %s", out, errOut)
		}
	}
	return out, func() int {
		cancel()
		select {
		case code := <-done:
			return code
		case <-time.After(20 * time.Second):
			t.Fatal("serve did not shut down")
			return -1
		}
	}
}

var listenURL = regexp.MustCompile(`listening on (http://[0-9.:]+)`)

func TestServeCommand(t *testing.T) {
	dir := t.TempDir()
	out, stop := startServe(t, "--data", dir)
	m := listenURL.FindStringSubmatch(out.String())
	require.NotNil(t, m, out.String())
	tok := regexp.MustCompile(`ADMIN TOKEN: (\S+)`).FindStringSubmatch(out.String())
	require.NotNil(t, tok, "first start prints the admin token")
	req, _ := http.NewRequest("GET", m[1]+"/fields/list", nil)
	req.Header.Set("Authorization", "Bearer "+tok[1])
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, 0, stop(), "graceful shutdown")

	// A second start keeps the account and prints no token.
	out, stop = startServe(t, "--data", dir)
	assert.NotContains(t, out.String(), "ADMIN TOKEN")
	assert.Equal(t, 0, stop())

	code, _, errOut := runCmd(t, "", "serve", "--min-clear", "2", "--data", t.TempDir())
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "MinClear")
}

func TestServeDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("ingests the bundled sample")
	}
	out, stop := startServe(t, "--demo", "--data", t.TempDir())
	defer stop()
	curl := regexp.MustCompile(`curl -o \S+ -X POST '([^']+)'`).FindStringSubmatch(out.String())
	require.NotNil(t, curl, out.String())
	resp, err := http.Post(curl[1], "", nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode, "%s", body)
	assert.Equal(t, "image/png", resp.Header.Get("Content-Type"))
	_, err = png.Decode(bytes.NewReader(body))
	require.NoError(t, err)
	assert.Equal(t, "2019-08-24", resp.Header.Get("X-Image-Date"), "the sample's latest date")
}

// -h prints the command's usage and exits 0 everywhere.
func TestHelpExitsZero(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"serve", "-h"}, {"ingest", "-h"}, {"index", "-h"}, {"zones", "-h"},
		{"user", "add", "-h"}, {"user", "-h"}, {"token", "create", "-h"}, {"token", "-h"}} {
		code, _, errOut := runCmd(t, "", args...)
		assert.Equal(t, 0, code, "%v: %s", args, errOut)
		assert.Contains(t, strings.ToLower(errOut), "usage", "%v", args)
	}
}
