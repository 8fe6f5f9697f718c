package server

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cropkit/cropkit/webhook"
	"github.com/cropkit/cropkit/webhook/sqlstore"
)

// WebhookOptions configure the delivery of notifications (Config.Webhooks).
// Zero fields take the webhook package's defaults.
type WebhookOptions struct {
	// AllowPrivate lets webhooks reach loopback, private, link-local and
	// cloud-metadata addresses, at registration and at connect time: for
	// tests and private deployments only (cropkit serve --webhook-allow-private).
	AllowPrivate bool
	// Timeout bounds one delivery attempt; 0 means webhook.DefaultTimeout (15 s).
	Timeout time.Duration
	// RetryBase is the first retry delay, the rest of the schedule scaled
	// alike (webhook.ScaledSchedule); 0 means the default schedule (5 s, 5 min, …).
	RetryBase time.Duration
	// Concurrency bounds the attempts in flight; 0 means webhook.DefaultConcurrency.
	Concurrency int
	// PollInterval is the longest wait before notifications enqueued by
	// another process (cropkit ingest) are seen; 0 means webhook.DefaultPollInterval.
	PollInterval time.Duration
}

// webhooks is the server's notification machinery: registrations and the
// outbox in the server's SQLite database, and the dispatcher delivering it.
type webhooks struct {
	store        *sqlstore.Store
	dispatcher   *webhook.Dispatcher
	allowPrivate bool
	running      atomic.Bool
}

// maxDeliveriesListed bounds /notifications/deliveries.
const maxDeliveriesListed = 1000

func (s *Server) initWebhooks(opts WebhookOptions) error {
	if opts.Timeout < 0 || opts.RetryBase < 0 || opts.Concurrency < 0 || opts.PollInterval < 0 {
		return fmt.Errorf("server: negative webhook option in %+v", opts)
	}
	db := s.store.DB()
	if err := sqlstore.Migrate(context.Background(), db); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	st := sqlstore.New(db)
	d := &webhook.Dispatcher{
		Store:        st,
		Client:       webhook.NewClient(opts.AllowPrivate, opts.Timeout),
		Timeout:      opts.Timeout,
		Concurrency:  opts.Concurrency,
		PollInterval: opts.PollInterval,
		Logger:       s.log.With("component", "webhooks"),
	}
	if opts.RetryBase > 0 {
		d.Schedule = webhook.ScaledSchedule(opts.RetryBase)
	}
	s.hooks = &webhooks{store: st, dispatcher: d, allowPrivate: opts.AllowPrivate}
	return nil
}

// ErrWebhooksRunning is returned by RunWebhooks when it is already running.
var ErrWebhooksRunning = errors.New("server: webhook delivery already running")

// RunWebhooks delivers the webhook outbox until ctx is done, then lets the
// attempts in flight finish (each bounded by WebhookOptions.Timeout), and
// returns ctx's error. Notifications are enqueued whether it runs or not
// (durably, with the products): pending ones are delivered when it runs
// again, in this process or after a restart. A second concurrent call on
// the same Server returns ErrWebhooksRunning; dispatchers of two processes
// on one data directory share the outbox safely (each claim is atomic).
func (s *Server) RunWebhooks(ctx context.Context) error {
	if !s.hooks.running.CompareAndSwap(false, true) {
		return ErrWebhooksRunning
	}
	defer s.hooks.running.Store(false)
	return s.hooks.dispatcher.Run(ctx)
}

// notificationTx builds the §6 payload of a field's products of one
// ingestion: one update per usable product, its mean_variation against the
// field's previous usable image of that index (the download rule, read in tx).
func notificationTx(ctx context.Context, tx *sql.Tx, field Field, products []StoredProduct) (webhook.Payload, error) {
	p := webhook.Payload{Group: field.Group, Field: field.Name, Data: []webhook.Update{}}
	var usable []StoredProduct
	for _, sp := range products {
		if sp.Usable {
			usable = append(usable, sp)
		}
	}
	if len(usable) == 0 {
		return p, nil
	}
	// One scene has one date: one query finds every index's previous image.
	date := usable[0].Date
	rows, err := tx.QueryContext(ctx, `SELECT p.idx, p.date, p.mean FROM products p
		WHERE p.field_id = ? AND p.usable = 1 AND p.date = (
			SELECT max(q.date) FROM products q WHERE q.field_id = p.field_id AND q.idx = p.idx AND q.usable = 1 AND q.date < ?)`,
		field.ID, date)
	if err != nil {
		return p, fmt.Errorf("notify field %q: previous images: %w", field.Name, err)
	}
	prev := map[string]StoredProduct{}
	for rows.Next() {
		var sp StoredProduct
		if err := rows.Scan(&sp.Index, &sp.Date, &sp.Mean); err != nil {
			rows.Close()
			return p, fmt.Errorf("notify field %q: previous images: %w", field.Name, err)
		}
		prev[sp.Index] = sp
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return p, fmt.Errorf("notify field %q: previous images: %w", field.Name, err)
	}
	for _, sp := range usable {
		if sp.Date != date {
			return p, fmt.Errorf("notify field %q: products of dates %s and %s in one ingestion", field.Name, date, sp.Date)
		}
		acquired := sp.AcquiredAt
		if acquired.IsZero() { // products not from a scene in this process: the date at midnight
			day, err := time.Parse(DateLayout, sp.Date)
			if err != nil {
				return p, fmt.Errorf("notify field %q: product date %q: %w", field.Name, sp.Date, err)
			}
			acquired = day
		}
		q := imageRequest{field: field, index: sp.Index, chosen: sp}
		if pr, ok := prev[sp.Index]; ok {
			q.prev = &pr
		}
		p.Data = append(p.Data, webhook.Update{
			Index: sp.Index,
			Date:  webhook.FormatDate(acquired),
			Content: webhook.Content{
				Mean: sp.Mean, MeanVariation: q.meanVariation(), Median: sp.Median, Std: sp.Std,
				Min: sp.Min, Max: sp.Max, P25: sp.P25, P75: sp.P75,
			},
		})
	}
	return p, nil
}

