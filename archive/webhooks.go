package archive

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cropkit/cropkit/webhook"
)

// WebhookOptions configure the delivery of notifications. Zero fields take
// the webhook package's defaults.
type WebhookOptions struct {
	// AllowPrivate lets webhooks reach loopback, private, link-local and
	// cloud-metadata addresses, at registration and at connect time: for
	// tests and private deployments only.
	AllowPrivate bool
	// Timeout bounds one delivery attempt; 0 means webhook.DefaultTimeout.
	Timeout time.Duration
	// RetryBase is the first retry delay, the rest of the schedule scaled
	// alike (webhook.ScaledSchedule); 0 means the default schedule.
	RetryBase time.Duration
	// Concurrency bounds the attempts in flight; 0 means webhook.DefaultConcurrency.
	Concurrency int
	// PollInterval is the longest wait before notifications enqueued by
	// another process are seen; 0 means webhook.DefaultPollInterval.
	PollInterval time.Duration
	// Observe, when set, is told the outcome of every delivery attempt:
	// "delivered" (2xx), "rejected" (another status) or "error" (no answer).
	Observe func(outcome string)
}

type webhooks struct {
	outbox       Outbox
	dispatcher   *webhook.Dispatcher
	allowPrivate bool
	running      atomic.Bool
}

func (a *Archive) initWebhooks(opts WebhookOptions) error {
	if opts.Timeout < 0 || opts.RetryBase < 0 || opts.Concurrency < 0 || opts.PollInterval < 0 {
		return fmt.Errorf("archive: negative webhook option in %+v", opts)
	}
	ob := a.store.Webhooks()
	d := &webhook.Dispatcher{
		Store:        ob,
		Client:       webhook.NewClient(opts.AllowPrivate, opts.Timeout),
		Timeout:      opts.Timeout,
		Concurrency:  opts.Concurrency,
		PollInterval: opts.PollInterval,
		Logger:       a.log.With("component", "webhooks"),
	}
	if opts.RetryBase > 0 {
		d.Schedule = webhook.ScaledSchedule(opts.RetryBase)
	}
	if opts.Observe != nil {
		d.Client.Transport = observedTransport{base: d.Client.Transport, observe: opts.Observe}
	}
	a.hooks = &webhooks{outbox: ob, dispatcher: d, allowPrivate: opts.AllowPrivate}
	return nil
}

// ErrWebhooksRunning is returned by RunWebhooks when it is already running.
var ErrWebhooksRunning = errors.New("archive: webhook delivery already running")

// RunWebhooks delivers the webhook outbox until ctx is done, then lets the
// attempts in flight finish and returns ctx's error. Notifications are
// enqueued whether it runs or not (durably, with the products). A second
// concurrent call returns ErrWebhooksRunning; dispatchers of two processes
// share the outbox safely (each claim is atomic).
func (a *Archive) RunWebhooks(ctx context.Context) error {
	if !a.hooks.running.CompareAndSwap(false, true) {
		return ErrWebhooksRunning
	}
	defer a.hooks.running.Store(false)
	return a.hooks.dispatcher.Run(ctx)
}

// RegisterWebhook registers url for u (idempotent per URL; re-enables a
// disabled one); the secret is set only when it was created now.
func (a *Archive) RegisterWebhook(ctx context.Context, u User, rawURL string) (webhook.Registration, error) {
	rawURL = strings.TrimSpace(rawURL)
	if err := webhook.ValidateURL(rawURL, a.hooks.allowPrivate); err != nil {
		return webhook.Registration{}, Invalid("url: %v", err)
	}
	reg, err := a.hooks.outbox.RegisterLimit(ctx, u.Name, rawURL, a.limits.WebhooksPerUser)
	if errors.Is(err, webhook.ErrRegistrationLimit) {
		return reg, errorf(ErrQuota, "webhook limit reached: at most %d URLs per account (delete one first)", a.limits.WebhooksPerUser)
	}
	return reg, err
}

// Webhooks lists u's registrations (no secrets).
func (a *Archive) Webhooks(ctx context.Context, u User) ([]webhook.Registration, error) {
	regs, err := a.hooks.outbox.List(ctx, u.Name)
	if regs == nil {
		regs = []webhook.Registration{}
	}
	return regs, err
}

// DeleteWebhook deletes u's registration by id (id > 0) or URL and cancels
// its pending deliveries; another user's answers ErrNotFound.
func (a *Archive) DeleteWebhook(ctx context.Context, u User, id int64, rawURL string) error {
	var err error
	what := fmt.Sprintf("webhook %d", id)
	if id > 0 {
		err = a.hooks.outbox.Delete(ctx, u.Name, id)
	} else {
		what = "webhook " + rawURL
		err = a.hooks.outbox.DeleteURL(ctx, u.Name, rawURL)
	}
	if errors.Is(err, webhook.ErrRegistrationNotFound) {
		return NotFound("%s not found", what)
	}
	return err
}

// Deliveries lists u's most recent notifications with their attempts.
func (a *Archive) Deliveries(ctx context.Context, u User, limit int) ([]webhook.DeliveryState, error) {
	return a.hooks.outbox.Deliveries(ctx, u.Name, limit)
}

// Notification builds the §6 payload of a field's changed products of one
// date: one update per product, its mean_variation against the previous
// usable image of that index (the download rule).
func Notification(f Field, changed []Product, prev map[string]Product) webhook.Payload {
	p := webhook.Payload{Group: f.Group, Field: f.Name, Data: []webhook.Update{}}
	for _, sp := range changed {
		acquired := sp.AcquiredAt
		if acquired.IsZero() { // the date at midnight
			acquired, _ = time.Parse(time.DateOnly, sp.Date)
		}
		var before *Product
		if pr, ok := prev[sp.Index]; ok {
			before = &pr
		}
		mv, prevDate := meanVariation(sp, before)
		p.Data = append(p.Data, webhook.Update{
			Index:  sp.Index,
			Date:   webhook.FormatDate(acquired),
			Sensor: cmp.Or(sp.Sensor, familyOrDefault(sp.Family)),
			Content: webhook.Content{
				Mean: sp.Mean, MeanVariation: mv, PreviousDate: prevDate, Median: sp.Median, Std: sp.Std,
				Min: sp.Min, Max: sp.Max, P25: sp.P25, P75: sp.P75,
			},
		})
	}
	return p
}

// DeliveringWebhooks reports whether RunWebhooks is running.
func (a *Archive) DeliveringWebhooks() bool { return a.hooks.running.Load() }

// The webhook records the archive lists (package webhook's).
type (
	// WebhookRegistration is one URL registered by an account.
	WebhookRegistration = webhook.Registration
	// WebhookDelivery is one delivery as listed to its owner, with every attempt.
	WebhookDelivery = webhook.DeliveryState
)
