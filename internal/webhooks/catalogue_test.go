package webhooks_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/herald-vpn/herald/apidoc"
	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/devices"
	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/herald-vpn/herald/internal/mfa"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/securitylog"
	"github.com/herald-vpn/herald/internal/sessions"
	"github.com/herald-vpn/herald/internal/subscriptions"
	"github.com/herald-vpn/herald/internal/view"
	"github.com/herald-vpn/herald/internal/webhooks"
)

// payloadTypes is the Go type of each event's data.
var payloadTypes = withSecurityLog(map[string]webhooks.Payload{
	webhooks.UserCreated:               accounts.UserCreated{},
	webhooks.UserVerified:              accounts.UserVerified{},
	webhooks.UserPasswordReset:         accounts.UserPasswordReset{},
	webhooks.UserPasswordChanged:       accounts.UserPasswordChanged{},
	webhooks.UserEmailChanged:          accounts.UserEmailChanged{},
	webhooks.UserDisabled:              accounts.UserDisabled{},
	webhooks.UserDeleted:               accounts.UserDeleted{},
	webhooks.UserSubscriptionChanged:   subscriptions.SubscriptionChanged{},
	webhooks.SubscriptionStarted:       lifecycle(webhooks.SubscriptionStarted),
	webhooks.SubscriptionRenewed:       lifecycle(webhooks.SubscriptionRenewed),
	webhooks.SubscriptionPaymentFailed: lifecycle(webhooks.SubscriptionPaymentFailed),
	webhooks.SubscriptionRecovered:     lifecycle(webhooks.SubscriptionRecovered),
	webhooks.SubscriptionExpired:       lifecycle(webhooks.SubscriptionExpired),
	webhooks.SubscriptionRefunded:      lifecycle(webhooks.SubscriptionRefunded),
	webhooks.SubscriptionCancelled:     lifecycle(webhooks.SubscriptionCancelled),
	webhooks.SubscriptionPlanChanged:   lifecycle(webhooks.SubscriptionPlanChanged),
	webhooks.SessionReuseDetected:      sessions.ReuseDetected{},
	webhooks.SecurityMFAReset:          mfa.Reset{},
	webhooks.DeviceRegistered:          devices.Registered{},
	webhooks.DeviceRemoved:             devices.Removed{},
	webhooks.DeviceTokenInvalidated:    devices.TokenInvalidated{},
	webhooks.SubscriberSubscribed:      messenger.SubscriberChanged{Status: messenger.Subscribed},
	webhooks.SubscriberUnsubscribed:    messenger.SubscriberChanged{Status: messenger.Unsubscribed},
	webhooks.SubscriberBlocked:         messenger.SubscriberChanged{Status: messenger.Blocked},

	webhooks.BroadcastCompleted:          view.NotificationJobEvent{Status: notifications.StatusCompleted},
	webhooks.BroadcastFailed:             view.NotificationJobEvent{Status: notifications.StatusFailed},
	webhooks.BroadcastCancelled:          view.NotificationJobEvent{Status: notifications.StatusCancelled},
	webhooks.MessengerBroadcastCompleted: view.MessengerBroadcastEvent{Status: messenger.BroadcastCompleted},
	webhooks.MessengerBroadcastFailed:    view.MessengerBroadcastEvent{Status: messenger.BroadcastFailed},
	webhooks.MessengerBroadcastCancelled: view.MessengerBroadcastEvent{Status: messenger.BroadcastCancelled},
})

// withSecurityLog adds the security log's payload to types, one per kind
// (security.mfa_reset keeps mfa.Reset).
func withSecurityLog(types map[string]webhooks.Payload) map[string]webhooks.Payload {
	for _, k := range securitylog.Kinds {
		if k != securitylog.MFAReset {
			types[securitylog.WebhookType(k)] = securitylog.Payload{Kind: k}
		}
	}
	return types
}

// Every kind of the security log is a webhook event, in the catalogue's
// closing list in the log's order.
func TestSecurityEventsAreTheLogsKinds(t *testing.T) {
	var want []string
	for _, k := range securitylog.Kinds {
		want = append(want, securitylog.WebhookType(k))
	}
	if !slices.Equal(webhooks.SecurityEvents, want) {
		t.Errorf("webhooks.SecurityEvents = %v\nthe security log's kinds make %v", webhooks.SecurityEvents, want)
	}
	if !slices.Equal(webhooks.Catalogue[len(webhooks.Catalogue)-len(want):], want) {
		t.Errorf("the catalogue does not close with the security log's events")
	}
}

// lifecycle is the payload of a subscription.* event.
func lifecycle(event string) webhooks.Payload {
	return subscriptions.LifecycleEvent(event, "", subscriptions.Entitlement{}, subscriptions.Subscription{})
}

