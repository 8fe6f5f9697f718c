// Package server is the cropkit HTTP API (see openapi.json and the repository README):
// accounts and tokens, fields, field metadata seasons, scene ingestion, and
// downloads of per-field index images and statistics. It composes the
// library (imagery, colormap, metadata, geo) and holds no algorithm of its own.
//
//	store, _ := server.OpenStore(ctx, "./cropkit-data") // SQLite + product files
//	token, created, _ := store.EnsureAdmin(ctx)          // first start: the admin's token
//	srv, _ := server.New(server.Config{Store: store})
//	http.ListenAndServe("127.0.0.1:8080", srv)
//
// Every response error is {"error":{"code","message"}} (see Error); another
// user's field answers exactly like a missing one. Ingestion (Server.Ingest,
// POST /scenes/ingest) computes the products of every registered field a
// scene covers, writes their files atomically, then records them — and calls
// productsStored (events.go) in the same SQLite transaction, for the webhook
// outbox.
package server
