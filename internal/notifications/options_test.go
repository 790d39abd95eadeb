package notifications_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/testsupport"
)

// absent marks a path that must not be in the message.
var absent = &struct{}{}

// at reads a dotted path of decoded JSON.
func at(v any, path string) any { return testsupport.JSONPath(v, strings.Split(path, ".")...) }

func intp(n int) *int { return &n }

// TestPushOptionsAtProviders sends one notification per option to an
// Android device (FCM) and an iOS device (APNs) and checks each option
// where the fake providers received it: the FCM message's fields (its
// apns block is what FCM relays to iOS) and the APNs headers and payload.
func TestPushOptionsAtProviders(t *testing.T) {
	// expiry checks an apns-expiration header: ttl seconds after the send.
	type window struct{ from, to int64 }
	cases := []struct {
		name string
		opts notifications.PushOptions
		fcm  map[string]any // path in the FCM message → value
		apns map[string]any // path in {priority, pushType, expiration, payload} → value
		// ttl: the apns-expiration of both is the send time plus this.
		ttl int64
	}{
		{"priority high", notifications.PushOptions{Priority: "high"},
			map[string]any{"android.priority": "HIGH", "apns.headers.apns-priority": "10"},
			map[string]any{"priority": 10, "pushType": "alert"}, 0},
		{"priority normal", notifications.PushOptions{Priority: "normal"},
			map[string]any{"android.priority": "NORMAL", "apns.headers.apns-priority": "5"},
			map[string]any{"priority": 5, "pushType": "alert"}, 0},
		{"ttl", notifications.PushOptions{TTLSeconds: intp(3600)},
			map[string]any{"android.ttl": "3600s"},
			map[string]any{}, 3600},
		{"ttl zero", notifications.PushOptions{TTLSeconds: intp(0)},
			map[string]any{"android.ttl": "0s", "apns.headers.apns-expiration": "0"},
			map[string]any{"expiration": "1"}, 0}, // apns2 cannot send 0; 1 (long past) means the same
		{"badge", notifications.PushOptions{Badge: intp(3)},
			map[string]any{"android.notification.notification_count": 3.0, "apns.payload.aps.badge": 3.0},
			map[string]any{"payload.aps.badge": 3.0}, 0},
		{"sound", notifications.PushOptions{Sound: "chime.caf"},
			map[string]any{"android.notification.sound": "chime.caf", "apns.payload.aps.sound": "chime.caf"},
			map[string]any{"payload.aps.sound": "chime.caf"}, 0},
		{"imageUrl", notifications.PushOptions{ImageURL: "https://cdn.example.com/p.png"},
			map[string]any{"notification.image": "https://cdn.example.com/p.png", "apns.payload.aps.mutable-content": 1.0},
			map[string]any{"payload.imageUrl": "https://cdn.example.com/p.png", "payload.aps.mutable-content": 1.0}, 0},
		{"channelId", notifications.PushOptions{ChannelID: "offers"},
			map[string]any{"android.notification.channel_id": "offers", "apns": absent},
			map[string]any{"payload.aps.channel_id": absent, "payload.channelId": absent}, 0},
		{"threadId", notifications.PushOptions{ThreadID: "billing"},
			map[string]any{"apns.payload.aps.thread-id": "billing", "android": absent},
			map[string]any{"payload.aps.thread-id": "billing"}, 0},
		{"contentAvailable", notifications.PushOptions{ContentAvailable: true},
			map[string]any{"notification": absent, "apns.payload.aps.content-available": 1.0, "apns.headers.apns-push-type": "background", "apns.headers.apns-priority": "5"},
			map[string]any{"pushType": "background", "priority": 5, "payload.aps.content-available": 1.0, "payload.aps.alert": absent}, 0},
		{"none", notifications.PushOptions{},
			map[string]any{"android": absent, "apns": absent, "notification.title": hello.Subject},
			map[string]any{"priority": 10, "pushType": "alert", "expiration": "", "payload.aps.alert.title": hello.Subject}, 0},
	}
	e := newEnv(t, sqlstoretest.NewURL(t, "sqlite"))
	ctx := context.Background()
	check := func(t *testing.T, where string, msg any, want map[string]any) {
		t.Helper()
		for path, w := range want {
			got := at(msg, path)
			if w == absent {
				if got != nil {
					t.Errorf("%s: %s is %v, want it absent", where, path, got)
				}
				continue
			}
			if n, ok := w.(int); ok {
				w = n // compare ints as ints
				if f, ok := got.(float64); ok && f == float64(n) {
					continue
				}
				if g, ok := got.(int); ok && g == n {
					continue
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(w) || got == nil {
				t.Errorf("%s: %s is %v (%T), want %v", where, path, got, got, w)
			}
		}
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := hello
			n.Options = c.opts
			android := e.device(t, "android", fmt.Sprintf("opt-fcm-%d", i))
			ios := e.device(t, "ios", fmt.Sprintf("opt-apns-%d", i))
			before := time.Now().Unix()
			for _, d := range []string{android.ID, ios.ID} {
				if _, err := e.svc.SendToDevice(ctx, d, n); err != nil {
					t.Fatal(err)
				}
			}
			sent := window{before, time.Now().Unix() + 1}
			fm := e.fcm.MessagesFor(android.PushToken)
			am := e.apns.MessagesFor(ios.PushToken)
			if len(fm) != 1 || len(am) != 1 {
				t.Fatalf("FCM got %d, APNs %d messages; want 1 each", len(fm), len(am))
			}
			check(t, "FCM", fm[0].Raw, c.fcm)
			a := am[0]
			check(t, "APNs", map[string]any{"priority": a.Priority, "pushType": a.PushType, "expiration": a.Expiration, "payload": a.Payload}, c.apns)
			if c.ttl > 0 {
				for where, v := range map[string]any{"FCM apns-expiration": at(fm[0].Raw, "apns.headers.apns-expiration"), "APNs expiration": a.Expiration} {
					exp, err := strconv.ParseInt(fmt.Sprint(v), 10, 64)
					if err != nil || exp < sent.from+c.ttl || exp > sent.to+c.ttl {
						t.Errorf("%s is %v, want the send time plus %d s (%d to %d)", where, v, c.ttl, sent.from+c.ttl, sent.to+c.ttl)
					}
				}
			}
		})
	}
}

