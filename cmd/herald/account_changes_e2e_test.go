package main

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/mail/mailtest"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

// Operations of the email and password changes, named as in the GraphQL
// schema.
const (
	opChangeEmail    = "changeEmail"
	opConfirmEmail   = "confirmEmailChange"
	opCancelEmail    = "cancelEmailChange"
	opChangePassword = "changePassword"
)

func init() {
	sessionDocs[opChangeEmail] = `mutation($email: String!) { changeEmail(email: $email) { pendingEmail message } }`
	sessionDocs[opConfirmEmail] = `mutation($code: String!) { confirmEmailChange(code: $code) { id email emailVerified } }`
	sessionDocs[opCancelEmail] = `mutation($token: String!) { cancelEmailChange(token: $token) { cancelled } }`
	sessionDocs[opChangePassword] = `mutation($currentPassword: String!, $newPassword: String!) {
  changePassword(currentPassword: $currentPassword, newPassword: $newPassword) { sessionsEnded }
}`
	sessionRoutes[opChangeEmail] = [2]string{http.MethodPost, "/api/v1/users/me/email"}
	sessionRoutes[opConfirmEmail] = [2]string{http.MethodPost, "/api/v1/users/me/email/confirm"}
	sessionRoutes[opCancelEmail] = [2]string{http.MethodPost, "/api/v1/auth/email-change/cancel"}
	sessionRoutes[opChangePassword] = [2]string{http.MethodPost, "/api/v1/users/me/password"}
}

// The public URL the cancel links are made from.
const changesPublicURL = "https://api.example.test"

func TestAccountChangesE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		h := startHerald(t, d, sessionEnv(map[string]string{"HERALD_PUBLIC_URL": changesPublicURL}))
		for _, dn := range doorNames {
			t.Run(dn, func(t *testing.T) {
				t.Run("EmailChange", func(t *testing.T) { testEmailChange(t, h, dn) })
				t.Run("EmailChangeCancelled", func(t *testing.T) { testEmailChangeCancelled(t, h, dn) })
				t.Run("EmailChangeRefusals", func(t *testing.T) { testEmailChangeRefusals(t, h, dn) })
				t.Run("PasswordChange", func(t *testing.T) { testPasswordChange(t, h, dn) })
			})
		}
		t.Run("CancelPage", func(t *testing.T) { testCancelPage(t, h) })
	})
}

// emailChangeCode waits for the n-th email to the new address, checks it
// is a code email, and waits until its send is recorded (the code then
// checks).
func emailChangeCode(t testing.TB, h *herald, accountID, to string, n int) string {
	t.Helper()
	msg := h.SMTP.WaitForMessages(t, to, n, mailWait)[n-1]
	code, ok := mailtest.ExtractCode(msg.Text)
	if !ok || !strings.Contains(msg.HTML, code) {
		t.Fatalf("email %d to %s carries no code in both parts:\n%s", n, to, msg.Text)
	}
	eventually(t, func() bool {
		st, err := h.store(t).SendStats(t.Context(), accountID, accounts.PurposeEmailChange, msg.Received.Add(-mailWait))
		return err == nil && !st.LastSent.Before(msg.Received.Add(-mailWait)) && !st.LastSent.IsZero()
	}, "the server never recorded the email-change code sent to %s", to)
	return code
}

var cancelLink = regexp.MustCompile(regexp.QuoteMeta(changesPublicURL) + `/api/v1/auth/email-change/cancel\?token=[A-Za-z0-9%._-]+`)

