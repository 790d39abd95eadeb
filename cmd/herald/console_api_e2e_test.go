package main

// The operator console's API end to end, on every database and through
// both doors: the overview checked against data the test made (accounts,
// devices of each token state, a scheduled broadcast, webhook endpoints,
// the bot), bans (normalized, effective, listed, lifted), a user's sessions
// and linked chat, subscribers by status, the message preview compared
// with what a send gives Telegram, and the refusals.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/herald-vpn/herald/internal/push/fcm/fcmtest"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/telegram/telegramtest"
	"github.com/herald-vpn/herald/internal/view"
	"github.com/herald-vpn/herald/internal/webhooks"
)

const overviewFields = `version accounts { total verified newLast24h disabled }
  devices { total byPlatform { platform count } tokensValid tokensInvalid tokensMissing }
  broadcasts { running queued scheduled messengerRunning }
  bot { connected botUsername botName subscriberCount webhookUrl }
  webhooks { total failing disabled } rateLimiter { backend degraded reason }`

const chatFields = `chatId username firstName startPayload subscribedSince status userId`

var consoleDocs = map[string]string{
	"adminOverview": `query { adminOverview { ` + overviewFields + ` } }`,
	"bans":          `query Bans($first: Int, $after: String) { bans(first: $first, after: $after) { nodes { ip reason createdAt } pageInfo { endCursor hasNextPage } } }`,
	"banAddress":    `mutation Ban($ip: String!, $reason: String) { banAddress(ip: $ip, reason: $reason) { ip reason createdAt } }`,
	"liftBan":       `mutation Lift($ip: String!) { liftBan(ip: $ip) }`,
	"user": `query User($id: ID) { user(id: $id) { id email sessionCount sessions { id createdAt lastUsedAt userAgent ip current }
  messengerChat { ` + chatFields + ` } } }`,
	"messengerSubscribers": `query Subs($first: Int, $after: String, $status: String) {
  messengerSubscribers(first: $first, after: $after, status: $status) { nodes { ` + chatFields + ` } pageInfo { endCursor hasNextPage } }
}`,
	"messengerPreview": `query Preview($message: String!) { messengerPreview(message: $message) { html length } }`,
}

// consoleOp runs an operation of the console API through the door. REST
// answers are reduced to GraphQL's: liftBan to its true.
func consoleOp(t testing.TB, h *herald, dn, op string, args map[string]any, opts ...reqOption) result {
	t.Helper()
	if dn == graphQLDoor.name {
		return gql(t, h, op, consoleDocs[op], args, opts...)
	}
	str := func(k string) string { s, _ := args[k].(string); return s }
	query := func(keys ...string) string {
		q := url.Values{}
		for _, k := range keys {
			if v, ok := args[k]; ok {
				q.Set(k, fmt.Sprint(v))
			}
		}
		return q.Encode()
	}
	var method, path string
	var body any
	switch op {
	case "adminOverview":
		method, path = http.MethodGet, "/api/v1/admin/overview"
	case "bans":
		method, path = http.MethodGet, "/api/v1/admin/bans?"+query("first", "after")
	case "banAddress":
		b := map[string]any{"ip": args["ip"]}
		if r, ok := args["reason"]; ok {
			b["reason"] = r
		}
		method, path, body = http.MethodPost, "/api/v1/admin/bans", b
	case "liftBan":
		method, path = http.MethodDelete, "/api/v1/admin/bans/"+url.PathEscape(str("ip"))
	case "user":
		method, path = http.MethodGet, "/api/v1/admin/users/"+url.PathEscape(str("id"))
	case "messengerSubscribers":
		method, path = http.MethodGet, "/api/v1/messenger/subscribers?"+query("status", "first", "after")
	case "messengerPreview":
		method, path, body = http.MethodPost, "/api/v1/messenger/preview", map[string]any{"message": args["message"]}
	default:
		t.Fatalf("no REST route for %s", op)
	}
	r := restCall(t, h, method, path, body, opts...)
	if op == "liftBan" && r.code == "" {
		if jsonPath(r.data, "lifted") != true || jsonPath(r.data, "ip") == "" {
			t.Fatalf("DELETE %s = %v, want the ip and lifted true", path, r.data)
		}
		r.data = true
	}
	return r
}

