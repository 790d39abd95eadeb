package rest

import (
	"net/http"
	"strconv"
	"time"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/webhooks"
)

// WebhookEndpoint is the REST record of a webhook endpoint, without its
// secret.
type WebhookEndpoint struct {
	ID          string   `json:"id"`
	URL         string   `json:"url"`
	Description string   `json:"description"`
	EventTypes  []string `json:"eventTypes"`
	Enabled     bool     `json:"enabled"`
	// DisabledReason says why a disabled endpoint is (an operator, 410,
	// five days of failures).
	DisabledAt     *time.Time `json:"disabledAt"`
	DisabledReason string     `json:"disabledReason,omitempty"`
	FailingSince   *time.Time `json:"failingSince"`
	// PreviousSecretExpiresAt: after a rotation, until when the previous
	// secret still signs.
	PreviousSecretExpiresAt *time.Time `json:"previousSecretExpiresAt"`
	CreatedAt               time.Time  `json:"createdAt"`
}

// NewWebhookEndpoint renders an endpoint (both doors show the same).
func NewWebhookEndpoint(e webhooks.Endpoint, now time.Time) WebhookEndpoint {
	out := WebhookEndpoint{ID: e.ID, URL: e.URL, Description: e.Description, EventTypes: e.EventTypes, Enabled: e.Enabled(),
		DisabledAt: seconds(e.DisabledAt), DisabledReason: e.DisabledReason, FailingSince: seconds(e.FailingSince),
		CreatedAt: e.CreatedAt.UTC().Truncate(time.Second)}
	if len(e.SigningSecrets(now)) > 1 {
		out.PreviousSecretExpiresAt = seconds(e.PreviousSecretUntil)
	}
	return out
}

// WebhookDelivery is one delivery attempt as REST shows it.
type WebhookDelivery struct {
	ID        string `json:"id"`
	EventID   string `json:"eventId"`
	EventType string `json:"eventType"`
	Attempt   int    `json:"attempt"`
	// StatusCode is null when no answer came (Error says why).
	StatusCode *int      `json:"statusCode"`
	DurationMs int64     `json:"durationMs"`
	Error      string    `json:"error,omitempty"`
	Success    bool      `json:"success"`
	CreatedAt  time.Time `json:"createdAt"`
}

// NewWebhookDelivery renders an attempt.
func NewWebhookDelivery(a webhooks.Attempt) WebhookDelivery {
	d := WebhookDelivery{ID: a.ID, EventID: a.EventID, EventType: a.EventType, Attempt: a.Attempt, DurationMs: a.Duration.Milliseconds(),
		Error: a.Error, Success: a.Succeeded(), CreatedAt: a.CreatedAt.UTC().Truncate(time.Second)}
	if a.StatusCode != 0 {
		code := a.StatusCode
		d.StatusCode = &code
	}
	return d
}

func (h *Handlers) now() time.Time { return time.Now().UTC() }

// CreateWebhook is POST /api/v1/webhooks: the secret is in the answer
// this once.
func (h *Handlers) CreateWebhook() http.HandlerFunc {
	type input struct {
		URL         string   `json:"url"`
		Description string   `json:"description"`
		EventTypes  []string `json:"eventTypes"`
	}
	return handle(http.StatusCreated, func(r *http.Request, in input) (any, error) {
		e, err := h.Webhooks.Create(r.Context(), webhooks.NewEndpoint{URL: in.URL, Description: in.Description, EventTypes: in.EventTypes})
		if err != nil {
			return nil, err
		}
		return map[string]any{"secret": e.Secret, "endpoint": NewWebhookEndpoint(e, h.now())}, nil
	})
}

// ListWebhooks is GET /api/v1/webhooks.
func (h *Handlers) ListWebhooks() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		list, err := h.Webhooks.List(r.Context())
		if err != nil {
			return nil, err
		}
		out := make([]WebhookEndpoint, 0, len(list))
		for _, e := range list {
			out = append(out, NewWebhookEndpoint(e, h.now()))
		}
		return out, nil
	})
}

// GetWebhook is GET /api/v1/webhooks/{id}.
func (h *Handlers) GetWebhook() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		e, err := h.Webhooks.Endpoint(r.Context(), r.PathValue("id"))
		if err != nil {
			return nil, err
		}
		return NewWebhookEndpoint(e, h.now()), nil
	})
}

// DeleteWebhook is DELETE /api/v1/webhooks/{id}.
func (h *Handlers) DeleteWebhook() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		id := r.PathValue("id")
		if err := h.Webhooks.Delete(r.Context(), id); err != nil {
			return nil, err
		}
		return map[string]any{"id": id, "deleted": true}, nil
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
		return map[string]any{"secret": e.Secret, "endpoint": NewWebhookEndpoint(e, h.now())}, nil
	})
}

// SetWebhookEnabled is POST /api/v1/webhooks/{id}/enable and /disable.
func (h *Handlers) SetWebhookEnabled(enabled bool) http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		e, err := h.Webhooks.SetEnabled(r.Context(), r.PathValue("id"), enabled)
		if err != nil {
			return nil, err
		}
		return NewWebhookEndpoint(e, h.now()), nil
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
		nodes := make([]WebhookDelivery, 0, len(page))
		for _, a := range page {
			nodes = append(nodes, NewWebhookDelivery(a))
		}
		var end *string
		if len(page) > 0 {
			end = &page[len(page)-1].ID
		}
		return map[string]any{"nodes": nodes, "pageInfo": map[string]any{"endCursor": end, "hasNextPage": more}}, nil
	})
}

// RedeliverWebhookEvent is POST /api/v1/webhooks/{id}/events/{eventId}/redeliver.
func (h *Handlers) RedeliverWebhookEvent() http.HandlerFunc {
	return handle(http.StatusAccepted, func(r *http.Request, _ noBody) (any, error) {
		eventID := r.PathValue("eventId")
		if err := h.Webhooks.Redeliver(r.Context(), r.PathValue("id"), eventID); err != nil {
			return nil, err
		}
		return map[string]any{"eventId": eventID, "queued": true}, nil
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
		return map[string]any{"eventId": ev.ID, "queued": true}, nil
	})
}
