package main

// Second factors end to end, through the real server on both databases and
// both doors: enroll and confirm a TOTP factor with codes computed here
// from its secret, a login answering MFA_REQUIRED and completed with a
// TOTP code or a recovery code (single use, told by email to the fake
// SMTP server), replay and lockout, step-up refusals at aal1 for each
// sensitive operation, HERALD_ADMIN_MFA=required and an admin's reset.

import (
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/webhooks"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"
)

const mfaFactorFields = `id kind name status createdAt confirmedAt lastUsedAt`
const mfaTokenFields = `accessToken refreshToken tokenType expiresIn`

var mfaDocs = map[string]string{
	"enrollTotp":              `mutation($name: String) { enrollTotp(name: $name) { factor { ` + mfaFactorFields + ` } secret uri qrCode } }`,
	"confirmTotp":             `mutation($factorId: ID!, $code: String!) { confirmTotp(factorId: $factorId, code: $code) { factor { ` + mfaFactorFields + ` } recoveryCodes session { ` + mfaTokenFields + ` } } }`,
	"myMfa":                   `query { myMfa { enabled recoveryCodesLeft passkeys factors { ` + mfaFactorFields + ` } } }`,
	"userMfa":                 `query($userId: ID!) { userMfa(userId: $userId) { enabled recoveryCodesLeft passkeys factors { ` + mfaFactorFields + ` } } }`,
	"completeMfaLogin":        `mutation($challengeToken: String!, $code: String!) { completeMfaLogin(challengeToken: $challengeToken, code: $code) { ` + mfaTokenFields + ` } }`,
	"verifyMfa":               `mutation($code: String!) { verifyMfa(code: $code) { ` + mfaTokenFields + ` } }`,
	"removeMfaFactor":         `mutation($factorId: ID!) { removeMfaFactor(factorId: $factorId) { factorId removed } }`,
	"regenerateRecoveryCodes": `mutation { regenerateRecoveryCodes { recoveryCodes } }`,
	"resetUserMfa":            `mutation($userId: ID!) { resetUserMfa(userId: $userId) { userId factorsRemoved } }`,
	"deleteAccount":           `mutation($password: String!) { deleteAccount(password: $password) }`,
	"createApiKey":            `mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) { key apiKey { id } } }`,
	"users":                   `query { users(first: 1) { nodes { id } } }`,
}

// mfaOp runs a second-factor operation (or a sensitive one) through the door.
func mfaOp(t testing.TB, h *herald, dn, op string, args map[string]any, opts ...reqOption) result {
	t.Helper()
	if dn == graphQLDoor.name {
		return gql(t, h, op, mfaDocs[op], args, opts...)
	}
	str := func(k string) string { s, _ := args[k].(string); return s }
	var method, path string
	var body any
	switch op {
	case "enrollTotp":
		method, path = http.MethodPost, "/api/v1/users/me/mfa/totp"
		if n, ok := args["name"]; ok {
			body = map[string]any{"name": n}
		}
	case "confirmTotp":
		method, path, body = http.MethodPost, "/api/v1/users/me/mfa/totp/"+url.PathEscape(str("factorId"))+"/confirm", map[string]any{"code": args["code"]}
	case "myMfa":
		method, path = http.MethodGet, "/api/v1/users/me/mfa"
	case "userMfa":
		method, path = http.MethodGet, "/api/v1/admin/users/"+url.PathEscape(str("userId"))+"/mfa"
	case "completeMfaLogin":
		method, path, body = http.MethodPost, "/api/v1/auth/login/mfa", map[string]any{"challengeToken": args["challengeToken"], "code": args["code"]}
	case "verifyMfa":
		method, path, body = http.MethodPost, "/api/v1/auth/mfa/verify", map[string]any{"code": args["code"]}
	case "removeMfaFactor":
		method, path = http.MethodDelete, "/api/v1/users/me/mfa/factors/"+url.PathEscape(str("factorId"))
	case "regenerateRecoveryCodes":
		method, path = http.MethodPost, "/api/v1/users/me/mfa/recovery-codes"
	case "resetUserMfa":
		method, path = http.MethodDelete, "/api/v1/admin/users/"+url.PathEscape(str("userId"))+"/mfa"
	case "deleteAccount":
		method, path, body = http.MethodPost, "/api/v1/users/me/delete", map[string]any{"password": args["password"]}
	case "createApiKey":
		method, path, body = http.MethodPost, "/api/v1/api-keys", args["input"]
	case "users":
		method, path = http.MethodGet, "/api/v1/admin/users?first=1"
	default:
		t.Fatalf("no REST route for %s", op)
	}
	status, env, hdr := h.rest(t, method, path, body, opts...)
	return envelopeResult(t, op, status, env, hdr)
}

