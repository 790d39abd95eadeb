package main

// The admin API of accounts and subscriptions (issue 13) end to end, on
// every database and through both doors: the search and the record, the
// billing hook and device limits, disabling (login, tokens, pushes),
// ending sessions, deletion by the user and by an operator (tombstone,
// signing up again), the user's own sessions, and the scope refusals of
// API keys.

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/push/fcm/fcmtest"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

const recordFields = `id email emailVerified emailVerifiedAt createdAt referralCode subscription { plan status expiresAt } disabled disabledAt disabledReason lastLoginAt deviceCount sessionCount`

var adminDocs = map[string]string{
	"users": `query Users($query: String, $plan: String, $status: String, $verified: Boolean, $disabled: Boolean, $guest: Boolean, $first: Int, $after: String) {
  users(query: $query, plan: $plan, status: $status, verified: $verified, disabled: $disabled, guest: $guest, first: $first, after: $after) { nodes { ` + recordFields + ` } pageInfo { endCursor hasNextPage } }
}`,
	"user":            `query User($id: ID, $email: String) { user(id: $id, email: $email) { ` + recordFields + ` } }`,
	"setSubscription": `mutation Set($userId: ID!, $plan: String!, $expiresAt: Time!) { setSubscription(userId: $userId, plan: $plan, expiresAt: $expiresAt) { ` + recordFields + ` } }`,
	"disableUser":     `mutation Disable($userId: ID!, $reason: String) { disableUser(userId: $userId, reason: $reason) { ` + recordFields + ` } }`,
	"enableUser":      `mutation Enable($userId: ID!) { enableUser(userId: $userId) { ` + recordFields + ` } }`,
	"revokeSessions":  `mutation Revoke($userId: ID!) { revokeSessions(userId: $userId) }`,
	"deleteUser":      `mutation Delete($userId: ID!) { deleteUser(userId: $userId) }`,
	"deleteAccount":   `mutation DeleteMine($password: String!) { deleteAccount(password: $password) }`,
	"mySessions":      `query { mySessions { id createdAt lastUsedAt userAgent ip current } }`,
	"revokeSession":   `mutation RevokeOne($id: ID!) { revokeSession(id: $id) }`,
}

// adminOp runs an operation of the admin API through the door. The REST
// answers are reduced to what GraphQL answers (revokeSessions: the count;
// the deletions: true), so that one test reads both.
func adminOp(t testing.TB, h *herald, dn, op string, args map[string]any, opts ...reqOption) result {
	t.Helper()
	if dn == graphQLDoor.name {
		return gql(t, h, op, adminDocs[op], args, opts...)
	}
	str := func(k string) string { s, _ := args[k].(string); return s }
	user := "/api/v1/admin/users/" + url.PathEscape(str("userId"))
	var method, path string
	var body any
	switch op {
	case "users":
		q := url.Values{}
		for k, v := range args {
			q.Set(k, fmt.Sprint(v))
		}
		method, path = http.MethodGet, "/api/v1/admin/users?"+q.Encode()
	case "user":
		method, path = http.MethodGet, "/api/v1/admin/users/"+url.PathEscape(str("id"))
	case "setSubscription":
		method, path, body = http.MethodPut, user+"/subscription", map[string]any{"plan": args["plan"], "expiresAt": args["expiresAt"]}
	case "disableUser":
		method, path = http.MethodPost, user+"/disable"
		if r, ok := args["reason"]; ok {
			body = map[string]any{"reason": r}
		}
	case "enableUser":
		method, path = http.MethodPost, user+"/enable"
	case "revokeSessions":
		method, path = http.MethodDelete, user+"/sessions"
	case "deleteUser":
		method, path = http.MethodDelete, user
	case "deleteAccount":
		method, path, body = http.MethodPost, "/api/v1/users/me/delete", map[string]any{"password": args["password"]}
	case "mySessions":
		method, path = http.MethodGet, "/api/v1/users/me/sessions"
	case "revokeSession":
		method, path = http.MethodDelete, "/api/v1/users/me/sessions/"+url.PathEscape(str("id"))
	default:
		t.Fatalf("no REST route for %s", op)
	}
	status, env, hdr := h.rest(t, method, path, body, opts...)
	r := envelopeResult(t, op, status, env, hdr)
	if r.code == "" {
		switch op {
		case "revokeSessions":
			r.data = jsonPath(r.data, "revoked")
		case "deleteUser", "deleteAccount":
			r.data = jsonPath(r.data, "deleted")
		case "revokeSession":
			r.data = jsonPath(r.data, "revoked")
		}
	}
	return r
}

