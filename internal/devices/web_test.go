package devices_test

import (
	"context"
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/devices"
)

// A browser's subscription (RFC 8291's example keys), as toJSON() writes
// it, and its canonical form.
const (
	webP256dh = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
	webAuth   = "BTBZMqHH6r4Tts7J_aSIgg"
	webSub    = `{"endpoint":"https://push.example.net/push/abc","expirationTime":null,"keys":{"p256dh":"` + webP256dh + `=","auth":"` + webAuth + `"}}`
	webCanon  = `{"endpoint":"https://push.example.net/push/abc","keys":{"p256dh":"` + webP256dh + `","auth":"` + webAuth + `"}}`
)

func expectPushTokenInvalid(t *testing.T, what string, err error) {
	t.Helper()
	ae := apperr.As(err)
	if ae.Code != apperr.ValidationError || ae.Details["field"] != "pushToken" {
		t.Fatalf("%s: %v, want VALIDATION_ERROR naming pushToken", what, err)
	}
}

// A web device's token is its subscription, stored canonical: the same
// subscription spelled otherwise is the same device; a token that is no
// subscription is refused on every way in.
func TestWebDevices(t *testing.T) {
	each(t, func(t *testing.T, e env) {
		ctx := context.Background()
		a := e.account(t, "browser@example.com")
		d, err := e.svc.Register(ctx, a, devices.PlatformWeb, webSub, "")
		if err != nil {
			t.Fatal(err)
		}
		if d.PushToken != webCanon || d.Name != "Web browser" || d.Platform != "web" {
			t.Fatalf("registered %+v, want the canonical token %s", d, webCanon)
		}
		again, err := e.svc.Register(ctx, a, devices.PlatformWeb, " "+webCanon+" ", "")
		if err != nil || again.ID != d.ID {
			t.Fatalf("the same subscription again = %+v, %v; want device %s", again, err, d.ID)
		}

		for name, tok := range map[string]string{
			"an FCM token":      "fcm-token",
			"http endpoint":     strings.Replace(webSub, "https://", "http://", 1),
			"short auth":        strings.Replace(webSub, webAuth, "AAAA", 1),
			"key off the curve": strings.Replace(webSub, webP256dh, webP256dh[:85]+"5", 1),
		} {
			_, err := e.svc.Register(ctx, a, devices.PlatformWeb, tok, "")
			expectPushTokenInvalid(t, "register "+name, err)
			_, err = e.svc.UpdatePushToken(ctx, a, d.ID, tok)
			expectPushTokenInvalid(t, "update to "+name, err)
		}
		// An android device keeps taking plain tokens.
		phone, err := e.svc.Register(ctx, a, devices.PlatformAndroid, "fcm-token", "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.UpdatePushToken(ctx, a, phone.ID, "fcm-token-2"); err != nil {
			t.Fatal(err)
		}
		// A web device takes a new subscription, stored canonical.
		moved := strings.Replace(webSub, "/push/abc", "/push/def", 1)
		u, err := e.svc.UpdatePushToken(ctx, a, d.ID, moved)
		if err != nil || u.PushToken != strings.Replace(webCanon, "/push/abc", "/push/def", 1) {
			t.Fatalf("update = %+v, %v", u, err)
		}

		// The import checks web lines the same way.
		file := `{"email":"browser@example.com","platform":"web","pushToken":` + quote(strings.Replace(webSub, "/push/abc", "/push/ghi", 1)) + `}` + "\n" +
			`{"email":"browser@example.com","platform":"web","pushToken":"fcm-token-3"}`
		res, err := e.svc.Import(ctx, strings.NewReader(file), nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Imported != 1 || res.Rejected != 1 || len(res.Errors) != 1 || res.Errors[0].Line != 2 || !strings.Contains(res.Errors[0].Reason, "pushToken") {
			t.Fatalf("import = %+v, want line 1 imported and line 2 rejected for its pushToken", res)
		}
	})
}

// The loopback rule admits plain http on 127.0.0.1 only when asked.
func TestWebTokenLoopback(t *testing.T) {
	local := strings.Replace(webSub, "https://push.example.net", "http://127.0.0.1:8080", 1)
	if _, err := (devices.TokenRules{}).Normalize(devices.PlatformWeb, local); err == nil {
		t.Fatal("a plain http endpoint was admitted without AllowLoopbackWebPush")
	}
	if _, err := (devices.TokenRules{AllowLoopbackWebPush: true}).Normalize(devices.PlatformWeb, local); err != nil {
		t.Fatalf("with AllowLoopbackWebPush: %v", err)
	}
	if _, err := (devices.TokenRules{AllowLoopbackWebPush: true}).Normalize(devices.PlatformWeb, strings.Replace(local, "127.0.0.1", "push.example.net", 1)); err == nil {
		t.Fatal("plain http to a public host was admitted")
	}
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }
