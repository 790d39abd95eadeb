package webhooks

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/storage"
)

// Endpoint is a receiver of events.
type Endpoint struct {
	ID          string
	URL         string
	Description string
	EventTypes  []string
	// Secret signs every delivery; PreviousSecret signs too until
	// PreviousSecretUntil, after a rotation.
	Secret              string
	PreviousSecret      string
	PreviousSecretUntil *time.Time
	DisabledAt          *time.Time
	DisabledReason      string
	// FailingSince is the first failed attempt since the last success.
	FailingSince *time.Time
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// Wants reports whether the endpoint subscribes to event type t.
func (e Endpoint) Wants(t string) bool { return slices.Contains(e.EventTypes, t) }

// Enabled reports whether the endpoint receives deliveries.
func (e Endpoint) Enabled() bool { return e.DisabledAt == nil }

// SigningSecrets are the secrets that sign a delivery at now.
func (e Endpoint) SigningSecrets(now time.Time) []string {
	if e.PreviousSecret != "" && e.PreviousSecretUntil != nil && now.Before(*e.PreviousSecretUntil) {
		return []string{e.Secret, e.PreviousSecret}
	}
	return []string{e.Secret}
}

// Attempt is one delivery attempt of an event to an endpoint.
type Attempt struct {
	ID         string
	EndpointID string
	EventID    string
	EventType  string
	Attempt    int
	// StatusCode is the receiver's answer; 0 when there was none.
	StatusCode int
	Duration   time.Duration
	// Error is the class of a failure (ErrorTimeout, ErrorUnreachable,
	// ErrorTLS, ErrorHTTPStatus); empty for a success.
	Error     string
	CreatedAt time.Time
}

// Received reports whether ev was sent to the endpoint when it was
// written: the endpoint subscribes to its type and existed then. A ping
// is for the one endpoint it names.
func (e Endpoint) Received(ev Event) bool {
	if ev.Type == Ping {
		return pingEndpoint(ev.Payload) == e.ID
	}
	return e.Wants(ev.Type) && !e.CreatedAt.After(ev.CreatedAt)
}

// Succeeded reports whether the attempt got a 2xx.
func (a Attempt) Succeeded() bool { return a.StatusCode >= 200 && a.StatusCode < 300 }

// Store is the persistence of webhooks; sqlstore implements it. Each
// method returns storage.ErrNotFound for an unknown endpoint or event.
type Store interface {
	CreateWebhookEndpoint(ctx context.Context, e Endpoint) error
	WebhookEndpoint(ctx context.Context, id string) (Endpoint, error)
	ListWebhookEndpoints(ctx context.Context) ([]Endpoint, error)
	DeleteWebhookEndpoint(ctx context.Context, id string) error
	// RotateWebhookSecret makes secret current and the old one previous
	// until previousUntil.
	RotateWebhookSecret(ctx context.Context, id, secret string, previousUntil time.Time) (Endpoint, error)
	// SetWebhookEndpointDisabled disables (with a reason) or enables the
	// endpoint; enabling forgets FailingSince.
	SetWebhookEndpointDisabled(ctx context.Context, id string, disabled bool, reason string) (Endpoint, error)
	WebhookEvent(ctx context.Context, id string) (Event, error)
	// WebhookAttempts lists an endpoint's attempts, newest first, those
	// before the attempt id beforeID ("" from the newest).
	WebhookAttempts(ctx context.Context, endpointID, beforeID string, limit int) ([]Attempt, error)
	// RecordWebhookAttempt stores an attempt, moves the endpoint's
	// FailingSince (cleared by a success, set by a first failure) and its
	// breaker (rules.After), and releases the slot of the job jobID as
	// ReleaseWebhookSlot does, in one transaction; it returns FailingSince
	// after the attempt.
	RecordWebhookAttempt(ctx context.Context, a Attempt, jobID int64, rules Slots) (*time.Time, error)
	// AcquireWebhookSlot gives the delivery a slot of its endpoint (true)
	// when rules allow one more in flight (or the job already holds one),
	// or parks it (false). A delivery whose event is gone is not parked
	// (false); ErrNotFound: no such enabled endpoint.
	AcquireWebhookSlot(ctx context.Context, r SlotRequest, rules Slots) (bool, error)
	// ReleaseWebhookSlot frees the job's slot and hands each slot free
	// under rules to the oldest parked delivery, as a new job; when the
	// breaker is open and nothing holds a slot, the oldest parked
	// delivery is scheduled for when it half-opens.
	ReleaseWebhookSlot(ctx context.Context, endpointID string, jobID int64, rules Slots) error
	// EnqueueWebhookDelivery inserts a delivery job of an existing event
	// to an existing endpoint.
	EnqueueWebhookDelivery(ctx context.Context, endpointID, eventID string) error
	// SendWebhookEvent writes ev and its delivery job to this one
	// endpoint, in one transaction.
	SendWebhookEvent(ctx context.Context, endpointID string, ev Event) error
}

// Config configures the service.
type Config struct {
	// AllowInsecure admits http:// endpoints (HERALD_WEBHOOKS_ALLOW_INSECURE).
	AllowInsecure bool
	// AllowPrivate admits endpoints on any address but a zoned one, and
	// any port (HERALD_WEBHOOKS_ALLOW_PRIVATE).
	AllowPrivate bool
	// AllowedPorts are ports allowed beside 443 (and 80 with
	// AllowInsecure) (HERALD_WEBHOOKS_ALLOWED_PORTS).
	AllowedPorts []uint16
	// Concurrency is the most deliveries in flight to one endpoint
	// (HERALD_WEBHOOKS_ENDPOINT_CONCURRENCY). Default DefaultConcurrency.
	Concurrency int
	// Schedule is the wait before each retry; its length is the number of
	// retries (HERALD_WEBHOOKS_RETRY_SCHEDULE). Default DefaultSchedule.
	Schedule []time.Duration
	// DisableAfter disables an endpoint that has failed every attempt for
	// this long. Default 5 days.
	DisableAfter time.Duration
	// RotationOverlap is how long the previous secret still signs after a
	// rotation. Default 24 h.
	RotationOverlap time.Duration
	// Resolver resolves endpoint hosts at registration (net.DefaultResolver).
	Resolver Resolver
	Logger   *slog.Logger
	Now      func() time.Time
	// Outcome, when set, is told each attempt's outcome (metrics).
	Outcome func(outcome string)
}

// DefaultSchedule spreads retries over about three days.
var DefaultSchedule = []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}

