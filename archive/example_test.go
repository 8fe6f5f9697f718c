package archive_test

import (
	"context"
	"fmt"
	"os"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/archive/backend"
)

// Ingestion stores the products of every registered field the scene covers.
func ExampleArchive_Ingest() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "cropkit-example")
	defer os.RemoveAll(dir)
	core, _ := backend.Open(ctx, dir, true, archive.Config{MinClear: 0.6})
	defer core.Close()
	res, err := core.Ingest(ctx, "../shared/data/s2/flanders-31UES/2019-06-20", archive.IngestOptions{})
	if err != nil {
		fmt.Println("ingest:", err)
		return
	}
	fmt.Printf("%s: %d fields, %d usable images\n", res.Date, res.Fields, res.Usable)
}

// Field names have one spelling: trimmed and in Unicode NFC, so every
// spelling below names the same field.
func ExampleFieldName() {
	for _, name := range []string{"UDS-01", " UDS-01\t", "cafe\u0301", "caf\u00e9 "} {
		fmt.Printf("%q\n", archive.FieldName(name))
	}
	// Output:
	// "UDS-01"
	// "UDS-01"
	// "café"
	// "café"
}
