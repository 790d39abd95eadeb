package main

// Sessions end to end, through the real server (harness_test.go) and both
// doors: login, the current user, refresh rotation and reuse, logout, every
// authentication error of the spec's section 5, key rotation, the admin CLI
// and password reset.

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

const (
	testPassword = "Secret123"
	newPassword  = "Secret456"
)

// Operations of the sessions issue, named as in the GraphQL schema (the
// accounts ones are in doors_test.go).
const (
	opLogin        = "login"
	opRefresh      = "refreshToken"
	opMe           = "me"
	opLogout       = "logout"
	opRequestReset = "requestPasswordReset"
	opResetPass    = "resetPassword"
	opBotStatus    = "messengerBotStatus"
)

var sessionDocs = map[string]string{
	opLogin: `mutation Login($email: String!, $password: String!) {
  login(email: $email, password: $password) { accessToken refreshToken tokenType expiresIn }
}`,
	opRefresh: `mutation Refresh($refreshToken: String!) {
  refreshToken(refreshToken: $refreshToken) { accessToken refreshToken tokenType expiresIn }
}`,
	opMe:           `query Me { me { id email emailVerified createdAt referralCode passwordChangeRequired guest subscription { plan status expiresAt } } }`,
	opLogout:       `mutation Logout { logout }`,
	opRequestReset: `mutation RequestReset($email: String!) { requestPasswordReset(email: $email) }`,
	opResetPass: `mutation Reset($email: String!, $code: String!, $newPassword: String!) {
  resetPassword(email: $email, code: $code, newPassword: $newPassword)
}`,
	opBotStatus: `query { messengerBotStatus { connected botUsername botName subscriberCount webhookUrl } }`,
}

var sessionRoutes = map[string][2]string{
	opLogin:        {http.MethodPost, "/api/v1/auth/login"},
	opRefresh:      {http.MethodPost, "/api/v1/auth/refresh"},
	opMe:           {http.MethodGet, "/api/v1/users/me"},
	opLogout:       {http.MethodPost, "/api/v1/auth/logout"},
	opRequestReset: {http.MethodPost, "/api/v1/auth/password-reset"},
	opResetPass:    {http.MethodPost, "/api/v1/auth/password-reset/confirm"},
}

// call runs op through the named door ("graphql" or "rest") with options
// (a bearer token, X-Forwarded-For) and reduces the answer to a result,
// checking the door's envelope.
func call(t testing.TB, h *herald, doorName, op string, args map[string]any, opts ...reqOption) result {
	t.Helper()
	method, path, body, err := opRequest(doorName, op, args)
	if err != nil {
		t.Fatal(err)
	}
	status, hdr, raw := h.do(t, method, path, body, opts...)
	return reduceAnswer(t, doorName, op, answer{status: status, hdr: hdr, raw: raw})
}

// rawCall is call without t, for goroutines: it sends the request only.
// Reduce its answer with reduceAnswer on the test goroutine.
func rawCall(h *herald, doorName, op string, args map[string]any, opts ...reqOption) answer {
	method, path, body, err := opRequest(doorName, op, args)
	if err != nil {
		return answer{err: err}
	}
	return rawDo(h, method, path, body, opts...)
}

// opRequest is the request that runs op through the named door.
func opRequest(doorName, op string, args map[string]any) (method, path string, body any, err error) {
	if doorName == graphQLDoor.name {
		doc, ok := sessionDocs[op]
		if !ok {
			doc = graphQLDocs[op]
		}
		if doc == "" {
			return "", "", nil, fmt.Errorf("no GraphQL document for %q", op)
		}
		req := map[string]any{"query": doc}
		if args != nil {
			req["variables"] = args
		}
		return http.MethodPost, "/graphql", req, nil
	}
	route, ok := sessionRoutes[op]
	if !ok {
		route = [2]string{http.MethodPost, restPaths[op]}
	}
	if route[1] == "" {
		return "", "", nil, fmt.Errorf("no REST path for %q", op)
	}
	if route[0] != http.MethodGet {
		m := map[string]any{}
		maps.Copy(m, args)
		body = m
	}
	return route[0], route[1], body, nil
}

// reduceAnswer checks an answer to op through the named door (its
// envelope, or GraphQL's shape) and reduces it to a result; an answer
// that never came fails the test.
func reduceAnswer(t testing.TB, doorName, op string, a answer) result {
	t.Helper()
	if a.err != nil {
		t.Fatalf("%s through %s: %v", op, doorName, a.err)
	}
	if doorName == graphQLDoor.name {
		return graphqlResult(t, op, a.status, decodeObject(t, "POST /graphql", a.raw), a.hdr)
	}
	return envelopeResult(t, op, a.status, restEnvelope(t, op, a.hdr, a.raw), a.hdr)
}