// TestPushOptionsValidation: each option out of its range is INVALID_INPUT
// naming it, and nothing is sent.
func TestPushOptionsValidation(t *testing.T) {
	e := newEnv(t, sqlstoretest.NewURL(t, "sqlite"))
	d := e.device(t, "android", "opt-invalid")
	cases := []struct {
		field string
		opts  notifications.PushOptions
	}{
		{"options.priority", notifications.PushOptions{Priority: "urgent"}},
		{"options.ttl", notifications.PushOptions{TTLSeconds: intp(-1)}},
		{"options.ttl", notifications.PushOptions{TTLSeconds: intp(notifications.MaxTTLSeconds + 1)}},
		{"options.badge", notifications.PushOptions{Badge: intp(-1)}},
		{"options.sound", notifications.PushOptions{Sound: strings.Repeat("s", 257)}},
		{"options.imageUrl", notifications.PushOptions{ImageURL: "http://cdn.example.com/p.png"}},
		{"options.imageUrl", notifications.PushOptions{ImageURL: "/p.png"}},
		{"options.channelId", notifications.PushOptions{ChannelID: "a\nb"}},
		{"options.threadId", notifications.PushOptions{ThreadID: strings.Repeat("t", 257)}},
	}
	for _, c := range cases {
		n := hello
		n.Options = c.opts
		_, err := e.svc.SendToDevice(context.Background(), d.ID, n)
		if ae := wantCode(t, err, apperr.InvalidInput); ae.Details["field"] != c.field {
			t.Errorf("%+v: field %v, want %s", c.opts, ae.Details["field"], c.field)
		}
	}
	if e.fcm.Attempts("opt-invalid") != 0 {
		t.Fatalf("invalid options reached FCM %d times", e.fcm.Attempts("opt-invalid"))
	}
}
