package imagery

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/geo/crs"
	"github.com/cropkit/cropkit/imagery/geotiff/geotifftest"
	"github.com/cropkit/cropkit/internal/testenv"
)

// centimetre is the crafted grid of the issue: 2^20 × 2^20 pixels of 1 cm
// (10.5 km a side), which GeoTIFF stores in about 2 MiB per band.
var centimetre = geo.Grid{EPSG: 32631, X0: 500000, Y0: 5600000, DX: 0.01, DY: 0.01, Cols: 1 << 20, Rows: 1 << 20}

// metre10 is a 10 m grid over the same ground.
var metre10 = geo.Grid{EPSG: 32631, X0: 500000, Y0: 5600000, DX: 10, DY: 10, Cols: 1024, Rows: 1024}

// writeCraftedScene writes a scene folder whose bands are on the given grids.
func writeCraftedScene(t testing.TB, grids map[string]geo.Grid) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "2024-06-01")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for name, g := range grids {
		f, err := os.Create(filepath.Join(dir, name+".tif"))
		require.NoError(t, err)
		v := uint16(3000)
		if name == "SCL" {
			v = 4
		}
		require.NoError(t, geotifftest.WriteUniform(f, g, 2048, v))
		require.NoError(t, f.Close())
	}
	return dir
}

// normalField is a 10 ha square (316 m a side) inside both grids, in lon/lat.
func normalField(t testing.TB) orb.MultiPolygon {
	t.Helper()
	tr, err := crs.New(32631, 4326)
	require.NoError(t, err)
	// 20.5 cm inside the 10 m pixel edges and 5 mm inside 1 cm ones: an edge
	// straight in UTM is slightly curved once it went through lon/lat, so
	// exact edges would make the windows depend on the last millimetre.
	x0, y0 := 503000.205, 5595000.205
	const side = 316 - 0.41
	ring := orb.Ring{{x0, y0}, {x0 + side, y0}, {x0 + side, y0 + side}, {x0, y0 + side}, {x0, y0}}
	mp, err := geo.Transform(orb.MultiPolygon{{ring}}, tr)
	require.NoError(t, err)
	return mp
}

func TestCraftedCentimetreScene(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		grids map[string]geo.Grid
		index string
		what  string
	}{
		// Every band in 1 cm pixels: the scene's own grid makes the window huge.
		{"all bands 1 cm", map[string]geo.Grid{"B04": centimetre, "B08": centimetre, "SCL": centimetre}, "ndvi", "field window"},
		// The finest reference band sets the scene grid.
		{"B08 1 cm", map[string]geo.Grid{"B04": metre10, "B08": centimetre, "SCL": metre10}, "ndvi", "field window"},
		// 10 m reflectance under a 1 cm mask: the mask's window is huge.
		{"mask 1 cm", map[string]geo.Grid{"B04": metre10, "B08": metre10, "SCL": centimetre}, "ndvi", "band SCL window"},
		// A band finer than the scene grid, read by the index.
		{"B05 1 cm", map[string]geo.Grid{"B04": metre10, "B08": metre10, "B05": centimetre, "SCL": metre10}, "ndre", "band B05 window"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeCraftedScene(t, tc.grids)
			scene, err := OpenScene(ctx, dir, SceneOptions{})
			require.NoError(t, err)
			defer scene.Close()
			field := normalField(t)

			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			_, err = scene.FieldProducts(ctx, field, []string{tc.index}, nil)
			elapsed := time.Since(start)
			runtime.ReadMemStats(&after)

			require.ErrorIs(t, err, ErrBudget)
			var be *BudgetError
			require.ErrorAs(t, err, &be)
			assert.Equal(t, tc.what, be.What)
			assert.Equal(t, 0.01, be.PixelSize)
			assert.Equal(t, int64(DefaultMaxFieldPixels), be.Limit)
			// 316 m at 1 cm: 31600 pixels a side, give or take the edges; a
			// band window under the 10 m scene grid covers its 31 whole pixels.
			for _, side := range []int{be.Window.Cols, be.Window.Rows} {
				assert.GreaterOrEqual(t, side, 31000)
				assert.LessOrEqual(t, side, 31602)
			}
			assert.Equal(t, int64(be.Window.Cols)*int64(be.Window.Rows), be.Need)
			assert.ErrorContains(t, err, fmt.Sprintf("%s of %dx%d pixels of 0.01: %d pixels, over the limit of 12000000 (SceneOptions.MaxFieldPixels)",
				tc.what, be.Window.Cols, be.Window.Rows, be.Need))
			assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<20), "bytes allocated")
			assert.Less(t, elapsed, 5*time.Second)
			t.Logf("refused in %v after allocating %d KiB", elapsed, (after.TotalAlloc-before.TotalAlloc)>>10)
		})
	}
}

