package devices_test

import (
	"context"
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/devices"
)

// A Huawei Push Kit token as the HMS Core SDK gives it: an opaque string.
const hmsToken = "IQAAAACy0kYdAADGxHd9ZqjE0_kLe0rk1W5XN0JvB3v-3-Zo2XKJcZ5ZxVsh3hGLVqNwH1TBkhlXh6ZD7rQG3PbKdxvN2RWb3_0Vt9ZCfmw"

// A huawei device is registered, named, updated and imported like an
// android one: its token is opaque and checked by the same rule (trimmed,
// no spaces inside), not as a Web Push subscription.
func TestHuaweiDevices(t *testing.T) {
	each(t, func(t *testing.T, e env) {
		ctx := context.Background()
		a := e.account(t, "mate@example.com")
		d, err := e.svc.Register(ctx, a, devices.PlatformHuawei, " "+hmsToken+" ", "")
		if err != nil {
			t.Fatal(err)
		}
		if d.PushToken != hmsToken || d.Name != "Huawei device" || d.Platform != "huawei" || d.PushTokenStatus != devices.TokenValid {
			t.Fatalf("registered %+v", d)
		}
		for name, tok := range map[string]string{"empty": "  ", "a space inside": "IQAA AAAC", "a control character": "IQAA\x01"} {
			_, err := e.svc.Register(ctx, a, devices.PlatformHuawei, tok, "")
			expectPushTokenInvalid(t, "register "+name, err)
			_, err = e.svc.UpdatePushToken(ctx, a, d.ID, tok)
			expectPushTokenInvalid(t, "update to "+name, err)
		}
		u, err := e.svc.UpdatePushToken(ctx, a, d.ID, hmsToken+"-2")
		if err != nil || u.PushToken != hmsToken+"-2" || u.Platform != "huawei" {
			t.Fatalf("update = %+v, %v", u, err)
		}

		file := `{"email":"mate@example.com","platform":"huawei","pushToken":"` + hmsToken + `-3"}` + "\n" +
			`{"email":"mate@example.com","platform":"huawei","pushToken":"IQAA AAAC"}`
		res, err := e.svc.Import(ctx, strings.NewReader(file), nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Imported != 1 || res.Rejected != 1 || len(res.Errors) != 1 || res.Errors[0].Line != 2 || !strings.Contains(res.Errors[0].Reason, "pushToken") {
			t.Fatalf("import = %+v, want line 1 imported and line 2 rejected for its pushToken", res)
		}
		list, err := e.svc.List(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		var imported *devices.Device
		for i := range list {
			if list[i].PushToken == hmsToken+"-3" {
				imported = &list[i]
			}
		}
		if imported == nil || imported.Platform != "huawei" || imported.Name != "Huawei device" {
			t.Fatalf("imported device = %+v in %+v", imported, list)
		}
	})
}