// okStatus is a successful answer's status: REST creates a ban (201).
func okStatus(dn, op string) int {
	if dn == restDoor.name && op == "banAddress" {
		return http.StatusCreated
	}
	return http.StatusOK
}

// decodeAs turns a decoded JSON answer into out, refusing fields out does
// not have.
func decodeAs(t testing.TB, v any, out any) {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
}

func TestConsoleAPIE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		fcm := fcmtest.NewServer(t, fcmtest.PlainHTTP())
		tg := telegramtest.NewServer(t, botToken)
		h := startHerald(t, d, pushEnv(t, fcm, fcm.URL, map[string]string{
			"HERALD_PLAN_DEVICE_LIMITS":      "trial=10",
			"HERALD_TELEGRAM_BOT_TOKEN":      botToken,
			"HERALD_TELEGRAM_API_URL":        tg.URL,
			"HERALD_WEBHOOKS_ALLOW_INSECURE": "on",
			"HERALD_WEBHOOKS_ALLOW_PRIVATE":  "on",
			"HERALD_WEBHOOKS_RETRY_SCHEDULE": "100ms,100ms,100ms",
			"HERALD_TRUSTED_PROXIES":         "127.0.0.1/32",
		}))
		admin := newAdminToken(t, h, "ops@example.com")
		ann, annID := newUserToken(t, h, restDoor.name, "ann@example.com")
		t.Run("Overview", func(t *testing.T) { testOverview(t, h, fcm, tg, admin, ann) })
		for _, dn := range doorNames {
			t.Run(dn, func(t *testing.T) {
				t.Run("Refusals", func(t *testing.T) { testConsoleRefusals(t, h, dn, ann, annID, admin) })
				t.Run("Bans", func(t *testing.T) { testBans(t, h, dn, admin) })
				t.Run("UserSessionsAndChat", func(t *testing.T) { testUserDetail(t, h, tg, dn, admin) })
				t.Run("Subscribers", func(t *testing.T) { testSubscribersByStatus(t, h, tg, dn, admin) })
				t.Run("Preview", func(t *testing.T) { testPreview(t, h, tg, dn, admin) })
			})
		}
	})
}

