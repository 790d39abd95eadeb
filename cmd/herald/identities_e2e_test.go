package main

import (
	"crypto/rand"
	"crypto/rsa"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/identities/provider/providertest"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

const (
	appleClientID  = "com.example.vpn"
	googleClientID = "1234-web.apps.googleusercontent.com"
)

var identityDocs = map[string]string{
	"signInWithProvider": `mutation($provider: IdentityProvider!, $idToken: String!, $nonce: String!, $code: String) {
  signInWithProvider(provider: $provider, idToken: $idToken, nonce: $nonce, authorizationCode: $code) { accountCreated session { accessToken refreshToken tokenType expiresIn } }
}`,
	"linkIdentity": `mutation($provider: IdentityProvider!, $idToken: String!, $nonce: String!, $code: String) {
  linkIdentity(provider: $provider, idToken: $idToken, nonce: $nonce, authorizationCode: $code) { id provider email privateRelay createdAt lastUsedAt }
}`,
	"unlinkIdentity": `mutation($id: ID!) { unlinkIdentity(identityId: $id) { identityId removed } }`,
	"myIdentities":   `query { myIdentities { id provider email privateRelay createdAt lastUsedAt } }`,
	"userIdentities": `query($id: ID!) { userIdentities(userId: $id) { id provider email privateRelay createdAt lastUsedAt } }`,
}

// identityOp runs an identity operation through the door.
func identityOp(t testing.TB, h *herald, dn, op string, args map[string]any, opts ...reqOption) result {
	t.Helper()
	if dn == graphQLDoor.name {
		return gql(t, h, op, identityDocs[op], args, opts...)
	}
	str := func(k string) string { s, _ := args[k].(string); return s }
	body := map[string]any{"idToken": args["idToken"], "nonce": args["nonce"], "authorizationCode": args["code"]}
	var method, path string
	switch op {
	case "signInWithProvider":
		method, path = http.MethodPost, "/api/v1/auth/oauth/"+url.PathEscape(str("provider"))
	case "linkIdentity":
		method, path = http.MethodPost, "/api/v1/users/me/identities"
		body["provider"] = args["provider"]
	case "unlinkIdentity":
		method, path, body = http.MethodDelete, "/api/v1/users/me/identities/"+url.PathEscape(str("id")), nil
	case "myIdentities":
		method, path, body = http.MethodGet, "/api/v1/users/me/identities", nil
	case "userIdentities":
		method, path, body = http.MethodGet, "/api/v1/admin/users/"+url.PathEscape(str("id"))+"/identities", nil
	default:
		t.Fatalf("no REST route for %s", op)
	}
	var status int
	var env map[string]any
	var hdr http.Header
	if body == nil {
		status, env, hdr = h.rest(t, method, path, nil, opts...)
	} else {
		status, env, hdr = h.rest(t, method, path, body, opts...)
	}
	return envelopeResult(t, op, status, env, hdr)
}

// providerSignIn signs in with a token and returns the session, checking
// whether it created the account.
func providerSignIn(t testing.TB, h *herald, dn, provider, idToken, nonce, code string, created bool) tokens {
	t.Helper()
	r := identityOp(t, h, dn, "signInWithProvider", map[string]any{"provider": provider, "idToken": idToken, "nonce": nonce, "code": code})
	want := http.StatusOK
	if created && dn == restDoor.name {
		want = http.StatusCreated
	}
	expectOK(t, provider+" sign-in", r, want)
	if jsonPath(r.data, "accountCreated") != created {
		t.Fatalf("%s sign-in: accountCreated %v, want %v", provider, jsonPath(r.data, "accountCreated"), created)
	}
	return tokensOf(t, provider+" sign-in's session", result{status: http.StatusOK, data: jsonPath(r.data, "session")})
}

func TestIdentitiesE2E(t *testing.T) {
	apple, google := providertest.NewIssuer(t), providertest.NewIssuer(t)
	keyFile := filepath.Join(t.TempDir(), "AuthKey_KEY123.p8")
	if err := os.WriteFile(keyFile, apple.AppleKeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		h := startHerald(t, d, accountsEnv(map[string]string{
			"HERALD_APPLE_CLIENT_IDS":      appleClientID + ",com.example.vpn.web",
			"HERALD_APPLE_ISSUER":          apple.URL,
			"HERALD_APPLE_JWKS_URL":        apple.JWKSURL(),
			"HERALD_APPLE_TOKEN_URL":       apple.URL,
			"HERALD_APPLE_TEAM_ID":         "TEAM123456",
			"HERALD_APPLE_SIGNIN_KEY_ID":   "KEY123",
			"HERALD_APPLE_SIGNIN_KEY_FILE": keyFile,
			"HERALD_GOOGLE_CLIENT_IDS":     googleClientID,
			"HERALD_GOOGLE_ISSUER":         google.URL,
			"HERALD_GOOGLE_JWKS_URL":       google.JWKSURL(),
		}))
		admin := newAdminToken(t, h, "identities-admin-"+string(d)+"@example.com")
		for _, dn := range doorNames {
			t.Run(dn, func(t *testing.T) { testIdentities(t, h, dn, apple, google, admin) })
		}
	})
}

