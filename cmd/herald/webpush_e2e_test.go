package main

// Web Push (issue 26) end to end: browsers register their PushSubscription
// as a web device through both doors, sends to a user and broadcasts reach
// the fake push service, which decrypts each push with the subscription's
// own key; a 410 marks the subscription dead; a bad subscription is
// VALIDATION_ERROR.

import (
	"encoding/base64"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/push/webpush"
	"github.com/herald-vpn/herald/internal/push/webpush/webpushtest"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

// webPushEnv configures Web Push with a new VAPID key (returned) and lets
// subscriptions point at the plain-http fake on 127.0.0.1.
func webPushEnv(t *testing.T) (map[string]string, *webpush.VAPIDKey) {
	t.Helper()
	pemKey, err := webpush.GenerateVAPIDKey()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "vapid.pem")
	if err := os.WriteFile(file, pemKey, 0o600); err != nil {
		t.Fatal(err)
	}
	key, err := webpush.ParseVAPIDKey(pemKey)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"HERALD_VAPID_PRIVATE_KEY_FILE": file,
		"HERALD_VAPID_SUBJECT":          "mailto:ops@example.com",
		"HERALD_WEBPUSH_ALLOW_PRIVATE":  "on",
		"HERALD_PLAN_DEVICE_LIMITS":     "trial=10",
	}, key
}

const vapidKeyDoc = `query { vapidPublicKey }`

