package main

// Huawei Push Kit (issue 26) end to end: phones without Google's services
// register as huawei devices through both doors; sends by device, to the
// user and broadcasts to the huawei audience reach the fake Push Kit,
// which hands out the OAuth access token and checks each message; Push
// Kit's invalid-token answers mark the device invalid and later sends
// leave it out; the same user's android phone still goes to FCM.

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/herald-vpn/herald/internal/push/hms/hmstest"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

// hmsEnv points Herald at the fake Push Kit, the client secret in a file.
func hmsEnv(t *testing.T, fake *hmstest.Server) map[string]string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "hms-secret")
	if err := os.WriteFile(file, []byte(fake.ClientSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"HERALD_HMS_APP_ID":             fake.AppID,
		"HERALD_HMS_CLIENT_SECRET_FILE": file,
		"HERALD_HMS_TOKEN_URL":          fake.TokenURL(),
		"HERALD_HMS_SEND_URL":           fake.URL,
		"HERALD_PLAN_DEVICE_LIMITS":     "trial=10",
	}
}

// sendToDevice sends by device id through the door: REST with the API
// key, GraphQL with the admin's token.
func (f *sendsFixture) sendToDevice(t testing.TB, dn, deviceID string, n map[string]any) result {
	t.Helper()
	if dn == graphQLDoor.name {
		return sendOne(t, f.h, f.admin, deviceID, n)
	}
	return restCall(t, f.h, "POST", "/api/v1/notifications/devices/"+deviceID, map[string]any{"notification": n}, withAPIKey(f.key))
}

// hmsData decodes the data a Push Kit message carried (a JSON object in a
// string).
func hmsData(t testing.TB, m hmstest.Message) map[string]any {
	t.Helper()
	var data map[string]any
	if err := json.Unmarshal([]byte(m.Data), &data); err != nil {
		t.Fatalf("message data %q: %v", m.Data, err)
	}
	return data
}

