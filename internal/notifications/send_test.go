package notifications_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/push/apns/apnstest"
	"github.com/herald-vpn/herald/internal/push/fcm/fcmtest"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

var hello = notifications.Notification{
	Subject: "Maintenance tonight",
	Content: "Servers restart at 02:00 UTC.",
	Data:    map[string]any{"kind": "maintenance", "minutes": 15, "nested": map[string]any{"a": true}},
}

func TestSendToDevice(t *testing.T) {
	eachDB(t, func(t *testing.T, url string) {
		e := newEnv(t, url)
		ctx := context.Background()
		android := e.device(t, "android", "fcm-token-1")
		ios := e.device(t, "ios", "apns-token-1")

		res, err := e.svc.SendToDevice(ctx, android.ID, hello)
		if err != nil || res.Status != "sent" || !strings.Contains(res.Message, android.ID) {
			t.Fatalf("android: %+v, %v", res, err)
		}
		msgs := e.fcm.MessagesFor("fcm-token-1")
		if len(msgs) != 1 {
			t.Fatalf("FCM got %d messages", len(msgs))
		}
		m := msgs[0]
		// FCM data values are strings: non-strings arrive as JSON text.
		if m.Title != hello.Subject || m.Body != hello.Content || m.Data["kind"] != "maintenance" || m.Data["minutes"] != "15" || m.Data["nested"] != `{"a":true}` {
			t.Fatalf("FCM message %+v", m)
		}

		if _, err := e.svc.SendToDevice(ctx, ios.ID, hello); err != nil {
			t.Fatal(err)
		}
		am := e.apns.MessagesFor("apns-token-1")
		if len(am) != 1 || am[0].Title != hello.Subject || am[0].Body != hello.Content || am[0].Payload["minutes"] != float64(15) || am[0].Payload["kind"] != "maintenance" {
			t.Fatalf("APNs messages %+v", am)
		}
	})
}

func TestSendToDeviceNotFoundOrInvalid(t *testing.T) {
	e := newEnv(t, sqlstoretest.NewURL(t, "sqlite"))
	ctx := context.Background()
	removed := e.device(t, "android", "removed-token")
	if err := e.devices.Remove(ctx, removed.AccountID, removed.ID); err != nil {
		t.Fatal(err)
	}
	invalid := e.device(t, "android", "invalid-token")
	if err := e.db.InvalidatePushToken(ctx, invalid.ID, "invalid-token"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, deviceID string
		code           apperr.Code
		status         int
	}{
		{"unknown", "no-such-device", apperr.DeviceNotFound, 404},
		{"inactive", removed.ID, apperr.DeviceNotFound, 404},
		{"token already invalid", invalid.ID, apperr.InvalidPushToken, 422},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.svc.SendToDevice(ctx, tt.deviceID, hello)
			if ae := wantCode(t, err, tt.code); ae.Status() != tt.status {
				t.Fatalf("status %d", ae.Status())
			}
		})
	}
	if n := e.fcm.Attempts("invalid-token") + e.fcm.Attempts("removed-token"); n != 0 {
		t.Fatalf("the provider was called %d times", n)
	}
}