// totpCode is the code of secret (base32) at at, computed as an
// authenticator app does.
func totpCode(t testing.TB, secret string, at time.Time) string {
	t.Helper()
	c, err := totp.GenerateCodeCustom(secret, at, totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// claimsOf are an access token's aal and amr.
func claimsOf(t testing.TB, access string) (aal string, amr []string) {
	t.Helper()
	_, c := jwtParts(t, access)
	aal, _ = c["aal"].(string)
	for _, m := range asList(c["amr"]) {
		amr = append(amr, m.(string))
	}
	return aal, amr
}

func asList(v any) []any { l, _ := v.([]any); return l }

func expectAAL(t testing.TB, what, access, aal string, amr ...string) {
	t.Helper()
	if gotAAL, gotAMR := claimsOf(t, access); gotAAL != aal || !slices.Equal(gotAMR, amr) {
		t.Fatalf("%s: token aal %q amr %v, want %q %v", what, gotAAL, gotAMR, aal, amr)
	}
}

var recoveryCodeForm = regexp.MustCompile(`^[a-z2-9]{5}-[a-z2-9]{5}$`)

// enrolled is a user whose TOTP factor was confirmed.
type enrolled struct {
	email, id, factorID, secret string
	aal1                        string // an access token from before the factor: aal1
	session                     tokens // the confirming session's tokens: aal2
	recovery                    []string
	confirmedAt                 time.Time // the time the confirming code was computed for
}

// enrollTOTP signs a user up, enrolls a TOTP factor and confirms it with
// a code computed from the secret the server answered.
func enrollTOTP(t *testing.T, h *herald, dn, email string) enrolled {
	t.Helper()
	access, id := newUserToken(t, h, dn, email)
	expectAAL(t, "login without a factor", access, "aal1", "pwd")
	e := mfaOp(t, h, dn, "enrollTotp", map[string]any{"name": "Phone"}, withBearer(access))
	expectOK(t, "enrollTotp", e, map[string]int{"rest": 201, "graphql": 200}[dn])
	secret, _ := jsonPath(e.data, "secret").(string)
	uri, _ := jsonPath(e.data, "uri").(string)
	qr, _ := jsonPath(e.data, "qrCode").(string)
	factorID, _ := jsonPath(e.data, "factor", "id").(string)
	if secret == "" || !strings.HasPrefix(uri, "otpauth://totp/") || !strings.Contains(uri, "secret="+secret) ||
		!strings.HasPrefix(qr, "data:image/png;base64,") || jsonPath(e.data, "factor", "status") != "pending" || jsonPath(e.data, "factor", "name") != "Phone" {
		t.Fatalf("enrollment: %v", e.data)
	}
	// Pending: logins still need the password alone.
	expectAAL(t, "login with a pending factor", login(t, h, dn, email, testPassword).access, "aal1", "pwd")
	now := time.Now()
	wrong := wrongCode(t, totpCode(t, secret, now))
	for _, off := range []time.Duration{-30 * time.Second, 30 * time.Second} {
		if c := totpCode(t, secret, now.Add(off)); c == wrong {
			wrong = wrongCode(t, wrong)
		}
	}
	r := mfaOp(t, h, dn, "confirmTotp", map[string]any{"factorId": factorID, "code": wrong}, withBearer(access))
	expectError(t, "confirm with a wrong code", r, 400, "MFA_CODE_INVALID")
	r = mfaOp(t, h, dn, "confirmTotp", map[string]any{"factorId": "no-such-factor", "code": totpCode(t, secret, now)}, withBearer(access))
	expectError(t, "confirm an unknown factor", r, 404, "MFA_FACTOR_NOT_FOUND")
	r = mfaOp(t, h, dn, "confirmTotp", map[string]any{"factorId": factorID, "code": totpCode(t, secret, now)}, withBearer(access))
	expectOK(t, "confirm", r, 200)
	codes := asStrings(t, jsonPath(r.data, "recoveryCodes"))
	if len(codes) != 10 || jsonPath(r.data, "factor", "status") != "active" {
		t.Fatalf("confirmation: %v", r.data)
	}
	for _, c := range codes {
		if !recoveryCodeForm.MatchString(c) {
			t.Fatalf("recovery code %q", c)
		}
	}
	sess := tokensOf(t, "confirm's session", result{status: 200, data: jsonPath(r.data, "session")})
	expectAAL(t, "the confirming session", sess.access, "aal2", "pwd", "otp")
	st := mfaOp(t, h, dn, "myMfa", nil, withBearer(sess.access))
	expectOK(t, "myMfa", st, 200)
	if jsonPath(st.data, "enabled") != true || asInt(t, jsonPath(st.data, "recoveryCodesLeft")) != 10 || len(asList(jsonPath(st.data, "factors"))) != 1 {
		t.Fatalf("myMfa: %v", st.data)
	}
	return enrolled{email: email, id: id, factorID: factorID, secret: secret, aal1: access, session: sess, recovery: codes, confirmedAt: now}
}

// challenge logs in and expects MFA_REQUIRED: its challenge token.
func challenge(t *testing.T, h *herald, dn, email string, kinds ...string) string {
	t.Helper()
	r := call(t, h, dn, opLogin, map[string]any{"email": email, "password": testPassword})
	expectError(t, "login with a factor", r, 401, "MFA_REQUIRED")
	tok, _ := r.details["challengeToken"].(string)
	if !strings.HasPrefix(tok, "mfa_") || r.details["expiresAt"] == nil || !slices.Equal(asStrings(t, r.details["factors"]), kinds) {
		t.Fatalf("MFA_REQUIRED details: %v", r.details)
	}
	return tok
}

func TestMFAE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		h := startHerald(t, d, accountsEnv(map[string]string{"HERALD_MFA_LOCKOUT_ATTEMPTS": "3", "HERALD_MFA_LOCKOUT_DURATION": "10m"}))
		for _, dn := range doorNames {
			t.Run(dn, func(t *testing.T) {
				u := enrollTOTP(t, h, dn, dn+"-mfa@example.com")
				t.Run("LoginWithTOTP", func(t *testing.T) { testMFALoginTOTP(t, h, dn, u) })
				t.Run("LoginWithRecoveryCode", func(t *testing.T) { testMFALoginRecovery(t, h, dn, u) })
				t.Run("StepUp", func(t *testing.T) { testMFAStepUp(t, h, dn, u) })
				t.Run("Lockout", func(t *testing.T) { testMFALockout(t, h, dn, dn+"-locked@example.com") })
			})
		}
	})
}

