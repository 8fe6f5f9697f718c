package server_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/cropkit/cropkit/server"
)

// A server over a data directory: the first start creates "admin".
func ExampleNew() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "cropkit-example")
	defer os.RemoveAll(dir)
	store, err := server.OpenStore(ctx, dir)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	token, created, err := store.EnsureAdmin(ctx)
	if err != nil {
		log.Fatal(err)
	}
	srv, err := server.New(server.Config{Store: store})
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

// Ingestion stores the products of every registered field the scene covers.
func ExampleServer_Ingest() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "cropkit-example")
	defer os.RemoveAll(dir)
	store, _ := server.OpenStore(ctx, dir)
	defer store.Close()
	srv, _ := server.New(server.Config{Store: store, MinClear: 0.6})
	res, err := srv.Ingest(ctx, "../shared/data/s2/flanders-31UES/2019-06-20", server.IngestOptions{})
	if err != nil {
		fmt.Println("ingest:", err)
		return
	}
	fmt.Printf("%s: %d fields, %d usable images\n", res.Date, res.Fields, res.Usable)
}

// Unknown routes and wrong methods answer the API's JSON error shape.
func ExampleServer_ServeHTTP() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "cropkit-example")
	defer os.RemoveAll(dir)
	store, _ := server.OpenStore(ctx, dir)
	defer store.Close()
	srv, _ := server.New(server.Config{Store: store})
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest(http.MethodDelete, "/fields/list", nil))
	fmt.Println(rec.Code, rec.Header().Get("Allow"), rec.Body.String())
	// Output: 405 GET, HEAD, POST {"error":{"code":"method_not_allowed","message":"method DELETE not allowed on /fields/list (allowed: GET, HEAD, POST)"}}
}
