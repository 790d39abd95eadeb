package stripebill

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/herald-vpn/herald/internal/billing"
	"github.com/herald-vpn/herald/internal/subscriptions"
)

// Event types Herald acts on; any other verified event decodes with only
// its envelope (stored and ignored).
const (
	EventCheckoutCompleted       = "checkout.session.completed"
	EventSubscriptionCreated     = "customer.subscription.created"
	EventSubscriptionUpdated     = "customer.subscription.updated"
	EventSubscriptionDeleted     = "customer.subscription.deleted"
	EventInvoicePaid             = "invoice.paid"
	EventInvoicePaymentFailed    = "invoice.payment_failed"
	environmentLive              = "Production"
	environmentTest              = "Sandbox"
	subscriptionStatusIncomplete = "incomplete"
)

// Event is a verified, decoded webhook event.
type Event struct {
	// ID is the event's id (evt_...): the key that makes ingestion
	// idempotent.
	ID       string
	Type     string
	Created  time.Time
	Livemode bool
	// Observation is the subscription's state for
	// customer.subscription.*, observed at Created; nil for other types,
	// and for an incomplete subscription (it grants nothing yet). Created
	// is Stripe's clock to the second: the caller prefers a read of the
	// API, on its own clock.
	Observation *subscriptions.Observation
	// SubscriptionID is the subscription the event is about (every
	// handled type); "" for a checkout or an invoice without one (a
	// one-off payment), which Herald ignores. The caller reads the
	// subscription (Client.Subscription): the API's answer is the truth.
	SubscriptionID string
	// CustomerID is the Stripe customer (cus_...), "" when none.
	CustomerID string
	// ClientReferenceID is the Checkout Session's client_reference_id
	// (the Herald user id; its metadata herald_user_id when absent).
	ClientReferenceID string
}

// Event verifies the Stripe-Signature header of payload and decodes it.
//
// The signature is checked by stripe-go (webhook.ValidatePayloadIgnoringTolerance:
// HMAC-SHA256 of "t.payload" with the endpoint secret, any v1 entry);
// the timestamp is checked here against Config.Now, because the library
// measures its tolerance with the wall clock (time.Since). A timestamp
// more than Tolerance away from Now, past or future, is refused.
//
// A bad signature or timestamp is billing.ErrForged; a payload that is not
// an event is billing.ErrMalformed; a live event at a test key (or the
// reverse) is billing.ErrMisaddressed.
func (c *Client) Event(payload []byte, signatureHeader string) (Event, error) {
	if err := webhook.ValidatePayloadIgnoringTolerance(payload, signatureHeader, c.secret); err != nil {
		return Event{}, fmt.Errorf("stripebill: %w: %w", billing.ErrForged, err)
	}
	signed, ok := signedAt(signatureHeader)
	if !ok {
		return Event{}, fmt.Errorf("stripebill: %w: no timestamp", billing.ErrForged)
	}
	if d := c.now().Sub(signed); d > c.tolerance || d < -c.tolerance {
		return Event{}, fmt.Errorf("stripebill: %w: signed at %s, outside the tolerance of %s", billing.ErrForged, signed.UTC().Format(time.RFC3339), c.tolerance)
	}
	ev, err := decodeEvent(payload)
	if err != nil {
		return Event{}, err
	}
	if c.live != nil && ev.Livemode != *c.live {
		return Event{}, fmt.Errorf("stripebill: %w: event livemode %t", billing.ErrMisaddressed, ev.Livemode)
	}
	return ev, nil
}

// signedAt reads the header's t= (the last one, as stripe-go does).
func signedAt(header string) (time.Time, bool) {
	var t time.Time
	ok := false
	for _, pair := range strings.Split(header, ",") {
		k, v, found := strings.Cut(pair, "=")
		if !found || k != "t" {
			continue
		}
		sec, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return time.Time{}, false
		}
		t, ok = time.Unix(sec, 0), true
	}
	return t, ok
}

// Wire shapes: only the fields Herald reads, tolerant of both the
// pre-2025 (current_period_end, invoice.subscription) and the basil
// (items.data[].current_period_end, invoice.parent.subscription_details)
// API versions, since a webhook endpoint's version may differ from the
// library's.

type wireEvent struct {
	ID       string `json:"id"`
	Object   string `json:"object"`
	Type     string `json:"type"`
	Created  int64  `json:"created"`
	Livemode bool   `json:"livemode"`
	Data     struct {
		Object json.RawMessage `json:"object"`
	} `json:"data"`
}