func testMFALoginTOTP(t *testing.T, h *herald, dn string, u enrolled) {
	tok := challenge(t, h, dn, u.email, "totp", "recovery")
	// The confirming code's step was used: a replay is refused, and the
	// challenge stays usable.
	r := mfaOp(t, h, dn, "completeMfaLogin", map[string]any{"challengeToken": tok, "code": totpCode(t, u.secret, u.confirmedAt)})
	expectError(t, "replayed code", r, 400, "MFA_CODE_REUSED")
	r = mfaOp(t, h, dn, "completeMfaLogin", map[string]any{"challengeToken": "mfa_not-a-challenge", "code": "123456"})
	expectError(t, "malformed challenge", r, 401, "MFA_CHALLENGE_INVALID")
	// The next step's code (within the window) completes it.
	next := totpCode(t, u.secret, u.confirmedAt.Add(30*time.Second))
	r = mfaOp(t, h, dn, "completeMfaLogin", map[string]any{"challengeToken": tok, "code": next})
	session := tokensOf(t, "complete with TOTP", r)
	expectAAL(t, "login completed with TOTP", session.access, "aal2", "pwd", "otp")
	// A refresh keeps the session's aal.
	refreshed := tokensOf(t, "refresh", call(t, h, dn, opRefresh, map[string]any{"refreshToken": session.refresh}))
	expectAAL(t, "refreshed", refreshed.access, "aal2", "pwd", "otp")
	// The challenge is used.
	r = mfaOp(t, h, dn, "completeMfaLogin", map[string]any{"challengeToken": tok, "code": u.recovery[9]})
	expectError(t, "used challenge", r, 401, "MFA_CHALLENGE_INVALID")
	if r.details["reason"] != "used" {
		t.Fatalf("used challenge: %v", r.details)
	}
}