func TestDeadTokenMarksDevice(t *testing.T) {
	e := newEnv(t, sqlstoretest.NewURL(t, "sqlite"))
	ctx := context.Background()
	tests := []struct {
		name     string
		platform string
		fault    func(token string)
	}{
		{"FCM UNREGISTERED", "android", func(tok string) { e.fcm.Fail(tok, -1, fcmtest.Unregistered()) }},
		{"FCM SENDER_ID_MISMATCH", "android", func(tok string) { e.fcm.Fail(tok, -1, fcmtest.SenderIDMismatch()) }},
		{"FCM INVALID_ARGUMENT token", "android", func(tok string) { e.fcm.Fail(tok, -1, fcmtest.InvalidToken()) }},
		{"FCM INVALID_ARGUMENT message.token violation", "android", func(tok string) { e.fcm.Fail(tok, -1, fcmtest.InvalidTokenField()) }},
		{"APNs BadDeviceToken", "ios", func(tok string) { e.apns.Fail(tok, -1, apnstest.BadDeviceToken()) }},
		{"APNs DeviceTokenNotForTopic", "ios", func(tok string) { e.apns.Fail(tok, -1, apnstest.DeviceTokenNotForTopic()) }},
		{"APNs Unregistered", "ios", func(tok string) { e.apns.Fail(tok, -1, apnstest.Unregistered()) }},
		{"APNs ExpiredToken", "ios", func(tok string) { e.apns.Fail(tok, -1, apnstest.ExpiredToken()) }},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			token := strings.Repeat("ab", 8) + string(rune('a'+i))
			d := e.device(t, tt.platform, token)
			tt.fault(token)
			_, err := e.svc.SendToDevice(ctx, d.ID, hello)
			wantCode(t, err, apperr.InvalidPushToken)
			got, _ := e.db.DeviceByID(ctx, d.ID)
			if got.PushTokenStatus != "invalid" || !got.Active {
				t.Fatalf("device %+v", got)
			}
			attempts := func() int { return e.fcm.Attempts(token) + e.apns.Attempts(token) }
			if attempts() != 1 {
				t.Fatalf("a dead token was tried %d times", attempts())
			}
			// Known now: the provider is not asked again.
			_, err = e.svc.SendToDevice(ctx, d.ID, hello)
			wantCode(t, err, apperr.InvalidPushToken)
			if attempts() != 1 {
				t.Fatal("the provider was called for a known invalid token")
			}
			// A new token makes the device valid again.
			if _, err := e.devices.UpdatePushToken(ctx, d.AccountID, d.ID, token+"-new"); err != nil {
				t.Fatal(err)
			}
			if _, err := e.svc.SendToDevice(ctx, d.ID, hello); err != nil {
				t.Fatalf("after a new token: %v", err)
			}
		})
	}
}

func TestRetryableThenSuccess(t *testing.T) {
	e := newEnv(t, sqlstoretest.NewURL(t, "sqlite"))
	ctx := context.Background()
	tests := []struct {
		name, platform, token string
		fault                 func()
		wantAttempts          func() int
	}{
		{"FCM UNAVAILABLE twice", "android", "fcm-flaky", func() { e.fcm.Fail("fcm-flaky", 2, fcmtest.Unavailable(0)) }, func() int { return e.fcm.Attempts("fcm-flaky") }},
		{"FCM INTERNAL once", "android", "fcm-internal", func() { e.fcm.Fail("fcm-internal", 1, fcmtest.Internal()) }, func() int { return e.fcm.Attempts("fcm-internal") }},
		{"APNs TooManyRequests once", "ios", "apns-flaky", func() { e.apns.Fail("apns-flaky", 1, apnstest.TooManyRequests()) }, func() int { return e.apns.Attempts("apns-flaky") }},
		{"APNs ServiceUnavailable twice", "ios", "apns-down", func() { e.apns.Fail("apns-down", 2, apnstest.ServiceUnavailable()) }, func() int { return e.apns.Attempts("apns-down") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := e.device(t, tt.platform, tt.token)
			tt.fault()
			res, err := e.svc.SendToDevice(ctx, d.ID, hello)
			if err != nil || res.Status != "sent" {
				t.Fatalf("%+v, %v", res, err)
			}
			delivered := e.fcm.Delivered(tt.token) + e.apns.Delivered(tt.token)
			if delivered != 1 || tt.wantAttempts() < 2 {
				t.Fatalf("delivered %d after %d attempts", delivered, tt.wantAttempts())
			}
		})
	}
}