// record runs op and returns the user record it answers, checking its shape.
func record(t testing.TB, h *herald, dn, op string, args map[string]any, opts ...reqOption) map[string]any {
	t.Helper()
	r := adminOp(t, h, dn, op, args, opts...)
	expectOK(t, op, r, http.StatusOK)
	m, ok := r.data.(map[string]any)
	if !ok || m["id"] == "" || m["subscription"] == nil {
		t.Fatalf("%s: not a user record: %v", op, r.data)
	}
	return m
}

func key(k string) reqOption { return withHeader("X-API-Key", k) }

func TestAdminUsersE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		fake := fcmtest.NewServer(t, fcmtest.PlainHTTP())
		h := startHerald(t, d, pushEnv(t, fake, fake.URL, map[string]string{"HERALD_PLAN_DEVICE_LIMITS": "trial=2,basic=3,premium=10"}))
		admin := newAdminToken(t, h, "ops@example.com")
		reader, _ := createKey(t, h, restDoor.name, admin, map[string]any{"name": "support", "scopes": []string{"accounts:read"}})
		writer, _ := createKey(t, h, restDoor.name, admin, map[string]any{"name": "billing", "scopes": []string{"accounts:write"}})
		sender, _ := createKey(t, h, restDoor.name, admin, map[string]any{"name": "push", "scopes": []string{"notifications:send"}})
		for _, dn := range doorNames {
			t.Run(dn, func(t *testing.T) {
				email := dn + "-ann@example.com"
				access, id := newUserToken(t, h, dn, email)
				t.Run("ScopeRefusals", func(t *testing.T) { testAdminScopes(t, h, dn, id, access, reader, writer, sender) })
				t.Run("SearchAndRecord", func(t *testing.T) { testAdminSearch(t, h, dn, id, email, reader, admin) })
				t.Run("SetSubscription", func(t *testing.T) { testSetSubscription(t, h, dn, id, access, writer, reader) })
				t.Run("MySessions", func(t *testing.T) { testMySessions(t, h, dn, email, access) })
				t.Run("RevokeSessions", func(t *testing.T) { testRevokeUserSessions(t, h, dn, id, email, writer) })
				t.Run("Disable", func(t *testing.T) { testDisableUser(t, h, dn, fake, id, email, writer, admin) })
				t.Run("DeleteAccount", func(t *testing.T) { testDeleteAccount(t, h, dn, id, email) })
				t.Run("DeleteUser", func(t *testing.T) { testDeleteUser(t, h, dn, email, writer, reader) })
			})
		}
	})
}

func testAdminScopes(t *testing.T, h *herald, dn, id, access, reader, writer, sender string) {
	for _, c := range []struct {
		what, op string
		args     map[string]any
		cred     reqOption
		scope    string
	}{
		{"search with a write-only key", "users", map[string]any{"query": "ann"}, key(writer), "accounts:read"},
		{"search with a push key", "users", nil, key(sender), "accounts:read"},
		{"record with a push key", "user", map[string]any{"id": id}, withBearer(sender), "accounts:read"},
		{"set plan with a read key", "setSubscription", map[string]any{"userId": id, "plan": "basic", "expiresAt": "2030-01-01T00:00:00Z"}, key(reader), "accounts:write"},
		{"disable with a read key", "disableUser", map[string]any{"userId": id}, key(reader), "accounts:write"},
		{"enable with a read key", "enableUser", map[string]any{"userId": id}, key(reader), "accounts:write"},
		{"end sessions with a read key", "revokeSessions", map[string]any{"userId": id}, key(reader), "accounts:write"},
		{"delete with a read key", "deleteUser", map[string]any{"userId": id}, key(reader), "accounts:write"},
		{"search as a plain user", "users", nil, withBearer(access), "accounts:read"},
		{"delete as a plain user", "deleteUser", map[string]any{"userId": id}, withBearer(access), "accounts:write"},
	} {
		r := adminOp(t, h, dn, c.op, c.args, c.cred)
		expectError(t, c.what, r, http.StatusForbidden, "INSUFFICIENT_PERMISSIONS")
		if r.details["scope"] != c.scope {
			t.Fatalf("%s: the refusal must name %s: %v", c.what, c.scope, r.details)
		}
	}
	// The user's own operations refuse every key.
	for _, op := range []string{"mySessions", "deleteAccount", "revokeSession"} {
		r := adminOp(t, h, dn, op, map[string]any{"password": testPassword, "id": "x"}, key(writer))
		expectError(t, op+" with a key", r, http.StatusForbidden, "INSUFFICIENT_PERMISSIONS")
	}
	if r := adminOp(t, h, dn, "user", map[string]any{"id": id}); r.status != http.StatusUnauthorized || r.code != "AUTH_REQUIRED" {
		t.Fatalf("record without a credential: %d %s", r.status, r.code)
	}
}

