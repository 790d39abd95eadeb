package main

// Notification preferences (issue 26) end to end: read and changed on
// both doors and through the admin API, refused where they must be, and
// obeyed by sends to a user and by broadcasts, on both databases.

import (
	"net/http"
	"testing"

	"fmt"
	"github.com/herald-vpn/herald/internal/push/webpush/webpushtest"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"time"
)

const preferencesFields = `categories { category critical channels { push telegram email webPush inbox } } timeZone quietHours { start end }`

var preferenceDocs = map[string]string{
	"myNotificationPreferences":         `query { myNotificationPreferences { ` + preferencesFields + ` } }`,
	"updateMyNotificationPreferences":   `mutation ($s: [NotificationSettingInput!], $tz: String, $q: QuietHoursInput) { updateMyNotificationPreferences(settings: $s, timeZone: $tz, quietHours: $q) { ` + preferencesFields + ` } }`,
	"userNotificationPreferences":       `query ($id: ID!) { userNotificationPreferences(userId: $id) { ` + preferencesFields + ` } }`,
	"updateUserNotificationPreferences": `mutation ($id: ID!, $s: [NotificationSettingInput!]) { updateUserNotificationPreferences(userId: $id, settings: $s) { ` + preferencesFields + ` } }`,
	"sendNotificationToUser": `mutation ($id: ID!, $n: NotificationInput!, $c: String, $u: Boolean) {
  sendNotificationToUser(userId: $id, notification: $n, category: $c, urgent: $u) { userId status message heldUntil skipped { optedOut } outcomes { deviceId status } } }`,
	"sendNotificationToAll":  `mutation ($n: NotificationInput!, $c: String) { sendNotificationToAll(notification: $n, category: $c) { jobId status totalRecipients } }`,
	"notificationCategories": `query { notificationCategories { name critical } }`,
}

// categoriesOp reads the deployment's categories through the door.
func categoriesOp(t *testing.T, h *herald, dn string, auth reqOption) result {
	t.Helper()
	if dn == graphQLDoor.name {
		return gql(t, h, "notificationCategories", preferenceDocs["notificationCategories"], nil, auth)
	}
	return restCall(t, h, http.MethodGet, "/api/v1/notifications/categories", nil, auth)
}

// preferencesOp calls one preferences operation through the door: the
// caller's own with token, a user's (userID set) as an operator.
func preferencesOp(t *testing.T, h *herald, dn, op, userID string, settings []map[string]any, token string) result {
	t.Helper()
	if dn == graphQLDoor.name {
		vars := map[string]any{}
		if userID != "" {
			vars["id"] = userID
		}
		if settings != nil {
			vars["s"] = settings
		}
		return gql(t, h, op, preferenceDocs[op], vars, withBearer(token))
	}
	path := "/api/v1/users/me/notification-preferences"
	if userID != "" {
		path = "/api/v1/admin/users/" + userID + "/notification-preferences"
	}
	if settings == nil {
		return restCall(t, h, http.MethodGet, path, nil, withBearer(token))
	}
	return restCall(t, h, http.MethodPatch, path, map[string]any{"settings": settings}, withBearer(token))
}

func setting(category, channel string, on bool) map[string]any {
	return map[string]any{"category": category, "channel": channel, "enabled": on}
}

// channelOf reads one category's channel from a preferences answer.
func channelOf(t *testing.T, data any, category, channel string) bool {
	t.Helper()
	list, _ := jsonPath(data, "categories").([]any)
	for _, c := range list {
		if jsonPath(c, "category") == category {
			on, ok := jsonPath(c, "channels", channel).(bool)
			if !ok {
				t.Fatalf("no channel %s in %v", channel, c)
			}
			return on
		}
	}
	t.Fatalf("no category %s in %v", category, data)
	return false
}

