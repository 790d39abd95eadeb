package main

// Passkeys end to end, through the real server on both databases and both
// doors, with a software authenticator (internal/passkeys/passkeystest:
// ECDSA P-256, CBOR attestation "none" and "packed" self attestation):
// registration, passwordless sign-in (a web and an Android origin), a
// passkey completing a login's MFA challenge, rename and removal with
// step-up, and the refusals — another origin, another relying party id, a
// replayed ceremony, a signature counter that went backwards.

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/passkeys/passkeystest"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

const (
	passkeyRPID    = "herald.test"
	passkeyOrigin  = "https://herald.test"
	passkeyAndroid = "android:apk-key-hash:Wm9vbS16b29tLWZha2UtY2VydGlmaWNhdGUtaGFzaA"
)

const passkeyFields = `id name aaguid attestationFormat backupEligible backedUp transports counterRegressions createdAt lastUsedAt`

var passkeyDocs = map[string]string{
	"beginPasskeyRegistration":    `mutation { beginPasskeyRegistration { challengeId expiresAt publicKey } }`,
	"finishPasskeyRegistration":   `mutation($credential: JSON!, $name: String, $challengeId: ID) { finishPasskeyRegistration(credential: $credential, name: $name, challengeId: $challengeId) { ` + passkeyFields + ` } }`,
	"myPasskeys":                  `query { myPasskeys { ` + passkeyFields + ` } }`,
	"renamePasskey":               `mutation($passkeyId: ID!, $name: String!) { renamePasskey(passkeyId: $passkeyId, name: $name) { ` + passkeyFields + ` } }`,
	"removePasskey":               `mutation($passkeyId: ID!) { removePasskey(passkeyId: $passkeyId) { passkeyId removed } }`,
	"beginPasskeyLogin":           `mutation { beginPasskeyLogin { challengeId expiresAt publicKey } }`,
	"finishPasskeyLogin":          `mutation($challengeId: ID!, $credential: JSON!) { finishPasskeyLogin(challengeId: $challengeId, credential: $credential) { ` + mfaTokenFields + ` } }`,
	"beginPasskeyMfa":             `mutation($challengeToken: String!) { beginPasskeyMfa(challengeToken: $challengeToken) { challengeId expiresAt publicKey } }`,
	"beginPasskeyStepUp":          `mutation { beginPasskeyStepUp { challengeId expiresAt publicKey } }`,
	"verifyMfaWithPasskey":        `mutation($challengeId: ID!, $credential: JSON!) { verifyMfaWithPasskey(challengeId: $challengeId, credential: $credential) { ` + mfaTokenFields + ` } }`,
	"userPasskeys":                `query($userId: ID!) { userPasskeys(userId: $userId) { ` + passkeyFields + ` } }`,
	"removeUserPasskey":           `mutation($userId: ID!, $passkeyId: ID!) { removeUserPasskey(userId: $userId, passkeyId: $passkeyId) { passkeyId removed } }`,
	"completeMfaLoginWithPasskey": `mutation($challengeToken: String!, $challengeId: ID!, $credential: JSON!) { completeMfaLoginWithPasskey(challengeToken: $challengeToken, challengeId: $challengeId, credential: $credential) { ` + mfaTokenFields + ` } }`,
}