// cancelTokenIn returns the token of the cancel link in the n-th email to
// the old address, which must name the new one.
func cancelTokenIn(t testing.TB, h *herald, old, newEmail string, n int) string {
	t.Helper()
	msg := h.SMTP.WaitForMessages(t, old, n, mailWait)[n-1]
	if !strings.Contains(msg.Text, newEmail) || !strings.Contains(msg.HTML, newEmail) {
		t.Fatalf("the notice to %s does not name %s:\n%s", old, newEmail, msg.Text)
	}
	link := cancelLink.FindString(msg.Text)
	if link == "" || !strings.Contains(msg.HTML, link) {
		t.Fatalf("the notice to %s has no cancel link under %s in both parts:\n%s\n%s", old, changesPublicURL, msg.Text, msg.HTML)
	}
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("token")
}

// The change happens with the new address's code: the account's email is
// the new one, verified; the session that confirmed stays, every other
// ends; the old address is told and no longer signs in.
func testEmailChange(t *testing.T, h *herald, dn string) {
	old, next := "change-"+dn+"@example.com", "changed-"+dn+"@example.com"
	newVerifiedUser(t, h, dn, old)
	id := h.account(t, old).ID
	keep, other := login(t, h, dn, old, testPassword), login(t, h, dn, old, testPassword)

	r := call(t, h, dn, opChangeEmail, map[string]any{"email": "  " + strings.ToUpper(next) + " "}, withBearer(keep.access))
	expectOK(t, "change email", r, map[string]int{"graphql": 200, "rest": 202}[dn])
	if got := r.data.(map[string]any)["pendingEmail"]; got != next {
		t.Fatalf("pendingEmail %v, want the normalized %s", got, next)
	}
	code := emailChangeCode(t, h, id, next, 1)
	cancelTokenIn(t, h, old, next, 2) // the first was the verification code
	// Nothing changed yet.
	if got := jsonPath(me(t, h, dn, keep.access).data, "email"); got != old {
		t.Fatalf("email before the code = %v, want %s", got, old)
	}

	expectError(t, "wrong code", call(t, h, dn, opConfirmEmail, map[string]any{"code": wrongCode(t, code)}, withBearer(keep.access)),
		http.StatusBadRequest, "INVALID_VERIFICATION_CODE")
	r = call(t, h, dn, opConfirmEmail, map[string]any{"code": code}, withBearer(keep.access))
	expectOK(t, "confirm", r, http.StatusOK)
	if m := r.data.(map[string]any); m["email"] != next || m["emailVerified"] != true {
		t.Fatalf("confirm answered %v, want %s verified", m, next)
	}
	expectOK(t, "me of the session that confirmed", me(t, h, dn, keep.access), http.StatusOK)
	expectError(t, "the other session's access token", me(t, h, dn, other.access), http.StatusUnauthorized, "TOKEN_INVALID")
	expectError(t, "the other session's refresh token", call(t, h, dn, opRefresh, map[string]any{"refreshToken": other.refresh}), http.StatusUnauthorized, "TOKEN_INVALID")
	changed := h.SMTP.WaitForMessages(t, old, 3, mailWait)[2]
	if !strings.Contains(changed.Text, next) || !strings.Contains(changed.Subject, "changed") {
		t.Fatalf("the old address was not told of the change: %q\n%s", changed.Subject, changed.Text)
	}
	expectError(t, "login with the old address", call(t, h, dn, opLogin, map[string]any{"email": old, "password": testPassword}), http.StatusUnauthorized, "INVALID_CREDENTIALS")
	login(t, h, dn, next, testPassword)
	expectError(t, "the code again", call(t, h, dn, opConfirmEmail, map[string]any{"code": code}, withBearer(keep.access)),
		http.StatusBadRequest, "INVALID_VERIFICATION_CODE")
	// The old address is free: it can sign up again.
	expectOK(t, "signup with the old address", call(t, h, dn, opSignup, map[string]any{"email": old, "password": testPassword}),
		map[string]int{"graphql": 200, "rest": 201}[dn])
}