func TestNotificationPreferencesE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		env, _ := webPushEnv(t)
		env["HERALD_NOTIFICATION_CATEGORIES"] = "vpn-tips"
		f := newSendsFixture(t, d, env)
		h := f.h
		browsers := webpushtest.NewServer(t, webpushtest.PlainHTTP())
		optedOut := 0 // devices whose owner turned product push off so far
		for _, dn := range doorNames {
			t.Run(dn, func(t *testing.T) {
				access, userID := newUserToken(t, h, dn, "prefs-"+dn+"@example.com")
				token := dn + "-prefs-phone"
				mustRegister(t, h, dn, access, "android", token, "")

				// A user who never chose has everything on.
				r := preferencesOp(t, h, dn, "myNotificationPreferences", "", nil, access)
				expectOK(t, "read preferences", r, http.StatusOK)
				list, _ := jsonPath(r.data, "categories").([]any)
				want := []string{"security", "billing", "service", "product", "messages", "vpn-tips"}
				if len(list) != len(want) {
					t.Fatalf("categories %v, want %v", r.data, want)
				}
				for i, c := range list {
					critical := want[i] == "security" || want[i] == "billing"
					if jsonPath(c, "category") != want[i] || jsonPath(c, "critical") != critical {
						t.Fatalf("category %d = %v, want %s (critical %v)", i, c, want[i], critical)
					}
					for _, ch := range []string{"push", "telegram", "email", "webPush", "inbox"} {
						if !channelOf(t, r.data, want[i], ch) {
							t.Fatalf("%s/%s is off for a user who never chose", want[i], ch)
						}
					}
				}

				// The categories a send may name, for those who send: an
				// operator (and on REST an API key with notifications:send);
				// not the user.
				senders := []reqOption{withBearer(f.admin)}
				if dn == restDoor.name {
					senders = append(senders, withAPIKey(f.key))
				}
				for _, who := range senders {
					r := categoriesOp(t, h, dn, who)
					expectOK(t, "read the categories", r, http.StatusOK)
					got, _ := r.data.([]any)
					if len(got) != len(want) {
						t.Fatalf("categories %v, want %v", r.data, want)
					}
					for i, c := range got {
						critical := want[i] == "security" || want[i] == "billing"
						if jsonPath(c, "name") != want[i] || jsonPath(c, "critical") != critical {
							t.Fatalf("category %d = %v, want %s (critical %v)", i, c, want[i], critical)
						}
					}
				}
				expectError(t, "a user reads the categories", categoriesOp(t, h, dn, withBearer(access)), http.StatusForbidden, "INSUFFICIENT_PERMISSIONS")

				// The user turns product push and vpn-tips email off.
				r = preferencesOp(t, h, dn, "updateMyNotificationPreferences", "", []map[string]any{setting("product", "push", false), setting("vpn-tips", "email", false)}, access)
				expectOK(t, "turn product push off", r, http.StatusOK)
				if channelOf(t, r.data, "product", "push") || channelOf(t, r.data, "vpn-tips", "email") || !channelOf(t, r.data, "product", "telegram") || !channelOf(t, r.data, "service", "push") {
					t.Fatalf("after the change: %v", r.data)
				}
				optedOut++

				// What is refused, and naming what.
				for _, tc := range []struct {
					what     string
					settings []map[string]any
					field    string
				}{
					{"security off", []map[string]any{setting("security", "push", false)}, "category"},
					{"billing off", []map[string]any{setting("product", "email", false), setting("billing", "email", false)}, "category"},
					{"an unknown category", []map[string]any{setting("promotions", "push", false)}, "category"},
					{"an unknown channel", []map[string]any{setting("product", "sms", false)}, "channel"},
					{"nothing", []map[string]any{}, "settings"},
				} {
					r := preferencesOp(t, h, dn, "updateMyNotificationPreferences", "", tc.settings, access)
					expectError(t, tc.what, r, http.StatusBadRequest, "VALIDATION_ERROR")
					if r.details["field"] != tc.field {
						t.Fatalf("%s: details %v, want field %s", tc.what, r.details, tc.field)
					}
				}
				if dn == restDoor.name { // GraphQL's Boolean! cannot be left out
					r := restCall(t, h, http.MethodPatch, "/api/v1/users/me/notification-preferences", map[string]any{"settings": []map[string]any{{"category": "product", "channel": "push"}}}, withBearer(access))
					expectError(t, "a setting without enabled", r, http.StatusBadRequest, "VALIDATION_ERROR")
				}
				r = preferencesOp(t, h, dn, "myNotificationPreferences", "", nil, access)
				// "billing off" was refused whole: its product email change did not land either.
				if !channelOf(t, r.data, "product", "email") || !channelOf(t, r.data, "billing", "email") {
					t.Fatalf("a refused change landed in part, or billing went off: %v", r.data)
				}

				// Sends obey: product skips the device, service reaches it.
				send := func(category any) result {
					n := notify("News", "Something new", nil)
					if dn == graphQLDoor.name {
						return gql(t, h, "sendNotificationToUser", preferenceDocs["sendNotificationToUser"], map[string]any{"id": userID, "n": n, "c": category}, withBearer(f.admin))
					}
					body := map[string]any{"notification": n}
					if category != nil {
						body["category"] = category
					}
					return restCall(t, h, http.MethodPost, "/api/v1/notifications/users/"+userID, body, withAPIKey(f.key))
				}
				r = send("product")
				expectOK(t, "a product send", r, http.StatusOK)
				if jsonPath(r.data, "status") != "no_recipients" || asInt(t, jsonPath(r.data, "skipped", "optedOut")) != 1 || f.fake.Delivered(token) != 0 {
					t.Fatalf("a product send to a user who turned it off = %v; the device got %d", r.data, f.fake.Delivered(token))
				}
				r = send(nil) // no category: service
				expectOK(t, "a send without a category", r, http.StatusOK)
				if jsonPath(r.data, "status") != "sent" || asInt(t, jsonPath(r.data, "skipped", "optedOut")) != 0 || f.fake.Delivered(token) != 1 {
					t.Fatalf("a service send = %v; the device got %d", r.data, f.fake.Delivered(token))
				}
				r = send("promotions")
				expectError(t, "an unknown category", r, http.StatusBadRequest, "INVALID_INPUT")
				if r.details["field"] != "category" {
					t.Fatalf("an unknown category: details %v", r.details)
				}

				// A product broadcast skips every device whose owner turned
				// product push off, and counts them.
				var b result
				if dn == graphQLDoor.name {
					b = gql(t, h, "sendNotificationToAll", preferenceDocs["sendNotificationToAll"], map[string]any{"n": notify("Sale", "Half price", nil), "c": "product"}, withBearer(f.admin))
				} else {
					b = restCall(t, h, http.MethodPost, "/api/v1/notifications/broadcasts", map[string]any{"notification": notify("Sale", "Half price", nil), "category": "product"}, withAPIKey(f.key))
				}
				expectOK(t, "a product broadcast", b, map[string]int{"rest": http.StatusAccepted, "graphql": http.StatusOK}[dn])
				jobID, _ := jsonPath(b.data, "jobId").(string)
				total := asInt(t, jsonPath(b.data, "totalRecipients"))
				job := completedJob(t, h, jobID, withAPIKey(f.key))
				if job["category"] != "product" || asInt(t, jsonPath(job, "skipped", "optedOut")) != optedOut || asInt(t, job["sent"]) != total-optedOut {
					t.Fatalf("product broadcast %v: want category product, %d opted out and %d sent of %d", job, optedOut, total-optedOut, total)
				}
				if f.fake.Delivered(token) != 1 {
					t.Fatalf("the opted-out device got the product broadcast (%d pushes)", f.fake.Delivered(token))
				}

				// Channels are apart: a browser (webPush) and a phone (push)
				// of one user, messages off on the browser only.
				browser := browsers.Subscribe()
				expectOK(t, "register a browser", registerDevice(t, h, dn, access, "web", browser.JSON, "Firefox"), map[string]int{"graphql": 200, "rest": 201}[dn])
				r = preferencesOp(t, h, dn, "updateMyNotificationPreferences", "", []map[string]any{setting("messages", "webPush", false)}, access)
				expectOK(t, "turn messages off on web push", r, http.StatusOK)
				if channelOf(t, r.data, "messages", "webPush") || !channelOf(t, r.data, "messages", "push") {
					t.Fatalf("after turning messages web push off: %v", r.data)
				}
				r = send("messages")
				expectOK(t, "a messages send", r, http.StatusOK)
				if jsonPath(r.data, "status") != "sent" || asInt(t, jsonPath(r.data, "skipped", "optedOut")) != 1 || f.fake.Delivered(token) != 2 || len(browsers.MessagesFor(browser.ID)) != 0 {
					t.Fatalf("a messages send = %v: the phone got %d (want 2), the browser %d (want 0)", r.data, f.fake.Delivered(token), len(browsers.MessagesFor(browser.ID)))
				}
				r = send("service")
				if jsonPath(r.data, "status") != "sent" || len(browsers.MessagesFor(browser.ID)) != 1 || f.fake.Delivered(token) != 3 {
					t.Fatalf("a service send = %v: the browser got %d (want 1)", r.data, len(browsers.MessagesFor(browser.ID)))
				}

				// An operator reads and changes the user's preferences.
				expectError(t, "a user on the admin door", preferencesOp(t, h, dn, "userNotificationPreferences", userID, nil, access), http.StatusForbidden, "INSUFFICIENT_PERMISSIONS")
				expectError(t, "an unknown user", preferencesOp(t, h, dn, "userNotificationPreferences", "0197a3c2-5e1f-7c3a-9b2d-4f6e8a1c0d2b", nil, f.admin), http.StatusNotFound, "USER_NOT_FOUND")
				r = preferencesOp(t, h, dn, "userNotificationPreferences", userID, nil, f.admin)
				expectOK(t, "an operator reads", r, http.StatusOK)
				if channelOf(t, r.data, "product", "push") {
					t.Fatalf("the operator reads product push on: %v", r.data)
				}
				r = preferencesOp(t, h, dn, "updateUserNotificationPreferences", userID, []map[string]any{setting("product", "push", true)}, f.admin)
				expectOK(t, "an operator turns it back on", r, http.StatusOK)
				if !channelOf(t, r.data, "product", "push") {
					t.Fatalf("after the operator's change: %v", r.data)
				}
				optedOut--
				r = send("product")
				if jsonPath(r.data, "status") != "sent" || f.fake.Delivered(token) != 4 {
					t.Fatalf("a product send after the operator's change = %v; the device got %d", r.data, f.fake.Delivered(token))
				}
			})
		}
	})
}