func testAdminSearch(t *testing.T, h *herald, dn, id, email, reader, admin string) {
	page := adminOp(t, h, dn, "users", map[string]any{"query": strings.ToUpper(dn + "-an")}, key(reader))
	expectOK(t, "search by prefix", page, http.StatusOK)
	nodes, _ := jsonPath(page.data, "nodes").([]any)
	if len(nodes) != 1 || jsonPath(nodes[0], "id") != id || jsonPath(nodes[0], "email") != email {
		t.Fatalf("search %q: %v", dn+"-an", page.data)
	}
	for _, args := range []map[string]any{
		{"query": id}, {"query": dn + "-ann@", "verified": true, "disabled": false, "status": "active", "plan": "trial"},
	} {
		r := adminOp(t, h, dn, "users", args, withBearer(admin))
		expectOK(t, "search", r, http.StatusOK)
		if n, _ := jsonPath(r.data, "nodes").([]any); len(n) != 1 {
			t.Fatalf("search %v: %v", args, r.data)
		}
	}
	for _, args := range []map[string]any{{"query": id, "verified": false}, {"query": email, "status": "expired"}, {"query": email, "plan": "premium"}} {
		r := adminOp(t, h, dn, "users", args, key(reader))
		if n, _ := jsonPath(r.data, "nodes").([]any); r.code != "" || len(n) != 0 {
			t.Fatalf("search %v found: %v %s", args, r.data, r.code)
		}
	}
	expectError(t, "bad status", adminOp(t, h, dn, "users", map[string]any{"status": "gone"}, key(reader)), http.StatusBadRequest, "VALIDATION_ERROR")
	expectError(t, "bad cursor", adminOp(t, h, dn, "users", map[string]any{"after": "nope"}, key(reader)), http.StatusBadRequest, "VALIDATION_ERROR")
	expectError(t, "page too large", adminOp(t, h, dn, "users", map[string]any{"first": 501}, key(reader)), http.StatusBadRequest, "VALIDATION_ERROR")
	// Pages of one: everyone once, newest first.
	if dn == graphQLDoor.name {
		all := walkPages(t, h, "users", adminDocs["users"], nil, 1, key(reader))
		if len(all) < 2 || all[0]["id"] != id {
			t.Fatalf("walked %d accounts, first %v", len(all), all[0])
		}
	}
	rec := record(t, h, dn, "user", map[string]any{"id": id}, key(reader))
	if rec["email"] != email || rec["disabled"] != false || rec["disabledAt"] != nil || rec["lastLoginAt"] == nil || rec["emailVerifiedAt"] == nil ||
		asInt(t, rec["sessionCount"]) != 1 || asInt(t, rec["deviceCount"]) != 0 || jsonPath(rec, "subscription", "plan") != "trial" {
		t.Fatalf("record %v", rec)
	}
	if dn == graphQLDoor.name {
		if byEmail := record(t, h, dn, "user", map[string]any{"email": strings.ToUpper(email)}, key(reader)); byEmail["id"] != id {
			t.Fatalf("by email: %v", byEmail)
		}
		expectError(t, "both id and email", adminOp(t, h, dn, "user", map[string]any{"id": id, "email": email}, key(reader)), http.StatusBadRequest, "VALIDATION_ERROR")
	} else {
		r := adminOp(t, h, dn, "users", map[string]any{"email": email}, key(reader))
		if n, _ := jsonPath(r.data, "nodes").([]any); r.code != "" || len(n) != 1 || jsonPath(n[0], "id") != id {
			t.Fatalf("by email: %v", r.data)
		}
		expectError(t, "by a malformed email", adminOp(t, h, dn, "users", map[string]any{"email": "not-an-email"}, key(reader)), http.StatusUnprocessableEntity, "INVALID_EMAIL")
		if r := adminOp(t, h, dn, "users", map[string]any{"email": "nobody@example.com"}, key(reader)); r.code != "" || len(jsonPath(r.data, "nodes").([]any)) != 0 {
			t.Fatalf("by an unknown email: %v %s", r.data, r.code)
		}
	}
	expectError(t, "unknown user", adminOp(t, h, dn, "user", map[string]any{"id": "00000000-0000-0000-0000-000000000000"}, key(reader)), http.StatusNotFound, "USER_NOT_FOUND")
}