// payloadFields are the JSON fields of a payload type: all of them, and
// those always written (not omitempty).
func payloadFields(typ reflect.Type) (all, always []string) {
	for _, f := range reflect.VisibleFields(typ) {
		tag := f.Tag.Get("json")
		if !f.IsExported() || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		all = append(all, name)
		if !slices.Contains(strings.Split(opts, ","), "omitempty") {
			always = append(always, name)
		}
	}
	return all, always
}

// The event catalogue that docs/webhooks.md and apidoc/openapi.yaml show is
// held to the payload types: every event type has one, its fields are in the
// order of their JSON names (the order the outbox has always written),
// the manual's table names its fields and only those, its example holds
// them, and the OpenAPI enum lists the catalogue.
func TestEventCatalogueMatchesPayloadTypes(t *testing.T) {
	for _, typ := range webhooks.Catalogue {
		p, ok := payloadTypes[typ]
		if !ok {
			t.Errorf("%s: no payload type", typ)
			continue
		}
		if p.EventType() != typ {
			t.Errorf("%T: EventType %s, catalogued as %s", p, p.EventType(), typ)
		}
		if all, _ := payloadFields(reflect.TypeOf(p)); !slices.IsSorted(all) {
			t.Errorf("%T: fields %v not in the order of their JSON names", p, all)
		}
	}

	manual, err := os.ReadFile("../../docs/webhooks.md")
	if err != nil {
		t.Fatal(err)
	}
	table := catalogueTable(t, manual)
	examples := catalogueExamples(t, manual)
	for typ, p := range payloadTypes {
		all, always := payloadFields(reflect.TypeOf(p))
		named, ok := table[typ]
		if !ok {
			t.Errorf("docs/webhooks.md: %s is not in the table of events", typ)
		}
		for _, f := range named {
			if !slices.Contains(all, f) {
				t.Errorf("docs/webhooks.md: %s's data names %s, which %T does not have", typ, f, p)
			}
		}
		// A row of one type names every field; a row of several (the
		// admin API's) names what they share.
		if rowOfOne(manual, typ) {
			for _, f := range all {
				if !slices.Contains(named, f) {
					t.Errorf("docs/webhooks.md: %s's data does not name %s", typ, f)
				}
			}
		}
		data, ok := examples[typ]
		if !ok {
			t.Errorf("docs/webhooks.md: no example of %s", typ)
			continue
		}
		for f := range data {
			if !slices.Contains(all, f) {
				t.Errorf("docs/webhooks.md: the example of %s holds %s, which %T does not have", typ, f, p)
			}
		}
		for _, f := range always {
			if _, ok := data[f]; !ok {
				t.Errorf("docs/webhooks.md: the example of %s lacks %s", typ, f)
			}
		}
	}

	doc, err := openapi3.NewLoader().LoadFromData(apidoc.YAML)
	if err != nil {
		t.Fatal(err)
	}
	var enum []string
	for _, v := range doc.Components.Schemas["WebhookEventType"].Value.Enum {
		enum = append(enum, v.(string))
	}
	if !slices.Equal(enum, webhooks.Catalogue) {
		t.Errorf("apidoc/openapi.yaml WebhookEventType lists %v, the catalogue is %v", enum, webhooks.Catalogue)
	}
}

var backticked = regexp.MustCompile("`([^`]+)`")

// catalogueTable reads the manual's table of events: each type's row's
// backticked data fields (a `.suffix` type is its row's first type's
// prefix with that suffix).
func catalogueTable(t *testing.T, manual []byte) map[string][]string {
	out := map[string][]string{}
	for line := range strings.Lines(string(manual)) {
		cells := strings.Split(strings.TrimSpace(line), "|")
		if len(cells) != 5 || !strings.Contains(cells[1], "`") {
			continue
		}
		var types []string
		for _, m := range backticked.FindAllStringSubmatch(cells[1], -1) {
			typ := m[1]
			if strings.HasPrefix(typ, ".") && len(types) > 0 {
				first := types[0]
				typ = first[:strings.LastIndex(first, ".")] + typ
			}
			types = append(types, typ)
		}
		var fields []string
		for _, m := range backticked.FindAllStringSubmatch(cells[3], -1) {
			fields = append(fields, m[1])
		}
		for _, typ := range types {
			out[typ] = fields
		}
	}
	if len(out) == 0 {
		t.Fatal("docs/webhooks.md: no table of events")
	}
	return out
}

// rowOfOne reports whether typ's row of the table names no other type.
func rowOfOne(manual []byte, typ string) bool {
	for line := range strings.Lines(string(manual)) {
		if strings.HasPrefix(strings.TrimSpace(line), "| `"+typ+"` |") {
			return true
		}
	}
	return false
}

// catalogueExamples reads the manual's example bodies: each type's data.
func catalogueExamples(t *testing.T, manual []byte) map[string]map[string]any {
	out := map[string]map[string]any{}
	sc := bufio.NewScanner(bytes.NewReader(manual))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, `{"type":`) {
			continue
		}
		var ev struct {
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Errorf("docs/webhooks.md: an example that is not JSON: %s", line)
			continue
		}
		out[ev.Type] = ev.Data
	}
	return out
}

