package imagery_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"math"
	"os"

	"github.com/paulmach/orb"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/imagery"
)

// Compute NDVI statistics of one field on one date and print the §2.5 JSON.
func ExampleScene_FieldProducts() {
	ctx := context.Background()
	scene, err := imagery.OpenScene(ctx, "../shared/data/s2/flanders-31UES/2019-06-20", imagery.SceneOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer scene.Close()
	data, err := os.ReadFile("../shared/data/fields/flanders-31UES.geojson")
	if err != nil {
		log.Fatal(err)
	}
	fields, err := geo.ReadFeatures(data)
	if err != nil {
		log.Fatal(err)
	}
	products, err := scene.FieldProducts(ctx, fields[0].Geometry, []string{"ndvi", "ndre"}, nil)
	if err != nil {
		log.Fatal(err) // errors.Is(err, imagery.ErrNoClearPixels) for a cloudy date
	}
	for _, p := range products {
		report, err := imagery.NewReport(p, nil) // nil: no previous image
		if err != nil {
			log.Fatal(err)
		}
		doc, _ := json.Marshal(report)
		fmt.Printf("%s mean %.3f over %d pixels: %d bytes of JSON\n", p.Index, p.Stats.Mean, p.Stats.Num, len(doc))
	}
}

// Register a user-defined index next to the built-in ones.
func ExampleCatalogue_Register() {
	cat := imagery.NewCatalogue()
	err := cat.Register(imagery.Index{
		Name:    "sr",
		Formula: "B08/B04",
		Source:  "simple ratio, Jordan 1969",
		Bands:   []string{"B08", "B04"},
		Range:   [2]float64{0, 15},
		Compute: func(b [][]float64, out []float64) {
			nir, red := b[0], b[1]
			for i := range out {
				out[i] = nir[i] / red[i]
			}
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	ix, _ := cat.Lookup("sr")
	out := make([]float64, 1)
	ix.Compute([][]float64{{0.40}, {0.05}}, out)
	fmt.Println(ix.Formula, "=", out[0])
	// Output: B08/B04 = 8
}

func ExampleComputeStats() {
	s := imagery.ComputeStats([]float64{0.2, 0.4, math.NaN(), 0.6, 0.8})
	fmt.Printf("num %d mean %.2f median %.2f p25 %.2f p75 %.2f std %.4f\n", s.Num, s.Mean, s.Median, s.P25, s.P75, s.Std)
	// Output: num 4 mean 0.50 median 0.50 p25 0.35 p75 0.65 std 0.2236
}

func ExampleMeanVariation() {
	fmt.Printf("%.1f%%\n", imagery.MeanVariation(0.66, 0.60))
	// Output: 10.0%
}

// Bound the memory of concurrent field reads: each reserves its estimated
// peak, waits while others hold the budget, and a read that could never fit
// fails at once with a *BudgetError.
func ExampleBudget() {
	ctx := context.Background()
	budget := imagery.NewBudget(100 << 20)
	release, err := budget.Acquire(ctx, 60<<20)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("in use:", budget.Used()>>20, "MiB")
	release()
	_, err = budget.Acquire(ctx, 200<<20)
	var be *imagery.BudgetError
	fmt.Println(errors.As(err, &be), be.Need>>20, "MiB over", be.Limit>>20, "MiB")
	// Output:
	// in use: 60 MiB
	// true 200 MiB over 100 MiB
}

// Open scenes with a shared budget and a cap on the pixels of one field
// window: over the cap, FieldProducts fails with a *BudgetError naming the
// window, before allocating.
func ExampleSceneOptions_budget() {
	opts := imagery.SceneOptions{
		Budget:         imagery.NewBudget(512 << 20), // shared by every scene of the process
		MaxFieldPixels: 4_000_000,                    // 40,000 ha at 10 m
	}
	scene, err := imagery.OpenScene(context.Background(), "scenes/31UES/2019-06-20", opts)
	if err != nil {
		log.Fatal(err)
	}
	defer scene.Close()
	field := orb.MultiPolygon{{{{3.00, 50.80}, {3.028, 50.80}, {3.028, 50.818}, {3.00, 50.818}, {3.00, 50.80}}}}
	_, err = scene.FieldProducts(context.Background(), field, []string{"ndvi"}, nil)
	if errors.Is(err, imagery.ErrBudget) {
		fmt.Println("field too large for this server:", err)
	}
}