// passkeyOp runs a passkey operation through the door.
func passkeyOp(t testing.TB, h *herald, dn, op string, args map[string]any, opts ...reqOption) result {
	t.Helper()
	if dn == graphQLDoor.name {
		return gql(t, h, op, passkeyDocs[op], args, opts...)
	}
	str := func(k string) string { s, _ := args[k].(string); return s }
	var method, path string
	var body any
	switch op {
	case "beginPasskeyRegistration":
		method, path = http.MethodPost, "/api/v1/users/me/passkeys/register/begin"
	case "finishPasskeyRegistration":
		method, path, body = http.MethodPost, "/api/v1/users/me/passkeys/register/finish", args
	case "myPasskeys":
		method, path = http.MethodGet, "/api/v1/users/me/passkeys"
	case "renamePasskey":
		method, path, body = http.MethodPatch, "/api/v1/users/me/passkeys/"+url.PathEscape(str("passkeyId")), map[string]any{"name": args["name"]}
	case "removePasskey":
		method, path = http.MethodDelete, "/api/v1/users/me/passkeys/"+url.PathEscape(str("passkeyId"))
	case "beginPasskeyLogin":
		method, path = http.MethodPost, "/api/v1/auth/passkey/begin"
	case "finishPasskeyLogin":
		method, path, body = http.MethodPost, "/api/v1/auth/passkey/finish", args
	case "beginPasskeyMfa":
		method, path, body = http.MethodPost, "/api/v1/auth/login/mfa/passkey/begin", args
	case "beginPasskeyStepUp":
		method, path = http.MethodPost, "/api/v1/auth/mfa/passkey/begin"
	case "verifyMfaWithPasskey":
		method, path, body = http.MethodPost, "/api/v1/auth/mfa/passkey/verify", args
	case "completeMfaLoginWithPasskey":
		method, path, body = http.MethodPost, "/api/v1/auth/login/mfa/passkey/finish", args
	case "userPasskeys":
		method, path = http.MethodGet, "/api/v1/admin/users/"+url.PathEscape(str("userId"))+"/passkeys"
	case "removeUserPasskey":
		method, path = http.MethodDelete, "/api/v1/admin/users/"+url.PathEscape(str("userId"))+"/passkeys/"+url.PathEscape(str("passkeyId"))
	default:
		t.Fatalf("no REST route for %s", op)
	}
	status, env, hdr := h.rest(t, method, path, body, opts...)
	return envelopeResult(t, op, status, env, hdr)
}

// begun is a ceremony's challenge id and publicKey options.
func begun(t testing.TB, what string, r result) (string, map[string]any) {
	t.Helper()
	expectOK(t, what, r, http.StatusOK)
	id, _ := jsonPath(r.data, "challengeId").(string)
	pk, _ := jsonPath(r.data, "publicKey").(map[string]any)
	if !strings.HasPrefix(id, "pkc_") || pk == nil || jsonPath(r.data, "expiresAt") == nil {
		t.Fatalf("%s: %v", what, r.data)
	}
	return id, pk
}

// registerPasskey registers a passkey of a for the holder of access.
func registerPasskey(t testing.TB, h *herald, dn, access string, a *passkeystest.Authenticator, name string) (map[string]any, *passkeystest.Credential) {
	t.Helper()
	id, pk := begun(t, "begin registration", passkeyOp(t, h, dn, "beginPasskeyRegistration", nil, withBearer(access)))
	if jsonPath(pk, "rp", "id") != passkeyRPID || jsonPath(pk, "authenticatorSelection", "residentKey") != "required" ||
		jsonPath(pk, "authenticatorSelection", "userVerification") != "preferred" {
		t.Fatalf("creation options: %v", pk)
	}
	cred, c, err := a.Create(pk, passkeystest.Ceremony{Origin: passkeyOrigin})
	if err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"credential": cred, "name": name}
	if dn == graphQLDoor.name {
		args["challengeId"] = id // the REST call leaves it out: the credential names its challenge
	}
	r := passkeyOp(t, h, dn, "finishPasskeyRegistration", args, withBearer(access))
	expectOK(t, "finish registration", r, map[string]int{"rest": 201, "graphql": 200}[dn])
	p, _ := r.data.(map[string]any)
	if p["name"] != name || p["id"] == "" || p["attestationFormat"] != cmpFormat(a.Format) || p["counterRegressions"] != float64(0) {
		t.Fatalf("registered passkey: %v", p)
	}
	return p, c
}

func cmpFormat(f string) string {
	if f == "" {
		return passkeystest.FormatNone
	}
	return f
}

// passkeyLogin signs in without a password: the finish's result.
func passkeyLogin(t testing.TB, h *herald, dn string, a *passkeystest.Authenticator, c passkeystest.Ceremony) result {
	t.Helper()
	id, pk := begun(t, "begin sign-in", passkeyOp(t, h, dn, "beginPasskeyLogin", nil))
	if l, ok := pk["allowCredentials"].([]any); ok && len(l) > 0 || pk["rpId"] != passkeyRPID {
		t.Fatalf("sign-in options: %v", pk)
	}
	cred, err := a.Get(pk, c)
	if err != nil {
		t.Fatal(err)
	}
	return passkeyOp(t, h, dn, "finishPasskeyLogin", map[string]any{"challengeId": id, "credential": cred})
}

func myPasskeys(t testing.TB, h *herald, dn, access string) []map[string]any {
	t.Helper()
	r := passkeyOp(t, h, dn, "myPasskeys", nil, withBearer(access))
	expectOK(t, "myPasskeys", r, 200)
	var out []map[string]any
	for _, p := range asList(r.data) {
		out = append(out, p.(map[string]any))
	}
	return out
}

func TestPasskeysE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		h := startHerald(t, d, accountsEnv(map[string]string{
			"HERALD_WEBAUTHN_RP_ID":   passkeyRPID,
			"HERALD_WEBAUTHN_RP_NAME": "Herald Test",
			"HERALD_WEBAUTHN_ORIGINS": passkeyOrigin + "," + passkeyAndroid,
		}))
		for _, dn := range doorNames {
			t.Run(dn, func(t *testing.T) { testPasskeys(t, h, dn) })
		}
	})
}

func testPasskeys(t *testing.T, h *herald, dn string) {
	email := dn + "-passkey@example.com"
	aal1, _ := newUserToken(t, h, dn, email)
	phone := &passkeystest.Authenticator{Synced: true}
	first, _ := registerPasskey(t, h, dn, aal1, phone, "Phone")
	if first["backupEligible"] != true || first["backedUp"] != true || !slices.Contains(asStrings(t, first["transports"]), "internal") {
		t.Fatalf("synced passkey: %v", first)
	}
	firstID := first["id"].(string)

	// The passkey is a factor: the password alone no longer signs in.
	challenge(t, h, dn, email, "passkey")
	st := mfaOp(t, h, dn, "myMfa", nil, withBearer(aal1))
	expectOK(t, "myMfa", st, 200)
	if jsonPath(st.data, "enabled") != true || jsonPath(st.data, "passkeys") != float64(1) || len(asList(jsonPath(st.data, "factors"))) != 0 {
		t.Fatalf("myMfa with a passkey: %v", st.data)
	}

	// Passwordless, from the web origin and from the Android app.
	session := tokensOf(t, "passkey sign-in", passkeyLogin(t, h, dn, phone, passkeystest.Ceremony{Origin: passkeyOrigin}))
	expectAAL(t, "passkey sign-in", session.access, "aal2", "webauthn")
	refreshed := tokensOf(t, "refresh", call(t, h, dn, opRefresh, map[string]any{"refreshToken": session.refresh}))
	expectAAL(t, "refreshed", refreshed.access, "aal2", "webauthn")
	tokensOf(t, "passkey sign-in from the Android app", passkeyLogin(t, h, dn, phone, passkeystest.Ceremony{Origin: passkeyAndroid}))
	aal2 := session.access

	t.Run("Refusals", func(t *testing.T) {
		r := passkeyLogin(t, h, dn, phone, passkeystest.Ceremony{Origin: "https://evil.test"})
		expectError(t, "another origin", r, 401, "PASSKEY_ASSERTION_FAILED")
		r = passkeyLogin(t, h, dn, phone, passkeystest.Ceremony{Origin: passkeyOrigin, RPID: "evil.test"})
		expectError(t, "another relying party id", r, 401, "PASSKEY_ASSERTION_FAILED")

		// A ceremony is finished once: the same answer again is refused.
		id, pk := begun(t, "begin", passkeyOp(t, h, dn, "beginPasskeyLogin", nil))
		cred, err := phone.Get(pk, passkeystest.Ceremony{Origin: passkeyOrigin})
		if err != nil {
			t.Fatal(err)
		}
		tokensOf(t, "first finish", passkeyOp(t, h, dn, "finishPasskeyLogin", map[string]any{"challengeId": id, "credential": cred}))
		r = passkeyOp(t, h, dn, "finishPasskeyLogin", map[string]any{"challengeId": id, "credential": cred})
		expectError(t, "replayed ceremony", r, 400, "PASSKEY_CHALLENGE_INVALID")
		if r.details["reason"] != "used" {
			t.Fatalf("replayed ceremony: %v", r.details)
		}
		r = passkeyOp(t, h, dn, "finishPasskeyLogin", map[string]any{"challengeId": "pkc_" + strings.Repeat("A", 32), "credential": cred})
		expectError(t, "unknown ceremony", r, 400, "PASSKEY_CHALLENGE_INVALID")
		r = passkeyOp(t, h, dn, "finishPasskeyLogin", map[string]any{"challengeId": "nope", "credential": cred})
		expectError(t, "malformed ceremony id", r, 400, "PASSKEY_CHALLENGE_INVALID")
		id, _ = begun(t, "begin", passkeyOp(t, h, dn, "beginPasskeyLogin", nil))
		r = passkeyOp(t, h, dn, "finishPasskeyLogin", map[string]any{"challengeId": id, "credential": map[string]any{"id": "x", "type": "public-key"}})
		expectError(t, "not a credential", r, 400, "VALIDATION_ERROR")

		// A counter that went backwards: refused and recorded.
		back := uint32(1)
		r = passkeyLogin(t, h, dn, phone, passkeystest.Ceremony{Origin: passkeyOrigin, Counter: &back})
		expectError(t, "counter regression", r, 401, "PASSKEY_COUNTER_REGRESSION")
		if got := myPasskeys(t, h, dn, aal2)[0]["counterRegressions"]; got != float64(1) {
			t.Fatalf("counterRegressions %v, want 1", got)
		}
		ahead := uint32(1000)
		tokensOf(t, "a counter ahead again", passkeyLogin(t, h, dn, phone, passkeystest.Ceremony{Origin: passkeyOrigin, Counter: &ahead}))

		// Registration: another origin, another relying party id, a
		// replayed answer, and a ceremony's answer for another account.
		for _, c := range []passkeystest.Ceremony{{Origin: "https://evil.test"}, {Origin: passkeyOrigin, RPID: "evil.test"}} {
			_, pk := begun(t, "begin registration", passkeyOp(t, h, dn, "beginPasskeyRegistration", nil, withBearer(aal2)))
			cred, _, err := (&passkeystest.Authenticator{}).Create(pk, c)
			if err != nil {
				t.Fatal(err)
			}
			r := passkeyOp(t, h, dn, "finishPasskeyRegistration", map[string]any{"credential": cred}, withBearer(aal2))
			expectError(t, "registration refused", r, 400, "PASSKEY_REGISTRATION_FAILED")
			if reason, _ := r.details["reason"].(string); reason == "" {
				t.Fatalf("registration refused without a reason: %v", r.details)
			}
		}
		_, pk = begun(t, "begin registration", passkeyOp(t, h, dn, "beginPasskeyRegistration", nil, withBearer(aal2)))
		regCred, _, err := (&passkeystest.Authenticator{}).Create(pk, passkeystest.Ceremony{Origin: passkeyOrigin})
		if err != nil {
			t.Fatal(err)
		}
		otherAccess, _ := newUserToken(t, h, dn, dn+"-passkey-other@example.com")
		r = passkeyOp(t, h, dn, "finishPasskeyRegistration", map[string]any{"credential": regCred}, withBearer(otherAccess))
		expectError(t, "another account's ceremony", r, 400, "PASSKEY_CHALLENGE_INVALID")
		expectOK(t, "registration", passkeyOp(t, h, dn, "finishPasskeyRegistration", map[string]any{"credential": regCred, "name": "Spare"}, withBearer(aal2)),
			map[string]int{"rest": 201, "graphql": 200}[dn])
		r = passkeyOp(t, h, dn, "finishPasskeyRegistration", map[string]any{"credential": regCred}, withBearer(aal2))
		expectError(t, "replayed registration", r, 400, "PASSKEY_CHALLENGE_INVALID")
		spare := myPasskeys(t, h, dn, aal2)
		if len(spare) != 2 || spare[1]["name"] != "Spare" {
			t.Fatalf("passkeys: %v", spare)
		}
		expectOK(t, "remove the spare", passkeyOp(t, h, dn, "removePasskey", map[string]any{"passkeyId": spare[1]["id"]}, withBearer(aal2)), 200)
	})

	t.Run("StepUp", func(t *testing.T) {
		// The token from before the passkey is at aal1: registering
		// another and removing one need aal2 now.
		r := passkeyOp(t, h, dn, "beginPasskeyRegistration", nil, withBearer(aal1))
		expectError(t, "register at aal1", r, 403, "MFA_STEP_UP_REQUIRED")
		r = passkeyOp(t, h, dn, "removePasskey", map[string]any{"passkeyId": firstID}, withBearer(aal1))
		expectError(t, "remove at aal1", r, 403, "MFA_STEP_UP_REQUIRED")
		// Renaming does not.
		r = passkeyOp(t, h, dn, "renamePasskey", map[string]any{"passkeyId": firstID, "name": " Work phone "}, withBearer(aal1))
		expectOK(t, "rename", r, 200)
		if jsonPath(r.data, "name") != "Work phone" {
			t.Fatalf("renamed: %v", r.data)
		}
		r = passkeyOp(t, h, dn, "renamePasskey", map[string]any{"passkeyId": "no-such-passkey", "name": "x"}, withBearer(aal1))
		expectError(t, "rename an unknown passkey", r, 404, "PASSKEY_NOT_FOUND")
		// The aal1 session steps up with the passkey: another origin is
		// refused, the passkey's own answer gives aal2.
		id, pk := begun(t, "begin step-up", passkeyOp(t, h, dn, "beginPasskeyStepUp", nil, withBearer(aal1)))
		if len(asList(pk["allowCredentials"])) != 1 {
			t.Fatalf("step-up options allow %v, want the account's passkey", pk["allowCredentials"])
		}
		bad, err := phone.Get(pk, passkeystest.Ceremony{Origin: "https://evil.test"})
		if err != nil {
			t.Fatal(err)
		}
		r = passkeyOp(t, h, dn, "verifyMfaWithPasskey", map[string]any{"challengeId": id, "credential": bad}, withBearer(aal1))
		expectError(t, "step-up from another origin", r, 401, "PASSKEY_ASSERTION_FAILED")
		id, pk = begun(t, "begin step-up", passkeyOp(t, h, dn, "beginPasskeyStepUp", nil, withBearer(aal1)))
		good, err := phone.Get(pk, passkeystest.Ceremony{Origin: passkeyOrigin})
		if err != nil {
			t.Fatal(err)
		}
		up := tokensOf(t, "step-up with the passkey", passkeyOp(t, h, dn, "verifyMfaWithPasskey", map[string]any{"challengeId": id, "credential": good}, withBearer(aal1)))
		expectAAL(t, "stepped up with a passkey", up.access, "aal2", "pwd", "webauthn")
		expectOK(t, "begin registration after the step-up", passkeyOp(t, h, dn, "beginPasskeyRegistration", nil, withBearer(up.access)), 200)
	})

	t.Run("SecondStep", func(t *testing.T) {
		// A second passkey with packed self attestation.
		key := &passkeystest.Authenticator{Format: passkeystest.FormatPacked, AAGUID: [16]byte{0xde, 0xad, 0xbe, 0xef}}
		second, keyCred := registerPasskey(t, h, dn, aal2, key, "Security key")
		if second["aaguid"] != "deadbeef-0000-0000-0000-000000000000" || second["backupEligible"] != false {
			t.Fatalf("packed passkey: %v", second)
		}
		tokensOf(t, "sign-in with the packed passkey", passkeyLogin(t, h, dn, key, passkeystest.Ceremony{Origin: passkeyOrigin}))

		// The password, then a passkey completing the login's challenge.
		tok := challenge(t, h, dn, email, "passkey")
		id, pk := begun(t, "begin second step", passkeyOp(t, h, dn, "beginPasskeyMfa", map[string]any{"challengeToken": tok}))
		if len(asList(pk["allowCredentials"])) != 2 {
			t.Fatalf("second step options allow %v, want the account's 2 passkeys", pk["allowCredentials"])
		}
		cred, err := key.Get(pk, passkeystest.Ceremony{Origin: passkeyOrigin, CredentialID: keyCred.ID})
		if err != nil {
			t.Fatal(err)
		}
		r := passkeyOp(t, h, dn, "completeMfaLoginWithPasskey", map[string]any{"challengeToken": tok, "challengeId": id, "credential": cred})
		done := tokensOf(t, "second step with a passkey", r)
		expectAAL(t, "second step with a passkey", done.access, "aal2", "pwd", "webauthn")
		r = passkeyOp(t, h, dn, "completeMfaLoginWithPasskey", map[string]any{"challengeToken": tok, "challengeId": id, "credential": cred})
		expectError(t, "the challenge again", r, 401, "MFA_CHALLENGE_INVALID")

		// Another origin at the second step is a wrong proof.
		tok = challenge(t, h, dn, email, "passkey")
		id, pk = begun(t, "begin second step", passkeyOp(t, h, dn, "beginPasskeyMfa", map[string]any{"challengeToken": tok}))
		cred, err = key.Get(pk, passkeystest.Ceremony{Origin: "https://evil.test"})
		if err != nil {
			t.Fatal(err)
		}
		r = passkeyOp(t, h, dn, "completeMfaLoginWithPasskey", map[string]any{"challengeToken": tok, "challengeId": id, "credential": cred})
		expectError(t, "second step from another origin", r, 401, "PASSKEY_ASSERTION_FAILED")
		r = passkeyOp(t, h, dn, "beginPasskeyMfa", map[string]any{"challengeToken": "mfa_not-a-challenge"})
		expectError(t, "begin with a malformed challenge", r, 401, "MFA_CHALLENGE_INVALID")

		// Removing both at aal2: the password alone signs in again.
		for _, p := range myPasskeys(t, h, dn, done.access) {
			r := passkeyOp(t, h, dn, "removePasskey", map[string]any{"passkeyId": p["id"]}, withBearer(done.access))
			expectOK(t, "remove", r, 200)
			if jsonPath(r.data, "removed") != true {
				t.Fatalf("remove: %v", r.data)
			}
		}
		r = passkeyOp(t, h, dn, "removePasskey", map[string]any{"passkeyId": firstID}, withBearer(done.access))
		expectError(t, "remove again", r, 404, "PASSKEY_NOT_FOUND")
		expectAAL(t, "login without passkeys", login(t, h, dn, email, testPassword).access, "aal1", "pwd")
		r = passkeyLogin(t, h, dn, phone, passkeystest.Ceremony{Origin: passkeyOrigin})
		expectError(t, "a removed passkey", r, 401, "PASSKEY_ASSERTION_FAILED")
	})

	t.Run("AdminReset", func(t *testing.T) {
		// A user who lost their only passkey: an admin's reset removes it,
		// and the password alone signs in again.
		lost := dn + "-lost-passkey@example.com"
		access, userID := newUserToken(t, h, dn, lost)
		registerPasskey(t, h, dn, access, &passkeystest.Authenticator{}, "Lost phone")
		challenge(t, h, dn, lost, "passkey")
		admin := newAdminToken(t, h, dn+"-passkey-admin@example.com")
		r := mfaOp(t, h, dn, "userMfa", map[string]any{"userId": userID}, withBearer(admin))
		expectOK(t, "userMfa", r, 200)
		if jsonPath(r.data, "passkeys") != float64(1) || jsonPath(r.data, "enabled") != true {
			t.Fatalf("userMfa: %v", r.data)
		}
		r = mfaOp(t, h, dn, "resetUserMfa", map[string]any{"userId": userID}, withBearer(admin))
		expectOK(t, "resetUserMfa", r, 200)
		if jsonPath(r.data, "factorsRemoved") != float64(1) {
			t.Fatalf("reset: %v", r.data)
		}
		expectAAL(t, "login after the reset", login(t, h, dn, lost, testPassword).access, "aal1", "pwd")
		if got := myPasskeys(t, h, dn, access); len(got) != 0 {
			t.Fatalf("passkeys after the reset: %v", got)
		}
	})
}

