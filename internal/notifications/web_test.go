package notifications_test

import (
	"context"
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/push/webpush/webpushtest"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

// A web device's push goes through Web Push: decrypted by its browser, a
// gone subscription marks the device as a dead FCM token does, and a
// notification too large for one Web Push record is the caller's
// INVALID_INPUT, not the provider's failure.
func TestWebSends(t *testing.T) {
	e := newEnv(t, sqlstoretest.NewURL(t, "sqlite"))
	ctx := context.Background()
	register := func(email string, sub webpushtest.Subscription) string {
		t.Helper()
		d, err := e.devices.Register(ctx, e.account(t, email), "web", sub.JSON, "")
		if err != nil {
			t.Fatal(err)
		}
		return d.ID
	}
	live, gone, big := e.web.Subscribe(), e.web.Subscribe(), e.web.Subscribe()
	liveID, goneID, bigID := register("live@example.com", live), register("gone@example.com", gone), register("big@example.com", big)

	if _, err := e.svc.SendToDevice(ctx, liveID, hello); err != nil {
		t.Fatalf("send to a web device: %v (the fake refused %v)", err, e.web.Rejected())
	}
	if m := e.web.MessagesFor(live.ID); len(m) != 1 || m[0].Title != hello.Subject || m[0].Body != hello.Content {
		t.Fatalf("the browser read %v", m)
	}

	e.web.Fail(gone.ID, -1, webpushtest.Gone())
	_, err := e.svc.SendToDevice(ctx, goneID, hello)
	wantCode(t, err, apperr.InvalidPushToken)
	if d, _ := e.db.DeviceByID(ctx, goneID); d.PushTokenStatus != "invalid" {
		t.Fatalf("the gone subscription's device is %q, want invalid", d.PushTokenStatus)
	}

	huge := notifications.Notification{
		Subject: strings.Repeat("s", notifications.MaxSubjectBytes),
		Content: strings.Repeat("c", notifications.MaxContentBytes),
		Data:    map[string]any{"d": strings.Repeat("d", notifications.MaxDataBytes-16)},
		Options: notifications.PushOptions{ImageURL: "https://cdn.example.com/" + strings.Repeat("i", 1000)},
	}
	_, err = e.svc.SendToDevice(ctx, bigID, huge)
	if ae := wantCode(t, err, apperr.InvalidInput); ae.Details["field"] != "notification" {
		t.Fatalf("too large: details %v, want field notification", ae.Details)
	}
	if n := e.web.Attempts(big.ID); n != 0 {
		t.Fatalf("a too large push reached the push service %d times", n)
	}
}
