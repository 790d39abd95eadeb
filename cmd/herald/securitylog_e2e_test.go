package main

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/passkeys/passkeystest"
	"github.com/herald-vpn/herald/internal/securitylog"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

// Every kind of security event is recorded, for the account it concerns,
// with the client's address and user agent, by the real server driven
// through its API; and each entry is its security.<kind> webhook event in
// the outbox, naming the entry. (Reading the log through the doors has
// its own test.)
func TestSecurityLogE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		h := startHerald(t, d, sessionEnv(map[string]string{
			"HERALD_PUBLIC_URL":       changesPublicURL,
			"HERALD_RESEND_COOLDOWN":  "1ms", // two email changes in a row
			"HERALD_WEBAUTHN_RP_ID":   passkeyRPID,
			"HERALD_WEBAUTHN_RP_NAME": "Herald Test",
			"HERALD_WEBAUTHN_ORIGINS": passkeyOrigin,
		}))
		dn := restDoor.name
		want := map[securitylog.Kind]string{} // kind → the account its entry is in

		admin := newAdminToken(t, h, "seclog-admin@example.com")
		adminID := h.account(t, "seclog-admin@example.com").ID

		// Ann: sign-ins, sessions, password and email changes.
		annEmail := "seclog-ann@example.com"
		_, annID := newUserToken(t, h, dn, annEmail)
		want[securitylog.LoginOK] = annID
		expectError(t, "a wrong password", call(t, h, dn, opLogin, map[string]any{"email": annEmail, "password": "not the password"}), http.StatusUnauthorized, "INVALID_CREDENTIALS")
		want[securitylog.LoginFailed] = annID
		login(t, h, dn, annEmail, testPassword, withHeader("User-Agent", "SecLogTest-Android/1.0 okhttp/4.12"))
		want[securitylog.NewDeviceSignIn] = annID

		reused := login(t, h, dn, annEmail, testPassword)
		rotated := time.Now()
		tokensOf(t, "refresh", call(t, h, dn, opRefresh, map[string]any{"refreshToken": reused.refresh}))
		time.Sleep(time.Until(rotated.Add(time.Second + 250*time.Millisecond))) // past sessionEnv's grace: theft, not a second tab
		expectError(t, "a rotated refresh token again", call(t, h, dn, opRefresh, map[string]any{"refreshToken": reused.refresh}), http.StatusUnauthorized, "TOKEN_INVALID")
		want[securitylog.RefreshReuseDetected] = annID

		out := login(t, h, dn, annEmail, testPassword)
		expectOK(t, "logout", call(t, h, dn, opLogout, nil, withBearer(out.access)), http.StatusOK)
		want[securitylog.Logout] = annID

		keep, other := login(t, h, dn, annEmail, testPassword), login(t, h, dn, annEmail, testPassword)
		_, otherClaims := jwtParts(t, other.access)
		status, env, _ := h.rest(t, http.MethodDelete, "/api/v1/users/me/sessions/"+url.PathEscape(otherClaims["sid"].(string)), nil, withBearer(keep.access))
		if status != http.StatusOK && status != http.StatusNoContent {
			t.Fatalf("revoke own session: %d %v", status, env)
		}
		want[securitylog.SessionRevoked] = annID

		r := call(t, h, dn, opChangePassword, map[string]any{"currentPassword": testPassword, "newPassword": testPassword + "-2"}, withBearer(keep.access))
		expectOK(t, "change password", r, http.StatusOK)
		want[securitylog.PasswordChanged] = annID

		next := "seclog-ann-new@example.com"
		expectOK(t, "change email", call(t, h, dn, opChangeEmail, map[string]any{"email": next}, withBearer(keep.access)), http.StatusAccepted)
		want[securitylog.EmailChangeRequested] = annID
		// The change's notice to the old address carries the cancel link
		// (found by content: a new-device alert may come before it).
		var link string
		eventually(t, func() bool {
			for _, m := range h.SMTP.Messages() {
				if strings.Contains(m.Text, next) {
					if link = cancelLink.FindString(m.Text); link != "" {
						return true
					}
				}
			}
			return false
		}, "no email-change notice with a cancel link reached %s", annEmail)
		u, err := url.Parse(link)
		if err != nil {
			t.Fatal(err)
		}
		cancel := u.Query().Get("token")
		r = call(t, h, dn, opCancelEmail, map[string]any{"token": cancel})
		if expectOK(t, "cancel", r, http.StatusOK); r.data.(map[string]any)["cancelled"] != true {
			t.Fatalf("cancel answered %v", r.data)
		}
		want[securitylog.EmailChangeCancelled] = annID
		expectOK(t, "change email again", call(t, h, dn, opChangeEmail, map[string]any{"email": next}, withBearer(keep.access)), http.StatusAccepted)
		code := emailChangeCode(t, h, annID, next, 2)
		expectOK(t, "confirm", call(t, h, dn, opConfirmEmail, map[string]any{"code": code}, withBearer(keep.access)), http.StatusOK)
		want[securitylog.EmailChangeConfirmed] = annID

		expectOK(t, "request a reset", call(t, h, dn, opRequestReset, map[string]any{"email": next}), http.StatusOK)
		reset := h.code(t, next, 3, accounts.PurposeReset) // after the codes of the two change requests
		expectOK(t, "reset", call(t, h, dn, opResetPass, map[string]any{"email": next, "code": reset, "newPassword": testPassword}), http.StatusOK)
		want[securitylog.PasswordReset] = annID

		// An admin's actions on ann, and API keys.
		for _, path := range []string{"/disable", "/enable"} {
			if status, env, _ := h.rest(t, http.MethodPost, "/api/v1/admin/users/"+annID+path, map[string]any{"reason": "seclog test"}, withBearer(admin)); status != http.StatusOK {
				t.Fatalf("admin %s: %d %v", path, status, env)
			}
		}
		if status, env, _ := h.rest(t, http.MethodDelete, "/api/v1/admin/users/"+annID+"/sessions", nil, withBearer(admin)); status != http.StatusOK {
			t.Fatalf("admin revoke sessions: %d %v", status, env)
		}
		want[securitylog.AdminAction] = annID
		_, keyID := createKey(t, h, dn, admin, map[string]any{"name": "seclog", "scopes": []string{"notifications:send"}})
		want[securitylog.APIKeyCreated] = adminID
		if status, env, _ := h.rest(t, http.MethodDelete, "/api/v1/api-keys/"+keyID, nil, withBearer(admin)); status != http.StatusOK {
			t.Fatalf("revoke key: %d %v", status, env)
		}
		want[securitylog.APIKeyRevoked] = adminID

		// Bob: a second factor, its codes, its removal, an admin's reset.
		bob := enrollTOTP(t, h, dn, "seclog-bob@example.com")
		want[securitylog.MFAEnrolled] = bob.id
		tok := challenge(t, h, dn, bob.email, "totp", "recovery")
		expectError(t, "a wrong second factor", mfaOp(t, h, dn, "completeMfaLogin", map[string]any{"challengeToken": tok, "code": wrongCode(t, totpCode(t, bob.secret, time.Now()))}), 400, "MFA_CODE_INVALID")
		tokensOf(t, "a recovery code", mfaOp(t, h, dn, "completeMfaLogin", map[string]any{"challengeToken": tok, "code": bob.recovery[0]}))
		want[securitylog.RecoveryCodeUsed] = bob.id
		expectOK(t, "regenerate", mfaOp(t, h, dn, "regenerateRecoveryCodes", nil, withBearer(bob.session.access)), http.StatusOK)
		want[securitylog.RecoveryCodesRegen] = bob.id
		expectOK(t, "remove the factor", mfaOp(t, h, dn, "removeMfaFactor", map[string]any{"factorId": bob.factorID}, withBearer(bob.session.access)), http.StatusOK)
		want[securitylog.MFARemoved] = bob.id
		bob2 := enrollTOTP(t, h, dn, "seclog-bob2@example.com")
		expectOK(t, "reset the factors", mfaOp(t, h, dn, "resetUserMfa", map[string]any{"userId": bob2.id}, withBearer(admin)), http.StatusOK)
		want[securitylog.MFAReset] = bob2.id

		// Carl: a passkey added and removed.
		carlAccess, carlID := newUserToken(t, h, dn, "seclog-carl@example.com")
		phone := &passkeystest.Authenticator{}
		pk, _ := registerPasskey(t, h, dn, carlAccess, phone, "Phone")
		want[securitylog.PasskeyAdded] = carlID
		aal2 := tokensOf(t, "passkey sign-in", passkeyLogin(t, h, dn, phone, passkeystest.Ceremony{Origin: passkeyOrigin})).access
		expectOK(t, "remove the passkey", passkeyOp(t, h, dn, "removePasskey", map[string]any{"passkeyId": pk["id"]}, withBearer(aal2)), http.StatusOK)
		want[securitylog.PasskeyRemoved] = carlID

		for _, k := range securitylog.Kinds {
			if k == securitylog.IdentityLinked || k == securitylog.IdentityUnlinked || k == securitylog.GuestUpgraded {
				continue // TestIdentitiesE2E's (with its fake providers) and TestGuestsE2E's
			}
			if _, ok := want[k]; !ok {
				t.Errorf("the test makes no %s entry", k)
			}
		}

		// The log: each kind in its account, from this client.
		dbURL := h.Env["HERALD_DATABASE_URL"]
		entries := map[securitylog.Kind][][]string{} // kind → [account, id, ip, user agent]
		for _, row := range sqlstoretest.RawColumn(t, dbURL, `SELECT kind || '|' || account_id || '|' || id || '|' || ip || '|' || user_agent FROM security_events`) {
			f := strings.SplitN(row, "|", 5)
			entries[securitylog.Kind(f[0])] = append(entries[securitylog.Kind(f[0])], f[1:])
		}
		events := strings.Join(sqlstoretest.RawColumn(t, dbURL, `SELECT type || ' ' || payload FROM webhook_events WHERE type LIKE 'security.%'`), "\n")
		for k, account := range want {
			var found bool
			for _, e := range entries[k] {
				if e[0] != account {
					continue
				}
				found = true
				if e[2] != "127.0.0.1" || e[3] == "" {
					t.Errorf("%s entry %s: ip %q, user agent %q; want the client's", k, e[1], e[2], e[3])
				}
				if k == securitylog.MFAReset {
					continue // its webhook is mfa.Reset's, checked by the MFA tests
				}
				if !strings.Contains(events, securitylog.WebhookType(k)+` {"type":"`+securitylog.WebhookType(k)+`"`) ||
					!strings.Contains(events, `"eventId":"`+e[1]+`"`) {
					t.Errorf("%s entry %s has no %s webhook event naming it", k, e[1], securitylog.WebhookType(k))
				}
			}
			if !found {
				t.Errorf("no %s entry for account %s; entries of that kind: %v", k, account, entries[k])
			}
		}
		if ua := entries[securitylog.NewDeviceSignIn]; len(ua) != 1 || !strings.HasPrefix(ua[0][3], "SecLogTest-Android/") {
			t.Errorf("new-device entries %v; want one, for the Android sign-in", ua)
		}

		// Read through both doors: bob's log (a factor enrolled, a code
		// refused, a recovery code, regenerated codes, the factor removed).
		bobToken := login(t, h, dn, bob.email, testPassword).access
		var pages [][]any
		for _, door := range doorNames {
			got := readSecurityLog(t, h, door, "", bobToken, 0, "")
			if want := len(entriesOf(entries, bob.id)) + 1; len(got) != want { // and the login just now
				t.Errorf("%s: bob's log has %d entries, want %d", door, len(got), want)
			}
			pages = append(pages, got)
			first := got[0].(map[string]any)
			if first["kind"] != "login_ok" || first["outcome"] != "ok" || first["actor"] != "user" || first["ip"] != "127.0.0.1" || first["userAgent"] == "" {
				t.Errorf("%s: the newest entry %v, want bob's login just now", door, first)
			}
		}
		if len(pages[0]) != len(pages[1]) {
			t.Errorf("the doors disagree: %d and %d entries", len(pages[0]), len(pages[1]))
		}
		// Paging: two at a time walk the same entries.
		var walked []string
		after := ""
		for i := 0; i < 20; i++ {
			status, env, _ := h.rest(t, http.MethodGet, "/api/v1/users/me/security-log?first=2&after="+url.QueryEscape(after), nil, withBearer(bobToken))
			if status != http.StatusOK {
				t.Fatalf("page %d: %d %v", i, status, env)
			}
			for _, n := range asList(jsonPath(env, "data", "nodes")) {
				walked = append(walked, jsonPath(n, "id").(string))
			}
			if jsonPath(env, "data", "pageInfo", "hasNextPage") != true {
				break
			}
			after = jsonPath(env, "data", "pageInfo", "endCursor").(string)
		}
		if len(walked) != len(pages[1]) || walked[0] != jsonPath(pages[1][0], "id") {
			t.Errorf("paged two at a time: %d entries starting %v; one page: %d", len(walked), walked, len(pages[1]))
		}
		for _, q := range []string{"first=0", "first=101", "first=x", "after=not-an-id"} {
			status, env, _ := h.rest(t, http.MethodGet, "/api/v1/users/me/security-log?"+q, nil, withBearer(bobToken))
			if status != http.StatusBadRequest || jsonPath(env, "error", "code") != "VALIDATION_ERROR" {
				t.Errorf("?%s: %d %v, want 400 VALIDATION_ERROR", q, status, env)
			}
		}
		// Operators read anyone's; users do not.
		if got := readSecurityLog(t, h, graphQLDoor.name, annID, admin, 100, ""); len(got) != len(entriesOf(entries, annID)) {
			t.Errorf("the admin read %d of ann's entries, the table has %d", len(got), len(entriesOf(entries, annID)))
		}
		if got := readSecurityLog(t, h, restDoor.name, annID, admin, 100, ""); len(got) != len(entriesOf(entries, annID)) {
			t.Errorf("the admin read %d of ann's entries over REST, the table has %d", len(got), len(entriesOf(entries, annID)))
		}
		status, env, _ = h.rest(t, http.MethodGet, "/api/v1/admin/users/"+annID+"/security-log", nil, withBearer(bobToken))
		if status != http.StatusForbidden {
			t.Errorf("a user reading another's log: %d %v, want 403", status, env)
		}
		status, env, _ = h.rest(t, http.MethodGet, "/api/v1/admin/users/no-such-user/security-log", nil, withBearer(admin))
		if status != http.StatusNotFound || jsonPath(env, "error", "code") != "USER_NOT_FOUND" {
			t.Errorf("an unknown user's log: %d %v, want 404 USER_NOT_FOUND", status, env)
		}
	})
}