// TestPasskeysOffE2E: without HERALD_WEBAUTHN_RP_ID every ceremony
// answers PASSKEYS_NOT_CONFIGURED, on both doors.
func TestPasskeysOffE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		h := startHerald(t, d, accountsEnv(nil))
		for _, dn := range doorNames {
			t.Run(dn, func(t *testing.T) {
				access, _ := newUserToken(t, h, dn, dn+"-nopasskeys@example.com")
				expectError(t, "begin sign-in", passkeyOp(t, h, dn, "beginPasskeyLogin", nil), 404, "PASSKEYS_NOT_CONFIGURED")
				expectError(t, "begin registration", passkeyOp(t, h, dn, "beginPasskeyRegistration", nil, withBearer(access)), 404, "PASSKEYS_NOT_CONFIGURED")
				if got := myPasskeys(t, h, dn, access); len(got) != 0 {
					t.Fatalf("passkeys: %v", got)
				}
			})
		}
	})
}

// TestPasskeysAcrossReplicasE2E: two servers on one database; each
// ceremony begun on one is finished on the other (the ceremony is in the
// database, not in a process), and a replay on the first is refused.
func TestPasskeysAcrossReplicasE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		env := map[string]string{
			"HERALD_WEBAUTHN_RP_ID":   passkeyRPID,
			"HERALD_WEBAUTHN_ORIGINS": passkeyOrigin,
		}
		a := startHerald(t, d, accountsEnv(env))
		// One database, one mail relay: either replica's worker may send
		// the signup's code.
		env["HERALD_DATABASE_URL"], env["HERALD_SMTP_URL"] = a.DBURL, a.SMTP.URL()
		b := startHerald(t, d, accountsEnv(env))
		dn := restDoor.name
		access, _ := newUserToken(t, a, dn, "replicas-passkey@example.com")
		auth := &passkeystest.Authenticator{}

		id, pk := begun(t, "begin registration on A", passkeyOp(t, a, dn, "beginPasskeyRegistration", nil, withBearer(access)))
		cred, _, err := auth.Create(pk, passkeystest.Ceremony{Origin: passkeyOrigin})
		if err != nil {
			t.Fatal(err)
		}
		r := passkeyOp(t, b, dn, "finishPasskeyRegistration", map[string]any{"challengeId": id, "credential": cred, "name": "Laptop"}, withBearer(access))
		expectOK(t, "finish registration on B", r, 201)

		id, pk = begun(t, "begin sign-in on B", passkeyOp(t, b, dn, "beginPasskeyLogin", nil))
		get, err := auth.Get(pk, passkeystest.Ceremony{Origin: passkeyOrigin})
		if err != nil {
			t.Fatal(err)
		}
		s := tokensOf(t, "finish sign-in on A", passkeyOp(t, a, dn, "finishPasskeyLogin", map[string]any{"challengeId": id, "credential": get}))
		expectAAL(t, "sign-in across replicas", s.access, "aal2", "webauthn")
		r = passkeyOp(t, b, dn, "finishPasskeyLogin", map[string]any{"challengeId": id, "credential": get})
		expectError(t, "the same answer on B", r, 400, "PASSKEY_CHALLENGE_INVALID")

		// The same answer sent to both at once: one signs in, the other is
		// refused as a replay (never both, never a server error).
		for round := range 5 {
			id, pk = begun(t, "begin sign-in on A", passkeyOp(t, a, dn, "beginPasskeyLogin", nil))
			get, err = auth.Get(pk, passkeystest.Ceremony{Origin: passkeyOrigin})
			if err != nil {
				t.Fatal(err)
			}
			results := make(chan result, 2)
			for _, srv := range []*herald{a, b} {
				go func() {
					// A failure inside the harness ends this goroutine (t.Fatal's
					// Goexit); the deferred send still answers, so the wait below
					// is bounded and the round fails with the codes it got.
					r := result{status: -1, code: "the request failed (see the log above)"}
					defer func() { results <- r }()
					r = passkeyOp(t, srv, dn, "finishPasskeyLogin", map[string]any{"challengeId": id, "credential": get})
				}()
			}
			var codes []string
			for range 2 {
				r := <-results
				codes = append(codes, fmt.Sprintf("%d %s", r.status, r.code))
			}
			slices.Sort(codes)
			if want := []string{"200 ", "400 PASSKEY_CHALLENGE_INVALID"}; !slices.Equal(codes, want) {
				t.Fatalf("round %d: two finishes at once answered %v, want %v", round, codes, want)
			}
		}
	})
}

