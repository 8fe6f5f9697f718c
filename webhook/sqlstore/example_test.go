package sqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite"

	"github.com/cropkit/cropkit/webhook"
	"github.com/cropkit/cropkit/webhook/sqlstore"
)

// The whole flow: register a URL, enqueue a notification in the transaction
// that stores the products, and let the dispatcher deliver it.
func Example() {
	dir, _ := os.MkdirTemp("", "webhook-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "cropkit.db")+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_txlock=immediate")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	if err := sqlstore.Migrate(ctx, db); err != nil {
		fmt.Println(err)
		return
	}
	store := sqlstore.New(db)

	// The farm's receiver (on loopback here, hence allowPrivate below).
	var secret string
	got := make(chan string, 1)
	farm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := webhook.Verify(secret, r.Header, body, webhook.VerifyOptions{}); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		got <- string(body)
	}))
	defer farm.Close()

	if err := webhook.ValidateURL(farm.URL, true); err != nil {
		fmt.Println(err)
		return
	}
	reg, err := store.Register(ctx, "alice", farm.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	secret = reg.Secret // shown to the user once

	d := &webhook.Dispatcher{Store: store, Client: webhook.NewClient(true, 2*time.Second), Timeout: 2 * time.Second}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go d.Run(runCtx)

	tx, _ := db.BeginTx(ctx, nil)
	// … store the new products in tx …
	n, err := store.EnqueueTx(ctx, tx, "alice", webhook.Payload{Group: "flanders", Field: "field-12", Data: []webhook.Update{{
		Index: "ndvi", Date: "2019-06-20 10:56:29 GMT",
		Content: webhook.Content{Mean: 0.6, Median: 0.62, Std: 0.07, Min: 0.21, Max: 0.83, P25: 0.55, P75: 0.66},
	}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := tx.Commit(); err != nil {
		fmt.Println(err)
		return
	}
	d.Notify()
	fmt.Println("enqueued:", n)
	fmt.Println("received:", <-got)
	// Output:
	// enqueued: 1
	// received: {"group":"flanders","field":"field-12","data":[{"index":"ndvi","date":"2019-06-20 10:56:29 GMT","content":{"mean":0.6,"mean_variation":0,"previous_date":null,"median":0.62,"std":0.07,"min":0.21,"max":0.83,"p25":0.55,"p75":0.66}}]}
}
