// Command webhook-receiver is a small endpoint for cropkit notifications: it
// verifies each request's Standard Webhooks signature with the secret shown
// at registration, drops repeated webhook-ids, and prints the payload.
//
//	webhook-receiver -addr :8080 -secret whsec_…   (or CROPKIT_WEBHOOK_SECRET)
//
// Register it with POST /notifications/register_webhook?token=…&url=http://host:8080/
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/cropkit/cropkit/webhook"
)

// maxBody bounds a notification body; cropkit payloads are a few kB.
const maxBody = 1 << 20

// maxSeen bounds the remembered webhook-ids.
const maxSeen = 10000

// receiver verifies and prints notifications.
type receiver struct {
	secret string
	out    io.Writer
	opts   webhook.VerifyOptions

	mu    sync.Mutex
	seen  map[string]bool
	order []string
}

func newReceiver(secret string, out io.Writer) *receiver {
	return &receiver{secret: secret, out: out, seen: map[string]bool{}}
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		http.Error(w, "read body: "+err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	// Verify the exact bytes received, before parsing them.
	if err := webhook.Verify(rc.secret, r.Header, body, rc.opts); err != nil {
		status := http.StatusUnauthorized
		if errors.Is(err, webhook.ErrMissingHeaders) || errors.Is(err, webhook.ErrInvalidHeaders) {
			status = http.StatusBadRequest
		}
		http.Error(w, err.Error(), status)
		return
	}
	var p webhook.Payload
	if err := json.Unmarshal(body, &p); err != nil {
		http.Error(w, "decode payload: "+err.Error(), http.StatusBadRequest)
		return
	}
	id := r.Header.Get(webhook.HeaderID)
	if rc.firstTime(id) {
		pretty, _ := json.MarshalIndent(p, "", "  ")
		fmt.Fprintf(rc.out, "%s %s field=%q group=%q\n%s\n", time.Now().UTC().Format(time.RFC3339), id, p.Field, p.Group, pretty)
	}
	// A duplicate (our earlier answer was lost) is acknowledged again.
	w.WriteHeader(http.StatusNoContent)
}

// firstTime records id and reports whether it was new.
func (rc *receiver) firstTime(id string) bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.seen[id] {
		return false
	}
	rc.seen[id] = true
	rc.order = append(rc.order, id)
	if len(rc.order) > maxSeen {
		delete(rc.seen, rc.order[0])
		rc.order = rc.order[1:]
	}
	return true
}

func main() {
	addr := flag.String("addr", ":8080", "listen address")
	secret := flag.String("secret", os.Getenv("CROPKIT_WEBHOOK_SECRET"), "signing secret (whsec_…) shown at registration; default $CROPKIT_WEBHOOK_SECRET")
	flag.Parse()
	if *secret == "" {
		fmt.Fprintln(os.Stderr, "webhook-receiver: -secret or CROPKIT_WEBHOOK_SECRET is required")
		os.Exit(2)
	}
	if _, err := webhook.Sign(*secret, "msg_check", time.Now(), nil); err != nil {
		fmt.Fprintln(os.Stderr, "webhook-receiver:", err)
		os.Exit(2)
	}
	srv := &http.Server{Addr: *addr, Handler: newReceiver(*secret, os.Stdout), ReadHeaderTimeout: 10 * time.Second}
	log.Printf("webhook-receiver listening on %s", *addr)
	log.Fatal(srv.ListenAndServe())
}