// graphqlResult checks a GraphQL answer of one root field op and reduces
// it: data.<op> on success; on error data null, errors[0] with message,
// path [op] and extensions.code.
func graphqlResult(t testing.TB, op string, status int, body map[string]any, hdr http.Header) result {
	t.Helper()
	r := result{status: status, header: hdr}
	errs, hasErrors := body["errors"]
	if !hasErrors {
		if status != http.StatusOK {
			t.Fatalf("%s: status %d without errors: %v", op, status, body)
		}
		r.data = jsonPath(body, "data", op)
		if r.data == nil {
			t.Fatalf("%s: no data.%s in %v", op, op, body)
		}
		return r
	}
	list, ok := errs.([]any)
	if !ok || len(list) == 0 {
		t.Fatalf("%s: errors is not a non-empty array: %v", op, body)
	}
	if d, present := body["data"]; !present || d != nil {
		t.Fatalf("%s: error answer must have data: null, got %v", op, body)
	}
	e0, _ := list[0].(map[string]any)
	if !reflect.DeepEqual(e0["path"], []any{op}) {
		t.Fatalf("%s: errors[0].path = %v, want [%s]", op, e0["path"], op)
	}
	r.message, _ = e0["message"].(string)
	ext, _ := e0["extensions"].(map[string]any)
	r.code, _ = ext["code"].(string)
	if r.message == "" || r.code == "" {
		t.Fatalf("%s: errors[0] without message or extensions.code: %v", op, e0)
	}
	r.details = map[string]any{}
	for k, v := range ext {
		if k != "code" {
			r.details[k] = v
		}
	}
	return r
}

// tokens are the credentials of a login or refresh, from either door.
type tokens struct {
	access, refresh, tokenType string
	expiresIn                  int
}

func tokensOf(t testing.TB, what string, r result) tokens {
	t.Helper()
	expectOK(t, what, r, http.StatusOK)
	m, _ := r.data.(map[string]any)
	access, _ := m["accessToken"].(string) // GraphQL
	if access == "" {
		access, _ = m["token"].(string) // REST
	}
	tok := tokens{access: access, tokenType: fmt.Sprint(m["tokenType"]), expiresIn: asInt(t, m["expiresIn"])}
	tok.refresh, _ = m["refreshToken"].(string)
	if tok.access == "" || tok.refresh == "" || tok.tokenType != "Bearer" || tok.expiresIn <= 0 {
		t.Fatalf("%s: tokens %v", what, m)
	}
	return tok
}

// newVerifiedUser signs up and verifies through the door, with the code
// from the fake SMTP server.
func newVerifiedUser(t testing.TB, h *herald, doorName, email string, opts ...reqOption) {
	t.Helper()
	expectOK(t, "signup "+email, call(t, h, doorName, opSignup, map[string]any{"email": email, "password": testPassword}, opts...),
		map[string]int{"graphql": 200, "rest": 201}[doorName])
	code := h.code(t, email, 1, accounts.PurposeVerify)
	expectOK(t, "verify "+email, call(t, h, doorName, opVerify, map[string]any{"email": email, "code": code}, opts...), 200)
}

func login(t testing.TB, h *herald, doorName, email, password string, opts ...reqOption) tokens {
	t.Helper()
	return tokensOf(t, "login "+email, call(t, h, doorName, opLogin, map[string]any{"email": email, "password": password}, opts...))
}

// me is the current user (users/me or GraphQL me) with a token.
func me(t testing.TB, h *herald, doorName, access string, opts ...reqOption) result {
	t.Helper()
	return call(t, h, doorName, opMe, nil, append([]reqOption{withBearer(access)}, opts...)...)
}

// jwtParts decodes a JWT's header and payload without verifying it.
func jwtParts(t testing.TB, tok string) (header, payload map[string]any) {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("%q is not a JWS compact token", tok)
	}
	dec := func(s string) map[string]any {
		raw, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil {
			t.Fatalf("JWT segment %q: %v", s, err)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("JWT segment %s: %v", raw, err)
		}
		return m
	}
	return dec(parts[0]), dec(parts[1])
}

// runHerald runs a herald command (not serve) through run() with the
// environment env and returns what it printed.
func runHerald(t testing.TB, env map[string]string, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = run(context.Background(), args, func(k string) string { return env[k] }, strings.NewReader(stdin), &out, &errOut)
	return out.String(), errOut.String(), err
}

// sessionEnv is accountsEnv (the rate limits off: these tests count
// nothing) with a short refresh grace window.
func sessionEnv(extra map[string]string) map[string]string {
	env := accountsEnv(map[string]string{"HERALD_REFRESH_REUSE_GRACE": "1s"})
	maps.Copy(env, extra)
	return env
}