func testMFALoginRecovery(t *testing.T, h *herald, dn string, u enrolled) {
	tok := challenge(t, h, dn, u.email, "totp", "recovery")
	code := strings.ToUpper(u.recovery[0]) // any case
	r := mfaOp(t, h, dn, "completeMfaLogin", map[string]any{"challengeToken": tok, "code": code})
	session := tokensOf(t, "complete with a recovery code", r)
	expectAAL(t, "login completed with a recovery code", session.access, "aal2", "pwd", "recovery")
	// Told by email: the second email to the account (after its code).
	msg := h.SMTP.WaitForMessages(t, u.email, 2, mailWait)[1]
	if !strings.Contains(msg.Subject, "recovery code was used") || !strings.Contains(msg.Text, "9 recovery codes left") {
		t.Fatalf("recovery code email: %q\n%s", msg.Subject, msg.Text)
	}
	// Single use.
	tok = challenge(t, h, dn, u.email, "totp", "recovery")
	r = mfaOp(t, h, dn, "completeMfaLogin", map[string]any{"challengeToken": tok, "code": u.recovery[0]})
	expectError(t, "a recovery code used again", r, 400, "MFA_CODE_INVALID")
	r = mfaOp(t, h, dn, "completeMfaLogin", map[string]any{"challengeToken": tok, "code": "12345"})
	expectError(t, "a code of neither form", r, 400, "VALIDATION_ERROR")
	r = mfaOp(t, h, dn, "completeMfaLogin", map[string]any{"challengeToken": tok, "code": u.recovery[1]})
	tokensOf(t, "complete with another recovery code", r)
}

func testMFAStepUp(t *testing.T, h *herald, dn string, u enrolled) {
	// An aal1 token (from before the factor) is refused each sensitive
	// operation of a user.
	for _, c := range []struct {
		op   string
		args map[string]any
	}{
		{"deleteAccount", map[string]any{"password": testPassword}},
		{"removeMfaFactor", map[string]any{"factorId": u.factorID}},
		{"regenerateRecoveryCodes", nil},
	} {
		r := mfaOp(t, h, dn, c.op, c.args, withBearer(u.aal1))
		expectError(t, c.op+" at aal1", r, 403, "MFA_STEP_UP_REQUIRED")
		if r.details["requiredAal"] != "aal2" {
			t.Fatalf("%s: details %v", c.op, r.details)
		}
	}
	// The email and password changes too (account_changes_e2e_test.go).
	for op, args := range map[string]map[string]any{
		opChangeEmail:    {"email": "step-up-" + dn + "@example.com"},
		opConfirmEmail:   {"code": "123456"},
		opChangePassword: {"currentPassword": testPassword, "newPassword": newPassword},
	} {
		r := call(t, h, dn, op, args, withBearer(u.aal1))
		expectError(t, op+" at aal1", r, 403, "MFA_STEP_UP_REQUIRED")
	}
	// Step up with a recovery code: new tokens at aal2 for the session.
	r := mfaOp(t, h, dn, "verifyMfa", map[string]any{"code": u.recovery[2]}, withBearer(u.aal1))
	up := tokensOf(t, "verifyMfa", r)
	expectAAL(t, "stepped up", up.access, "aal2", "pwd", "recovery")
	r = mfaOp(t, h, dn, "regenerateRecoveryCodes", nil, withBearer(up.access))
	expectOK(t, "regenerate at aal2", r, 200)
	fresh := asStrings(t, jsonPath(r.data, "recoveryCodes"))
	if len(fresh) != 10 || slices.Contains(fresh, u.recovery[3]) {
		t.Fatalf("regenerated codes: %v", fresh)
	}
	tok := challenge(t, h, dn, u.email, "totp", "recovery")
	r = mfaOp(t, h, dn, "completeMfaLogin", map[string]any{"challengeToken": tok, "code": u.recovery[3]})
	expectError(t, "a code from before the regeneration", r, 400, "MFA_CODE_INVALID")
	// Removing the factor at aal2: the account logs in with the password
	// alone again.
	r = mfaOp(t, h, dn, "removeMfaFactor", map[string]any{"factorId": u.factorID}, withBearer(up.access))
	expectOK(t, "remove at aal2", r, 200)
	expectAAL(t, "login after the factor went", login(t, h, dn, u.email, testPassword).access, "aal1", "pwd")
	// Without a factor, aal1 is enough for the sensitive operations.
	r = mfaOp(t, h, dn, "deleteAccount", map[string]any{"password": testPassword}, withBearer(u.aal1))
	expectOK(t, "delete at aal1 without a factor", r, 200)
}