// webhookRoutes are the §4.5 registration and the operations beyond the
// spec that list, delete and inspect the caller's webhooks.
func (s *Server) webhookRoutes() []route {
	return []route{
		{methods: postOnly, paths: []string{"/notifications/register_webhook"}, access: user, handle: s.handleWebhookRegister},
		{methods: readable, paths: []string{"/notifications/list"}, access: user, handle: s.handleWebhookList},
		{methods: postOnly, paths: []string{"/notifications/delete"}, access: user, handle: s.handleWebhookDelete},
		{methods: readable, paths: []string{"/notifications/deliveries"}, access: user, handle: s.handleWebhookDeliveries},
	}
}

// webhookRegistered is the §2.7 registration result, plus the registration's
// id and, when it was created now, its signing secret (shown once).
type webhookRegistered struct {
	Message  string `json:"message"`
	Username string `json:"username"`
	ID       int64  `json:"id"`
	URL      string `json:"url"`
	Created  bool   `json:"created"`
	Secret   string `json:"secret,omitempty"`
}

func (s *Server) handleWebhookRegister(w http.ResponseWriter, r *http.Request, c *call) error {
	raw, err := c.params.required("url")
	if err != nil {
		return err
	}
	raw = strings.TrimSpace(raw)
	if err := webhook.ValidateURL(raw, s.hooks.allowPrivate); err != nil {
		return badRequest("url: %v", err)
	}
	reg, err := s.hooks.store.RegisterLimit(r.Context(), c.user.Name, raw, s.limits.WebhooksPerUser)
	if errors.Is(err, sqlstore.ErrLimit) {
		return badRequest("webhook limit reached: at most %d URLs per account (delete one first)", s.limits.WebhooksPerUser)
	}
	if err != nil {
		return err
	}
	out := webhookRegistered{Username: c.user.Name, ID: reg.ID, URL: reg.URL, Created: reg.Created, Secret: reg.Secret}
	if reg.Created {
		out.Message = fmt.Sprintf("webhook %s registered; keep its secret, it is shown only once", reg.URL)
	} else {
		out.Message = fmt.Sprintf("webhook %s already registered (its secret was shown when it was created)", reg.URL)
	}
	return writeJSON(w, http.StatusOK, out)
}

type webhookList struct {
	Webhooks []sqlstore.Registration `json:"webhooks"`
}

func (s *Server) handleWebhookList(w http.ResponseWriter, r *http.Request, c *call) error {
	regs, err := s.hooks.store.List(r.Context(), c.user.Name)
	if err != nil {
		return err
	}
	if regs == nil {
		regs = []sqlstore.Registration{}
	}
	return writeJSON(w, http.StatusOK, webhookList{Webhooks: regs})
}

// handleWebhookDelete deletes one of the caller's registrations by id or url
// (another user's answers 404 like a missing one) and cancels its pending
// deliveries.
func (s *Server) handleWebhookDelete(w http.ResponseWriter, r *http.Request, c *call) error {
	rawID, hasID, err := c.params.str("id")
	if err != nil {
		return err
	}
	rawURL, hasURL, err := c.params.str("url")
	if err != nil {
		return err
	}
	rawID, rawURL = strings.TrimSpace(rawID), strings.TrimSpace(rawURL)
	var what string
	switch {
	case hasID && rawID != "":
		id, perr := strconv.ParseInt(rawID, 10, 64)
		if perr != nil || id <= 0 {
			return badRequest("parameter id must be a positive integer, got %q", rawID)
		}
		what = "webhook " + rawID
		err = s.hooks.store.Delete(r.Context(), c.user.Name, id)
	case hasURL && rawURL != "":
		what = "webhook " + rawURL
		err = s.hooks.store.DeleteURL(r.Context(), c.user.Name, rawURL)
	default:
		return badRequest("missing required parameter id or url")
	}
	if errors.Is(err, sqlstore.ErrNotFound) {
		return notFound("%s not found", what)
	}
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]string{"message": what + " deleted; its pending notifications are cancelled"})
}

// deliveryState is one listed delivery with its payload.
type deliveryState struct {
	sqlstore.DeliveryState
	Payload json.RawMessage `json:"payload"`
}

type deliveryList struct {
	Deliveries []deliveryState `json:"deliveries"`
}

func (s *Server) handleWebhookDeliveries(w http.ResponseWriter, r *http.Request, c *call) error {
	limit := 100
	if v, ok, err := c.params.float("limit"); err != nil {
		return err
	} else if ok {
		if v != float64(int(v)) || v < 1 || v > maxDeliveriesListed {
			return badRequest("parameter limit must be an integer in 1..%d, got %v", maxDeliveriesListed, v)
		}
		limit = int(v)
	}
	states, err := s.hooks.store.Deliveries(r.Context(), c.user.Name, limit)
	if err != nil {
		return err
	}
	out := deliveryList{Deliveries: make([]deliveryState, len(states))}
	for i, st := range states {
		out.Deliveries[i] = deliveryState{DeliveryState: st, Payload: json.RawMessage(st.Payload)}
	}
	return writeJSON(w, http.StatusOK, out)
}
