package view

import (
	"time"

	"github.com/herald-vpn/herald/internal/webhooks"
)

// WebhookEndpoint is a receiver of signed webhook events, without its
// secret.
type WebhookEndpoint struct {
	ID          string   `json:"id"`
	URL         string   `json:"url"`
	Description string   `json:"description"`
	EventTypes  []string `json:"eventTypes"`
	Enabled     bool     `json:"enabled"`
	// DisabledReason says why a disabled endpoint is (an operator, 410,
	// five days of failures); REST leaves it out when there is none.
	DisabledAt     *time.Time `json:"disabledAt"`
	DisabledReason *string    `json:"disabledReason,omitempty"`
	FailingSince   *time.Time `json:"failingSince"`
	// PreviousSecretExpiresAt: after a rotation, until when the previous
	// secret still signs.
	PreviousSecretExpiresAt *time.Time `json:"previousSecretExpiresAt"`
	CreatedAt               time.Time  `json:"createdAt"`
}

// NewWebhookEndpoint renders e as of now.
func NewWebhookEndpoint(e webhooks.Endpoint, now time.Time) WebhookEndpoint {
	out := WebhookEndpoint{ID: e.ID, URL: e.URL, Description: e.Description, EventTypes: e.EventTypes, Enabled: e.Enabled(),
		DisabledAt: optionalSeconds(e.DisabledAt), DisabledReason: nonEmpty(e.DisabledReason), FailingSince: optionalSeconds(e.FailingSince),
		CreatedAt: seconds(e.CreatedAt)}
	if len(e.SigningSecrets(now)) > 1 {
		out.PreviousSecretExpiresAt = optionalSeconds(e.PreviousSecretUntil)
	}
	return out
}

// CreatedWebhookEndpoint is an endpoint with its signing secret, shown
// this once (at creation and at each rotation).
type CreatedWebhookEndpoint struct {
	Endpoint WebhookEndpoint `json:"endpoint"`
	Secret   string          `json:"secret"`
}

// WebhookDelivery is one delivery attempt of an event to an endpoint.
type WebhookDelivery struct {
	ID        string `json:"id"`
	EventID   string `json:"eventId"`
	EventType string `json:"eventType"`
	Attempt   int    `json:"attempt"`
	// StatusCode is nil when no answer came (Error says why).
	StatusCode *int `json:"statusCode"`
	DurationMs int  `json:"durationMs"`
	// Error is the class of a failure; REST leaves it out on success.
	Error     *string   `json:"error,omitempty"`
	Success   bool      `json:"success"`
	CreatedAt time.Time `json:"createdAt"`
}

// NewWebhookDelivery renders an attempt.
func NewWebhookDelivery(a webhooks.Attempt) WebhookDelivery {
	d := WebhookDelivery{ID: a.ID, EventID: a.EventID, EventType: a.EventType, Attempt: a.Attempt, DurationMs: int(a.Duration.Milliseconds()),
		Error: nonEmpty(a.Error), Success: a.Succeeded(), CreatedAt: seconds(a.CreatedAt)}
	if a.StatusCode != 0 {
		code := a.StatusCode
		d.StatusCode = &code
	}
	return d
}

// WebhookDeleted answers the deletion of an endpoint.
type WebhookDeleted struct {
	Deleted bool   `json:"deleted"`
	ID      string `json:"id"`
}

// EventQueued answers a ping or a redelivery: the event queued for the
// endpoint.
type EventQueued struct {
	EventID string `json:"eventId"`
	Queued  bool   `json:"queued"`
}