func testMFALockout(t *testing.T, h *herald, dn, email string) {
	u := enrollTOTP(t, h, dn, email) // its one wrong code was forgotten at the right one
	tok := challenge(t, h, dn, u.email, "totp", "recovery")
	for i, want := range []struct {
		status int
		code   string
	}{{400, "MFA_CODE_INVALID"}, {400, "MFA_CODE_INVALID"}, {429, "MFA_LOCKED"}} {
		r := mfaOp(t, h, dn, "completeMfaLogin", map[string]any{"challengeToken": tok, "code": "abcde-abcde"})
		expectError(t, "wrong recovery code", r, want.status, want.code)
		if i == 0 && asInt(t, r.details["attemptsLeft"]) != 2 {
			t.Fatalf("first wrong code: %v", r.details)
		}
	}
	// Locked: even a right code is refused, with Retry-After.
	r := mfaOp(t, h, dn, "completeMfaLogin", map[string]any{"challengeToken": tok, "code": u.recovery[0]})
	expectError(t, "right code while locked", r, 429, "MFA_LOCKED")
	if secs := asInt(t, r.details["retryAfter"]); secs < 590 || secs > 600 || r.details["lockedUntil"] == nil {
		t.Fatalf("MFA_LOCKED details: %v", r.details)
	}
	if dn == restDoor.name && r.header.Get("Retry-After") == "" {
		t.Fatal("MFA_LOCKED without Retry-After")
	}
	r = mfaOp(t, h, dn, "verifyMfa", map[string]any{"code": u.recovery[0]}, withBearer(u.aal1))
	expectError(t, "step-up while locked", r, 429, "MFA_LOCKED")
}

// HERALD_ADMIN_MFA=required: an admin's aal1 token is refused the admin
// operations until the admin enrolls and signs in with a factor; creating
// an API key needs aal2 too; an admin resets a user's factors, audited by
// the security.mfa_reset event.
func TestMFAAdminE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		h := startHerald(t, d, accountsEnv(map[string]string{"HERALD_ADMIN_MFA": "required"}))
		for _, dn := range doorNames {
			t.Run(dn, func(t *testing.T) {
				admin := newAdminToken(t, h, dn+"-ops@example.com")
				r := mfaOp(t, h, dn, "users", nil, withBearer(admin))
				expectError(t, "admin at aal1", r, 403, "ADMIN_MFA_REQUIRED")
				in := map[string]any{"name": dn + "-key", "scopes": []string{"accounts:read"}}
				r = mfaOp(t, h, dn, "createApiKey", map[string]any{"input": in}, withBearer(admin))
				expectError(t, "create an API key at aal1", r, 403, "ADMIN_MFA_REQUIRED")

				// The admin enrolls (their own operations stay open) and
				// the confirming session is aal2.
				e := mfaOp(t, h, dn, "enrollTotp", nil, withBearer(admin))
				expectOK(t, "admin enrolls", e, map[string]int{"rest": 201, "graphql": 200}[dn])
				secret, _ := jsonPath(e.data, "secret").(string)
				r = mfaOp(t, h, dn, "confirmTotp", map[string]any{"factorId": jsonPath(e.data, "factor", "id"), "code": totpCode(t, secret, time.Now())}, withBearer(admin))
				expectOK(t, "admin confirms", r, 200)
				admin2 := tokensOf(t, "admin's session", result{status: 200, data: jsonPath(r.data, "session")}).access
				expectOK(t, "admin at aal2", mfaOp(t, h, dn, "users", nil, withBearer(admin2)), 200)
				r = mfaOp(t, h, dn, "createApiKey", map[string]any{"input": in}, withBearer(admin2))
				expectOK(t, "create an API key at aal2", r, map[string]int{"rest": 201, "graphql": 200}[dn])
				keyReader, _ := jsonPath(r.data, "key").(string)

				// A user's factors, read and reset by the admin.
				u := enrollTOTP(t, h, dn, dn+"-reset@example.com")
				r = mfaOp(t, h, dn, "userMfa", map[string]any{"userId": u.id}, withHeader("X-API-Key", keyReader))
				expectOK(t, "userMfa with an accounts:read key", r, 200)
				if jsonPath(r.data, "enabled") != true {
					t.Fatalf("userMfa: %v", r.data)
				}
				r = mfaOp(t, h, dn, "resetUserMfa", map[string]any{"userId": u.id}, withBearer(admin))
				expectError(t, "reset at aal1", r, 403, "ADMIN_MFA_REQUIRED")
				r = mfaOp(t, h, dn, "resetUserMfa", map[string]any{"userId": u.id}, withBearer(u.session.access))
				expectError(t, "reset by the user", r, 403, "INSUFFICIENT_PERMISSIONS")
				r = mfaOp(t, h, dn, "resetUserMfa", map[string]any{"userId": u.id}, withBearer(admin2))
				expectOK(t, "reset", r, 200)
				if asInt(t, jsonPath(r.data, "factorsRemoved")) != 1 {
					t.Fatalf("reset: %v", r.data)
				}
				expectAAL(t, "login after the reset", login(t, h, dn, u.email, testPassword).access, "aal1", "pwd")
				r = mfaOp(t, h, dn, "resetUserMfa", map[string]any{"userId": "no-such-user"}, withBearer(admin2))
				expectError(t, "reset an unknown user", r, 404, "USER_NOT_FOUND")
				expectMFAResetEvent(t, h, u.id)
			})
		}
	})
}

