// Package server is the cropkit HTTP API (see openapi.json and the repository
// README). It is HTTP only: it reads parameters, authenticates the caller
// (before reading a body when the token is in the header or the query),
// applies body limits, read deadlines and the heavy-operation slots, calls
// the core (package archive) and encodes the answer. It holds no algorithm
// and no storage of its own.
//
//	core, _ := backend.Open(ctx, "./cropkit-data", true, archive.Config{}) // SQLite + product files
//	token, created, _ := core.EnsureAdmin(ctx)                            // first start: the admin's token
//	srv, _ := server.New(server.Config{Archive: core})
//	http.ListenAndServe("127.0.0.1:8080", srv)
//
// Every response error is {"error":{"code","message"}} (see Error); the
// core's error kinds map to statuses in one table (errors.go). Another
// user's field answers exactly like a missing one.
package server
