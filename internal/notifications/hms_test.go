package notifications_test

import (
	"context"
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/push/hms/hmstest"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

// A huawei device's push goes through Push Kit: both of its dead-token
// answers mark the device as a dead FCM token does; a notification too
// large for a Push Kit message is the caller's INVALID_INPUT, not the
// provider's failure; a misconfiguration is UPSTREAM_ERROR and leaves the
// device valid.
func TestHMSSends(t *testing.T) {
	e := newEnv(t, sqlstoretest.NewURL(t, "sqlite"))
	ctx := context.Background()
	register := func(email, token string) string {
		t.Helper()
		d, err := e.devices.Register(ctx, e.account(t, email), "huawei", token, "")
		if err != nil {
			t.Fatal(err)
		}
		return d.ID
	}
	liveID := register("live@example.com", "hms-live")
	if _, err := e.svc.SendToDevice(ctx, liveID, hello); err != nil {
		t.Fatalf("send to a huawei device: %v", err)
	}
	if m := e.hms.MessagesFor("hms-live"); len(m) != 1 || m[0].Title != hello.Subject || m[0].Body != hello.Content {
		t.Fatalf("Push Kit got %+v", m)
	}
	if n := e.fcm.Attempts("hms-live"); n != 0 {
		t.Fatalf("the huawei token reached FCM %d times", n)
	}

	for name, fault := range map[string]hmstest.Fault{"all tokens invalid": hmstest.AllTokensInvalid(), "illegal token": hmstest.IllegalToken()} {
		tok := "hms-dead-" + strings.ReplaceAll(name, " ", "-")
		id := register(tok+"@example.com", tok)
		e.hms.Fail(tok, -1, fault)
		_, err := e.svc.SendToDevice(ctx, id, hello)
		wantCode(t, err, apperr.InvalidPushToken)
		if d, _ := e.db.DeviceByID(ctx, id); d.PushTokenStatus != "invalid" {
			t.Fatalf("%s: the device is %q, want invalid", name, d.PushTokenStatus)
		}
		// Known dead: refused again without asking Push Kit.
		_, err = e.svc.SendToDevice(ctx, id, hello)
		wantCode(t, err, apperr.InvalidPushToken)
		if n := e.hms.Attempts(tok); n != 1 {
			t.Fatalf("%s: Push Kit was asked %d times, want once", name, n)
		}
	}

	bigID := register("big@example.com", "hms-big")
	huge := notifications.Notification{
		Subject: strings.Repeat("s", notifications.MaxSubjectBytes),
		Content: strings.Repeat("c", notifications.MaxContentBytes),
		Data:    map[string]any{"d": strings.Repeat("d", notifications.MaxDataBytes-16)},
		Options: notifications.PushOptions{ImageURL: "https://cdn.example.com/" + strings.Repeat("i", 1000)},
	}
	_, err := e.svc.SendToDevice(ctx, bigID, huge)
	if ae := wantCode(t, err, apperr.InvalidInput); ae.Details["field"] != "notification" {
		t.Fatalf("too large: details %v, want field notification", ae.Details)
	}
	if d, _ := e.db.DeviceByID(ctx, bigID); d.PushTokenStatus != "valid" {
		t.Fatalf("too large: the device is %q, want valid", d.PushTokenStatus)
	}

	e.hms.Fail("hms-live", 1, hmstest.NoPermission())
	_, err = e.svc.SendToDevice(ctx, liveID, hello)
	wantCode(t, err, apperr.UpstreamError)
	if d, _ := e.db.DeviceByID(ctx, liveID); d.PushTokenStatus != "valid" {
		t.Fatalf("no permission: the device is %q, want valid", d.PushTokenStatus)
	}
}
