// Package webhooks owns Herald's outgoing webhooks, after the Standard
// Webhooks specification: the catalogue of event types and their payload
// {type, timestamp, data}, endpoints and their secrets, signing, the
// address rules that keep Herald from calling into its own network, and
// the delivery job with its retry schedule. Each event's data is a
// Payload type of the domain that owns it; the service emits it in the
// transaction of the change that causes it (an outbox, the store's Emit)
// and River jobs inserted in that same transaction deliver it. The HTTP
// sending itself is behind Sender (package webhooks/httpsend).
package webhooks

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
)

// Event types, the catalogue an endpoint subscribes from.
const (
	UserCreated             = "user.created"
	UserVerified            = "user.verified"
	UserPasswordReset       = "user.password_reset"
	UserPasswordChanged     = "user.password_changed"
	UserEmailChanged        = "user.email_changed"
	UserDisabled            = "user.disabled"
	UserDeleted             = "user.deleted"
	UserSubscriptionChanged = "user.subscription_changed"

	SubscriptionStarted       = "subscription.started"
	SubscriptionRenewed       = "subscription.renewed"
	SubscriptionPaymentFailed = "subscription.payment_failed"
	SubscriptionRecovered     = "subscription.recovered"
	SubscriptionExpired       = "subscription.expired"
	SubscriptionRefunded      = "subscription.refunded"
	SubscriptionCancelled     = "subscription.cancelled"
	SubscriptionPlanChanged   = "subscription.plan_changed"
	SessionReuseDetected      = "session.reuse_detected"
	SecurityMFAReset          = "security.mfa_reset"
	DeviceRegistered          = "device.registered"
	DeviceRemoved             = "device.removed"
	DeviceTokenInvalidated    = "device.token_invalidated"
	BroadcastCompleted        = "notification.broadcast.completed"
	BroadcastFailed           = "notification.broadcast.failed"
	BroadcastCancelled        = "notification.broadcast.cancelled"
	SubscriberSubscribed      = "messenger.subscriber.subscribed"
	SubscriberUnsubscribed    = "messenger.subscriber.unsubscribed"
	SubscriberBlocked         = "messenger.subscriber.blocked"

	MessengerBroadcastCompleted = "messenger.broadcast.completed"
	MessengerBroadcastFailed    = "messenger.broadcast.failed"
	MessengerBroadcastCancelled = "messenger.broadcast.cancelled"

	// Ping is the test event an operator sends to one endpoint; nobody
	// subscribes to it.
	Ping = "webhook.ping"
)

// Catalogue is every event type an endpoint can subscribe to, in
// documentation order.
var Catalogue = slices.Concat([]string{
	UserCreated, UserVerified, UserPasswordReset, UserPasswordChanged, UserEmailChanged, UserDisabled, UserDeleted, UserSubscriptionChanged,
	SubscriptionStarted, SubscriptionRenewed, SubscriptionPaymentFailed, SubscriptionRecovered,
	SubscriptionExpired, SubscriptionRefunded, SubscriptionCancelled, SubscriptionPlanChanged,
	SessionReuseDetected,
	DeviceRegistered, DeviceRemoved, DeviceTokenInvalidated,
	BroadcastCompleted, BroadcastFailed, BroadcastCancelled,
	SubscriberSubscribed, SubscriberUnsubscribed, SubscriberBlocked,
	MessengerBroadcastCompleted, MessengerBroadcastFailed, MessengerBroadcastCancelled,
}, SecurityEvents)

// SecurityEvents are the security log's events, security.<kind> for each
// kind of package securitylog, in its order (a test holds the two lists
// together); they close the catalogue.
var SecurityEvents = []string{
	"security.login_ok", "security.login_failed", "security.logout", "security.refresh_reuse_detected",
	"security.mfa_enrolled", "security.mfa_removed", "security.recovery_codes_regenerated", "security.recovery_code_used", SecurityMFAReset,
	"security.password_changed", "security.password_reset",
	"security.email_change_requested", "security.email_change_confirmed", "security.email_change_cancelled",
	"security.session_revoked", "security.api_key_created", "security.api_key_revoked", "security.admin_action",
	"security.passkey_added", "security.passkey_removed",
	"security.new_device_sign_in", "security.identity_linked", "security.identity_unlinked",
	"security.guest_upgraded",
}

