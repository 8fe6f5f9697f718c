package archive_test

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/archive/backend"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/internal/testenv"
)

// copyDir copies a data directory as a power cut would leave it: the
// database file and its write-ahead log (committed transactions only count
// on recovery), and every file.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if strings.HasSuffix(p, "-shm") {
			return nil // rebuilt from the WAL on open
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(filepath.Join(dst, rel))
		if err != nil {
			return err
		}
		_, err = io.Copy(out, in)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		return err
	}))
}

// checkConsistent opens a crashed copy (Open sweeps it) and checks the
// crash-consistency rules: every listed product downloads, no file is left
// that no row references, no temporary file survives.
func checkConsistent(t *testing.T, dir, step string) (products int) {
	t.Helper()
	ctx := context.Background()
	a, err := backend.Open(ctx, dir, false, archive.Config{SweepGrace: -1})
	require.NoError(t, err, step)
	defer a.Close()
	_, err = a.Sweep(ctx) // the start-up sweep of serve
	require.NoError(t, err, step)
	admin, err := a.UserByName(ctx, "admin")
	require.NoError(t, err, step)
	fields, err := a.Fields(ctx, admin, nil)
	require.NoError(t, err, step)
	referenced := map[string]bool{}
	for _, f := range fields {
		ps, err := a.Products(ctx, f, archive.ProductQuery{UsableOnly: true})
		require.NoError(t, err, step)
		for _, p := range ps {
			img := archive.Image{Field: f, Index: p.Index, Product: p}
			_, err := a.PNG(ctx, img)
			require.NoError(t, err, "%s: field %s %s %s lists a product whose file is missing", step, f.Name, p.Index, p.Date)
			_, err = a.ReportJSON(ctx, img)
			require.NoError(t, err, step)
			referenced[p.Bundle] = true
			products++
		}
	}
	require.NoError(t, a.Blobs().List(ctx, "products/", func(b archive.BlobInfo) error {
		assert.False(t, b.Temp, "%s: temporary file %s survived", step, b.Key)
		assert.True(t, referenced[b.Key], "%s: file %s has no row", step, b.Key)
		return nil
	}), step)
	return products
}

// TestCrashAtEveryStep injects a crash (a copy of the data directory taken
// at that instant, reopened as after kill -9) at every step of ingest,
// re-ingest, outline update and delete, and checks the copy.
func TestCrashAtEveryStep(t *testing.T) {
	sceneRoot := testenv.DataDir(t, "s2", "flanders-31UES")
	data, err := os.ReadFile(filepath.Join(testenv.DataDir(t, "fields"), "flanders-31UES.geojson"))
	require.NoError(t, err)
	feats, err := geo.ReadFeatures(data)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(feats), 2)

	ctx := context.Background()
	dir := t.TempDir()
	var (
		mu    sync.Mutex
		seen  = map[string]int{}
		crash = map[string]string{} // step → snapshot dir
	)
	snapRoot := t.TempDir()
	hook := func(step string) {
		mu.Lock()
		defer mu.Unlock()
		seen[step]++
		name := fmt.Sprintf("%s-%d", strings.ReplaceAll(step, ":", "_"), seen[step])
		snap := filepath.Join(snapRoot, name)
		copyDir(t, dir, snap)
		crash[name] = snap
	}
	a, err := backend.Open(ctx, dir, true, archive.Config{StepHook: hook, Workers: 1})
	require.NoError(t, err)
	_, _, err = a.EnsureAdmin(ctx)
	require.NoError(t, err)
	admin, err := a.UserByName(ctx, "admin")
	require.NoError(t, err)
	for _, ft := range feats[:2] {
		geom, err := archive.EncodeGeometry(ft.Geometry)
		require.NoError(t, err)
		_, err = a.RegisterField(ctx, admin, archive.FieldInput{Name: ft.Name, Geometry: []byte(geom), Indices: []string{"ndvi", "ndre"}})
		require.NoError(t, err)
	}
	scene := filepath.Join(sceneRoot, "2019-06-20")
	_, err = a.Ingest(ctx, scene, archive.IngestOptions{}) // ingest
	require.NoError(t, err)
	_, err = a.Ingest(ctx, scene, archive.IngestOptions{}) // re-ingest: new bundles replace the old
	require.NoError(t, err)
	geom, err := archive.EncodeGeometry(feats[1].Geometry)
	require.NoError(t, err)
	_, err = a.UpdateField(ctx, admin, archive.FieldInput{Name: feats[0].Name, Geometry: []byte(geom)}) // outline update
	require.NoError(t, err)
	require.NoError(t, a.DeleteField(ctx, admin, feats[1].Name)) // delete
	require.NoError(t, a.Close())

	for _, step := range []string{"ingest:before-put", "ingest:after-put", "ingest:after-commit",
		"update:before-commit", "update:after-commit", "delete:before-commit", "delete:after-commit"} {
		assert.Positive(t, seen[step], "step %s was not reached", step)
	}
	require.Equal(t, 4, seen["ingest:after-commit"], "2 fields × (ingest + re-ingest)")
	total := 0
	for name, snap := range crash {
		total += checkConsistent(t, snap, name)
	}
	assert.Positive(t, total, "some snapshots hold products")
	checkConsistent(t, dir, "final")
}
