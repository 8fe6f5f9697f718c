package server

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/cropkit/cropkit/api"
)

// maxDeliveriesListed bounds /notifications/deliveries.
const maxDeliveriesListed = 1000

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

func (s *Server) handleWebhookRegister(w http.ResponseWriter, r *http.Request, c *call) error {
	raw, err := c.params.required("url")
	if err != nil {
		return err
	}
	events, hasEvents, err := c.params.boolean("events")
	if err != nil {
		return err
	}
	reg, err := s.core.RegisterWebhook(r.Context(), c.user, raw)
	if err != nil {
		return err
	}
	out := api.WebhookRegistered{Username: c.user.Name, ID: reg.ID, URL: reg.URL, Created: reg.Created, Secret: reg.Secret}
	if hasEvents {
		if err := s.core.SetWebhookEvents(r.Context(), c.user, reg.ID, events); err != nil {
			return err
		}
		out.Events = &events
	}
	if reg.Created {
		out.Message = fmt.Sprintf("webhook %s registered; keep its secret, it is shown only once", reg.URL)
	} else {
		out.Message = fmt.Sprintf("webhook %s already registered (its secret was shown when it was created)", reg.URL)
	}
	return writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleWebhookList(w http.ResponseWriter, r *http.Request, c *call) error {
	regs, err := s.core.Webhooks(r.Context(), c.user)
	if err != nil {
		return err
	}
	out := api.WebhookList{Webhooks: make([]api.Webhook, len(regs))}
	for i, reg := range regs {
		out.Webhooks[i] = reg.API()
	}
	return writeJSON(w, http.StatusOK, out)
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
	var (
		what string
		id   int64
	)
	switch {
	case hasID && rawID != "":
		n, perr := strconv.ParseInt(rawID, 10, 64)
		if perr != nil || n <= 0 {
			return badRequest("parameter id must be a positive integer, got %q", rawID)
		}
		id, what = n, "webhook "+rawID
	case hasURL && rawURL != "":
		what = "webhook " + rawURL
	default:
		return badRequest("missing required parameter id or url")
	}
	if id > 0 && rawURL != "" {
		// Both keys given: they must name the same registration, else the
		// request is contradictory (deleting by id alone would silently
		// ignore the url).
		regs, err := s.core.Webhooks(r.Context(), c.user)
		if err != nil {
			return err
		}
		for _, reg := range regs {
			if reg.ID == id && reg.URL != rawURL {
				return badRequest("parameters id (%d) and url (%s) disagree: webhook %d has url %s", id, rawURL, id, reg.URL)
			}
		}
	}
	if err := s.core.DeleteWebhook(r.Context(), c.user, id, rawURL); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.Message{Message: what + " deleted; its pending notifications are cancelled"})
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
	states, err := s.core.Deliveries(r.Context(), c.user, limit)
	if err != nil {
		return err
	}
	out := api.WebhookDeliveries{Deliveries: make([]api.WebhookDelivery, len(states))}
	for i, st := range states {
		out.Deliveries[i] = st.API()
	}
	return writeJSON(w, http.StatusOK, out)
}