func TestCraftedBandUnused(t *testing.T) {
	// A crafted band does not stop the products that do not read it.
	dir := writeCraftedScene(t, map[string]geo.Grid{"B04": metre10, "B08": metre10, "B05": centimetre, "SCL": metre10})
	scene, err := OpenScene(context.Background(), dir, SceneOptions{})
	require.NoError(t, err)
	defer scene.Close()
	ps, err := scene.FieldProducts(context.Background(), normalField(t), []string{"ndvi"}, nil)
	require.NoError(t, err)
	require.Len(t, ps, 1)
	assert.Equal(t, 0.0, ps[0].Stats.Mean) // B04 = B08 = 3000
	assert.Equal(t, 32*32, ps[0].Stats.FieldPixels)
}

func TestMaxFieldPixelsOption(t *testing.T) {
	dir := writeCraftedScene(t, map[string]geo.Grid{"B04": metre10, "B08": metre10, "SCL": metre10})
	field := normalField(t) // 32 × 32 pixels of 10 m
	tests := []struct {
		max  int64
		want error
	}{
		{0, nil},       // the default
		{32 * 32, nil}, // just fits
		{32*32 - 1, ErrBudget},
		{-1, nil}, // no cap
	}
	for _, tc := range tests {
		scene, err := OpenScene(context.Background(), dir, SceneOptions{MaxFieldPixels: tc.max})
		require.NoError(t, err)
		_, err = scene.FieldProducts(context.Background(), field, []string{"ndvi"}, nil)
		if tc.want == nil {
			require.NoError(t, err, tc.max)
		} else {
			require.ErrorIs(t, err, tc.want, tc.max)
			assert.ErrorContains(t, err, "field window of 32x32 pixels of 10: 1024 pixels, over the limit of 1023")
		}
		require.NoError(t, scene.Close())
	}
}

