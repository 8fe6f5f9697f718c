package geotiff_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/imagery/geotiff"
	"github.com/cropkit/cropkit/imagery/geotiff/geotifftest"
)

func ExampleOpenFile() {
	f, err := geotiff.OpenFile("testdata/u16_tiled_deflate_pred2.tif")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	g := f.Grid()
	nodata, _ := f.NoData()
	fmt.Printf("EPSG:%d %dx%d %v nodata=%v acquired %s\n", g.EPSG, g.Cols, g.Rows, f.Type(), nodata,
		f.Metadata()["ACQUISITION_DATETIME_UTC"])

	r, err := f.ReadWindow(context.Background(), geo.Window{Col: 10, Row: 20, Cols: 3, Rows: 2})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(r.Window, r.U16)
	// Output:
	// EPSG:32631 60x45 uint16 nodata=0 acquired 2019-06-20T10:57:03Z
	// 3x2+10+20 [7839 8697 8775 8450 8671 9100]
}

func ExampleNewHTTPReaderAt() {
	// A 10980×10980 Sentinel-2-sized COG behind an HTTP server with Range support.
	var cog bytes.Buffer
	g := geo.Grid{EPSG: 32631, X0: 499980, Y0: 5700000, DX: 10, DY: 10, Cols: 10980, Rows: 10980}
	if err := geotifftest.WriteRepeatedCOG(&cog, g, 512, func(col, row int) uint16 { return uint16(col + row) }); err != nil {
		log.Fatal(err)
	}
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.ServeContent(w, r, "B04.tif", time.Time{}, bytes.NewReader(cog.Bytes()))
	}))
	defer srv.Close()

	ctx := context.Background()
	src, err := geotiff.NewHTTPReaderAt(ctx, srv.Client(), srv.URL+"/B04.tif")
	if err != nil {
		log.Fatal(err)
	}
	f, err := geotiff.Open(src)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("requests to open:", requests.Load())

	// A 100 ha field inside one tile costs one more request.
	r, err := f.ReadWindow(ctx, geo.Window{Col: 1030, Row: 1030, Cols: 100, Rows: 100})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("requests after reading the field:", requests.Load(), "first pixel:", r.At(0))
	fmt.Println("overviews:", len(f.Overviews()))
	// Output:
	// requests to open: 1
	// requests after reading the field: 2 first pixel: 12
	// overviews: 5
}

func ExampleWriteFloat32() {
	g := geo.Grid{EPSG: 32631, X0: 574680, Y0: 5622440, DX: 10, DY: 10, Cols: 3, Rows: 2}
	ndvi := []float32{0.1, 0.5, -9999, 0.8, 0.85, 0.9}
	var buf bytes.Buffer
	if err := geotiff.WriteFloat32(&buf, g, ndvi, -9999); err != nil {
		log.Fatal(err)
	}
	f, err := geotiff.Open(bytes.NewReader(buf.Bytes()))
	if err != nil {
		log.Fatal(err)
	}
	r, err := f.ReadWindow(context.Background(), f.Grid().Full())
	if err != nil {
		log.Fatal(err)
	}
	nodata, _ := f.NoData()
	fmt.Println(f.Grid() == g, r.F32, nodata)
	// Output: true [0.1 0.5 -9999 0.8 0.85 0.9] -9999
}