func TestProviderFailures(t *testing.T) {
	e := newEnv(t, sqlstoretest.NewURL(t, "sqlite"))
	ctx := context.Background()
	tests := []struct {
		name, platform, token string
		fault, undo           func()
		code                  apperr.Code
	}{
		{"FCM down", "android", "t-fcm-down", func() { e.fcm.SetDown(true) }, func() { e.fcm.SetDown(false) }, apperr.UpstreamError},
		{"APNs down", "ios", "t-apns-down", func() { e.apns.SetDown(true) }, func() { e.apns.SetDown(false) }, apperr.UpstreamError},
		{"FCM quota with a long Retry-After", "android", "t-quota", func() { e.fcm.Fail("t-quota", -1, fcmtest.QuotaExceeded(time.Hour)) }, func() { e.fcm.Fail("t-quota", 0, fcmtest.Fault{}) }, apperr.UpstreamError},
		{"APNs provider token refused", "ios", "t-apns-auth", func() { e.apns.Fail("t-apns-auth", -1, apnstest.InvalidProviderToken()) }, func() { e.apns.Fail("t-apns-auth", 0, apnstest.Fault{}) }, apperr.UpstreamError},
		{"FCM refuses the payload", "android", "t-payload", func() { e.fcm.Fail("t-payload", -1, fcmtest.InvalidPayload()) }, func() { e.fcm.Fail("t-payload", 0, fcmtest.Fault{}) }, apperr.InvalidInput},
		// Last: the client keeps its revoked access token.
		{"FCM credentials revoked", "android", "t-auth", func() { e.fcm.RevokeAccessTokens(); e.fcm.SetTokenEndpointStatus(401) }, func() { e.fcm.SetTokenEndpointStatus(0) }, apperr.UpstreamError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := e.device(t, tt.platform, tt.token)
			tt.fault()
			defer tt.undo()
			_, err := e.svc.SendToDevice(ctx, d.ID, hello)
			ae := wantCode(t, err, tt.code)
			if tt.code == apperr.UpstreamError && ae.Status() != 502 {
				t.Fatalf("status %d", ae.Status())
			}
			if got, _ := e.db.DeviceByID(ctx, d.ID); got.PushTokenStatus != "valid" {
				t.Fatalf("a provider failure marked the device: %+v", got)
			}
		})
	}
	// Down means a short bounded retry, then the error.
	if n := e.fcm.Attempts("t-fcm-down"); n != 3 {
		t.Fatalf("FCM down: %d attempts, want 3", n)
	}
}

func TestNotificationValidation(t *testing.T) {
	e := newEnv(t, sqlstoretest.NewURL(t, "sqlite"))
	d := e.device(t, "android", "valid-token")
	tests := []struct {
		name  string
		n     notifications.Notification
		field string
	}{
		{"missing subject", notifications.Notification{Content: "c"}, "subject"},
		{"blank subject", notifications.Notification{Subject: "  \n", Content: "c"}, "subject"},
		{"missing content", notifications.Notification{Subject: "s"}, "content"},
		{"both missing", notifications.Notification{}, "subject"},
		{"subject too long", notifications.Notification{Subject: strings.Repeat("s", notifications.MaxSubjectBytes+1), Content: "c"}, "subject"},
		{"NUL in subject", notifications.Notification{Subject: "a\x00b", Content: "c"}, "subject"},
		{"control character in content", notifications.Notification{Subject: "s", Content: "c\x1b[31m"}, "content"},
		{"invalid UTF-8 in content", notifications.Notification{Subject: "s", Content: "c\xff"}, "content"},
		{"content too long", notifications.Notification{Subject: "s", Content: strings.Repeat("c", notifications.MaxContentBytes+1)}, "content"},
		{"data too large", notifications.Notification{Subject: "s", Content: "c", Data: map[string]any{"x": strings.Repeat("d", notifications.MaxDataBytes)}}, "data"},
		{"reserved data key", notifications.Notification{Subject: "s", Content: "c", Data: map[string]any{"from": "x"}}, "data"},
		{"reserved data prefix", notifications.Notification{Subject: "s", Content: "c", Data: map[string]any{"google.x": "x"}}, "data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for op, call := range map[string]func() error{
				"send":      func() error { _, err := e.svc.SendToDevice(context.Background(), d.ID, tt.n); return err },
				"broadcast": func() error { _, err := e.svc.Broadcast(context.Background(), tt.n); return err },
			} {
				ae := wantCode(t, call(), apperr.InvalidInput)
				if ae.Status() != 400 || ae.Details["field"] != tt.field {
					t.Fatalf("%s: status %d details %v", op, ae.Status(), ae.Details)
				}
			}
		})
	}
	if e.fcm.Attempts("valid-token") != 0 {
		t.Fatal("an invalid notification reached the provider")
	}
}
