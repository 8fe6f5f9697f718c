package main

import (
	"context"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/archive/backend"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/internal/demodata"
	"github.com/cropkit/cropkit/internal/testenv"
)

// With --db and --blobs, user add, token and ingest work on PostgreSQL and
// S3 and write nothing to the working directory.
func TestStorageFlagsWriteNothingLocally(t *testing.T) {
	dsn, bucket := testenv.Postgres(t), testenv.S3(t)
	t.Chdir(t.TempDir())
	code, out, errOut := runCmd(t, "", "user", "add", "alice", "--db", dsn, "--blobs", bucket, "--indices", "ndvi")
	require.Equal(t, 0, code, errOut)
	tok := lastLine(out)
	code, out, errOut = runCmd(t, "", "token", "list", "alice", "--db", dsn, "--blobs", bucket)
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	assert.Regexp(t, `^1 +\d{4}-\d\d-\d\dT`, lines[1])

	core, err := backend.OpenURL(context.Background(), dsn, bucket, archive.Config{})
	require.NoError(t, err)
	defer core.Close()
	u, _, err := core.Authenticate(context.Background(), tok)
	require.NoError(t, err)
	assert.Equal(t, "alice", u.Name)

	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing written to the working directory")
}

// -h lists --db and --blobs on every command that takes --data.
func TestStorageFlagsInHelp(t *testing.T) {
	for _, args := range [][]string{{"serve", "-h"}, {"worker", "-h"}, {"ingest", "-h"}, {"user", "add", "-h"}, {"token", "list", "-h"}} {
		code, out, errOut := runCmd(t, "", args...)
		assert.Equal(t, 0, code, args)
		assert.Contains(t, out+errOut, "-db", args)
		assert.Contains(t, out+errOut, "-blobs", args)
	}
	_, _, errOut := runCmd(t, "", "serve", "-h")
	assert.Contains(t, errOut, "-jobs")
	_, _, errOut = runCmd(t, "", "worker", "-h")
	for _, flag := range []string{"-catalog", "-poll", "-backfill", "-max-cloud", "-ingest-allow-private", "-webhook-allow-private"} {
		assert.Contains(t, errOut, flag)
	}
}

// ingest --db --blobs records products in PostgreSQL and their bundles in
// the bucket, and reads nothing from a data directory.
func TestIngestWithStorageFlags(t *testing.T) {
	ctx := context.Background()
	dsn, bucket := testenv.Postgres(t), testenv.S3(t)
	scenes, err := demodata.Extract(t.TempDir())
	require.NoError(t, err)
	core, err := backend.OpenURL(ctx, dsn, bucket, archive.Config{})
	require.NoError(t, err)
	_, _, err = core.EnsureAdmin(ctx)
	require.NoError(t, err)
	_, err = setupDemoFields(ctx, core)
	require.NoError(t, err)
	require.NoError(t, core.Close())

	t.Chdir(t.TempDir())
	code, _, errOut := runCmd(t, "", "ingest", "--db", dsn, "--blobs", bucket, scenes[0])
	require.Equal(t, 0, code, errOut)
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing written to the working directory")

	core, err = backend.OpenURL(ctx, dsn, bucket, archive.Config{})
	require.NoError(t, err)
	defer core.Close()
	bundles, err := core.Store().Bundles(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, bundles)
	for k := range bundles {
		data, err := core.Blobs().Get(ctx, k)
		require.NoError(t, err, k)
		assert.NotEmpty(t, data)
	}
}

// setupDemoFields registers the bundled sample's fields for admin.
func setupDemoFields(ctx context.Context, core *archive.Archive) (int, error) {
	admin, err := core.UserByName(ctx, "admin")
	if err != nil {
		return 0, err
	}
	features, err := geo.ReadFeatures(demodata.Fields())
	if err != nil {
		return 0, err
	}
	for _, f := range features {
		geom, err := archive.EncodeGeometry(f.Geometry)
		if err != nil {
			return 0, err
		}
		if _, err := core.RegisterField(ctx, admin, archive.FieldInput{Name: f.Name, Indices: []string{"ndvi"}, Geometry: []byte(geom)}); err != nil {
			return 0, err
		}
	}
	return len(features), nil
}

// serve --demo --db --blobs: the demo ingests into PostgreSQL and S3, a
// download works, and the working directory stays empty.
func TestServeWithStorageFlags(t *testing.T) {
	dsn, bucket := testenv.Postgres(t), testenv.S3(t)
	t.Chdir(t.TempDir())
	out, stop := startServe(t, "--db", dsn, "--blobs", bucket, "--demo")
	m := listenURL.FindStringSubmatch(out.String())
	require.NotNil(t, m, out.String())
	tok := regexp.MustCompile(`ADMIN TOKEN: (\S+)`).FindStringSubmatch(out.String())
	require.NotNil(t, tok, out.String())
	field := regexp.MustCompile(`field_name=([^&]+)`).FindStringSubmatch(out.String())
	require.NotNil(t, field, out.String())
	req, _ := http.NewRequest("POST", m[1]+"/download/ndvi/json?field_name="+field[1], nil)
	req.Header.Set("Authorization", "Bearer "+tok[1])
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, 0, stop(), "graceful shutdown")
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing written to the working directory")
}