// wireID is an expandable field: an id, an expanded object, or null.
type wireID string

func (w *wireID) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*w = ""
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*w = wireID(s)
		return nil
	}
	var o struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return err
	}
	*w = wireID(o.ID)
	return nil
}

type wireSubscription struct {
	ID                string            `json:"id"`
	Object            string            `json:"object"`
	Status            string            `json:"status"`
	Customer          wireID            `json:"customer"`
	Metadata          map[string]string `json:"metadata"`
	StartDate         int64             `json:"start_date"`
	CurrentPeriodEnd  int64             `json:"current_period_end"`
	CancelAtPeriodEnd bool              `json:"cancel_at_period_end"`
	CancelAt          *int64            `json:"cancel_at"`
	EndedAt           *int64            `json:"ended_at"`
	Livemode          bool              `json:"livemode"`
	Items             struct {
		Data []struct {
			Price            wireID `json:"price"`
			CurrentPeriodEnd int64  `json:"current_period_end"`
		} `json:"data"`
	} `json:"items"`
}

type wireCheckoutSession struct {
	ID                string            `json:"id"`
	Object            string            `json:"object"`
	Mode              string            `json:"mode"`
	ClientReferenceID *string           `json:"client_reference_id"`
	Customer          wireID            `json:"customer"`
	Subscription      wireID            `json:"subscription"`
	Metadata          map[string]string `json:"metadata"`
}

type wireInvoice struct {
	ID       string `json:"id"`
	Object   string `json:"object"`
	Customer wireID `json:"customer"`
	// Subscription is where API versions before 2025-03-31.basil put it.
	Subscription wireID `json:"subscription"`
	Parent       *struct {
		SubscriptionDetails *struct {
			Subscription wireID `json:"subscription"`
		} `json:"subscription_details"`
	} `json:"parent"`
}

func malformed(format string, a ...any) error {
	return fmt.Errorf("stripebill: %w: %s", billing.ErrMalformed, fmt.Sprintf(format, a...))
}

// decodeEvent decodes a verified payload.
func decodeEvent(payload []byte) (Event, error) {
	var we wireEvent
	if err := json.Unmarshal(payload, &we); err != nil {
		return Event{}, malformed("event: %v", err)
	}
	if we.ID == "" || we.Type == "" || we.Object != "event" || we.Created <= 0 {
		return Event{}, malformed("not an event envelope (id %q, object %q, type %q)", we.ID, we.Object, we.Type)
	}
	ev := Event{ID: we.ID, Type: we.Type, Created: time.Unix(we.Created, 0).UTC(), Livemode: we.Livemode}
	obj := we.Data.Object
	switch we.Type {
	case EventSubscriptionCreated, EventSubscriptionUpdated, EventSubscriptionDeleted:
		ws, err := decodeSubscription(obj)
		if err != nil {
			return Event{}, err
		}
		ev.SubscriptionID, ev.CustomerID = ws.ID, string(ws.Customer)
		o, err := observe(ws, ev.Created)
		switch {
		case errors.Is(err, ErrIncomplete):
		case err != nil:
			return Event{}, err
		default:
			ev.Observation = &o
		}
	case EventCheckoutCompleted:
		var s wireCheckoutSession
		if err := json.Unmarshal(obj, &s); err != nil {
			return Event{}, malformed("checkout session: %v", err)
		}
		if s.ID == "" || s.Object != "checkout.session" {
			return Event{}, malformed("not a checkout session (id %q, object %q)", s.ID, s.Object)
		}
		if s.Mode == "subscription" {
			ev.SubscriptionID = string(s.Subscription)
		}
		ev.CustomerID = string(s.Customer)
		if s.ClientReferenceID != nil {
			ev.ClientReferenceID = *s.ClientReferenceID
		}
		if ev.ClientReferenceID == "" {
			ev.ClientReferenceID = s.Metadata[MetadataUserID]
		}
	case EventInvoicePaid, EventInvoicePaymentFailed:
		var inv wireInvoice
		if err := json.Unmarshal(obj, &inv); err != nil {
			return Event{}, malformed("invoice: %v", err)
		}
		if inv.ID == "" || inv.Object != "invoice" {
			return Event{}, malformed("not an invoice (id %q, object %q)", inv.ID, inv.Object)
		}
		ev.CustomerID = string(inv.Customer)
		ev.SubscriptionID = string(inv.Subscription)
		if p := inv.Parent; p != nil && p.SubscriptionDetails != nil && p.SubscriptionDetails.Subscription != "" {
			ev.SubscriptionID = string(p.SubscriptionDetails.Subscription)
		}
	}
	return ev, nil
}