func testIdentities(t *testing.T, h *herald, dn string, apple, google *providertest.Issuer, admin string) {
	sub := func(s string) string { return dn + "-" + s }
	email := func(s string) string { return dn + "-" + s + "@example.com" }
	googleToken := func(subject, addr string, verified any, nonce string) string {
		return google.Mint(t, providertest.Token{Audience: googleClientID, Subject: subject, Email: addr, EmailVerified: verified, Nonce: nonce})
	}
	signIn := func(provider, tok, nonce string) result {
		return identityOp(t, h, dn, "signInWithProvider", map[string]any{"provider": provider, "idToken": tok, "nonce": nonce})
	}

	// A new Google user: created verified, then signed in again.
	ann := email("ann")
	s := providerSignIn(t, h, dn, "google", googleToken(sub("g-ann"), ann, true, "n-1"), "n-1", "", true)
	if m := me(t, h, dn, s.access); jsonPath(m.data, "email") != ann || jsonPath(m.data, "emailVerified") != true {
		t.Fatalf("the created account: %v", m.data)
	}
	expectAAL(t, "a Google sign-in", s.access, "aal1", "google")
	providerSignIn(t, h, dn, "google", googleToken(sub("g-ann"), ann, true, "n-2"), "n-2", "", false)
	expectError(t, "a password login to an account without one", call(t, h, dn, opLogin, map[string]any{"email": ann, "password": testPassword}), 401, "INVALID_CREDENTIALS")

	t.Run("Refusals", func(t *testing.T) {
		other, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			what, reason string
			tok          providertest.Token
			nonce        string
		}{
			{"another audience", "audience", providertest.Token{Audience: "someone-else", Subject: sub("g-x"), Email: email("x"), EmailVerified: true, Nonce: "n"}, "n"},
			{"another nonce", "nonce", providertest.Token{Audience: googleClientID, Subject: sub("g-x"), Email: email("x"), EmailVerified: true, Nonce: "n"}, "not-n"},
			{"no nonce in the token", "nonce", providertest.Token{Audience: googleClientID, Subject: sub("g-x"), Email: email("x"), EmailVerified: true}, "n"},
			{"expired", "expired", providertest.Token{Audience: googleClientID, Subject: sub("g-x"), Email: email("x"), EmailVerified: true, Nonce: "n", ExpiresAt: time.Now().Add(-time.Hour)}, "n"},
			{"another issuer", "issuer", providertest.Token{Issuer: apple.URL, Audience: googleClientID, Subject: sub("g-x"), Email: email("x"), EmailVerified: true, Nonce: "n"}, "n"},
			{"another key", "signature", providertest.Token{Audience: googleClientID, Subject: sub("g-x"), Email: email("x"), EmailVerified: true, Nonce: "n", SignWith: other}, "n"},
		} {
			r := signIn("google", google.Mint(t, c.tok), c.nonce)
			expectError(t, c.what, r, 401, "IDENTITY_TOKEN_INVALID")
			if r.details["reason"] != c.reason {
				t.Errorf("%s: reason %v, want %s", c.what, r.details["reason"], c.reason)
			}
		}
		expectError(t, "a malformed token", signIn("google", "not.a.jwt", "n"), 401, "IDENTITY_TOKEN_INVALID")
		expectError(t, "no nonce", signIn("google", googleToken(sub("g-x"), email("x"), true, "n"), ""), 400, "VALIDATION_ERROR")
		expectError(t, "an unverified email", signIn("google", googleToken(sub("g-u"), email("u"), false, "n"), "n"), 409, "IDENTITY_EMAIL_UNVERIFIED")
		if dn == restDoor.name {
			status, env, _ := h.rest(t, http.MethodPost, "/api/v1/auth/oauth/facebook", map[string]any{"idToken": "x", "nonce": "n"})
			if code := jsonPath(env, "error", "code"); status != 400 || code != "VALIDATION_ERROR" {
				t.Errorf("an unknown provider: %d %v", status, code)
			}
		}
	})

	t.Run("Linking", func(t *testing.T) {
		// A verified password account and the same verified address: linked.
		bob := email("bob")
		newVerifiedUser(t, h, dn, bob)
		bobID := h.account(t, bob).ID
		s := providerSignIn(t, h, dn, "google", googleToken(sub("g-bob"), bob, true, "n"), "n", "", false)
		if _, claims := jwtParts(t, s.access); claims["sub"] != bobID {
			t.Fatalf("the linked sign-in is account %v, want %s", claims["sub"], bobID)
		}
		list := identityOp(t, h, dn, "myIdentities", nil, withBearer(s.access))
		expectOK(t, "myIdentities", list, 200)
		if l := asList(list.data); len(l) != 1 || jsonPath(l[0], "provider") != "google" || jsonPath(l[0], "email") != bob {
			t.Fatalf("bob's identities: %v", list.data)
		}
		// An operator (accounts:read) reads the same list; a user, a key
		// without the scope and an unknown user are refused.
		read := identityOp(t, h, dn, "userIdentities", map[string]any{"id": bobID}, withBearer(admin))
		expectOK(t, "userIdentities", read, 200)
		if !reflect.DeepEqual(read.data, list.data) {
			t.Fatalf("the operator's read of bob's identities %v, bob's own %v", read.data, list.data)
		}
		expectError(t, "a user reading another's identities", identityOp(t, h, dn, "userIdentities", map[string]any{"id": bobID}, withBearer(s.access)), 403, "INSUFFICIENT_PERMISSIONS")
		sender, _ := createKey(t, h, dn, admin, map[string]any{"name": "identities-sender-" + dn, "scopes": []string{"notifications:send"}})
		r := identityOp(t, h, dn, "userIdentities", map[string]any{"id": bobID}, withAPIKey(sender))
		expectError(t, "a key without accounts:read", r, 403, "INSUFFICIENT_PERMISSIONS")
		if r.details["scope"] != "accounts:read" {
			t.Fatalf("the refusal must name the scope: %v", r.details)
		}
		expectError(t, "an unknown user's identities", identityOp(t, h, dn, "userIdentities", map[string]any{"id": "no-such-user"}, withBearer(admin)), 404, "USER_NOT_FOUND")
		// The same address unverified on either side: refused.
		carol := email("carol")
		expectOK(t, "signup "+carol, call(t, h, dn, opSignup, map[string]any{"email": carol, "password": testPassword}), map[string]int{"graphql": 200, "rest": 201}[dn])
		expectError(t, "an unverified account's address", signIn("google", googleToken(sub("g-carol"), carol, true, "n"), "n"), 409, "IDENTITY_EMAIL_UNVERIFIED")
		expectError(t, "a verified account, the provider unverified", signIn("google", googleToken(sub("g-bob2"), bob, false, "n"), "n"), 409, "IDENTITY_EMAIL_UNVERIFIED")
		// An identity another account holds cannot be linked.
		bobSession := login(t, h, dn, bob, testPassword)
		r = identityOp(t, h, dn, "linkIdentity", map[string]any{"provider": "google", "idToken": googleToken(sub("g-ann"), ann, true, "n"), "nonce": "n"}, withBearer(bobSession.access))
		expectError(t, "linking ann's identity to bob", r, 409, "IDENTITY_IN_USE")
	})

	t.Run("AppleRelayExchangeAndRevocation", func(t *testing.T) {
		relay := dn + "-x7k2@privaterelay.appleid.com"
		code, refresh := sub("apple-code"), sub("apple-refresh")
		apple.IssueCode(code, refresh)
		tok := apple.Mint(t, providertest.Token{Audience: appleClientID, Subject: sub("a-dave"), Email: relay, EmailVerified: "true", PrivateEmail: "true", Nonce: providertest.AppleNonce("raw-nonce")})
		s := providerSignIn(t, h, dn, "apple", tok, "raw-nonce", code, true)
		if !slices.Contains(apple.Exchanged(), code) {
			t.Fatalf("the authorization code was not exchanged: %v", apple.Exchanged())
		}
		list := identityOp(t, h, dn, "myIdentities", nil, withBearer(s.access))
		expectOK(t, "myIdentities", list, 200)
		l := asList(list.data)
		if len(l) != 1 || jsonPath(l[0], "privateRelay") != true || jsonPath(l[0], "email") != relay {
			t.Fatalf("dave's identities: %v", list.data)
		}
		appleID := jsonPath(l[0], "id").(string)
		// Its only way in stays.
		expectError(t, "unlink the last way in", identityOp(t, h, dn, "unlinkIdentity", map[string]any{"id": appleID}, withBearer(s.access)), 409, "LAST_SIGN_IN_METHOD")
		// An id that is none of its identities is not found, even with one way in.
		expectError(t, "unlink an unknown identity", identityOp(t, h, dn, "unlinkIdentity", map[string]any{"id": "nope"}, withBearer(s.access)), 404, "IDENTITY_NOT_FOUND")
		// A second identity, then the first can go, and Apple's token is revoked.
		linked := identityOp(t, h, dn, "linkIdentity", map[string]any{"provider": "google", "idToken": googleToken(sub("g-dave"), dn+"-dave@gmail.test", true, "n"), "nonce": "n"}, withBearer(s.access))
		expectOK(t, "link Google", linked, map[string]int{"rest": 201, "graphql": 200}[dn])
		expectOK(t, "unlink Apple", identityOp(t, h, dn, "unlinkIdentity", map[string]any{"id": appleID}, withBearer(s.access)), 200)
		eventually(t, func() bool { return slices.Contains(apple.Revoked(), refresh) }, "Apple's token was not revoked when its identity was unlinked: %v", apple.Revoked())

		// An account deleted revokes its Apple token.
		code2, refresh2 := sub("apple-code-2"), sub("apple-refresh-2")
		apple.IssueCode(code2, refresh2)
		tok = apple.Mint(t, providertest.Token{Audience: appleClientID, Subject: sub("a-erin"), Email: email("erin"), EmailVerified: true, Nonce: providertest.AppleNonce("n2")})
		erin := providerSignIn(t, h, dn, "apple", tok, "n2", code2, true)
		_, claims := jwtParts(t, erin.access)
		if status, env, _ := h.rest(t, http.MethodDelete, "/api/v1/admin/users/"+claims["sub"].(string), nil, withBearer(admin)); status != http.StatusOK && status != http.StatusNoContent {
			t.Fatalf("delete erin: %d %v", status, env)
		}
		eventually(t, func() bool { return slices.Contains(apple.Revoked(), refresh2) }, "Apple's token was not revoked when its account was deleted: %v", apple.Revoked())
		// An account made by Apple deletes itself without a password (a
		// fresh sign-in proves it), and its Apple token is revoked too.
		code3, refresh3 := sub("apple-code-3"), sub("apple-refresh-3")
		apple.IssueCode(code3, refresh3)
		tok = apple.Mint(t, providertest.Token{Audience: appleClientID, Subject: sub("a-fay"), Email: email("fay"), EmailVerified: true, Nonce: providertest.AppleNonce("n3")})
		fay := providerSignIn(t, h, dn, "apple", tok, "n3", code3, true)
		var deleted result
		if dn == graphQLDoor.name {
			deleted = gql(t, h, "deleteAccount", `mutation { deleteAccount }`, nil, withBearer(fay.access))
		} else {
			status, env, hdr := h.rest(t, http.MethodPost, "/api/v1/users/me/delete", map[string]any{}, withBearer(fay.access))
			deleted = envelopeResult(t, "delete", status, env, hdr)
		}
		if deleted.code != "" {
			t.Fatalf("fay deleting herself: %d %s %s", deleted.status, deleted.code, deleted.message)
		}
		eventually(t, func() bool { return slices.Contains(apple.Revoked(), refresh3) }, "Apple's token was not revoked when its account deleted itself: %v", apple.Revoked())
		// The log holds the links and the unlink.
		log := strings.Join(sqlstoretest.RawColumn(t, h.Env["HERALD_DATABASE_URL"], `SELECT kind FROM security_events WHERE account_id = '`+jwtSub(t, s.access)+`'`), " ")
		for _, k := range []string{"identity_linked", "identity_unlinked"} {
			if !strings.Contains(log, k) {
				t.Errorf("dave's security log %q has no %s", log, k)
			}
		}
	})
}