func TestHMSE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		fake := hmstest.NewServer(t)
		f := newSendsFixture(t, d, hmsEnv(t, fake))
		h := f.h

		for _, dn := range doorNames {
			t.Run(dn, func(t *testing.T) {
				access, userID := newUserToken(t, h, dn, "mate-"+dn+"@example.com")
				live, dead, illegal, android := "hms-live-"+dn, "hms-dead-"+dn, "hms-illegal-"+dn, "fcm-"+dn
				ids := map[string]string{}
				for _, tok := range []string{live, dead, illegal} {
					r := registerDevice(t, h, dn, access, "huawei", " "+tok+" ", "")
					expectOK(t, "register a huawei device", r, map[string]int{"graphql": 200, "rest": 201}[dn])
					if jsonPath(r.data, "platform") != "huawei" || jsonPath(r.data, "pushToken") != tok || jsonPath(r.data, "name") != "Huawei device" || jsonPath(r.data, "pushTokenStatus") != "valid" {
						t.Fatalf("registered %v, want a huawei device named Huawei device with token %s", r.data, tok)
					}
					ids[tok] = jsonPath(r.data, "deviceId").(string)
				}
				ids[android] = mustRegister(t, h, dn, access, "android", android, "Pixel")["deviceId"].(string)
				r := registerDevice(t, h, dn, access, "huawei", "IQAA AAAC", "")
				expectError(t, "a token with a space", r, http.StatusBadRequest, "VALIDATION_ERROR")
				if r.details["field"] != "pushToken" {
					t.Errorf("a token with a space: details %v, want field pushToken", r.details)
				}

				// By device: the message reaches Push Kit as sent.
				r = f.sendToDevice(t, dn, ids[live], notify("Renewal", "Your plan renews tomorrow", map[string]any{"plan": "pro"}))
				expectOK(t, "send to the huawei device", r, http.StatusOK)
				if jsonPath(r.data, "status") != "sent" {
					t.Fatalf("send to the huawei device = %v", r.data)
				}
				msgs := fake.MessagesFor(live)
				if len(msgs) != 1 || msgs[0].Title != "Renewal" || msgs[0].Body != "Your plan renews tomorrow" || msgs[0].ClickActionType != 3 || msgs[0].AppID != fake.AppID {
					t.Fatalf("Push Kit got %+v", msgs)
				}
				if data := hmsData(t, msgs[0]); data["plan"] != "pro" {
					t.Fatalf("Push Kit got data %v, want plan pro", data)
				}
				if f.fake.Attempts(live) != 0 {
					t.Fatalf("the huawei token went to FCM too")
				}

				// Push Kit says all tokens are invalid (80300007): the send by
				// device is INVALID_PUSH_TOKEN and the device is marked invalid.
				fake.Fail(dead, -1, hmstest.AllTokensInvalid())
				expectError(t, "send to the dead huawei device", f.sendToDevice(t, dn, ids[dead], notify("Hi", "there", nil)), http.StatusUnprocessableEntity, "INVALID_PUSH_TOKEN")

				// To the user: the live huawei device through Push Kit, the
				// android phone through FCM; the dead one is left out; a token
				// Push Kit names illegal in a partial success (80100000) is
				// marked invalid too.
				fake.Fail(illegal, -1, hmstest.IllegalToken())
				n := map[string]any{"notification": notify("Outage", "Back at noon", nil)}
				r = f.sendToUser(t, dn, userID, n)
				expectOK(t, "send to user", r, http.StatusOK)
				want := map[string]string{ids[live]: "sent", ids[android]: "sent", ids[illegal]: "invalid_token INVALID_PUSH_TOKEN"}
				got := outcomesByDevice(t, r.data)
				if len(got) != len(want) {
					t.Fatalf("send to user = %v, want outcomes %v", r.data, want)
				}
				for id, w := range want {
					if got[id] != w {
						t.Fatalf("send to user = %v, want outcomes %v", r.data, want)
					}
				}
				if m := fake.MessagesFor(live); len(m) != 2 || m[1].Title != "Outage" || m[1].Body != "Back at noon" {
					t.Fatalf("Push Kit got %+v for the live device", m)
				}
				if m := f.fake.MessagesFor(android); len(m) != 1 || m[0].Title != "Outage" || fake.Attempts(android) != 0 {
					t.Fatalf("FCM got %+v for the android phone; Push Kit was tried %d times with it", m, fake.Attempts(android))
				}
				if fake.Attempts(dead) != 1 {
					t.Fatalf("the dead huawei device was tried %d times, want once", fake.Attempts(dead))
				}
				for _, dev := range listDevices(t, h, dn, access) {
					wantStatus := map[string]string{ids[live]: "valid", ids[android]: "valid", ids[dead]: "invalid", ids[illegal]: "invalid"}[dev["deviceId"].(string)]
					if dev["pushTokenStatus"] != wantStatus {
						t.Fatalf("device %v, want pushTokenStatus %s", dev, wantStatus)
					}
				}
				// The next send leaves both dead devices out.
				r = f.sendToUser(t, dn, userID, n)
				expectOK(t, "second send to user", r, http.StatusOK)
				if got := outcomesByDevice(t, r.data); len(got) != 2 || got[ids[live]] != "sent" || got[ids[android]] != "sent" || fake.Attempts(dead) != 1 || fake.Attempts(illegal) != 1 {
					t.Fatalf("second send = %v; the dead devices were tried %d and %d times", r.data, fake.Attempts(dead), fake.Attempts(illegal))
				}
			})
		}

		// A broadcast to the huawei audience, through each door, reaches
		// every live huawei device and no android phone; a token Push Kit
		// finds invalid in a broadcast is counted and marked invalid.
		lateAccess, _ := newUserToken(t, h, restDoor.name, "late-mate@example.com")
		late := "hms-late"
		lateID := mustRegister(t, h, restDoor.name, lateAccess, "huawei", late, "Mate")["deviceId"].(string)
		fake.Fail(late, -1, hmstest.AllTokensInvalid())
		// One live huawei device per door; the late one is dead at the
		// first broadcast.
		broadcastToPlatform(t, f, "huawei", lateAccess, lateID, func(body string) int {
			got := 0
			for _, m := range fake.Messages() {
				if m.Title == "News" && m.Body == body {
					got++
				}
			}
			return got
		})

		// An operator's test of a bare Push Kit token, with no device.
		byToken := `mutation T($p: String!, $t: String!, $n: NotificationInput!) { sendNotificationByToken(platform: $p, pushToken: $t, notification: $n) { status message } }`
		r := gql(t, h, "sendNotificationByToken", byToken, map[string]any{"p": "huawei", "t": "hms-bare", "n": notify("Test", "A bare token", nil)}, withBearer(f.admin))
		expectOK(t, "send to a bare huawei token", r, http.StatusOK)
		if m := fake.MessagesFor("hms-bare"); len(m) != 1 || m[0].Body != "A bare token" {
			t.Fatalf("the bare token got %v", m)
		}

		// One access token served every send: none was refused.
		if fake.TokenRequests() < 1 || fake.RefusedAccessTokens() != 0 {
			t.Fatalf("token requests %d, refused access tokens %d", fake.TokenRequests(), fake.RefusedAccessTokens())
		}
		// Push Kit's calls are counted as provider hms: per door three sent
		// and two dead, four sent and one dead in the broadcasts, the bare
		// token.
		for sample, want := range map[string]float64{
			`herald_push_sends_total{outcome="sent",provider="hms"}`:       3*float64(len(doorNames)) + 2*float64(len(doorNames)) + 1,
			`herald_push_sends_total{outcome="dead_token",provider="hms"}`: 2*float64(len(doorNames)) + 1,
		} {
			if got := h.metric(t, sample); got != want {
				t.Errorf("%s = %v, want %v", sample, got, want)
			}
		}
	})
}

// With FCM but not Push Kit configured, a huawei device can be registered
// but a send to it is refused as the operator's problem (UPSTREAM_ERROR):
// it neither goes to FCM nor marks the device invalid.
func TestHMSUnconfiguredE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		f := newSendsFixture(t, d, nil)
		id := mustRegister(t, f.h, restDoor.name, f.access, "huawei", "hms-orphan", "")["deviceId"].(string)
		for _, dn := range doorNames {
			expectError(t, "send to a huawei device without HMS over "+dn, f.sendToDevice(t, dn, id, notify("Hi", "there", nil)), http.StatusBadGateway, "UPSTREAM_ERROR")
		}
		if f.fake.Attempts("hms-orphan") != 0 {
			t.Fatal("a huawei token went to FCM")
		}
		for _, dev := range listDevices(t, f.h, restDoor.name, f.access) {
			if dev["deviceId"] == id && dev["pushTokenStatus"] != "valid" {
				t.Fatalf("device %v, want it still valid", dev)
			}
		}
	})
}