func TestSharedBudget(t *testing.T) {
	dir := writeCraftedScene(t, map[string]geo.Grid{"B04": metre10, "B08": metre10, "SCL": metre10})
	field := normalField(t)
	need := fieldBytes(32*32, 2, 1)
	assert.Equal(t, int64(32*32*(2+16+8+8+8)), need)

	t.Run("too small for one field", func(t *testing.T) {
		scene, err := OpenScene(context.Background(), dir, SceneOptions{Budget: NewBudget(need - 1)})
		require.NoError(t, err)
		defer scene.Close()
		_, err = scene.FieldProducts(context.Background(), field, []string{"ndvi"}, nil)
		var be *BudgetError
		require.ErrorAs(t, err, &be)
		assert.Equal(t, BudgetError{What: "memory budget", Need: need, Limit: need - 1, Option: "SceneOptions.Budget"}, *be)
	})
	t.Run("waits while others hold it", func(t *testing.T) {
		b := NewBudget(need)
		scene, err := OpenScene(context.Background(), dir, SceneOptions{Budget: b})
		require.NoError(t, err)
		defer scene.Close()
		release, err := b.Acquire(context.Background(), 1)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err = scene.FieldProducts(ctx, field, []string{"ndvi"}, nil)
		require.ErrorIs(t, err, context.DeadlineExceeded)

		done := make(chan error, 1)
		go func() {
			_, err := scene.FieldProducts(context.Background(), field, []string{"ndvi"}, nil)
			done <- err
		}()
		select {
		case err := <-done:
			t.Fatalf("read did not wait for the budget: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
		release()
		release() // harmless
		require.NoError(t, <-done)
		assert.Equal(t, int64(0), b.Used())
	})
}

func TestBudgetAcquire(t *testing.T) {
	b := NewBudget(100)
	r1, err := b.Acquire(context.Background(), 60)
	require.NoError(t, err)
	r2, err := b.Acquire(context.Background(), 40)
	require.NoError(t, err)
	assert.Equal(t, int64(100), b.Used())
	got := make(chan struct{})
	go func() {
		r, err := b.Acquire(context.Background(), 50)
		if err == nil {
			r()
		}
		close(got)
	}()
	r2()
	select {
	case <-got:
		t.Fatal("50 bytes granted with only 40 free")
	case <-time.After(20 * time.Millisecond):
	}
	r1()
	<-got
	assert.Equal(t, int64(0), b.Used())
	_, err = b.Acquire(context.Background(), 101)
	require.ErrorIs(t, err, ErrBudget)
	assert.EqualError(t, err, "memory budget: a field read needs 101 bytes, over the limit of 100 (SceneOptions.Budget)")
}

// childEnv carries the crafted scene folder to the re-executed test binary.
const childEnv = "CROPKIT_BUDGET_CHILD_SCENE"

// TestCraftedSceneUnderAddressSpaceLimit runs the crafted ingestion in a
// child process limited to 3 GB of address space (the Go runtime alone
// reserves about 2 GB): it must end with the budget error, not a fatal
// "out of memory", and peak RSS must stay under 1 GB.
func TestCraftedSceneUnderAddressSpaceLimit(t *testing.T) {
	if dir, ok := strings.CutPrefix(os.Getenv(childEnv), "crafted:"); ok {
		runCraftedChild(dir)
		return
	}
	prlimit := testenv.RequireTool(t, "prlimit") // util-linux
	bin := childBinary(t)
	dir := writeCraftedScene(t, map[string]geo.Grid{"B04": centimetre, "B08": centimetre, "SCL": centimetre})
	cmd := exec.Command(prlimit, "--as=3000000000", bin, "-test.run=^TestCraftedSceneUnderAddressSpaceLimit$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"=crafted:"+dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "child output:\n%s", out)
	text := string(out)
	assert.NotContains(t, text, "fatal error")
	assert.Contains(t, text, "BUDGET ERROR: field in scene ")
	assert.Regexp(t, `field window of 3156\dx3156\d pixels of 0\.01`, text)
	var hwm int64 = -1
	for line := range strings.SplitSeq(text, "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM kB: "); ok {
			hwm, err = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			require.NoError(t, err)
		}
	}
	require.GreaterOrEqual(t, hwm, int64(0), "child printed no VmHWM:\n%s", out)
	assert.Less(t, hwm, int64(1<<20), "peak RSS in kB")
	t.Logf("child peak RSS %d kB", hwm)
}

// childBinary is the test binary to re-execute for measurements: this one,
// or under -race (whose runtime cannot start under an address-space limit
// and whose shadow memory inflates RSS) this package's tests built without it.
func childBinary(t *testing.T) string {
	if !raceBuild {
		return os.Args[0]
	}
	goTool := testenv.RequireTool(t, "go")
	bin := filepath.Join(t.TempDir(), "imagery.test")
	out, err := exec.Command(goTool, "test", "-c", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "build the non-race test binary:\n%s", out)
	return bin
}

// runCraftedChild is the child side: the ingestion of one normal field,
// through the library, over the crafted scene at dir.
func runCraftedChild(dir string) {
	ctx := context.Background()
	scene, err := OpenScene(ctx, dir, SceneOptions{})
	if err != nil {
		fmt.Println("OPEN ERROR:", err)
		os.Exit(3)
	}
	defer scene.Close()
	tr, err := crs.New(32631, 4326)
	if err != nil {
		fmt.Println("CRS ERROR:", err)
		os.Exit(3)
	}
	x0, y0 := 503000.205, 5595000.205 // as normalField: off the pixel edges
	field, err := geo.Transform(orb.MultiPolygon{{{{x0, y0}, {x0 + 315.59, y0}, {x0 + 315.59, y0 + 315.59}, {x0, y0 + 315.59}, {x0, y0}}}}, tr)
	if err != nil {
		fmt.Println("TRANSFORM ERROR:", err)
		os.Exit(3)
	}
	_, err = scene.FieldProducts(ctx, field, []string{"ndvi", "savi"}, nil)
	switch {
	case err == nil:
		fmt.Println("NO ERROR: the crafted field was read")
	default:
		if be := (*BudgetError)(nil); errors.As(err, &be) {
			fmt.Println("BUDGET ERROR:", err)
		} else {
			fmt.Println("OTHER ERROR:", err)
		}
	}
	fmt.Printf("VmHWM kB: %d\n", vmHWM())
}

// vmHWM is this process's peak resident set in kB, -1 when unknown.
func vmHWM() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}

func TestCraftedSTACAssets(t *testing.T) {
	// A STAC item pointing at crafted centimetre bands fails like a folder.
	dir := writeCraftedScene(t, map[string]geo.Grid{"B04": centimetre, "B08": centimetre, "SCL": centimetre})
	item := `{"type":"Feature","id":"crafted","properties":{"datetime":"2024-06-01T10:00:00Z"},
		"assets":{"red":{"href":"B04.tif"},"nir":{"href":"./B08.tif"},"scl":{"href":"SCL.tif"}}}`
	path := filepath.Join(dir, "item.json")
	require.NoError(t, os.WriteFile(path, []byte(item), 0o600))
	scene, err := OpenScene(context.Background(), path, SceneOptions{})
	require.NoError(t, err)
	defer scene.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = scene.FieldProducts(context.Background(), normalField(t), []string{"ndvi"}, nil)
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, ErrBudget)
	assert.Regexp(t, `field in scene crafted: field window of 3156\dx3156\d pixels of 0\.01`, err.Error())
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<20))
}