// The old address's link cancels: the code no longer confirms, and the
// link works once.
func testEmailChangeCancelled(t *testing.T, h *herald, dn string) {
	old, next := "keep-"+dn+"@example.com", "thief-"+dn+"@example.com"
	newVerifiedUser(t, h, dn, old)
	id := h.account(t, old).ID
	tok := login(t, h, dn, old, testPassword)
	expectOK(t, "change email", call(t, h, dn, opChangeEmail, map[string]any{"email": next}, withBearer(tok.access)), map[string]int{"graphql": 200, "rest": 202}[dn])
	code := emailChangeCode(t, h, id, next, 1)
	cancel := cancelTokenIn(t, h, old, next, 2)

	r := call(t, h, dn, opCancelEmail, map[string]any{"token": cancel})
	expectOK(t, "cancel", r, http.StatusOK)
	if r.data.(map[string]any)["cancelled"] != true {
		t.Fatalf("cancel answered %v, want cancelled", r.data)
	}
	r = call(t, h, dn, opCancelEmail, map[string]any{"token": cancel})
	expectOK(t, "cancel again", r, http.StatusOK)
	if r.data.(map[string]any)["cancelled"] != false {
		t.Fatalf("a second cancel answered %v, want nothing cancelled", r.data)
	}
	expectError(t, "confirm after the cancel", call(t, h, dn, opConfirmEmail, map[string]any{"code": code}, withBearer(tok.access)),
		http.StatusBadRequest, "INVALID_VERIFICATION_CODE")
	if got := jsonPath(me(t, h, dn, tok.access).data, "email"); got != old {
		t.Fatalf("email after the cancel = %v, want %s", got, old)
	}
	for _, bad := range []string{"", "x", cancel + "x", strings.Replace(cancel, ".", ".A", 1)} {
		r := call(t, h, dn, opCancelEmail, map[string]any{"token": bad})
		if dn == restDoor.name && bad == "" {
			expectError(t, "empty token", r, http.StatusBadRequest, "VALIDATION_ERROR")
			continue
		}
		expectError(t, "token "+bad, r, http.StatusBadRequest, "VALIDATION_ERROR")
		if r.details["field"] != "token" {
			t.Errorf("token %q: details %v, want field token", bad, r.details)
		}
	}
}

func testEmailChangeRefusals(t *testing.T, h *herald, dn string) {
	a, b := "refuse-a-"+dn+"@example.com", "refuse-b-"+dn+"@example.com"
	newVerifiedUser(t, h, dn, a)
	newVerifiedUser(t, h, dn, b)
	tok := login(t, h, dn, a, testPassword)
	code := map[string]string{"graphql": "EMAIL_EXISTS", "rest": "EMAIL_ALREADY_EXISTS"}[dn]
	expectError(t, "another account's address", call(t, h, dn, opChangeEmail, map[string]any{"email": b}, withBearer(tok.access)), http.StatusConflict, code)
	r := call(t, h, dn, opChangeEmail, map[string]any{"email": a}, withBearer(tok.access))
	expectError(t, "the current address", r, http.StatusBadRequest, "VALIDATION_ERROR")
	if r.details["field"] != "email" {
		t.Errorf("the current address: details %v, want field email", r.details)
	}
	expectError(t, "a malformed address", call(t, h, dn, opChangeEmail, map[string]any{"email": "not-an-address"}, withBearer(tok.access)),
		http.StatusUnprocessableEntity, "INVALID_EMAIL")
	expectError(t, "no token", call(t, h, dn, opChangeEmail, map[string]any{"email": "free-" + dn + "@example.com"}), http.StatusUnauthorized, "AUTH_REQUIRED")
	expectError(t, "nothing pending", call(t, h, dn, opConfirmEmail, map[string]any{"code": "123456"}, withBearer(tok.access)),
		http.StatusBadRequest, "INVALID_VERIFICATION_CODE")
	if n := h.SMTP.Count(b); n != 1 {
		t.Fatalf("%d emails to %s, want only its verification code", n, b)
	}
}