func testSetSubscription(t *testing.T, h *herald, dn, id, access, writer, reader string) {
	expires := time.Now().UTC().Add(30 * 24 * time.Hour).Truncate(time.Second).Format(time.RFC3339)
	args := map[string]any{"userId": id, "plan": "basic", "expiresAt": expires}
	// The billing hook's retry: the same call twice, the same answer.
	first := record(t, h, dn, "setSubscription", args, key(writer))
	again := record(t, h, dn, "setSubscription", args, key(writer))
	if jsonPath(first, "subscription", "plan") != "basic" || jsonPath(first, "subscription", "expiresAt") != expires || fmt.Sprint(first) != fmt.Sprint(again) {
		t.Fatalf("set plan: %v then %v", first, again)
	}
	bad := adminOp(t, h, dn, "setSubscription", map[string]any{"userId": id, "plan": "gold", "expiresAt": expires}, key(writer))
	expectError(t, "unknown plan", bad, http.StatusBadRequest, "VALIDATION_ERROR")
	if bad.details["field"] != "plan" {
		t.Fatalf("unknown plan details: %v", bad.details)
	}
	expectError(t, "unknown user", adminOp(t, h, dn, "setSubscription", map[string]any{"userId": "nobody", "plan": "basic", "expiresAt": expires}, key(writer)), http.StatusNotFound, "USER_NOT_FOUND")

	// basic allows 3 devices; lowered to trial (2) they stay, and no new one is admitted.
	for i := range 3 {
		mustRegister(t, h, dn, access, "android", fmt.Sprintf("%s-admin-%d", dn, i), "")
	}
	record(t, h, dn, "setSubscription", map[string]any{"userId": id, "plan": "trial", "expiresAt": expires}, key(writer))
	if rec := record(t, h, dn, "user", map[string]any{"id": id}, key(reader)); asInt(t, rec["deviceCount"]) != 3 {
		t.Fatalf("devices over the lowered limit must stay: %v", rec)
	}
	expectError(t, "a device over the lowered limit", registerDevice(t, h, dn, access, "android", dn+"-admin-over", ""), http.StatusConflict, "DEVICE_LIMIT_REACHED")
}

func testMySessions(t *testing.T, h *herald, dn, email, access string) {
	second := login(t, h, dn, email, testPassword, withHeader("User-Agent", "HeraldApp/2.0 (iOS)"))
	// A new device: its alert is the address's second email (after the
	// signup's code), waited for here so later counts are fixed.
	if alert := h.SMTP.WaitForMessages(t, email, 2, mailWait)[1]; !strings.Contains(alert.Text, "HeraldApp/2.0 (iOS)") {
		t.Fatalf("the second email to %s is not the new-device alert:\n%s", email, alert.Text)
	}
	r := adminOp(t, h, dn, "mySessions", nil, withBearer(access))
	expectOK(t, "mySessions", r, http.StatusOK)
	list, _ := r.data.([]any)
	if len(list) != 2 {
		t.Fatalf("two logins, sessions %v", r.data)
	}
	newest, oldest := list[0].(map[string]any), list[1].(map[string]any)
	if newest["userAgent"] != "HeraldApp/2.0 (iOS)" || newest["ip"] != "127.0.0.1" || newest["current"] != false || oldest["current"] != true ||
		!isoUTC.MatchString(fmt.Sprint(newest["createdAt"])) || !isoUTC.MatchString(fmt.Sprint(newest["lastUsedAt"])) {
		t.Fatalf("sessions %v", list)
	}
	// A refresh is a use: the client is seen again.
	next := tokensOf(t, "refresh", call(t, h, dn, opRefresh, map[string]any{"refreshToken": second.refresh}, withHeader("User-Agent", "HeraldApp/2.1 (iOS)")))
	r = adminOp(t, h, dn, "mySessions", nil, withBearer(next.access))
	if list, _ := r.data.([]any); len(list) != 2 || jsonPath(list[0], "userAgent") != "HeraldApp/2.1 (iOS)" || jsonPath(list[0], "current") != true {
		t.Fatalf("after refresh: %v", r.data)
	}
	expectError(t, "another's or no session", adminOp(t, h, dn, "revokeSession", map[string]any{"id": "no-such-session"}, withBearer(access)), http.StatusNotFound, "SESSION_NOT_FOUND")
	r = adminOp(t, h, dn, "revokeSession", map[string]any{"id": newest["id"]}, withBearer(access))
	if expectOK(t, "revokeSession", r, http.StatusOK); r.data != true {
		t.Fatalf("revokeSession answered %v", r.data)
	}
	expectError(t, "the ended session's token", me(t, h, dn, next.access), http.StatusUnauthorized, "TOKEN_INVALID")
	expectOK(t, "the other session", me(t, h, dn, access), http.StatusOK)
	expectError(t, "ending it twice", adminOp(t, h, dn, "revokeSession", map[string]any{"id": newest["id"]}, withBearer(access)), http.StatusNotFound, "SESSION_NOT_FOUND")
}