// Each typed payload writes the bytes the untyped map it replaced wrote
// (json sorts a map's keys: the struct's fields are in that order).
func TestPayloadsWriteTheirMapsBytes(t *testing.T) {
	at := time.Date(2026, 11, 26, 10, 0, 0, 123456000, time.FixedZone("x", 3600))
	empty, addr := "", "a@example.com"
	for _, c := range []struct {
		typed webhooks.Payload
		typ   string
		was   map[string]any
	}{
		{accounts.UserCreated{UserID: "u1", Email: &addr, EmailVerified: false, Plan: "trial", ExpiresAt: at.UTC()}, webhooks.UserCreated,
			map[string]any{"userId": "u1", "email": "a@example.com", "emailVerified": false, "plan": "trial", "expiresAt": at.UTC()}},
		{accounts.UserCreated{UserID: "u1", Email: &addr, EmailVerified: true, Plan: "trial", ExpiresAt: at.UTC(), ReferrerID: "u0"}, webhooks.UserCreated,
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
		{mfa.Reset{UserID: "u1", FactorsRemoved: 1, ActorKind: "user", ActorID: "a1"}, webhooks.SecurityMFAReset,
			map[string]any{"userId": "u1", "factorsRemoved": 1, "actorKind": "user", "actorId": "a1"}},
		{devices.RegisteredEvent(devices.Device{ID: "d1", AccountID: "u1", Platform: "ios", Name: "iOS device"}), webhooks.DeviceRegistered,
			map[string]any{"deviceId": "d1", "userId": "u1", "platform": "ios", "name": "iOS device"}},
		{devices.Removed{DeviceID: "d1", UserID: "u1"}, webhooks.DeviceRemoved, map[string]any{"deviceId": "d1", "userId": "u1"}},
		{devices.InvalidatedEvent(devices.Device{ID: "d1", AccountID: "u1", Platform: "android"}), webhooks.DeviceTokenInvalidated,
			map[string]any{"deviceId": "d1", "userId": "u1", "platform": "android", "pushTokenStatus": "invalid"}},
		{messenger.SubscriberChanged{ChatID: "7", Status: messenger.Subscribed, StartPayload: &empty}, webhooks.SubscriberSubscribed,
			map[string]any{"chatId": "7", "status": "subscribed", "startPayload": ""}},
		{messenger.SubscriberChanged{ChatID: "7", Status: messenger.Unsubscribed}, webhooks.SubscriberUnsubscribed, map[string]any{"chatId": "7", "status": "unsubscribed"}},
		{messenger.SubscriberChanged{ChatID: "7", Status: messenger.Blocked}, webhooks.SubscriberBlocked, map[string]any{"chatId": "7", "status": "blocked"}},
		{view.NewNotificationJobEvent(notifications.Job{ID: "j1", Status: notifications.StatusCompleted, TotalRecipients: 5, Sent: 3, Failed: 1, InvalidTokens: 1}), webhooks.BroadcastCompleted,
			map[string]any{"jobId": "j1", "status": "completed", "totalRecipients": 5, "sent": 3, "failed": 1, "invalidTokens": 1}},
		{view.NewNotificationJobEvent(notifications.Job{ID: "j1", Status: notifications.StatusFailed, TotalRecipients: 5, Error: "boom"}), webhooks.BroadcastFailed,
			map[string]any{"jobId": "j1", "status": "failed", "totalRecipients": 5, "sent": 0, "failed": 0, "invalidTokens": 0, "error": "boom"}},
		{view.NewNotificationJobEvent(notifications.Job{ID: "j1", Status: notifications.StatusCancelled, Sent: 2}), webhooks.BroadcastCancelled,
			map[string]any{"jobId": "j1", "status": "cancelled", "totalRecipients": 0, "sent": 2, "failed": 0, "invalidTokens": 0}},
		{view.NewMessengerBroadcastEvent(messenger.Broadcast{ID: "b1", Status: messenger.BroadcastCompleted, TotalRecipients: 5, Sent: 3, Failed: 1, Blocked: 1}), webhooks.MessengerBroadcastCompleted,
			map[string]any{"jobId": "b1", "status": "completed", "totalRecipients": 5, "sent": 3, "failed": 1, "blocked": 1}},
		{view.NewMessengerBroadcastEvent(messenger.Broadcast{ID: "b1", Status: messenger.BroadcastFailed, Error: "boom"}), webhooks.MessengerBroadcastFailed,
			map[string]any{"jobId": "b1", "status": "failed", "totalRecipients": 0, "sent": 0, "failed": 0, "blocked": 0, "error": "boom"}},
		{view.NewMessengerBroadcastEvent(messenger.Broadcast{ID: "b1", Status: messenger.BroadcastCancelled, Sent: 2}), webhooks.MessengerBroadcastCancelled,
			map[string]any{"jobId": "b1", "status": "cancelled", "totalRecipients": 0, "sent": 2, "failed": 0, "blocked": 0}},
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