// Delivery outcomes, the outcome label of herald_webhook_deliveries_total.
const (
	OutcomeSuccess  = "success"
	OutcomeRetry    = "retry"    // failed, will be tried again
	OutcomeFailed   = "failed"   // failed, the last attempt
	OutcomeDisabled = "disabled" // failed, and the endpoint is now disabled
)

// Limits of what an endpoint may be created with.
const (
	MaxDescription = 500
	MaxPageSize    = 100
	// DefaultPageSize is a deliveries page when first is not given.
	DefaultPageSize = 20
)

// Service is the webhook rules over a store.
type Service struct {
	store  Store
	sender Sender
	cfg    Config
	policy AddressPolicy
	slots  Slots
}

// NewService returns the service; sender delivers (it may be nil for the
// operator commands, which never deliver).
func NewService(store Store, sender Sender, cfg Config) *Service {
	if cfg.Schedule == nil {
		cfg.Schedule = DefaultSchedule
	}
	if cfg.DisableAfter <= 0 {
		cfg.DisableAfter = 5 * 24 * time.Hour
	}
	if cfg.RotationOverlap <= 0 {
		cfg.RotationOverlap = 24 * time.Hour
	}
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return time.Now().UTC() }
	}
	if cfg.Outcome == nil {
		cfg.Outcome = func(string) {}
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	return &Service{store: store, sender: sender, cfg: cfg,
		policy: AddressPolicy{AllowPrivate: cfg.AllowPrivate, AllowInsecure: cfg.AllowInsecure, Ports: cfg.AllowedPorts},
		slots: Slots{Concurrency: cfg.Concurrency, Threshold: BreakerThreshold, Cooldowns: cfg.Schedule,
			LeaseTTL: AttemptBound, ReserveTTL: 2 * AttemptBound},
	}
}

// Slots are the service's rules of deliveries in flight.
func (s *Service) Slots() Slots { return s.slots }

// NewEndpoint is what an operator registers.
type NewEndpoint struct {
	URL         string
	Description string
	EventTypes  []string
}

// notFound maps a store's ErrNotFound to WEBHOOK_NOT_FOUND.
func notFound(err error) error {
	if errors.Is(err, storage.ErrNotFound) {
		return apperr.New(apperr.WebhookNotFound)
	}
	return err
}

// checkURL validates the URL, its port and where its host resolves.
func (s *Service) checkURL(ctx context.Context, raw string) error {
	return s.policy.CheckURL(ctx, s.cfg.Resolver, raw)
}