func testRevokeUserSessions(t *testing.T, h *herald, dn, id, email, writer string) {
	tok := login(t, h, dn, email, testPassword)
	r := adminOp(t, h, dn, "revokeSessions", map[string]any{"userId": id}, key(writer))
	expectOK(t, "revokeSessions", r, http.StatusOK)
	if n := asInt(t, r.data); n < 2 {
		t.Fatalf("revoked %d sessions, want at least 2", n)
	}
	expectError(t, "a token after revokeSessions", me(t, h, dn, tok.access), http.StatusUnauthorized, "TOKEN_INVALID")
	expectError(t, "a refresh after revokeSessions", call(t, h, dn, opRefresh, map[string]any{"refreshToken": tok.refresh}), http.StatusUnauthorized, "TOKEN_INVALID")
	expectError(t, "unknown user", adminOp(t, h, dn, "revokeSessions", map[string]any{"userId": "nobody"}, key(writer)), http.StatusNotFound, "USER_NOT_FOUND")
}

func testDisableUser(t *testing.T, h *herald, dn string, fake *fcmtest.Server, id, email, writer, admin string) {
	tok := login(t, h, dn, email, testPassword)
	beforeJob, before := broadcast(t, h, admin, notify("before", "x", nil))
	waitJob(t, h, admin, beforeJob, jobWait, jobStatusIs("completed"), "completed")
	rec := record(t, h, dn, "disableUser", map[string]any{"userId": id, "reason": "chargeback"}, key(writer))
	if rec["disabled"] != true || rec["disabledReason"] != "chargeback" || rec["disabledAt"] == nil || asInt(t, rec["sessionCount"]) != 0 {
		t.Fatalf("disabled record %v", rec)
	}
	// Disabling again changes nothing: the first reason stays.
	if again := record(t, h, dn, "disableUser", map[string]any{"userId": id, "reason": "other"}, key(writer)); again["disabledReason"] != "chargeback" || again["disabledAt"] != rec["disabledAt"] {
		t.Fatalf("disabled twice: %v", again)
	}
	expectError(t, "the token of a disabled account", me(t, h, dn, tok.access), http.StatusUnauthorized, "TOKEN_INVALID")
	expectError(t, "the refresh of a disabled account", call(t, h, dn, opRefresh, map[string]any{"refreshToken": tok.refresh}), http.StatusUnauthorized, "TOKEN_INVALID")
	expectError(t, "login, right password", call(t, h, dn, opLogin, map[string]any{"email": email, "password": testPassword}), http.StatusForbidden, "ACCOUNT_DISABLED")
	expectError(t, "login, wrong password", call(t, h, dn, opLogin, map[string]any{"email": email, "password": "Wrong1234"}), http.StatusUnauthorized, "INVALID_CREDENTIALS")

	// Its devices get no pushes: not one by one, not in a broadcast.
	token := dn + "-admin-0"
	devs := walkPages(t, h, "devices", deviceDocs["devices"], map[string]any{"userId": id}, 10, withBearer(admin))
	var deviceID string
	for _, d := range devs {
		if d["pushToken"] == token {
			deviceID, _ = d["deviceId"].(string)
		}
	}
	expectError(t, "a push to a disabled account's device", sendOne(t, h, admin, deviceID, notify("s", "c", nil)), http.StatusNotFound, "DEVICE_NOT_FOUND")
	delivered := fake.Delivered(token)
	jobID, after := broadcast(t, h, admin, notify("after", "x", nil))
	if before-after != 3 {
		t.Fatalf("a broadcast counts %d recipients before disabling, %d after; want 3 fewer", before, after)
	}
	waitJob(t, h, admin, jobID, jobWait, jobStatusIs("completed"), "completed")
	if n := fake.Delivered(token); n != delivered {
		t.Fatalf("a disabled account's device got %d more pushes", n-delivered)
	}

	rec = record(t, h, dn, "enableUser", map[string]any{"userId": id}, key(writer))
	if rec["disabled"] != false || rec["disabledReason"] != nil || rec["disabledAt"] != nil {
		t.Fatalf("enabled record %v", rec)
	}
	login(t, h, dn, email, testPassword)
}