// testOverview makes one of each thing the overview counts, then reads it
// through both doors: the same numbers, the ones made.
func testOverview(t *testing.T, h *herald, fcm *fcmtest.Server, tg *telegramtest.Server, admin, ann string) {
	// Accounts: the operator and Ann (verified), Bob, Carl (disabled),
	// and one who never verified.
	bob, _ := newUserToken(t, h, restDoor.name, "bob@example.com")
	_, carlID := newUserToken(t, h, restDoor.name, "carl@example.com")
	record(t, h, restDoor.name, "disableUser", map[string]any{"userId": carlID, "reason": "chargeback"}, withBearer(admin))
	signup(t, h, restDoor, "pending@example.com", testPassword)

	// Devices: a valid token; a token FCM calls dead; a token moved to
	// another device (the first is left without one); a removed device.
	mustRegister(t, h, restDoor.name, ann, "android", "c-valid", "")
	dead := mustRegister(t, h, restDoor.name, ann, "android", "c-dead", "")["deviceId"].(string)
	fcm.Fail("c-dead", -1, fcmtest.Unregistered())
	expectError(t, "send to the dead token", sendOne(t, h, admin, dead, notify("Hi", "there", nil)), http.StatusUnprocessableEntity, "INVALID_PUSH_TOKEN")
	mustRegister(t, h, restDoor.name, ann, "ios", "c-moved", "")
	mustRegister(t, h, restDoor.name, bob, "android", "c-moved", "")
	removed := mustRegister(t, h, restDoor.name, bob, "ios", "c-removed", "")["deviceId"].(string)
	expectOK(t, "remove", removeDevice(t, h, restDoor.name, bob, removed), http.StatusOK)

	// A broadcast scheduled an hour ahead.
	sendAt := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	r := restCall(t, h, http.MethodPost, "/api/v1/notifications/broadcasts", map[string]any{"notification": notify("Later", "In an hour", nil), "sendAt": sendAt}, withBearer(admin))
	expectOK(t, "scheduled broadcast", r, http.StatusAccepted)

	// Webhooks: one failing (its receiver answers 500), one disabled.
	recv := newHookReceiver(t, func(_ string, _ int, w http.ResponseWriter) { w.WriteHeader(http.StatusInternalServerError) })
	hooks, _ := createKey(t, h, restDoor.name, admin, map[string]any{"name": "hooks", "scopes": []string{"webhooks:manage"}})
	failing, _ := createHook(t, h, hooks, recv.srv.URL+"/failing", []string{webhooks.UserDeleted})
	off, _ := createHook(t, h, hooks, recv.srv.URL+"/off", []string{webhooks.UserDeleted})
	expectOK(t, "disable endpoint", hookREST(t, h, hooks, http.MethodPost, "/api/v1/webhooks/"+off+"/disable"), http.StatusOK)
	expectOK(t, "ping", hookREST(t, h, hooks, http.MethodPost, "/api/v1/webhooks/"+failing+"/ping"), http.StatusAccepted)
	eventually(t, func() bool {
		return jsonPath(hookREST(t, h, hooks, http.MethodGet, "/api/v1/webhooks/"+failing).data, "failingSince") != nil
	}, "the endpoint never started failing")

	// The bot: one subscribed chat, one that sent /stop.
	startAndReply(t, tg, 9001, "/start")
	startAndReply(t, tg, 9002, "/start")
	startAndReply(t, tg, 9002, "/stop")

	me := tg.Me()
	want := view.AdminOverview{
		Accounts: view.AccountCounts{Total: 5, Verified: 4, NewLast24h: 5, Disabled: 1},
		Devices: view.DeviceCounts{Total: 4, ByPlatform: []view.PlatformCount{{Platform: "android", Count: 3}, {Platform: "ios", Count: 1}, {Platform: "web", Count: 0}, {Platform: "huawei", Count: 0}},
			TokensValid: 2, TokensInvalid: 1, TokensMissing: 1},
		Broadcasts:  view.BroadcastCounts{Scheduled: 1},
		Bot:         view.MessengerBotStatus{Connected: true, BotUsername: ptr(me.Username), BotName: ptr(strings.TrimSpace(me.FirstName + " " + me.LastName)), SubscriberCount: 1},
		Webhooks:    view.WebhookCounts{Total: 2, Failing: 1, Disabled: 1},
		RateLimiter: view.RateLimiterState{Backend: "memory"},
	}
	want.Version, _ = versionQuery(t, h).data.(string)
	for _, dn := range doorNames {
		r := consoleOp(t, h, dn, "adminOverview", nil, withBearer(admin))
		expectOK(t, dn+" overview", r, http.StatusOK)
		var got view.AdminOverview
		decodeAs(t, r.data, &got)
		if want.Version == "" || !reflect.DeepEqual(got, want) {
			t.Errorf("%s overview:\n got %+v\nwant %+v", dn, got, want)
		}
	}
}

