package webhooks_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/devices"
	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/herald-vpn/herald/internal/sessions"
	"github.com/herald-vpn/herald/internal/subscriptions"
	"github.com/herald-vpn/herald/internal/webhooks"
)

// Each typed payload writes the bytes the untyped map it replaced wrote
// (json sorts a map's keys: the struct's fields are in that order).
func TestPayloadsWriteTheirMapsBytes(t *testing.T) {
	at := time.Date(2026, 11, 26, 10, 0, 0, 123456000, time.FixedZone("x", 3600))
	empty := ""
	for _, c := range []struct {
		typed webhooks.Payload
		typ   string
		was   map[string]any
	}{
		{accounts.UserCreated{UserID: "u1", Email: "a@example.com", EmailVerified: false, Plan: "trial", ExpiresAt: at.UTC()}, webhooks.UserCreated,
			map[string]any{"userId": "u1", "email": "a@example.com", "emailVerified": false, "plan": "trial", "expiresAt": at.UTC()}},
		{accounts.UserCreated{UserID: "u1", Email: "a@example.com", EmailVerified: true, Plan: "trial", ExpiresAt: at.UTC(), ReferrerID: "u0"}, webhooks.UserCreated,
			map[string]any{"userId": "u1", "email": "a@example.com", "emailVerified": true, "plan": "trial", "expiresAt": at.UTC(), "referrerId": "u0"}},
		{accounts.UserVerified{UserID: "u1", EmailVerified: true}, webhooks.UserVerified, map[string]any{"userId": "u1", "emailVerified": true}},
		{accounts.UserPasswordReset{UserID: "u1", SessionsRevoked: true}, webhooks.UserPasswordReset, map[string]any{"userId": "u1", "sessionsRevoked": true}},
		{accounts.UserPasswordReset{UserID: "u1"}, webhooks.UserPasswordReset, map[string]any{"userId": "u1", "sessionsRevoked": false}},
		{accounts.UserDisabled{UserID: "u1", Reason: ""}, webhooks.UserDisabled, map[string]any{"userId": "u1", "reason": ""}},
		{accounts.UserDeleted{UserID: "u1"}, webhooks.UserDeleted, map[string]any{"userId": "u1"}},
		{subscriptions.Changed("u1", subscriptions.Subscription{Plan: "trial", ExpiresAt: at}, subscriptions.Subscription{Plan: "premium", ExpiresAt: at.Add(time.Hour)}), webhooks.UserSubscriptionChanged,
			map[string]any{"userId": "u1", "plan": "premium", "expiresAt": at.Add(time.Hour).UTC(), "previousPlan": "trial", "previousExpiresAt": at.UTC()}},
		{sessions.ReuseDetected{UserID: "u1", SessionID: "s1", SessionRevoked: true}, webhooks.SessionReuseDetected,
			map[string]any{"userId": "u1", "sessionId": "s1", "sessionRevoked": true}},
		{devices.RegisteredEvent(devices.Device{ID: "d1", AccountID: "u1", Platform: "ios", Name: "iOS device"}), webhooks.DeviceRegistered,
			map[string]any{"deviceId": "d1", "userId": "u1", "platform": "ios", "name": "iOS device"}},
		{devices.Removed{DeviceID: "d1", UserID: "u1"}, webhooks.DeviceRemoved, map[string]any{"deviceId": "d1", "userId": "u1"}},
		{devices.InvalidatedEvent(devices.Device{ID: "d1", AccountID: "u1", Platform: "android"}), webhooks.DeviceTokenInvalidated,
			map[string]any{"deviceId": "d1", "userId": "u1", "platform": "android", "pushTokenStatus": "invalid"}},
		{messenger.SubscriberChanged{ChatID: "7", Status: messenger.Subscribed, StartPayload: &empty}, webhooks.SubscriberSubscribed,
			map[string]any{"chatId": "7", "status": "subscribed", "startPayload": ""}},
		{messenger.SubscriberChanged{ChatID: "7", Status: messenger.Unsubscribed}, webhooks.SubscriberUnsubscribed, map[string]any{"chatId": "7", "status": "unsubscribed"}},
		{messenger.SubscriberChanged{ChatID: "7", Status: messenger.Blocked}, webhooks.SubscriberBlocked, map[string]any{"chatId": "7", "status": "blocked"}},
	} {
		if got := c.typed.EventType(); got != c.typ {
			t.Errorf("%T: type %s, want %s", c.typed, got, c.typ)
		}
		got, _ := webhooks.NewEvent(c.typ, at, c.typed)
		want, _ := webhooks.NewEvent(c.typ, at, c.was)
		if string(got.Payload) != string(want.Payload) {
			t.Errorf("%T:\n got %s\nwant %s", c.typed, got.Payload, want.Payload)
		}
	}
}

// A subscriber's event: only when its status changes, with the start
// payload only when it subscribes.
func TestSubscriberStatusEvent(t *testing.T) {
	sub := messenger.Subscriber{ChatID: "7", Status: messenger.Subscribed, StartPayload: "promo"}
	cases := []struct {
		name   string
		before *messenger.Subscriber
		after  messenger.Subscriber
		want   string // the data's JSON; "" for no event
	}{
		{"new subscriber", nil, sub, `{"chatId":"7","startPayload":"promo","status":"subscribed"}`},
		{"subscribed again", &sub, sub, ""},
		{"stops", &sub, messenger.Subscriber{ChatID: "7", Status: messenger.Unsubscribed, StartPayload: "promo"}, `{"chatId":"7","status":"unsubscribed"}`},
		{"blocks", &sub, messenger.Subscriber{ChatID: "7", Status: messenger.Blocked}, `{"chatId":"7","status":"blocked"}`},
		{"unknown status", nil, messenger.Subscriber{ChatID: "7", Status: "weird"}, ""},
	}
	for _, c := range cases {
		ev, ok := messenger.StatusEvent(c.before, c.after)
		got := ""
		if ok {
			b, _ := json.Marshal(ev)
			got = string(b)
		}
		if got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}
