package web_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/cropkit/cropkit/web"
)

// Mount the viewer beside an API: the page at "/", its assets under
// web.AssetPrefix; everything else is the API's.
func ExampleHandler() {
	api := http.NotFoundHandler() // the cropkit API (server.New) in a real program
	viewer := web.Handler()
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", viewer)
	mux.Handle("GET "+web.AssetPrefix, viewer)
	mux.Handle("/", api)

	for _, path := range []string{"/", "/app/app.js", "/app/colormaps.json"} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		fmt.Println(path, rec.Code, rec.Header().Get("Content-Type"), rec.Header().Get("Cache-Control"))
	}
	// Output:
	// / 200 text/html; charset=utf-8 no-cache
	// /app/app.js 200 text/javascript; charset=utf-8 no-cache
	// /app/colormaps.json 200 application/json no-cache
}