// Without HERALD_ADMIN_MFA, an admin with a factor still needs aal2 to
// create an API key (a sensitive operation).
func TestMFAStepUpAPIKeyE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		h := startHerald(t, d, accountsEnv(nil))
		for _, dn := range doorNames {
			t.Run(dn, func(t *testing.T) {
				admin := newAdminToken(t, h, dn+"-keys@example.com")
				in := map[string]any{"name": dn + "-key", "scopes": []string{"accounts:read"}}
				r := mfaOp(t, h, dn, "createApiKey", map[string]any{"input": in}, withBearer(admin))
				expectOK(t, "create an API key without a factor", r, map[string]int{"rest": 201, "graphql": 200}[dn])
				e := mfaOp(t, h, dn, "enrollTotp", nil, withBearer(admin))
				secret, _ := jsonPath(e.data, "secret").(string)
				now := time.Now()
				r = mfaOp(t, h, dn, "confirmTotp", map[string]any{"factorId": jsonPath(e.data, "factor", "id"), "code": totpCode(t, secret, now)}, withBearer(admin))
				expectOK(t, "admin confirms", r, 200)
				r = mfaOp(t, h, dn, "createApiKey", map[string]any{"input": in}, withBearer(admin))
				expectError(t, "create an API key at aal1", r, 403, "MFA_STEP_UP_REQUIRED")
				// Stepping up with the next step's code makes it pass.
				up := tokensOf(t, "verifyMfa", mfaOp(t, h, dn, "verifyMfa", map[string]any{"code": totpCode(t, secret, now.Add(30*time.Second))}, withBearer(admin)))
				expectAAL(t, "stepped up with TOTP", up.access, "aal2", "pwd", "otp")
				r = mfaOp(t, h, dn, "createApiKey", map[string]any{"input": in}, withBearer(up.access))
				expectOK(t, "create an API key at aal2", r, map[string]int{"rest": 201, "graphql": 200}[dn])
			})
		}
	})
}

// expectMFAResetEvent finds the security.mfa_reset event of the user in
// the webhook outbox.
func expectMFAResetEvent(t *testing.T, h *herald, userID string) {
	t.Helper()
	n := 0
	for _, payload := range sqlstoretest.RawColumn(t, h.Env["HERALD_DATABASE_URL"], `SELECT payload FROM webhook_events WHERE type = '`+webhooks.SecurityMFAReset+`'`) {
		if strings.Contains(payload, `"userId":"`+userID+`"`) && strings.Contains(payload, `"actorKind":"user"`) {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d security.mfa_reset events for %s, want 1", n, userID)
	}
}
