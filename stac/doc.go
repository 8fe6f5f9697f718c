// Package stac is a client for STAC APIs (Earth Search v1, the Copernicus
// Data Space STAC, any STAC API - Item Search server): item search with
// collections, intersects, datetime ranges, limit and a cloud-cover filter,
// paging through rel "next" links, retries with backoff on 429/5xx, and the
// SSRF guard of ingestion URLs.
//
// A monitoring loop polls with Client.Search and opens each new item as an
// imagery.Scene with Client.OpenScene, which reads the band files with HTTP
// Range requests only and does not fetch the item again:
//
//	c := stac.NewClient(allowPrivate, 30*time.Second)
//	for item, err := range c.Search(ctx, root, stac.SearchParams{
//		Collections: []string{"sentinel-2-l2a"},
//		Intersects:  fieldsHull,
//		Start:       since, // see below
//		MaxCloud:    &maxCloud,
//	}) {
//		if err != nil { ... }         // errors.Is(err, stac.ErrUnavailable): try at the next poll
//		if ingested[item.ID] { continue } // no band request for known items
//		scene, err := c.OpenScene(ctx, item, imagery.SceneOptions{})
//		...
//		for _, i := range stac.FieldOrder(scene, fields) { // tile-friendly order
//			products, err := scene.FieldProducts(ctx, fields[i], indices, nil)
//			...
//		}
//	}
//
// Catalogues publish items hours or days after acquisition, so a poll that
// only asks for "acquired after my last poll" misses late items. Search from
// the backfill start, or from the newest ingested acquisition minus a margin
// of a few days, and skip item ids already ingested; when the catalogue
// declares CQL2 filtering, SearchParams.UpdatedSince narrows the answer to
// items (re)published since the last poll.
package stac