func decodeSubscription(raw []byte) (wireSubscription, error) {
	var ws wireSubscription
	if err := json.Unmarshal(raw, &ws); err != nil {
		return wireSubscription{}, malformed("subscription: %v", err)
	}
	if ws.ID == "" || ws.Object != "subscription" {
		return wireSubscription{}, malformed("not a subscription (id %q, object %q)", ws.ID, ws.Object)
	}
	return ws, nil
}

// observe maps a Stripe subscription to an Observation observed at at.
//
//	trialing            → trial (cancelled when it will not convert)
//	active              → active (cancelled when it will not renew)
//	past_due            → grace: Stripe retries the renewal; access until
//	                      GraceEndsAt = the current period's end (Stripe has
//	                      no grace end of its own: its retry schedule ends in
//	                      unpaid or canceled, which it then tells)
//	unpaid              → on_hold
//	paused              → paused (a trial ended without a payment method)
//	canceled            → expired, ExpiresAt = ended_at when known
//	incomplete          → ErrIncomplete (no entitlement yet)
//	incomplete_expired  → expired
//
// "Will not renew" is cancel_at_period_end or a cancel_at; ExpiresAt is
// then the earlier of the period's end and cancel_at.
func observe(ws wireSubscription, at time.Time) (subscriptions.Observation, error) {
	if ws.Status == subscriptionStatusIncomplete {
		return subscriptions.Observation{}, fmt.Errorf("%w: %s", ErrIncomplete, ws.ID)
	}
	if len(ws.Items.Data) == 0 || ws.Items.Data[0].Price == "" {
		return subscriptions.Observation{}, malformed("subscription %s has no priced item", ws.ID)
	}
	periodEnd := ws.CurrentPeriodEnd
	if periodEnd == 0 {
		periodEnd = ws.Items.Data[0].CurrentPeriodEnd
	}
	ends := ws.CancelAtPeriodEnd || ws.CancelAt != nil
	o := subscriptions.Observation{
		Source:      subscriptions.Stripe,
		ExternalID:  ws.ID,
		AccountHint: ws.Metadata[MetadataUserID],
		ProductID:   string(ws.Items.Data[0].Price),
		StartedAt:   unix(ws.StartDate),
		ExpiresAt:   unix(periodEnd),
		AutoRenew:   !ends,
		Environment: environmentTest,
		Customer:    string(ws.Customer),
		ObservedAt:  at.UTC(),
	}
	if ws.Livemode {
		o.Environment = environmentLive
	}
	if ws.CancelAt != nil && *ws.CancelAt > 0 && (periodEnd == 0 || *ws.CancelAt < periodEnd) {
		o.ExpiresAt = unix(*ws.CancelAt)
	}
	switch ws.Status {
	case "trialing":
		o.State = subscriptions.StateTrial
		if ends {
			o.State = subscriptions.StateCancelled
		}
	case "active":
		o.State = subscriptions.StateActive
		if ends {
			o.State = subscriptions.StateCancelled
		}
	case "past_due":
		o.State = subscriptions.StateGrace
		g := o.ExpiresAt
		o.GraceEndsAt = &g
	case "unpaid":
		o.State = subscriptions.StateOnHold
	case "paused":
		o.State = subscriptions.StatePaused
	case "canceled", "incomplete_expired":
		o.State = subscriptions.StateExpired
		o.AutoRenew = false
		if ws.EndedAt != nil && *ws.EndedAt > 0 {
			o.ExpiresAt = unix(*ws.EndedAt)
		}
	default:
		return subscriptions.Observation{}, malformed("subscription %s has unknown status %q", ws.ID, ws.Status)
	}
	if o.ExpiresAt.IsZero() {
		return subscriptions.Observation{}, malformed("subscription %s has no period end", ws.ID)
	}
	return o, nil
}

func unix(sec int64) time.Time {
	if sec <= 0 {
		return time.Time{}
	}
	return time.Unix(sec, 0).UTC()
}