// entriesOf are the table's entries of one account.
func entriesOf(entries map[securitylog.Kind][][]string, account string) [][]string {
	var out [][]string
	for _, es := range entries {
		for _, e := range es {
			if e[0] == account {
				out = append(out, e)
			}
		}
	}
	return out
}

// readSecurityLog reads a security log through a door: the caller's own
// (userID "") or a user's as an operator.
func readSecurityLog(t testing.TB, h *herald, dn, userID, bearer string, first int, after string) []any {
	t.Helper()
	if dn == graphQLDoor.name {
		doc := `query($first: Int) { mySecurityLog(first: $first) { nodes { id kind outcome actor ip userAgent at detail } pageInfo { endCursor hasNextPage } } }`
		vars := map[string]any{}
		if first > 0 {
			vars["first"] = first
		}
		field := "mySecurityLog"
		if userID != "" {
			doc = `query($id: ID!, $first: Int) { userSecurityLog(userId: $id, first: $first) { nodes { id kind outcome actor ip userAgent at detail } pageInfo { endCursor hasNextPage } } }`
			vars["id"], field = userID, "userSecurityLog"
		}
		r := gql(t, h, field, doc, vars, withBearer(bearer))
		expectOK(t, field, r, http.StatusOK)
		return asList(jsonPath(r.data, "nodes"))
	}
	path := "/api/v1/users/me/security-log"
	if userID != "" {
		path = "/api/v1/admin/users/" + userID + "/security-log"
	}
	q := url.Values{}
	if first > 0 {
		q.Set("first", strconv.Itoa(first))
	}
	if after != "" {
		q.Set("after", after)
	}
	status, env, _ := h.rest(t, http.MethodGet, path+"?"+q.Encode(), nil, withBearer(bearer))
	if status != http.StatusOK {
		t.Fatalf("GET %s: %d %v", path, status, env)
	}
	return asList(jsonPath(env, "data", "nodes"))
}