var (
	isoUTC = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`)
	// The doors, by name, so subtests read "graphql" and "rest".
	doorNames = []string{graphQLDoor.name, restDoor.name}
)

func TestSessionsE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		h := startHerald(t, d, sessionEnv(nil))
		for _, dn := range doorNames {
			t.Run(dn, func(t *testing.T) {
				t.Run("Flow", func(t *testing.T) { testSessionFlow(t, h, dn) })
				t.Run("LoginErrors", func(t *testing.T) { testLoginErrors(t, h, dn) })
				t.Run("BadTokens", func(t *testing.T) { testBadTokens(t, h, dn) })
				t.Run("NoToken", func(t *testing.T) { testNoToken(t, h, dn) })
				t.Run("ConcurrentRefreshWithinGrace", func(t *testing.T) { testConcurrentRefresh(t, h, dn) })
				t.Run("PasswordReset", func(t *testing.T) { testPasswordReset(t, h, dn) })
			})
		}
		t.Run("AdminCLIAndScope", func(t *testing.T) { testAdminCLI(t, h) })
	})
}

// signup → verify → login → me → refresh → the rotated token is refused
// after the grace window, which revokes the session → a new login →
// logout → its tokens are refused.
func testSessionFlow(t *testing.T, h *herald, dn string) {
	email := "flow-" + dn + "@example.com"
	newVerifiedUser(t, h, dn, email)
	first := login(t, h, dn, email, testPassword)
	if first.expiresIn != 86400 {
		t.Errorf("expiresIn %d, want 86400 (24h)", first.expiresIn)
	}
	hdr, claims := jwtParts(t, first.access)
	if hdr["alg"] != "EdDSA" || hdr["kid"] == nil || hdr["kid"] == "" {
		t.Errorf("JWT header %v, want alg EdDSA and a kid", hdr)
	}
	for _, c := range []string{"sub", "sid", "scope", "iat", "exp", "iss", "jti"} {
		if _, ok := claims[c]; !ok {
			t.Errorf("JWT claims %v lack %s", claims, c)
		}
	}
	if _, ok := claims["aud"]; ok {
		t.Errorf("JWT claims %v have an aud without HERALD_JWT_AUDIENCE", claims)
	}
	if claims["iss"] != "herald" || claims["scope"] != "" || asInt(t, claims["exp"])-asInt(t, claims["iat"]) != 86400 {
		t.Errorf("JWT claims %v", claims)
	}

	r := me(t, h, dn, first.access)
	expectOK(t, "me", r, http.StatusOK)
	user, _ := r.data.(map[string]any)
	if user["id"] != claims["sub"] || user["email"] != email || user["emailVerified"] != true {
		t.Fatalf("me = %v, want id %v, email %s, verified", user, claims["sub"], email)
	}
	if s, _ := user["referralCode"].(string); len(s) != 8 {
		t.Errorf("referralCode %v", user["referralCode"])
	}
	created, _ := user["createdAt"].(string)
	expires, _ := jsonPath(user, "subscription", "expiresAt").(string)
	if !isoUTC.MatchString(created) || !isoUTC.MatchString(expires) {
		t.Errorf("createdAt %q, subscription.expiresAt %q: want ISO 8601 UTC like 2026-11-29T10:00:00Z", created, expires)
	}
	if st := jsonPath(user, "subscription", "status"); st != "active" || jsonPath(user, "subscription", "plan") != "trial" {
		t.Errorf("subscription %v, want an active trial", user["subscription"])
	}

	second := tokensOf(t, "refresh", call(t, h, dn, opRefresh, map[string]any{"refreshToken": first.refresh}))
	if _, c := jwtParts(t, second.access); c["jti"] == claims["jti"] {
		t.Errorf("two access tokens share the jti %v", c["jti"])
	}
	if second.refresh == first.refresh {
		t.Fatal("refresh did not rotate the refresh token")
	}
	if _, c := jwtParts(t, second.access); c["sid"] != claims["sid"] {
		t.Fatalf("refreshed token in session %v, want %v", c["sid"], claims["sid"])
	}
	expectOK(t, "me with the refreshed token", me(t, h, dn, second.access), http.StatusOK)

	// Within the grace window the rotated token still answers (another
	// tab); once it has passed, it is refused and the session ends.
	var refused result
	eventually(t, func() bool {
		refused = call(t, h, dn, opRefresh, map[string]any{"refreshToken": first.refresh})
		return refused.code != ""
	}, "the rotated refresh token was never refused")
	expectError(t, "rotated refresh token after grace", refused, http.StatusUnauthorized, "TOKEN_INVALID")
	expectError(t, "newest refresh token of the revoked session", call(t, h, dn, opRefresh, map[string]any{"refreshToken": second.refresh}), http.StatusUnauthorized, "TOKEN_INVALID")
	expectError(t, "access token of the revoked session", me(t, h, dn, second.access), http.StatusUnauthorized, "TOKEN_INVALID")

	third := login(t, h, dn, email, testPassword)
	r = call(t, h, dn, opLogout, nil, withBearer(third.access))
	expectOK(t, "logout", r, http.StatusOK)
	if dn == graphQLDoor.name && r.data != true {
		t.Errorf("logout data %v, want true", r.data)
	}
	expectError(t, "access token after logout", me(t, h, dn, third.access), http.StatusUnauthorized, "TOKEN_INVALID")
	expectError(t, "refresh token after logout", call(t, h, dn, opRefresh, map[string]any{"refreshToken": third.refresh}), http.StatusUnauthorized, "TOKEN_INVALID")
	expectError(t, "logout twice", call(t, h, dn, opLogout, nil, withBearer(third.access)), http.StatusUnauthorized, "TOKEN_INVALID")
}

// A rotated refresh token presented again after HERALD_REFRESH_REUSE_GRACE
// is taken for a stolen one: it is refused and its session ends, so the
// tokens the session got since are refused too (its newest refresh token,
// never used, and its access tokens). Within the grace the same token still
// answered (a second tab). The user's other session is untouched.
func TestRefreshReuseAfterGraceE2E(t *testing.T) {
	const grace = 2 * time.Second
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		h := startHerald(t, d, sessionEnv(map[string]string{"HERALD_REFRESH_REUSE_GRACE": grace.String()}))
		for _, dn := range doorNames {
			t.Run(dn, func(t *testing.T) {
				t.Parallel()
				email := "reuse-" + dn + "@example.com"
				refresh := func(token string) result {
					t.Helper()
					return call(t, h, dn, opRefresh, map[string]any{"refreshToken": token})
				}
				newVerifiedUser(t, h, dn, email)
				other := login(t, h, dn, email, testPassword)
				first := login(t, h, dn, email, testPassword)

				sent := time.Now()
				second := tokensOf(t, "rotation", refresh(first.refresh))
				rotated := time.Now() // the server marked first rotated between sent and now
				expectOK(t, "me with the rotated session's access token", me(t, h, dn, second.access), http.StatusOK)
				// Within the grace: another tab. Only asserted when the
				// answer came back within the grace of the rotation's
				// sending, so that the server surely decided within it.
				var tab *tokens
				r := refresh(first.refresh)
				if elapsed := time.Since(sent); elapsed < grace {
					tok := tokensOf(t, "reuse within the grace", r)
					tab = &tok
				} else {
					t.Logf("the reuse within the grace answered %s after the rotation was sent (grace %s): not checked", elapsed, grace)
				}

				// Past the grace: theft.
				time.Sleep(time.Until(rotated.Add(grace + 250*time.Millisecond)))
				expectError(t, "the rotated refresh token after the grace", refresh(first.refresh), http.StatusUnauthorized, "TOKEN_INVALID")
				expectError(t, "the session's newest refresh token (never used) after the reuse", refresh(second.refresh), http.StatusUnauthorized, "TOKEN_INVALID")
				expectError(t, "the session's access token after the reuse", me(t, h, dn, second.access), http.StatusUnauthorized, "TOKEN_INVALID")
				if tab != nil {
					expectError(t, "the second tab's refresh token after the reuse", refresh(tab.refresh), http.StatusUnauthorized, "TOKEN_INVALID")
					expectError(t, "the second tab's access token after the reuse", me(t, h, dn, tab.access), http.StatusUnauthorized, "TOKEN_INVALID")
				}

				// The theft ends that session only.
				expectOK(t, "me in the user's other session", me(t, h, dn, other.access), http.StatusOK)
				tokensOf(t, "refresh in the user's other session", refresh(other.refresh))
			})
		}
	})
}

func testLoginErrors(t *testing.T, h *herald, dn string) {
	verified, unverified := "known-"+dn+"@example.com", "unverified-"+dn+"@example.com"
	newVerifiedUser(t, h, dn, verified)
	expectOK(t, "signup", call(t, h, dn, opSignup, map[string]any{"email": unverified, "password": testPassword}), map[string]int{"graphql": 200, "rest": 201}[dn])
	cases := []struct {
		name, email, password string
		status                int
		code                  string
	}{
		{"wrong password", verified, "Secret124", 401, "INVALID_CREDENTIALS"},
		{"unknown email", "nobody-" + dn + "@example.com", testPassword, 401, "INVALID_CREDENTIALS"},
		{"unverified, wrong password", unverified, "Secret124", 401, "INVALID_CREDENTIALS"},
		{"unverified, right password", unverified, testPassword, 403, "EMAIL_NOT_VERIFIED"},
	}
	var messages []string
	for _, c := range cases {
		r := call(t, h, dn, opLogin, map[string]any{"email": c.email, "password": c.password})
		expectError(t, c.name, r, c.status, c.code)
		if c.code == "INVALID_CREDENTIALS" {
			messages = append(messages, r.message)
		}
	}
	for _, m := range messages {
		if m != messages[0] {
			t.Fatalf("INVALID_CREDENTIALS messages differ, so accounts can be probed: %q", messages)
		}
	}
}

// serverKey is the signing key the server publishes.
func serverKey(t testing.TB, h *herald) (kid string, pub []byte) {
	t.Helper()
	keys := jwks(t, h)
	kid, _ = keys[0]["kid"].(string)
	pub, err := base64.RawURLEncoding.DecodeString(fmt.Sprint(keys[0]["x"]))
	if err != nil || kid == "" {
		t.Fatalf("JWKS key %v", keys[0])
	}
	return kid, pub
}

// jwks fetches /.well-known/jwks.json and checks no private part leaks.
func jwks(t testing.TB, h *herald) []map[string]any {
	t.Helper()
	status, hdr, raw := h.do(t, http.MethodGet, "/.well-known/jwks.json", nil)
	if status != http.StatusOK {
		t.Fatalf("jwks: status %d", status)
	}
	if hdr.Get("X-RateLimit-Limit") != "" {
		t.Errorf("jwks carries rate-limit headers")
	}
	var doc struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil || len(doc.Keys) == 0 {
		t.Fatalf("jwks %s: %v", raw, err)
	}
	for _, k := range doc.Keys {
		if _, has := k["d"]; has {
			t.Fatalf("jwks publishes a private key: %s", raw)
		}
		if k["kty"] != "OKP" || k["crv"] != "Ed25519" || k["alg"] != "EdDSA" {
			t.Errorf("jwks key %v", k)
		}
	}
	return doc.Keys
}

func jwksKids(t testing.TB, h *herald) []string {
	t.Helper()
	var kids []string
	for _, k := range jwks(t, h) {
		kids = append(kids, fmt.Sprint(k["kid"]))
	}
	slices.Sort(kids)
	return kids
}

// Every kind of bad token is TOKEN_INVALID, never anything else.
func testBadTokens(t *testing.T, h *herald, dn string) {
	email := "tokens-" + dn + "@example.com"
	newVerifiedUser(t, h, dn, email)
	good := login(t, h, dn, email, testPassword).access
	_, claims := jwtParts(t, good)
	kid, pub := serverKey(t, h)
	forged := jwt.MapClaims{}
	for k, v := range claims {
		forged[k] = v
	}
	sign := func(method jwt.SigningMethod, kid string, key any) string {
		tok := jwt.NewWithClaims(method, forged)
		tok.Header["kid"] = kid
		s, err := tok.SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	_, foreign, _ := ed25519.GenerateKey(rand.Reader)
	parts := strings.Split(good, ".")
	withAdmin := jwt.MapClaims{}
	for k, v := range claims {
		withAdmin[k] = v
	}
	withAdmin["scope"] = "admin"
	payload, _ := json.Marshal(withAdmin)

	cases := []struct{ name, header string }{
		{"signed by a foreign key", "Bearer " + sign(jwt.SigningMethodEdDSA, kid, foreign)},
		{"alg none", "Bearer " + sign(jwt.SigningMethodNone, kid, jwt.UnsafeAllowNoneSignatureType)},
		{"HS256 keyed with the public key", "Bearer " + sign(jwt.SigningMethodHS256, kid, pub)},
		{"unknown kid", "Bearer " + sign(jwt.SigningMethodEdDSA, "no-such-key", foreign)},
		{"truncated", "Bearer " + good[:len(good)-6]},
		{"payload changed", "Bearer " + parts[0] + "." + base64.RawURLEncoding.EncodeToString(payload) + "." + parts[2]},
		{"not a JWT", "Bearer abc"},
		{"Basic scheme", "Basic " + base64.StdEncoding.EncodeToString([]byte(email+":"+testPassword))},
	}
	for _, c := range cases {
		r := call(t, h, dn, opMe, nil, withHeader("Authorization", c.header))
		expectError(t, c.name, r, http.StatusUnauthorized, "TOKEN_INVALID")
	}
	expectOK(t, "the genuine token", me(t, h, dn, good), http.StatusOK)
}

func testNoToken(t *testing.T, h *herald, dn string) {
	for _, op := range []string{opMe, opLogout} {
		expectError(t, op+" without a token", call(t, h, dn, op, nil), http.StatusUnauthorized, "AUTH_REQUIRED")
	}
}

// Two tabs refresh with the same token at once: both get fresh tokens.
func testConcurrentRefresh(t *testing.T, h *herald, dn string) {
	email := "tabs-" + dn + "@example.com"
	newVerifiedUser(t, h, dn, email)
	tok := login(t, h, dn, email, testPassword)
	var (
		wg      sync.WaitGroup
		start   = make(chan struct{})
		answers [2]answer
	)
	for i := range answers {
		wg.Go(func() {
			<-start
			answers[i] = rawCall(h, dn, opRefresh, map[string]any{"refreshToken": tok.refresh})
		})
	}
	close(start)
	wg.Wait()
	var got [2]tokens
	for i, a := range answers {
		got[i] = tokensOf(t, fmt.Sprintf("tab %d", i), reduceAnswer(t, dn, opRefresh, a))
	}
	if got[0].refresh == got[1].refresh {
		t.Fatal("both tabs got the same refresh token")
	}
	for i := range got {
		expectOK(t, fmt.Sprintf("tab %d me", i), me(t, h, dn, got[i].access), http.StatusOK)
		tokensOf(t, fmt.Sprintf("tab %d refreshing again", i), call(t, h, dn, opRefresh, map[string]any{"refreshToken": got[i].refresh}))
	}
}

func testPasswordReset(t *testing.T, h *herald, dn string) {
	email, unknown := "reset-"+dn+"@example.com", "reset-nobody-"+dn+"@example.com"
	newVerifiedUser(t, h, dn, email)
	before := login(t, h, dn, email, testPassword)
	mails := h.SMTP.Count(email)

	// The answer is the same whether or not the account exists.
	for _, e := range []string{unknown, email} {
		r := call(t, h, dn, opRequestReset, map[string]any{"email": e})
		expectOK(t, "request reset for "+e, r, http.StatusOK)
		if dn == graphQLDoor.name && r.data != true {
			t.Fatalf("requestPasswordReset(%s) = %v, want true", e, r.data)
		}
	}
	code := h.code(t, email, mails+1, accounts.PurposeReset)
	expectOK(t, "reset", call(t, h, dn, opResetPass, map[string]any{"email": email, "code": code, "newPassword": newPassword}), http.StatusOK)

	expectError(t, "old password", call(t, h, dn, opLogin, map[string]any{"email": email, "password": testPassword}), http.StatusUnauthorized, "INVALID_CREDENTIALS")
	expectOK(t, "me with the new password's token", me(t, h, dn, login(t, h, dn, email, newPassword).access), http.StatusOK)
	// Every earlier session ended.
	expectError(t, "access token from before the reset", me(t, h, dn, before.access), http.StatusUnauthorized, "TOKEN_INVALID")
	expectError(t, "refresh token from before the reset", call(t, h, dn, opRefresh, map[string]any{"refreshToken": before.refresh}), http.StatusUnauthorized, "TOKEN_INVALID")
	// The code is spent.
	expectError(t, "reset code reused", call(t, h, dn, opResetPass, map[string]any{"email": email, "code": code, "newPassword": "Secret789"}), http.StatusBadRequest, "INVALID_VERIFICATION_CODE")
	if n := h.SMTP.Count(unknown); n != 0 {
		t.Fatalf("%d emails went to an unknown address", n)
	}
}

// herald admin create (flags and standard input) gives a token with the
// admin scope; herald admin revoke ends it. The scope is checked on an
// admin-only GraphQL field (the REST door has no admin route yet).
func testAdminCLI(t *testing.T, h *herald) {
	const admin, piped, user = "root@example.com", "root2@example.com", "plain@example.com"
	stdout, stderr, err := runHerald(t, h.Env, "", "admin", "create", "--email", admin, "--password", testPassword)
	if err != nil {
		t.Fatalf("admin create: %v\n%s", err, stderr)
	}
	id := strings.TrimSpace(stdout)
	if _, _, err := runHerald(t, h.Env, testPassword+"\n", "admin", "create", "--email", piped); err != nil {
		t.Fatalf("admin create from stdin: %v", err)
	}
	newVerifiedUser(t, h, restDoor.name, user)

	adminTok := login(t, h, restDoor.name, admin, testPassword)
	if _, c := jwtParts(t, adminTok.access); c["sub"] != id || !slices.Contains(strings.Fields(fmt.Sprint(c["scope"])), "admin") {
		t.Fatalf("admin token claims %v, want sub %s and scope admin", c, id)
	}
	pipedTok := login(t, h, graphQLDoor.name, piped, testPassword)
	if _, c := jwtParts(t, pipedTok.access); !slices.Contains(strings.Fields(fmt.Sprint(c["scope"])), "admin") {
		t.Fatalf("stdin admin token claims %v, want scope admin", c)
	}
	userTok := login(t, h, graphQLDoor.name, user, testPassword)

	r := call(t, h, graphQLDoor.name, opBotStatus, nil, withBearer(adminTok.access))
	expectOK(t, "admin on an admin field", r, http.StatusOK)
	if jsonPath(r.data, "connected") != false {
		t.Errorf("messengerBotStatus without a bot token: %v, want connected false", r.data)
	}
	expectError(t, "user on an admin field", call(t, h, graphQLDoor.name, opBotStatus, nil, withBearer(userTok.access)), http.StatusForbidden, "INSUFFICIENT_PERMISSIONS")
	expectError(t, "no token on an admin field", call(t, h, graphQLDoor.name, opBotStatus, nil), http.StatusUnauthorized, "AUTH_REQUIRED")

	if _, stderr, err := runHerald(t, h.Env, "", "admin", "revoke", "--email", admin); err != nil {
		t.Fatalf("admin revoke: %v\n%s", err, stderr)
	}
	// The CLI is another process: its revocation reaches the server's
	// session cache by announcement (PostgreSQL), so it holds after a
	// moment rather than at the CLI's return.
	deadline := time.Now().Add(pollWait)
	for r := me(t, h, restDoor.name, adminTok.access); r.code != "TOKEN_INVALID"; r = me(t, h, restDoor.name, adminTok.access) {
		if time.Now().After(deadline) {
			expectError(t, "admin token after revoke", r, http.StatusUnauthorized, "TOKEN_INVALID")
		}
		time.Sleep(10 * time.Millisecond)
	}
	expectError(t, "admin token after revoke", me(t, h, restDoor.name, adminTok.access), http.StatusUnauthorized, "TOKEN_INVALID")
	again := login(t, h, graphQLDoor.name, admin, testPassword)
	if _, c := jwtParts(t, again.access); slices.Contains(strings.Fields(fmt.Sprint(c["scope"])), "admin") {
		t.Fatalf("scope after revoke %v", c["scope"])
	}
	expectError(t, "former admin on an admin field", call(t, h, graphQLDoor.name, opBotStatus, nil, withBearer(again.access)), http.StatusForbidden, "INSUFFICIENT_PERMISSIONS")
	expectOK(t, "the other admin is untouched", call(t, h, graphQLDoor.name, opBotStatus, nil, withBearer(pipedTok.access)), http.StatusOK)
}

// An expired access token is TOKEN_EXPIRED with expiredAt and tokenType;
// the refresh token still gives a new one.
func TestAccessTokenExpiryE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		h := startHerald(t, d, sessionEnv(map[string]string{"HERALD_ACCESS_TOKEN_TTL": "1s"}))
		for _, dn := range doorNames {
			t.Run(dn, func(t *testing.T) {
				email := "expiry-" + dn + "@example.com"
				newVerifiedUser(t, h, dn, email)
				tok := login(t, h, dn, email, testPassword)
				if tok.expiresIn != 1 {
					t.Errorf("expiresIn %d, want 1", tok.expiresIn)
				}
				_, claims := jwtParts(t, tok.access)
				wantAt := time.Unix(int64(asInt(t, claims["exp"])), 0).UTC().Format(time.RFC3339)
				var r result
				eventually(t, func() bool {
					r = me(t, h, dn, tok.access)
					return r.code != ""
				}, "the access token never expired")
				expectError(t, "expired token", r, http.StatusUnauthorized, "TOKEN_EXPIRED")
				if r.details["expiredAt"] != wantAt || r.details["tokenType"] != "access" {
					t.Fatalf("details %v, want expiredAt %s and tokenType access", r.details, wantAt)
				}
				next := tokensOf(t, "refresh after expiry", call(t, h, dn, opRefresh, map[string]any{"refreshToken": tok.refresh}))
				if _, c := jwtParts(t, next.access); c["sid"] != claims["sid"] {
					t.Fatalf("refreshed into session %v, want %v", c["sid"], claims["sid"])
				}
			})
		}
	})
}

// Rotation with HERALD_JWT_KEYS_FILE: key A signs; then B signs and A only
// verifies (A's tokens still accepted); then A is gone (refused).
func TestKeyRotationE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		dir := t.TempDir()
		keyA, keyB := generateKey(t), generateKey(t)
		verifyOnlyA := cloneMap(keyA)
		delete(verifyOnlyA, "d")
		delete(verifyOnlyA, "active")
		writeJWKS := func(name string, keys ...map[string]any) string {
			raw, _ := json.Marshal(map[string]any{"keys": keys})
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, raw, 0o600); err != nil {
				t.Fatal(err)
			}
			return path
		}
		onlyA := writeJWKS("a.json", keyA)
		bThenA := writeJWKS("b-a.json", keyB, verifyOnlyA)
		onlyB := writeJWKS("b.json", keyB)
		kidA, kidB := fmt.Sprint(keyA["kid"]), fmt.Sprint(keyB["kid"])
		const email = "rotation@example.com"

		h := startHerald(t, d, sessionEnv(map[string]string{"HERALD_JWT_KEYS_FILE": onlyA}))
		dbURL := h.DBURL
		newVerifiedUser(t, h, restDoor.name, email)
		tokA := login(t, h, restDoor.name, email, testPassword)
		if hdr, _ := jwtParts(t, tokA.access); hdr["kid"] != kidA {
			t.Fatalf("kid %v, want %s", hdr["kid"], kidA)
		}
		if kids := jwksKids(t, h); !reflect.DeepEqual(kids, []string{kidA}) {
			t.Fatalf("jwks kids %v, want [%s]", kids, kidA)
		}
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}

		h = startHerald(t, d, sessionEnv(map[string]string{"HERALD_JWT_KEYS_FILE": bThenA, "HERALD_DATABASE_URL": dbURL}))
		for _, dn := range doorNames {
			expectOK(t, dn+": A's token while A verifies", me(t, h, dn, tokA.access), http.StatusOK)
		}
		tokB := login(t, h, graphQLDoor.name, email, testPassword)
		if hdr, _ := jwtParts(t, tokB.access); hdr["kid"] != kidB {
			t.Fatalf("kid %v, want %s (the new active key)", hdr["kid"], kidB)
		}
		want := []string{kidA, kidB}
		slices.Sort(want)
		if kids := jwksKids(t, h); !reflect.DeepEqual(kids, want) {
			t.Fatalf("jwks kids %v, want %v", kids, want)
		}
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}

		h = startHerald(t, d, sessionEnv(map[string]string{"HERALD_JWT_KEYS_FILE": onlyB, "HERALD_DATABASE_URL": dbURL}))
		for _, dn := range doorNames {
			expectError(t, dn+": A's token once A is removed", me(t, h, dn, tokA.access), http.StatusUnauthorized, "TOKEN_INVALID")
			expectOK(t, dn+": B's token", me(t, h, dn, tokB.access), http.StatusOK)
		}
		if kids := jwksKids(t, h); !reflect.DeepEqual(kids, []string{kidB}) {
			t.Fatalf("jwks kids %v, want [%s]", kids, kidB)
		}
	})
}

// generateKey runs `herald keys generate` and returns its one key.
func generateKey(t testing.TB) map[string]any {
	t.Helper()
	out, stderr, err := runHerald(t, nil, "", "keys", "generate")
	if err != nil {
		t.Fatalf("keys generate: %v\n%s", err, stderr)
	}
	var doc struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Keys) != 1 {
		t.Fatalf("keys generate printed %s (%v)", out, err)
	}
	k := doc.Keys[0]
	if k["active"] != true || k["d"] == nil || k["kid"] == nil {
		t.Fatalf("generated key %v, want active with d and kid", k)
	}
	return k
}

func cloneMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// BenchmarkUsersMe is GET /api/v1/users/me with a valid token through the
// whole stack (TCP, middleware, limiter, token check and its session
// lookup, the account read, the request log), with the limiter on and off.
func BenchmarkUsersMe(b *testing.B) {
	for _, d := range sqlstoretest.Dialects() {
		for _, limiter := range []bool{true, false} {
			name := string(d) + "/limiter"
			env := map[string]string{"HERALD_RATE_LIMIT_GLOBAL": "1000000000", "HERALD_RATE_LIMIT_PROTECTED": "1000000000"}
			if !limiter {
				name = string(d) + "/no-limiter"
				env["HERALD_RATE_LIMIT_GLOBAL"], env["HERALD_RATE_LIMIT_PROTECTED"] = "0", "0"
			}
			b.Run(name, func(b *testing.B) {
				h := startHerald(b, d, env)
				newVerifiedUser(b, h, restDoor.name, "bench@example.com")
				tok := login(b, h, restDoor.name, "bench@example.com", testPassword)
				req, _ := http.NewRequest(http.MethodGet, h.BaseURL+"/api/v1/users/me", nil)
				req.Header.Set("Authorization", "Bearer "+tok.access)
				b.ReportAllocs()
				for b.Loop() {
					resp, err := h.client.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						b.Fatalf("status %d", resp.StatusCode)
					}
				}
			})
		}
	}
}

// HERALD_JWT_AUDIENCE: the aud claim is issued, and required by the server
// that sets it, so a token minted for another audience is refused even
// when the key and the session are good. Discovery names the issuer and
// the key set.
func TestTokenAudienceE2E(t *testing.T) {
	const email = "audience@example.com"
	h := startHerald(t, "sqlite", sessionEnv(map[string]string{"HERALD_JWT_AUDIENCE": "https://vpn.example.com", "HERALD_JWT_ISSUER": "https://auth.example.com"}))
	dbURL := h.DBURL
	newVerifiedUser(t, h, restDoor.name, email)
	tok := login(t, h, restDoor.name, email, testPassword)
	_, claims := jwtParts(t, tok.access)
	if claims["aud"] != "https://vpn.example.com" && fmt.Sprint(claims["aud"]) != "[https://vpn.example.com]" {
		t.Fatalf("aud %v, want https://vpn.example.com", claims["aud"])
	}
	expectOK(t, "me with the right audience", me(t, h, restDoor.name, tok.access), http.StatusOK)
	status, _, raw := h.do(t, http.MethodGet, "/.well-known/openid-configuration", nil)
	var disc map[string]any
	if err := json.Unmarshal(raw, &disc); err != nil || status != http.StatusOK {
		t.Fatalf("discovery: %d %s", status, raw)
	}
	if disc["issuer"] != "https://auth.example.com" || disc["jwks_uri"] != "https://auth.example.com/.well-known/jwks.json" ||
		!reflect.DeepEqual(disc["id_token_signing_alg_values_supported"], []any{"EdDSA"}) {
		t.Fatalf("discovery %v", disc)
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}

	// The same database (so the same key and session), another audience.
	h = startHerald(t, "sqlite", sessionEnv(map[string]string{"HERALD_DATABASE_URL": dbURL, "HERALD_JWT_AUDIENCE": "https://other.example.com", "HERALD_JWT_ISSUER": "https://auth.example.com"}))
	for _, dn := range doorNames {
		expectError(t, dn+": a token for another audience", me(t, h, dn, tok.access), http.StatusUnauthorized, "TOKEN_INVALID")
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}

	// Without an issuer URL, the development profile's discovery names the
	// address the client used (TestDiscoveryHostE2E: and production's
	// answers 404).
	h = startHerald(t, "sqlite", sessionEnv(map[string]string{"HERALD_DATABASE_URL": dbURL, "HERALD_ENV": "development"}))
	_, _, raw = h.do(t, http.MethodGet, "/.well-known/openid-configuration", nil)
	if err := json.Unmarshal(raw, &disc); err != nil || disc["issuer"] != "herald" || disc["jwks_uri"] != h.BaseURL+"/.well-known/jwks.json" {
		t.Fatalf("discovery without an issuer URL: %s", raw)
	}
}
