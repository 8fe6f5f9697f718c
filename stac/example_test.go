package stac_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/paulmach/orb"

	"github.com/cropkit/cropkit/imagery"
	"github.com/cropkit/cropkit/stac"
)

// Poll Earth Search for new clear Sentinel-2 items over a field and compute
// their NDVI, skipping items already ingested. (Not run: it needs the network.)
func ExampleClient_Search() {
	ctx := context.Background()
	c := stac.NewClient(false, 30*time.Second) // SSRF guard on
	field := orb.Polygon{{{4.065, 50.745}, {4.067, 50.745}, {4.067, 50.747}, {4.065, 50.747}, {4.065, 50.745}}}
	maxCloud := 40.0
	ingested := map[string]bool{"S2B_31UES_20240601_0_L2A": true}
	newestIngested := time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	for item, err := range c.Search(ctx, "https://earth-search.aws.element84.com/v1", stac.SearchParams{
		Collections: []string{"sentinel-2-l2a"},
		Intersects:  field,
		// Late publication: look back a few days before the newest acquisition.
		Start:    newestIngested.Add(-5 * 24 * time.Hour),
		MaxCloud: &maxCloud,
	}) {
		if errors.Is(err, stac.ErrUnavailable) {
			log.Print("catalogue unavailable, retry at the next poll")
			return
		}
		if err != nil {
			log.Fatal(err)
		}
		if ingested[item.ID] {
			continue // no band request for a known item
		}
		scene, err := c.OpenScene(ctx, item, imagery.SceneOptions{})
		if err != nil {
			log.Printf("item %s: %v", item.ID, err)
			continue
		}
		products, err := scene.FieldProducts(ctx, orb.MultiPolygon{field}, []string{"ndvi"}, nil)
		scene.Close()
		if err != nil {
			log.Printf("item %s: %v", item.ID, err)
			continue
		}
		fmt.Println(item.ID, item.Datetime, products[0].Stats.Mean)
	}
}