// An operator lists a user's passkeys (the fields the user's own list
// shows, nothing more) and removes one, which the user's security log
// records with the operator as the actor; the scopes and the unknown ids
// are refused with the catalogue's codes.
func TestAdminPasskeysE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		h := startHerald(t, d, accountsEnv(map[string]string{
			"HERALD_WEBAUTHN_RP_ID":   passkeyRPID,
			"HERALD_WEBAUTHN_RP_NAME": "Herald Test",
			"HERALD_WEBAUTHN_ORIGINS": passkeyOrigin,
		}))
		admin := newAdminToken(t, h, "ops@example.com")
		reader, _ := createKey(t, h, restDoor.name, admin, map[string]any{"name": "support", "scopes": []string{"accounts:read"}})
		writer, writerID := createKey(t, h, restDoor.name, admin, map[string]any{"name": "ops", "scopes": []string{"accounts:write"}})
		for _, dn := range doorNames {
			t.Run(dn, func(t *testing.T) {
				access, id := newUserToken(t, h, dn, dn+"-admin-passkeys@example.com")
				phone := &passkeystest.Authenticator{Synced: true}
				registerPasskey(t, h, dn, access, phone, "Phone")
				// The second at aal2: the first is a factor.
				access = tokensOf(t, "passkey sign-in", passkeyLogin(t, h, dn, phone, passkeystest.Ceremony{Origin: passkeyOrigin})).access
				registerPasskey(t, h, dn, access, &passkeystest.Authenticator{Format: passkeystest.FormatPacked}, "Key")
				mine := passkeyOp(t, h, dn, "myPasskeys", nil, withBearer(access))
				r := passkeyOp(t, h, dn, "userPasskeys", map[string]any{"userId": id}, key(reader))
				expectOK(t, "userPasskeys", r, http.StatusOK)
				if got := asList(r.data); len(got) != 2 || fmt.Sprint(r.data) != fmt.Sprint(mine.data) {
					t.Fatalf("the admin's list %v, want the user's own %v", r.data, mine.data)
				}
				for _, p := range asList(r.data) {
					for k := range p.(map[string]any) {
						if !slices.Contains(strings.Fields(passkeyFields), k) {
							t.Errorf("the admin's list shows %q: %v", k, p)
						}
					}
				}
				phoneID := jsonPath(asList(r.data)[0], "id").(string)

				expectError(t, "list with a write-only key", passkeyOp(t, h, dn, "userPasskeys", map[string]any{"userId": id}, key(writer)), http.StatusForbidden, "INSUFFICIENT_PERMISSIONS")
				expectError(t, "list as the user", passkeyOp(t, h, dn, "userPasskeys", map[string]any{"userId": id}, withBearer(access)), http.StatusForbidden, "INSUFFICIENT_PERMISSIONS")
				expectError(t, "list of an unknown user", passkeyOp(t, h, dn, "userPasskeys", map[string]any{"userId": "nobody"}, key(reader)), http.StatusNotFound, "USER_NOT_FOUND")
				expectError(t, "remove with a read key", passkeyOp(t, h, dn, "removeUserPasskey", map[string]any{"userId": id, "passkeyId": phoneID}, key(reader)), http.StatusForbidden, "INSUFFICIENT_PERMISSIONS")
				expectError(t, "remove of an unknown user", passkeyOp(t, h, dn, "removeUserPasskey", map[string]any{"userId": "nobody", "passkeyId": phoneID}, key(writer)), http.StatusNotFound, "USER_NOT_FOUND")
				_, other := newUserToken(t, h, dn, dn+"-admin-passkeys-other@example.com")
				expectError(t, "remove through another user", passkeyOp(t, h, dn, "removeUserPasskey", map[string]any{"userId": other, "passkeyId": phoneID}, key(writer)), http.StatusNotFound, "PASSKEY_NOT_FOUND")

				r = passkeyOp(t, h, dn, "removeUserPasskey", map[string]any{"userId": id, "passkeyId": phoneID}, key(writer))
				expectOK(t, "removeUserPasskey", r, http.StatusOK)
				if jsonPath(r.data, "passkeyId") != phoneID || jsonPath(r.data, "removed") != true {
					t.Fatalf("removeUserPasskey: %v", r.data)
				}
				if left := myPasskeys(t, h, dn, access); len(left) != 1 || left[0]["name"] != "Key" {
					t.Fatalf("the user's passkeys after the removal: %v", left)
				}
				expectError(t, "remove again", passkeyOp(t, h, dn, "removeUserPasskey", map[string]any{"userId": id, "passkeyId": phoneID}, key(writer)), http.StatusNotFound, "PASSKEY_NOT_FOUND")
				actors := sqlstoretest.RawColumn(t, h.Env["HERALD_DATABASE_URL"], `SELECT actor FROM security_events WHERE kind = 'passkey_removed' AND account_id = '`+id+`'`)
				if !slices.Equal(actors, []string{"admin:" + writerID}) {
					t.Fatalf("passkey_removed entries' actors %v, want admin:%s", actors, writerID)
				}
			})
		}
	})
}