func testDeleteAccount(t *testing.T, h *herald, dn, id, email string) {
	tok := login(t, h, dn, email, testPassword)
	expectError(t, "delete with a wrong password", adminOp(t, h, dn, "deleteAccount", map[string]any{"password": "Wrong1234"}, withBearer(tok.access)), http.StatusUnauthorized, "INVALID_CREDENTIALS")
	r := adminOp(t, h, dn, "deleteAccount", map[string]any{"password": testPassword}, withBearer(tok.access))
	if expectOK(t, "deleteAccount", r, http.StatusOK); r.data != true {
		t.Fatalf("deleteAccount answered %v", r.data)
	}
	expectDeleted(t, h, dn, id, email, tok)
}

func testDeleteUser(t *testing.T, h *herald, dn, email, writer, reader string) {
	// The deleted account's email signed up again (expectDeleted): a new
	// account, verified with the code of the address's third email (after
	// the first signup's code and the new-device alert of MySessions).
	code := h.code(t, email, 3, accounts.PurposeVerify)
	expectOK(t, "verify again", call(t, h, dn, opVerify, map[string]any{"email": email, "code": code}), http.StatusOK)
	tok := login(t, h, dn, email, testPassword)
	id := fmt.Sprint(jsonPath(me(t, h, dn, tok.access).data, "id"))
	r := adminOp(t, h, dn, "deleteUser", map[string]any{"userId": id}, key(writer))
	if expectOK(t, "deleteUser", r, http.StatusOK); r.data != true {
		t.Fatalf("deleteUser answered %v", r.data)
	}
	expectDeleted(t, h, dn, id, email, tok)
	expectError(t, "deleting twice", adminOp(t, h, dn, "deleteUser", map[string]any{"userId": id}, key(writer)), http.StatusNotFound, "USER_NOT_FOUND")
	expectError(t, "the record of a deleted account", adminOp(t, h, dn, "user", map[string]any{"id": id}, key(reader)), http.StatusNotFound, "USER_NOT_FOUND")
}

// expectDeleted checks a deletion end to end: login fails, the old tokens
// are refused, the row is a tombstone, and the email can sign up again.
func expectDeleted(t *testing.T, h *herald, dn, id, email string, tok tokens) {
	t.Helper()
	expectError(t, "login after deletion", call(t, h, dn, opLogin, map[string]any{"email": email, "password": testPassword}), http.StatusUnauthorized, "INVALID_CREDENTIALS")
	expectError(t, "the old token", me(t, h, dn, tok.access), http.StatusUnauthorized, "TOKEN_INVALID")
	expectError(t, "the old refresh token", call(t, h, dn, opRefresh, map[string]any{"refreshToken": tok.refresh}), http.StatusUnauthorized, "TOKEN_INVALID")
	stored, hash, deleted, err := h.store(t).AccountTombstone(context.Background(), id)
	if err != nil || !deleted || hash != "" || strings.Contains(stored, "@") || strings.Contains(stored, email) {
		t.Fatalf("the row of %s: email %q, password hash %q, deleted %v, %v", id, stored, hash, deleted, err)
	}
	h.expectNoAccount(t, email, "after deletion")
	expectOK(t, "sign up again", call(t, h, dn, opSignup, map[string]any{"email": email, "password": testPassword}), map[string]int{"graphql": 200, "rest": 201}[dn])
	h.expectNoAccount(t, "deleted:"+id, "the tombstone's placeholder")
	if again := h.account(t, email); again.ID == id {
		t.Fatalf("signing up again reused the id %s", id)
	}
}