// testConsoleRefusals: a signed-in user who is no admin, and an API key
// (which never holds admin), are refused each new operation, naming the
// scope; bad input is VALIDATION_ERROR naming the field.
func testConsoleRefusals(t *testing.T, h *herald, dn, user, userID, admin string) {
	every, _ := createKey(t, h, restDoor.name, admin, map[string]any{"name": "every-" + dn,
		"scopes": []string{"accounts:read", "accounts:write", "notifications:send", "messenger:send", "webhooks:manage"}})
	for _, c := range []struct {
		op    string
		args  map[string]any
		scope string
	}{
		{"adminOverview", nil, "admin"},
		{"bans", nil, "admin"},
		{"banAddress", map[string]any{"ip": "192.0.2.1"}, "admin"},
		{"liftBan", map[string]any{"ip": "192.0.2.1"}, "admin"},
		{"messengerSubscribers", nil, "messenger:send"},
		{"messengerPreview", map[string]any{"message": "hi"}, "messenger:send"},
		{"user", map[string]any{"id": userID}, "accounts:read"},
	} {
		r := consoleOp(t, h, dn, c.op, c.args, withBearer(user))
		expectError(t, c.op+" as a user", r, http.StatusForbidden, "INSUFFICIENT_PERMISSIONS")
		if r.details["scope"] != c.scope {
			t.Errorf("%s as a user: the refusal must name %s: %v", c.op, c.scope, r.details)
		}
		if c.scope == "admin" {
			expectError(t, c.op+" with an API key", consoleOp(t, h, dn, c.op, c.args, key(every)), http.StatusForbidden, "INSUFFICIENT_PERMISSIONS")
		}
		if r := consoleOp(t, h, dn, c.op, c.args); r.status != http.StatusUnauthorized || r.code != "AUTH_REQUIRED" {
			t.Errorf("%s without a credential: %d %s", c.op, r.status, r.code)
		}
	}
	// A key with messenger:send may list and preview.
	expectOK(t, "subscribers with a key", consoleOp(t, h, dn, "messengerSubscribers", nil, key(every)), http.StatusOK)
	expectOK(t, "preview with a key", consoleOp(t, h, dn, "messengerPreview", map[string]any{"message": "hi"}, key(every)), http.StatusOK)

	for _, c := range []struct {
		op    string
		args  map[string]any
		field string
	}{
		{"banAddress", map[string]any{"ip": "not an address"}, "ip"},
		{"banAddress", map[string]any{"ip": "2001:db8::/48"}, "ip"},
		{"banAddress", map[string]any{"ip": "192.0.2.0/24"}, "ip"},
		{"banAddress", map[string]any{"ip": "192.0.2.1", "reason": strings.Repeat("x", 501)}, "reason"},
		{"liftBan", map[string]any{"ip": "nope"}, "ip"},
		{"bans", map[string]any{"first": 501}, "first"},
		{"bans", map[string]any{"after": "nope"}, "after"},
		{"messengerSubscribers", map[string]any{"status": "active"}, "status"},
		{"messengerSubscribers", map[string]any{"after": "nope"}, "after"},
	} {
		r := consoleOp(t, h, dn, c.op, c.args, withBearer(admin))
		expectError(t, fmt.Sprintf("%s %v", c.op, c.args), r, http.StatusBadRequest, "VALIDATION_ERROR")
		if r.details["field"] != c.field {
			t.Errorf("%s %v: the error must name %s: %v", c.op, c.args, c.field, r.details)
		}
	}
	if dn == restDoor.name {
		r := restCall(t, h, http.MethodPost, "/api/v1/admin/bans", map[string]any{"ip": "192.0.2.1", "until": "never"}, withBearer(admin))
		expectError(t, "a ban with an unknown field", r, http.StatusBadRequest, "VALIDATION_ERROR")
	}
}