// scheduleOp changes the caller's time zone and quiet hours through the
// door (body holds timeZone and quietHours as the REST body has them).
func scheduleOp(t *testing.T, h *herald, dn string, body map[string]any, token string) result {
	t.Helper()
	if dn == graphQLDoor.name {
		vars := map[string]any{}
		if v, ok := body["timeZone"]; ok {
			vars["tz"] = v
		}
		if v, ok := body["quietHours"]; ok {
			vars["q"] = v
		}
		return gql(t, h, "updateMyNotificationPreferences", preferenceDocs["updateMyNotificationPreferences"], vars, withBearer(token))
	}
	return restCall(t, h, http.MethodPatch, "/api/v1/users/me/notification-preferences", body, withBearer(token))
}

// Quiet hours through the doors: set, read back, refused when malformed;
// a send inside them is held until their end, a security or urgent one
// is not. (Delivery at the end is TestQuietHoursHoldUntilTheEnd's, with a
// clock the test moves.)
func TestQuietHoursE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		f := newSendsFixture(t, d, nil)
		h := f.h
		for _, dn := range doorNames {
			t.Run(dn, func(t *testing.T) {
				access, userID := newUserToken(t, h, dn, "quiet-"+dn+"@example.com")
				token := dn + "-quiet-phone"
				mustRegister(t, h, dn, access, "android", token, "")
				now := time.Now().UTC()
				start, end := now.Add(-time.Hour).Format("15:04"), now.Add(2*time.Hour).Format("15:04")

				for _, tc := range []struct {
					what  string
					body  map[string]any
					field string
				}{
					{"an unknown zone", map[string]any{"timeZone": "Mars/Olympus"}, "timeZone"},
					{"a bad start", map[string]any{"quietHours": map[string]any{"enabled": true, "start": "25:00", "end": "07:00"}}, "quietHours.start"},
					{"no end", map[string]any{"quietHours": map[string]any{"enabled": true, "start": "22:00"}}, "quietHours.end"},
					{"an empty window", map[string]any{"quietHours": map[string]any{"enabled": true, "start": "22:00", "end": "22:00"}}, "quietHours.end"},
				} {
					r := scheduleOp(t, h, dn, tc.body, access)
					expectError(t, tc.what, r, http.StatusBadRequest, "VALIDATION_ERROR")
					if r.details["field"] != tc.field {
						t.Fatalf("%s: details %v, want field %s", tc.what, r.details, tc.field)
					}
				}

				r := scheduleOp(t, h, dn, map[string]any{"timeZone": "UTC", "quietHours": map[string]any{"enabled": true, "start": start, "end": end}}, access)
				expectOK(t, "set quiet hours", r, http.StatusOK)
				if jsonPath(r.data, "timeZone") != "UTC" || jsonPath(r.data, "quietHours", "start") != start || jsonPath(r.data, "quietHours", "end") != end {
					t.Fatalf("after setting quiet hours %s–%s UTC: %v", start, end, r.data)
				}

				send := func(category string, urgent bool) result {
					n := notify("Tip", "A tip for the night", nil)
					if dn == graphQLDoor.name {
						return gql(t, h, "sendNotificationToUser", preferenceDocs["sendNotificationToUser"], map[string]any{"id": userID, "n": n, "c": category, "u": urgent}, withBearer(f.admin))
					}
					return restCall(t, h, http.MethodPost, "/api/v1/notifications/users/"+userID, map[string]any{"notification": n, "category": category, "urgent": urgent}, withAPIKey(f.key))
				}
				r = send("product", false)
				expectOK(t, "a send inside the quiet hours", r, http.StatusOK)
				held, _ := time.Parse(time.RFC3339, fmt.Sprint(jsonPath(r.data, "heldUntil")))
				if jsonPath(r.data, "status") != "held" || held.Format("15:04") != end || !held.After(now) || f.fake.Delivered(token) != 0 {
					t.Fatalf("a product send inside %s–%s = %v (the phone got %d), want held until %s", start, end, r.data, f.fake.Delivered(token), end)
				}
				for i, tc := range []struct {
					category string
					urgent   bool
				}{{"security", false}, {"product", true}} {
					r := send(tc.category, tc.urgent)
					if jsonPath(r.data, "status") != "sent" || jsonPath(r.data, "heldUntil") != nil || f.fake.Delivered(token) != i+1 {
						t.Fatalf("a %s send (urgent %v) inside the quiet hours = %v, want sent at once", tc.category, tc.urgent, r.data)
					}
				}

				// Turned off, sends go at once again.
				r = scheduleOp(t, h, dn, map[string]any{"quietHours": map[string]any{"enabled": false}}, access)
				expectOK(t, "turn quiet hours off", r, http.StatusOK)
				if jsonPath(r.data, "quietHours") != nil || jsonPath(r.data, "timeZone") != "UTC" {
					t.Fatalf("after turning quiet hours off: %v", r.data)
				}
				if r := send("product", false); jsonPath(r.data, "status") != "sent" {
					t.Fatalf("a product send without quiet hours = %v", r.data)
				}
			})
		}
	})
}