// Create registers an endpoint and returns it with its secret, which is
// shown this once.
func (s *Service) Create(ctx context.Context, n NewEndpoint) (Endpoint, error) {
	if err := s.checkURL(ctx, n.URL); err != nil {
		return Endpoint{}, err
	}
	if !utf8.ValidString(n.Description) || utf8.RuneCountInString(n.Description) > MaxDescription {
		return Endpoint{}, apperr.Invalid("description", "at most 500 characters", "a longer text")
	}
	if len(n.EventTypes) == 0 {
		return Endpoint{}, apperr.Invalid("eventTypes", "at least one event type", "none")
	}
	var types []string
	for _, t := range n.EventTypes {
		if !Known(t) {
			return Endpoint{}, apperr.Invalid("eventTypes", "event types of the catalogue", t)
		}
		if !slices.Contains(types, t) {
			types = append(types, t)
		}
	}
	id, err := uuid.NewV7()
	if err != nil {
		return Endpoint{}, err
	}
	secret, err := NewSecret()
	if err != nil {
		return Endpoint{}, err
	}
	now := s.cfg.Now().UTC()
	e := Endpoint{ID: "ep_" + id.String(), URL: n.URL, Description: n.Description, EventTypes: types, Secret: secret, CreatedAt: now, UpdatedAt: now}
	if err := s.store.CreateWebhookEndpoint(ctx, e); err != nil {
		return Endpoint{}, err
	}
	return e, nil
}

// Endpoint returns one endpoint.
func (s *Service) Endpoint(ctx context.Context, id string) (Endpoint, error) {
	e, err := s.store.WebhookEndpoint(ctx, id)
	return e, notFound(err)
}

// List returns every endpoint, oldest first.
func (s *Service) List(ctx context.Context) ([]Endpoint, error) {
	return s.store.ListWebhookEndpoints(ctx)
}

// Delete removes an endpoint; its pending deliveries are dropped.
func (s *Service) Delete(ctx context.Context, id string) error {
	return notFound(s.store.DeleteWebhookEndpoint(ctx, id))
}

// RotateSecret gives the endpoint a new secret, returned this once; the
// old one goes on signing beside it for RotationOverlap.
func (s *Service) RotateSecret(ctx context.Context, id string) (Endpoint, error) {
	secret, err := NewSecret()
	if err != nil {
		return Endpoint{}, err
	}
	e, err := s.store.RotateWebhookSecret(ctx, id, secret, s.cfg.Now().Add(s.cfg.RotationOverlap))
	return e, notFound(err)
}

// SetEnabled enables or disables an endpoint.
func (s *Service) SetEnabled(ctx context.Context, id string, enabled bool) (Endpoint, error) {
	e, err := s.store.SetWebhookEndpointDisabled(ctx, id, !enabled, "disabled by an operator")
	return e, notFound(err)
}

// Deliveries is a page of an endpoint's attempts, newest first, after the
// cursor (an attempt id); more reports whether another page follows.
func (s *Service) Deliveries(ctx context.Context, endpointID string, first int, after string) (page []Attempt, more bool, err error) {
	if first == 0 {
		first = DefaultPageSize
	}
	if first < 0 || first > MaxPageSize {
		return nil, false, apperr.Invalid("first", "between 1 and 100", "out of range")
	}
	if _, err := s.Endpoint(ctx, endpointID); err != nil {
		return nil, false, err
	}
	list, err := s.store.WebhookAttempts(ctx, endpointID, after, first+1)
	if err != nil {
		return nil, false, err
	}
	if len(list) > first {
		return list[:first], true, nil
	}
	return list, false, nil
}

// Redeliver sends an event to an endpoint again, as a new delivery with
// its own retries. The event keeps its webhook-id. Only an endpoint the
// event was sent to may have it again (Endpoint.Received): another is
// WEBHOOK_EVENT_NOT_SUBSCRIBED, so an event cannot reach a receiver that
// never subscribed to what it says.
func (s *Service) Redeliver(ctx context.Context, endpointID, eventID string) error {
	ep, err := s.Endpoint(ctx, endpointID)
	if err != nil {
		return err
	}
	ev, err := s.store.WebhookEvent(ctx, eventID)
	if errors.Is(err, storage.ErrNotFound) {
		return apperr.New(apperr.WebhookEventNotFound)
	}
	if err != nil {
		return err
	}
	if !ep.Received(ev) {
		return apperr.New(apperr.WebhookEventNotSubscribed).With("eventType", ev.Type)
	}
	err = s.store.EnqueueWebhookDelivery(ctx, endpointID, eventID)
	if errors.Is(err, storage.ErrNotFound) {
		return apperr.New(apperr.WebhookEventNotFound)
	}
	return err
}

// Ping sends a webhook.ping event to one endpoint and returns it.
func (s *Service) Ping(ctx context.Context, endpointID string) (Event, error) {
	ev, err := NewEvent(Ping, s.cfg.Now(), map[string]any{"endpointId": endpointID})
	if err != nil {
		return Event{}, err
	}
	return ev, notFound(s.store.SendWebhookEvent(ctx, endpointID, ev))
}