// testBans: a ban is normalized as the gate counts clients, refuses its
// address (an IPv6 address's whole /64) on every request within the
// gate's refresh, is listed newest first, and lifting it lets the address
// in again; lifting it twice is BAN_NOT_FOUND.
func testBans(t *testing.T, h *herald, dn, admin string) {
	v4 := map[string]string{graphQLDoor.name: "203.0.113.7", restDoor.name: "198.51.100.7"}[dn]
	v6 := map[string]string{graphQLDoor.name: "2001:db8:1::", restDoor.name: "2001:db8:2::"}[dn]
	call := func(op string, args map[string]any) result {
		t.Helper()
		r := consoleOp(t, h, dn, op, args, withBearer(admin))
		expectOK(t, fmt.Sprintf("%s %v", op, args), r, okStatus(dn, op))
		return r
	}
	b := call("banAddress", map[string]any{"ip": v4, "reason": "abuse report 42"}).data
	if jsonPath(b, "ip") != v4 || jsonPath(b, "reason") != "abuse report 42" || !isoUTC.MatchString(fmt.Sprint(jsonPath(b, "createdAt"))) {
		t.Fatalf("ban %v", b)
	}
	if again := call("banAddress", map[string]any{"ip": v4, "reason": "other"}).data; !reflect.DeepEqual(again, b) {
		t.Fatalf("banning again = %v, want the first ban %v", again, b)
	}
	time.Sleep(1100 * time.Millisecond) // the next ban is newer by whole seconds
	b6 := call("banAddress", map[string]any{"ip": v6 + "5"}).data
	if jsonPath(b6, "ip") != v6+"/64" || jsonPath(b6, "reason") != "banned by an operator" {
		t.Fatalf("IPv6 ban %v, want its /64 and the default reason", b6)
	}

	// Refused, the whole /64 with it; another address is not.
	for _, ip := range []string{v4, v6 + "5", v6 + "ffff"} {
		eventually(t, func() bool { return versionQuery(t, h, from(ip)).code == "BANNED" }, "%s is not refused", ip)
	}
	if r := versionQuery(t, h, from(v6[:len(v6)-1]+"1::5")); r.code != "" {
		t.Fatalf("an address outside the /64: %s", r.code)
	}

	// Listed newest first, in pages of one.
	var ips []string
	after := ""
	for range 20 {
		args := map[string]any{"first": 1}
		if after != "" {
			args["after"] = after
		}
		r := call("bans", args)
		for _, n := range jsonPath(r.data, "nodes").([]any) {
			ips = append(ips, jsonPath(n, "ip").(string))
		}
		if jsonPath(r.data, "pageInfo", "hasNextPage") != true {
			break
		}
		after = jsonPath(r.data, "pageInfo", "endCursor").(string)
	}
	i4, i6 := indexOf(ips, v4), indexOf(ips, v6+"/64")
	if i4 < 0 || i6 < 0 || i6 > i4 {
		t.Fatalf("bans %v: want %s/64 before %s", ips, v6, v4)
	}

	// Lifted (the /64 by another of its addresses): let in again.
	for _, ip := range []string{v4, v6 + "abcd"} {
		if r := call("liftBan", map[string]any{"ip": ip}); r.data != true {
			t.Fatalf("liftBan %s = %v", ip, r.data)
		}
	}
	for _, ip := range []string{v4, v6 + "5"} {
		eventually(t, func() bool { return versionQuery(t, h, from(ip)).code == "" }, "%s is still refused", ip)
	}
	expectError(t, "lift again", consoleOp(t, h, dn, "liftBan", map[string]any{"ip": v4}, withBearer(admin)), http.StatusNotFound, "BAN_NOT_FOUND")
	// The /64 written as such (REST: its slash escaped in the path).
	call("banAddress", map[string]any{"ip": v6 + "/64"})
	call("liftBan", map[string]any{"ip": v6 + "/64"})
	expectError(t, "lift the /64 again", consoleOp(t, h, dn, "liftBan", map[string]any{"ip": v6 + "/64"}, withBearer(admin)), http.StatusNotFound, "BAN_NOT_FOUND")
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// testUserDetail: a user's record shows their live sessions (current
// false, as seen by the operator) and their linked Telegram chat, null
// until they link one and whatever its status after.
func testUserDetail(t *testing.T, h *herald, tg *telegramtest.Server, dn, admin string) {
	email := dn + "-linked@example.com"
	access, id := newUserToken(t, h, restDoor.name, email)
	login(t, h, restDoor.name, email, testPassword) // a second session
	user := func() map[string]any {
		t.Helper()
		r := consoleOp(t, h, dn, "user", map[string]any{"id": id}, withBearer(admin))
		expectOK(t, "user", r, http.StatusOK)
		return r.data.(map[string]any)
	}
	u := user()
	sessions, _ := u["sessions"].([]any)
	if len(sessions) != 2 || asInt(t, u["sessionCount"]) != 2 {
		t.Fatalf("sessions %v (sessionCount %v), want 2", u["sessions"], u["sessionCount"])
	}
	for _, s := range sessions {
		if jsonPath(s, "current") != false || jsonPath(s, "ip") != "127.0.0.1" || jsonPath(s, "id") == "" {
			t.Fatalf("session %v: want current false and the client's address", s)
		}
	}
	if chat, present := u["messengerChat"]; !present || chat != nil {
		t.Fatalf("messengerChat before linking: %v (present %v), want null", chat, present)
	}

	chatID := map[string]int64{graphQLDoor.name: 8001, restDoor.name: 8002}[dn]
	token := linkToken(t, h, restDoor.name, access)
	if reply := startAndReply(t, tg, chatID, "/start "+token); !strings.Contains(reply, "now linked") {
		t.Fatalf("confirmation %q, want the chat linked", reply)
	}
	chat := user()["messengerChat"]
	if jsonPath(chat, "chatId") != fmt.Sprint(chatID) || jsonPath(chat, "userId") != id || jsonPath(chat, "status") != "subscribed" {
		t.Fatalf("messengerChat %v, want chat %d of %s, subscribed", chat, chatID, id)
	}
	// Blocking the bot keeps the link: the chat is shown, blocked.
	tg.PushUpdate(memberUpdate(0, chatID, "kicked"))
	eventually(t, func() bool { return jsonPath(user()["messengerChat"], "status") == "blocked" }, "the linked chat never showed blocked")
	// Unblocked, then /stop: the link ends.
	tg.PushUpdate(memberUpdate(0, chatID, "member"))
	eventually(t, func() bool { return jsonPath(user()["messengerChat"], "status") == "subscribed" }, "the linked chat never showed subscribed again")
	tg.PushText(chatID, "/stop")
	eventually(t, func() bool { return user()["messengerChat"] == nil }, "the link outlived /stop")
}

// testSubscribersByStatus: the listing narrowed to one status, in pages.
func testSubscribersByStatus(t *testing.T, h *herald, tg *telegramtest.Server, dn, admin string) {
	base := map[string]int64{graphQLDoor.name: 7100, restDoor.name: 7200}[dn]
	for i := range int64(3) {
		startAndReply(t, tg, base+i, "/start")
	}
	startAndReply(t, tg, base+1, "/stop")
	ofStatus := func(status string) map[string]bool {
		t.Helper()
		seen := map[string]bool{}
		after := ""
		for range 100 {
			args := map[string]any{"status": status, "first": 2}
			if after != "" {
				args["after"] = after
			}
			r := consoleOp(t, h, dn, "messengerSubscribers", args, withBearer(admin))
			expectOK(t, "subscribers "+status, r, http.StatusOK)
			for _, n := range jsonPath(r.data, "nodes").([]any) {
				if jsonPath(n, "status") != status {
					t.Fatalf("status %s listed %v", status, n)
				}
				seen[jsonPath(n, "chatId").(string)] = true
			}
			if jsonPath(r.data, "pageInfo", "hasNextPage") != true {
				return seen
			}
			after = jsonPath(r.data, "pageInfo", "endCursor").(string)
		}
		t.Fatalf("subscribers %s never end", status)
		return nil
	}
	subscribed, unsubscribed := ofStatus("subscribed"), ofStatus("unsubscribed")
	for i := range int64(3) {
		id := fmt.Sprint(base + i)
		if want := i != 1; subscribed[id] != want || unsubscribed[id] == want {
			t.Errorf("chat %s: subscribed %v, unsubscribed %v", id, subscribed[id], unsubscribed[id])
		}
	}
	if r := consoleOp(t, h, dn, "messengerSubscribers", map[string]any{"status": "blocked"}, withBearer(admin)); r.code != "" || len(jsonPath(r.data, "nodes").([]any)) != 0 {
		t.Errorf("blocked: %v %s, want none", r.data, r.code)
	}
}

// testPreview: the preview is exactly what a send gives Telegram, and its
// length what Telegram counts (UTF-16 units of the visible text).
func testPreview(t *testing.T, h *herald, tg *telegramtest.Server, dn, admin string) {
	chat := map[string]string{graphQLDoor.name: "6001", restDoor.name: "6002"}[dn]
	for _, md := range []string{
		"**Price:** 4.99 (50% off!) <b>&amp;</b> 👋🏽",
		"[Open](https://herald.example/a?b=1&c=2) `code` ~~old~~ _it_",
	} {
		r := consoleOp(t, h, dn, "messengerPreview", map[string]any{"message": md}, withBearer(admin))
		expectOK(t, "preview", r, http.StatusOK)
		expectOK(t, "send", sendMessage(t, h, admin, chat, md, nil), http.StatusOK)
		sent := tg.SentTo(chat)
		last := sent[len(sent)-1]
		if jsonPath(r.data, "html") != last.Text || last.ParseMode != "HTML" {
			t.Errorf("%q: preview %v, sent %q", md, jsonPath(r.data, "html"), last.Text)
		}
		if n := len(utf16.Encode([]rune(last.Visible))); asInt(t, jsonPath(r.data, "length")) != n {
			t.Errorf("%q: length %v, Telegram counts %d", md, jsonPath(r.data, "length"), n)
		}
	}
	for _, md := range []string{"", "   ", strings.Repeat("a", 4097)} {
		expectError(t, fmt.Sprintf("preview of %d characters", len(md)), consoleOp(t, h, dn, "messengerPreview", map[string]any{"message": md}, withBearer(admin)), http.StatusBadRequest, "INVALID_MESSAGE")
	}
}
