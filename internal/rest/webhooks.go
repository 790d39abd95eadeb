package rest

import (
	"net/http"
	"strconv"
	"time"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/view"
	"github.com/herald-vpn/herald/internal/webhooks"
)

func (h *Handlers) endpoint(e webhooks.Endpoint) view.WebhookEndpoint {
	return view.NewWebhookEndpoint(e, h.now())
}

func (h *Handlers) now() time.Time { return time.Now().UTC() }

// createWebhookBody is the body of CreateWebhook.
type createWebhookBody struct {
	URL         string   `json:"url"`
	Description string   `json:"description"`
	EventTypes  []string `json:"eventTypes"`
}

// CreateWebhook is POST /api/v1/webhooks: the secret is in the answer
// this once.
func (h *Handlers) CreateWebhook() http.HandlerFunc {
	return handle(http.StatusCreated, func(r *http.Request, in createWebhookBody) (any, error) {
		e, err := h.Webhooks.Create(r.Context(), webhooks.NewEndpoint{URL: in.URL, Description: in.Description, EventTypes: in.EventTypes})
		if err != nil {
			return nil, err
		}
		return view.CreatedWebhookEndpoint{Secret: e.Secret, Endpoint: h.endpoint(e)}, nil
	})
}

// ListWebhooks is GET /api/v1/webhooks.
func (h *Handlers) ListWebhooks() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		list, err := h.Webhooks.List(r.Context())
		if err != nil {
			return nil, err
		}
		return view.All(list, h.endpoint), nil
	})
}

// GetWebhook is GET /api/v1/webhooks/{id}.
func (h *Handlers) GetWebhook() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		e, err := h.Webhooks.Endpoint(r.Context(), r.PathValue("id"))
		if err != nil {
			return nil, err
		}
		return h.endpoint(e), nil
	})
}

// DeleteWebhook is DELETE /api/v1/webhooks/{id}.
func (h *Handlers) DeleteWebhook() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		id := r.PathValue("id")
		if err := h.Webhooks.Delete(r.Context(), id); err != nil {
			return nil, err
		}
		return view.WebhookDeleted{ID: id, Deleted: true}, nil
	})
}

// RotateWebhookSecret is POST /api/v1/webhooks/{id}/rotate-secret: the
// new secret is in the answer this once.
func (h *Handlers) RotateWebhookSecret() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		e, err := h.Webhooks.RotateSecret(r.Context(), r.PathValue("id"))
		if err != nil {
			return nil, err
		}
		return view.CreatedWebhookEndpoint{Secret: e.Secret, Endpoint: h.endpoint(e)}, nil
	})
}

// SetWebhookEnabled is POST /api/v1/webhooks/{id}/enable and /disable.
func (h *Handlers) SetWebhookEnabled(enabled bool) http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		e, err := h.Webhooks.SetEnabled(r.Context(), r.PathValue("id"), enabled)
		if err != nil {
			return nil, err
		}
		return h.endpoint(e), nil
	})
}

// WebhookDeliveries is GET /api/v1/webhooks/{id}/deliveries?first=&after=.
func (h *Handlers) WebhookDeliveries() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		first := 0
		if v := r.URL.Query().Get("first"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil, apperr.Invalid("first", "a whole number between 1 and 100", v)
			}
			first = n
		}
		page, more, err := h.Webhooks.Deliveries(r.Context(), r.PathValue("id"), first, r.URL.Query().Get("after"))
		if err != nil {
			return nil, err
		}
		end := ""
		if len(page) > 0 {
			end = page[len(page)-1].ID
		}
		return view.NewPage(page, view.NewWebhookDelivery, end, more), nil
	})
}

// RedeliverWebhookEvent is POST /api/v1/webhooks/{id}/events/{eventId}/redeliver.
func (h *Handlers) RedeliverWebhookEvent() http.HandlerFunc {
	return handle(http.StatusAccepted, func(r *http.Request, _ noBody) (any, error) {
		eventID := r.PathValue("eventId")
		if err := h.Webhooks.Redeliver(r.Context(), r.PathValue("id"), eventID); err != nil {
			return nil, err
		}
		return view.EventQueued{EventID: eventID, Queued: true}, nil
	})
}

// PingWebhook is POST /api/v1/webhooks/{id}/ping: a webhook.ping event to
// this endpoint.
func (h *Handlers) PingWebhook() http.HandlerFunc {
	return handle(http.StatusAccepted, func(r *http.Request, _ noBody) (any, error) {
		ev, err := h.Webhooks.Ping(r.Context(), r.PathValue("id"))
		if err != nil {
			return nil, err
		}
		return view.EventQueued{EventID: ev.ID, Queued: true}, nil
	})
}
