package server_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/archive/backend"
	"github.com/cropkit/cropkit/server"
)

// A server over the embedded archive of a data directory: the first start
// creates "admin".
func ExampleNew() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "cropkit-example")
	defer os.RemoveAll(dir)
	core, err := backend.Open(ctx, dir, true, archive.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer core.Close()
	token, created, err := core.EnsureAdmin(ctx)
	if err != nil {
		log.Fatal(err)
	}
	srv, err := server.New(server.Config{Archive: core})
	if err != nil {
		log.Fatal(err)
	}
	// srv is an http.Handler: http.ListenAndServe("127.0.0.1:8080", srv)
	req := httptest.NewRequest("GET", "/fields/list?token="+token, nil)
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	fmt.Println(created, rec.Code, rec.Body.String())
	// Output: true 200 {"fields":[]}
}

// Unknown routes and wrong methods answer the API's JSON error shape.
func ExampleServer_ServeHTTP() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "cropkit-example")
	defer os.RemoveAll(dir)
	core, _ := backend.Open(ctx, dir, true, archive.Config{})
	defer core.Close()
	srv, _ := server.New(server.Config{Archive: core})
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest(http.MethodDelete, "/fields/list", nil))
	fmt.Println(rec.Code, rec.Header().Get("Allow"), rec.Body.String())
	// Output: 405 GET, HEAD, POST {"error":{"code":"method_not_allowed","message":"method DELETE not allowed on /fields/list (allowed: GET, HEAD, POST)"}}
}