// A password change needs the current password, ends every other session
// and tells the account's address.
func testPasswordChange(t *testing.T, h *herald, dn string) {
	email := "password-" + dn + "@example.com"
	newVerifiedUser(t, h, dn, email)
	keep, other := login(t, h, dn, email, testPassword), login(t, h, dn, email, testPassword)
	change := func(current, next string) result {
		return call(t, h, dn, opChangePassword, map[string]any{"currentPassword": current, "newPassword": next}, withBearer(keep.access))
	}
	expectError(t, "wrong current password", change("Wrong1234", newPassword), http.StatusUnauthorized, "INVALID_CREDENTIALS")
	expectError(t, "weak new password", change(testPassword, "short"), http.StatusUnprocessableEntity, "WEAK_PASSWORD")
	r := change(testPassword, testPassword)
	expectError(t, "the same password", r, http.StatusBadRequest, "VALIDATION_ERROR")
	if r.details["field"] != "newPassword" {
		t.Errorf("the same password: details %v, want field newPassword", r.details)
	}
	r = change(testPassword, newPassword)
	expectOK(t, "change", r, http.StatusOK)
	if n := asInt(t, r.data.(map[string]any)["sessionsEnded"]); n != 1 {
		t.Fatalf("sessionsEnded %d, want 1", n)
	}
	expectOK(t, "me of the session that changed it", me(t, h, dn, keep.access), http.StatusOK)
	expectError(t, "the other session", me(t, h, dn, other.access), http.StatusUnauthorized, "TOKEN_INVALID")
	expectError(t, "the old password", call(t, h, dn, opLogin, map[string]any{"email": email, "password": testPassword}), http.StatusUnauthorized, "INVALID_CREDENTIALS")
	login(t, h, dn, email, newPassword)
	notice := h.SMTP.WaitForMessages(t, email, 2, mailWait)[1]
	if !strings.Contains(notice.Subject, "password was changed") {
		t.Fatalf("the notice's subject is %q", notice.Subject)
	}
}

// The link opens a page that changes nothing; its form cancels.
func testCancelPage(t *testing.T, h *herald) {
	old, next := "page@example.com", "page-new@example.com"
	newVerifiedUser(t, h, "rest", old)
	tok := login(t, h, "rest", old, testPassword)
	expectOK(t, "change email", call(t, h, "rest", opChangeEmail, map[string]any{"email": next}, withBearer(tok.access)), http.StatusAccepted)
	cancel := cancelTokenIn(t, h, old, next, 2)

	status, hdr, body := h.do(t, http.MethodGet, "/api/v1/auth/email-change/cancel?token="+url.QueryEscape(cancel), nil)
	if status != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") || !strings.Contains(string(body), `name="token" value="`+cancel+`"`) {
		t.Fatalf("GET the link: %d %s\n%s", status, hdr.Get("Content-Type"), body)
	}
	r := call(t, h, "rest", opChangeEmail, map[string]any{"email": next}, withBearer(tok.access)) // still pending: asking again is fine
	expectError(t, "asking again within the cooldown", r, http.StatusTooManyRequests, "RATE_LIMITED")

	status, hdr, body = h.do(t, http.MethodPost, "/api/v1/auth/email-change/cancel", "token="+url.QueryEscape(cancel),
		withHeader("Content-Type", "application/x-www-form-urlencoded"))
	if status != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") || !strings.Contains(string(body), "is cancelled") {
		t.Fatalf("POST the form: %d %s\n%s", status, hdr.Get("Content-Type"), body)
	}
	status, _, body = h.do(t, http.MethodPost, "/api/v1/auth/email-change/cancel", "token=damaged",
		withHeader("Content-Type", "application/x-www-form-urlencoded"))
	if status != http.StatusOK || !strings.Contains(string(body), "Not cancelled") || !strings.Contains(string(body), "not valid") {
		t.Fatalf("POST a damaged token: %d\n%s", status, body)
	}
}