func jwtSub(t testing.TB, access string) string {
	_, claims := jwtParts(t, access)
	s, _ := claims["sub"].(string)
	return s
}

// A sign-in with a provider to an account with a second factor answers
// MFA_REQUIRED as a password login does, and the session its second step
// opens says both ways it was proved: ["google","otp"], not ["pwd","otp"].
func TestProviderSignInWithFactorE2E(t *testing.T) {
	google := providertest.NewIssuer(t)
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		h := startHerald(t, d, accountsEnv(map[string]string{
			"HERALD_GOOGLE_CLIENT_IDS": googleClientID,
			"HERALD_GOOGLE_ISSUER":     google.URL,
			"HERALD_GOOGLE_JWKS_URL":   google.JWKSURL(),
		}))
		for _, dn := range doorNames {
			t.Run(dn, func(t *testing.T) {
				u := enrollTOTP(t, h, dn, dn+"-google-mfa@example.com")
				nonce := "n-" + dn
				tok := google.Mint(t, providertest.Token{Audience: googleClientID, Subject: "g-mfa-" + dn, Email: u.email, EmailVerified: true, Nonce: nonce})
				r := identityOp(t, h, dn, "signInWithProvider", map[string]any{"provider": "google", "idToken": tok, "nonce": nonce})
				expectError(t, "a Google sign-in to an account with a factor", r, http.StatusUnauthorized, "MFA_REQUIRED")
				challenge, _ := r.details["challengeToken"].(string)
				if challenge == "" {
					t.Fatalf("MFA_REQUIRED without a challenge: %v", r.details)
				}
				r = mfaOp(t, h, dn, "completeMfaLogin", map[string]any{"challengeToken": challenge, "code": totpCode(t, u.secret, u.confirmedAt.Add(30*time.Second))})
				expectOK(t, "the second step", r, http.StatusOK)
				expectAAL(t, "a Google sign-in completed with a TOTP code", tokensOf(t, "session", r).access, "aal2", "google", "otp")
				// A password login still says pwd.
				pwd := mfaOp(t, h, dn, "completeMfaLogin", map[string]any{"challengeToken": challengeOf(t, h, dn, u.email), "code": u.recovery[0]})
				expectOK(t, "a password login's second step", pwd, http.StatusOK)
				expectAAL(t, "a password login completed with a recovery code", tokensOf(t, "session", pwd).access, "aal2", "pwd", "recovery")

				// A factor enrolled in a provider's session steps that
				// session up: its amr keeps the provider, never a pwd.
				nonce = "n-new-" + dn
				tok = google.Mint(t, providertest.Token{Audience: googleClientID, Subject: "g-stepup-" + dn, Email: dn + "-google-stepup@example.com", EmailVerified: true, Nonce: nonce})
				sess := providerSignIn(t, h, dn, "google", tok, nonce, "", true)
				expectAAL(t, "a Google sign-in without a factor", sess.access, "aal1", "google")
				e := mfaOp(t, h, dn, "enrollTotp", nil, withBearer(sess.access))
				expectOK(t, "enrollTotp in a Google session", e, map[string]int{"rest": 201, "graphql": 200}[dn])
				secret, _ := jsonPath(e.data, "secret").(string)
				factorID, _ := jsonPath(e.data, "factor", "id").(string)
				c := mfaOp(t, h, dn, "confirmTotp", map[string]any{"factorId": factorID, "code": totpCode(t, secret, time.Now())}, withBearer(sess.access))
				expectOK(t, "confirmTotp in a Google session", c, http.StatusOK)
				stepped := tokensOf(t, "the confirming session", result{status: http.StatusOK, data: jsonPath(c.data, "session")})
				expectAAL(t, "a Google session stepped up by a TOTP code", stepped.access, "aal2", "google", "otp")
			})
		}
	})
}

// challengeOf logs in with the password and answers MFA_REQUIRED's
// challenge token.
func challengeOf(t *testing.T, h *herald, dn, email string) string {
	t.Helper()
	r := call(t, h, dn, opLogin, map[string]any{"email": email, "password": testPassword})
	expectError(t, "login with a factor", r, http.StatusUnauthorized, "MFA_REQUIRED")
	tok, _ := r.details["challengeToken"].(string)
	return tok
}