func TestWebPushE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		env, key := webPushEnv(t)
		f := newSendsFixture(t, d, env)
		h := f.h
		fake := webpushtest.NewServer(t, webpushtest.PlainHTTP())

		// The public key, to subscribe with, without a credential.
		r := restCall(t, h, "GET", "/api/v1/push/vapid-public-key", nil)
		expectOK(t, "VAPID key over REST", r, http.StatusOK)
		if jsonPath(r.data, "publicKey") != key.Public() {
			t.Fatalf("REST VAPID key %v, want %s", r.data, key.Public())
		}
		g := gql(t, h, "vapidPublicKey", vapidKeyDoc, nil)
		expectOK(t, "VAPID key over GraphQL", g, http.StatusOK)
		if g.data != key.Public() {
			t.Fatalf("GraphQL vapidPublicKey %v, want %s", g.data, key.Public())
		}

		for _, dn := range doorNames {
			t.Run(dn, func(t *testing.T) {
				access, userID := newUserToken(t, h, dn, "browser-"+dn+"@example.com")
				sub, dead := fake.Subscribe(), fake.Subscribe()
				ids := map[string]string{}
				for _, s := range []webpushtest.Subscription{sub, dead} {
					r := registerDevice(t, h, dn, access, "web", s.JSON, "Firefox")
					expectOK(t, "register a web device", r, map[string]int{"graphql": 200, "rest": 201}[dn])
					canon, err := webpush.CanonicalSubscription(s.JSON, webpush.AllowLoopbackHTTP())
					if err != nil {
						t.Fatal(err)
					}
					if jsonPath(r.data, "platform") != "web" || jsonPath(r.data, "pushToken") != canon || jsonPath(r.data, "pushTokenStatus") != "valid" {
						t.Fatalf("registered %v, want platform web and token %s", r.data, canon)
					}
					ids[s.ID] = jsonPath(r.data, "deviceId").(string)
				}

				// Bad subscriptions are the client's mistake, never a 500.
				for name, tok := range map[string]string{
					"not JSON":       "reader-browser",
					"http endpoint":  `{"endpoint":"http://push.example.net/1","keys":{"p256dh":"` + webpushtestKey(t, sub) + `","auth":"AAAAAAAAAAAAAAAAAAAAAA"}}`,
					"short auth":     `{"endpoint":"https://push.example.net/1","keys":{"p256dh":"` + webpushtestKey(t, sub) + `","auth":"AAAA"}}`,
					"no keys at all": `{"endpoint":"https://push.example.net/1"}`,
				} {
					r := registerDevice(t, h, dn, access, "web", tok, "")
					expectError(t, name, r, http.StatusBadRequest, "VALIDATION_ERROR")
					if r.details["field"] != "pushToken" {
						t.Errorf("%s: details %v, want field pushToken", name, r.details)
					}
				}

				// A send to the user reaches both browsers; one subscription
				// is gone (410) and its device is marked invalid.
				fake.Fail(dead.ID, -1, webpushtest.Gone())
				n := map[string]any{"notification": notify("Renewal", "Your plan renews tomorrow", map[string]any{"plan": "pro"})}
				r := f.sendToUser(t, dn, userID, n)
				expectOK(t, "send to user", r, http.StatusOK)
				want := map[string]string{ids[sub.ID]: "sent", ids[dead.ID]: "invalid_token INVALID_PUSH_TOKEN"}
				if got := outcomesByDevice(t, r.data); len(got) != 2 || got[ids[sub.ID]] != want[ids[sub.ID]] || got[ids[dead.ID]] != want[ids[dead.ID]] {
					t.Fatalf("send to user = %v, want outcomes %v", r.data, want)
				}
				msgs := fake.MessagesFor(sub.ID)
				if len(msgs) != 1 || msgs[0].Title != "Renewal" || msgs[0].Body != "Your plan renews tomorrow" || msgs[0].Data["plan"] != "pro" {
					t.Fatalf("the browser decrypted %v", msgs)
				}
				if msgs[0].VAPIDKey != key.Public() {
					t.Fatalf("pushed with VAPID key %s, want %s", msgs[0].VAPIDKey, key.Public())
				}
				for _, dev := range listDevices(t, h, dn, access) {
					wantStatus := map[string]string{ids[sub.ID]: "valid", ids[dead.ID]: "invalid"}[dev["deviceId"].(string)]
					if dev["pushTokenStatus"] != wantStatus {
						t.Fatalf("device %v, want pushTokenStatus %s", dev, wantStatus)
					}
				}
				// The dead subscription is left out of the next send.
				r = f.sendToUser(t, dn, userID, n)
				expectOK(t, "second send to user", r, http.StatusOK)
				if got := outcomesByDevice(t, r.data); len(got) != 1 || got[ids[sub.ID]] != "sent" || fake.Attempts(dead.ID) != 1 {
					t.Fatalf("second send = %v, the dead subscription was tried %d times", r.data, fake.Attempts(dead.ID))
				}
			})
		}

		// A broadcast to the web audience, through each door, reaches every
		// live browser and no phone; a subscription found gone (404) in a
		// broadcast is marked invalid too.
		lateAccess, _ := newUserToken(t, h, restDoor.name, "late-browser@example.com")
		late := fake.Subscribe()
		lr := registerDevice(t, h, restDoor.name, lateAccess, "web", late.JSON, "")
		expectOK(t, "register the late browser", lr, http.StatusCreated)
		lateID := jsonPath(lr.data, "deviceId").(string)
		fake.Fail(late.ID, -1, webpushtest.NotFound())
		// One live browser per door; the late one is gone at the first
		// broadcast.
		broadcastToPlatform(t, f, "web", lateAccess, lateID, func(body string) int {
			got := 0
			for _, m := range fake.Messages() {
				if m.Title == "News" && m.Body == body {
					got++
				}
			}
			return got
		})
		// An operator's test of a bare subscription, with no device.
		byToken := `mutation T($p: String!, $t: String!, $n: NotificationInput!) { sendNotificationByToken(platform: $p, pushToken: $t, notification: $n) { status message } }`
		bare := fake.Subscribe()
		r = gql(t, h, "sendNotificationByToken", byToken, map[string]any{"p": "web", "t": bare.JSON, "n": notify("Test", "A bare subscription", nil)}, withBearer(f.admin))
		expectOK(t, "send to a bare subscription", r, http.StatusOK)
		if m := fake.MessagesFor(bare.ID); len(m) != 1 || m[0].Body != "A bare subscription" {
			t.Fatalf("the bare subscription got %v", m)
		}
		r = gql(t, h, "sendNotificationByToken", byToken, map[string]any{"p": "web", "t": "fcm-token", "n": notify("Test", "x", nil)}, withBearer(f.admin))
		expectError(t, "a bare token that is no subscription", r, http.StatusBadRequest, "VALIDATION_ERROR")

		if rej := fake.Rejected(); len(rej) != 0 {
			t.Fatalf("the fake push service refused pushes: %v", rej)
		}
	})
}

// webpushtestKey is sub's p256dh as the browser gives it.
func webpushtestKey(t *testing.T, sub webpushtest.Subscription) string {
	t.Helper()
	return base64.RawURLEncoding.EncodeToString(sub.Private.PublicKey().Bytes())
}

// `herald keys vapid` prints a key the server can use, and its public key.
func TestKeysVAPID(t *testing.T) {
	t.Parallel()
	stdout, stderr, err := runHerald(t, nil, "", "keys", "vapid")
	if err != nil {
		t.Fatalf("keys vapid: %v\n%s", err, stderr)
	}
	key, err := webpush.ParseVAPIDKey([]byte(stdout))
	if err != nil {
		t.Fatalf("keys vapid printed %q: %v", stdout, err)
	}
	if want := "public key (applicationServerKey): " + key.Public(); !strings.Contains(stderr, want) {
		t.Fatalf("stderr %q lacks %q", stderr, want)
	}
	if _, err := webpush.New([]byte(stdout), "mailto:ops@example.com", webpush.Options{}); err != nil {
		t.Fatalf("the key does not make a client: %v", err)
	}
}