// Known reports whether t is in the catalogue.
func Known(t string) bool { return slices.Contains(Catalogue, t) }

// Retention is how long events and their delivery attempts are kept:
// well past the last retry (about three days), for redelivery and the
// attempt log.
const Retention = 30 * 24 * time.Hour

// Event is one row of the outbox. Payload is the exact body every
// delivery sends; ID is its webhook-id, the same on every attempt and
// every endpoint, for receivers to dedupe on.
type Event struct {
	ID        string
	Type      string
	Payload   []byte
	CreatedAt time.Time
}

// payload is the body of a delivery.
type payload struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      any       `json:"data"`
}

// NewEvent builds the event of type t that happened at `at`. data holds
// ids and changed fields, never a password, code or token.
func NewEvent(t string, at time.Time, data any) (Event, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return Event{}, err
	}
	if data == nil {
		data = map[string]any{}
	}
	body, err := json.Marshal(payload{Type: t, Timestamp: at.UTC(), Data: data})
	if err != nil {
		return Event{}, fmt.Errorf("event %s: %w", t, err)
	}
	return Event{ID: "msg_" + id.String(), Type: t, Payload: body, CreatedAt: at.UTC()}, nil
}

// Payload is the data of one event type: one Go type per event, owned by
// the domain package whose change causes the event. Its JSON is the
// event's data; its fields are declared in the order of their JSON names,
// as the outbox has always written them.
type Payload interface {
	EventType() string
}

// accountFields are the data fields that name an account: userId, whose
// event is about the account, and referrerId, the account that referred
// it. Only user.created holds an email, beside its userId.
var accountFields = []string{"userId", "referrerId"}

// NamedAccounts are the ids of the accounts an event's data names, for
// the store to find an account's events when it is deleted. user.deleted
// names none: it is what deletion leaves.
func NamedAccounts(ev Event) []string {
	if ev.Type == UserDeleted {
		return nil
	}
	var p struct {
		Data map[string]json.RawMessage `json:"data"`
	}
	if json.Unmarshal(ev.Payload, &p) != nil {
		return nil
	}
	var out []string
	for _, f := range accountFields {
		var id string
		if json.Unmarshal(p.Data[f], &id) == nil && id != "" && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// Scrub is what deleting account accountID leaves of an event's payload:
// nothing (drop) when the event is about the account (its userId), else
// the payload without the fields naming it. The other fields keep their
// bytes; data's fields stay in key order, as NewEvent wrote them.
func Scrub(body []byte, accountID string) (out []byte, drop bool, err error) {
	var p struct {
		Type      string                     `json:"type"`
		Timestamp json.RawMessage            `json:"timestamp"`
		Data      map[string]json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, false, fmt.Errorf("scrub: %w", err)
	}
	names := func(f string) bool {
		var id string
		return json.Unmarshal(p.Data[f], &id) == nil && id == accountID
	}
	if names("userId") {
		return nil, true, nil
	}
	for _, f := range accountFields {
		if names(f) {
			delete(p.Data, f)
		}
	}
	if p.Data == nil {
		p.Data = map[string]json.RawMessage{}
	}
	out, err = json.Marshal(p)
	return out, false, err
}

// pingEndpoint is the endpoint a webhook.ping event names.
func pingEndpoint(body []byte) string {
	var p struct {
		Data struct {
			EndpointID string `json:"endpointId"`
		} `json:"data"`
	}
	_ = json.Unmarshal(body, &p)
	return p.Data.EndpointID
}