// TestLargestFieldRSS reads the largest field the server registers (a
// 100,000 ha square, 10 M pixels of 10 m) over a full-size synthetic
// Sentinel-2 tile in a child process, and checks it is accepted by the
// default caps and peaks under 1 GB resident.
func TestLargestFieldRSS(t *testing.T) {
	if dir, ok := strings.CutPrefix(os.Getenv(childEnv), "largest:"); ok {
		runLargestChild(dir)
		return
	}
	if testing.Short() {
		t.Skip("reads 10 M pixels per band")
	}
	dir := writeTileScene(t)
	cmd := exec.Command(childBinary(t), "-test.run=^TestLargestFieldRSS$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"=largest:"+dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "child output:\n%s", out)
	text := string(out)
	assert.Contains(t, text, "PRODUCTS: 2 over 10004569 field pixels")
	var hwm int64 = -1
	for line := range strings.SplitSeq(text, "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM kB: "); ok {
			hwm, err = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			require.NoError(t, err)
		}
	}
	require.GreaterOrEqual(t, hwm, int64(0), "child printed no VmHWM:\n%s", out)
	assert.Less(t, hwm, int64(1<<20), "peak RSS in kB")
	t.Logf("largest field: child peak RSS %d kB", hwm)
}

func runLargestChild(dir string) {
	ctx := context.Background()
	scene, err := OpenScene(ctx, dir, SceneOptions{})
	if err != nil {
		fmt.Println("OPEN ERROR:", err)
		os.Exit(3)
	}
	defer scene.Close()
	tr, err := crs.New(32633, 4326)
	if err != nil {
		fmt.Println("CRS ERROR:", err)
		os.Exit(3)
	}
	// 3163 pixels a side (31.63 km): 100,000 ha, in the middle of the tile.
	x0, y0, side := 340000.0, 5020000.0, 31630.0
	field, err := geo.Transform(orb.MultiPolygon{{{{x0, y0}, {x0 + side, y0}, {x0 + side, y0 + side}, {x0, y0 + side}, {x0, y0}}}}, tr)
	if err != nil {
		fmt.Println("TRANSFORM ERROR:", err)
		os.Exit(3)
	}
	ps, err := scene.FieldProducts(ctx, field, []string{"ndvi", "savi"}, nil)
	if err != nil {
		fmt.Println("ERROR:", err)
	} else {
		fmt.Printf("PRODUCTS: %d over %d field pixels\n", len(ps), ps[0].Stats.FieldPixels)
	}
	fmt.Printf("VmHWM kB: %d\n", vmHWM())
}
