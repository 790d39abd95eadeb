package main

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/identities/provider/providertest"
	"github.com/herald-vpn/herald/internal/passkeys/passkeystest"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

var guestDocs = map[string]string{
	"signInAsGuest": `mutation($installId: String!) { signInAsGuest(installId: $installId) { accountCreated session { accessToken refreshToken tokenType expiresIn } } }`,
	"upgradeGuest":  `mutation($email: String!, $password: String!) { upgradeGuest(email: $email, password: $password) { id email emailVerified guest } }`,
}

// guestOp runs a guest operation through the door.
func guestOp(t testing.TB, h *herald, dn, op string, args map[string]any, opts ...reqOption) result {
	t.Helper()
	if dn == graphQLDoor.name {
		return gql(t, h, op, guestDocs[op], args, opts...)
	}
	path := map[string]string{"signInAsGuest": "/api/v1/auth/guest", "upgradeGuest": "/api/v1/users/me/upgrade"}[op]
	status, env, hdr := h.rest(t, http.MethodPost, path, args, opts...)
	return envelopeResult(t, op, status, env, hdr)
}

// guestSignIn signs in as the guest of installID, checking whether it
// created the account.
func guestSignIn(t testing.TB, h *herald, dn, installID string, created bool) tokens {
	t.Helper()
	r := guestOp(t, h, dn, "signInAsGuest", map[string]any{"installId": installID})
	want := http.StatusOK
	if created && dn == restDoor.name {
		want = http.StatusCreated
	}
	expectOK(t, "guest sign-in", r, want)
	if jsonPath(r.data, "accountCreated") != created {
		t.Fatalf("guest sign-in of %s: accountCreated %v, want %v", installID, jsonPath(r.data, "accountCreated"), created)
	}
	return tokensOf(t, "guest session", result{status: http.StatusOK, data: jsonPath(r.data, "session")})
}

func TestGuestsE2E(t *testing.T) {
	google := providertest.NewIssuer(t)
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		h := startHerald(t, d, sessionEnv(map[string]string{
			"HERALD_WEBAUTHN_RP_ID":    passkeyRPID,
			"HERALD_WEBAUTHN_RP_NAME":  "Herald Test",
			"HERALD_WEBAUTHN_ORIGINS":  passkeyOrigin,
			"HERALD_GOOGLE_CLIENT_IDS": googleClientID,
			"HERALD_GOOGLE_ISSUER":     google.URL,
			"HERALD_GOOGLE_JWKS_URL":   google.JWKSURL(),
		}))
		admin := newAdminToken(t, h, "ops@example.com")
		for _, dn := range doorNames {
			t.Run(dn, func(t *testing.T) { testGuests(t, h, dn, google, admin) })
		}
		t.Run("Purge", func(t *testing.T) { testGuestPurge(t, h, d) })
	})
}

func testGuests(t *testing.T, h *herald, dn string, google *providertest.Issuer, admin string) {
	install := "install-" + dn + "-0001"
	s := guestSignIn(t, h, dn, install, true)
	guestID := jwtSub(t, s.access)
	expectAAL(t, "a guest's session", s.access, "aal1", "guest")
	m := me(t, h, dn, s.access)
	expectOK(t, "me of a guest", m, http.StatusOK)
	// No address: its stored placeholder is never shown.
	if jsonPath(m.data, "guest") != true || jsonPath(m.data, "email") != nil || jsonPath(m.data, "emailVerified") != false || jsonPath(m.data, "subscription", "plan") != "trial" {
		t.Fatalf("a guest's me: %v", m.data)
	}
	email := placeholderOf(t, h, guestID)
	// The admin's email search never matches the placeholder; the guest
	// filter lists it.
	for _, q := range []string{"guest", email} {
		if ids := userIDs(t, adminOp(t, h, dn, "users", map[string]any{"query": q}, withBearer(admin))); slices.Contains(ids, guestID) {
			t.Errorf("searching %q lists the guest by its placeholder: %v", q, ids)
		}
	}
	if ids := userIDs(t, adminOp(t, h, dn, "users", map[string]any{"guest": true}, withBearer(admin))); !slices.Contains(ids, guestID) {
		t.Errorf("guest=true does not list the guest %s: %v", guestID, ids)
	}
	if ids := userIDs(t, adminOp(t, h, dn, "users", map[string]any{"guest": false}, withBearer(admin))); slices.Contains(ids, guestID) {
		t.Errorf("guest=false lists the guest %s: %v", guestID, ids)
	}
	mustRegister(t, h, dn, s.access, "android", "guest-token-"+dn, "Pixel")
	// The same install: the same guest, signed in again.
	if again := guestSignIn(t, h, dn, install, false); jwtSub(t, again.access) != guestID {
		t.Fatal("the same install got another guest")
	}
	// One install signing in at once from several places (a retry racing
	// its first try): one guest, every answer a session of it.
	race := "install-" + dn + "-race"
	answers := make(chan answer, 4)
	for range 4 {
		go func() {
			a := rawDo(h, http.MethodPost, map[string]string{"rest": "/api/v1/auth/guest", "graphql": "/graphql"}[dn],
				map[string]any{"rest": map[string]any{"installId": race}, "graphql": map[string]any{"query": guestDocs["signInAsGuest"], "variables": map[string]any{"installId": race}}}[dn])
			answers <- a
		}()
	}
	raced := map[string]bool{}
	for range 4 {
		a := <-answers
		if a.err != nil {
			t.Fatal(a.err)
		}
		r := reduceAnswer(t, dn, "signInAsGuest", a)
		if r.code != "" || (r.status != http.StatusOK && r.status != http.StatusCreated) {
			t.Fatalf("a racing guest sign-in: %d %s %s", r.status, r.code, r.message)
		}
		raced[jwtSub(t, tokensOf(t, "raced session", result{status: http.StatusOK, data: jsonPath(r.data, "session")}).access)] = true
	}
	if len(raced) != 1 {
		t.Fatalf("four racing sign-ins of one install made %d guests, want 1", len(raced))
	}
	expectError(t, "a short install id", guestOp(t, h, dn, "signInAsGuest", map[string]any{"installId": "short"}), 400, "VALIDATION_ERROR")
	expectError(t, "an install id of other characters", guestOp(t, h, dn, "signInAsGuest", map[string]any{"installId": "install id with spaces"}), 400, "VALIDATION_ERROR")
	// What a guest cannot do.
	expectError(t, "a password login as the placeholder", call(t, h, dn, opLogin, map[string]any{"email": email, "password": testPassword}), 401, "INVALID_CREDENTIALS")
	expectError(t, "an email change of a guest", call(t, h, dn, opChangeEmail, map[string]any{"email": dn + "-guest-change@example.com"}, withBearer(s.access)), 403, "GUEST_NOT_ALLOWED")

	// Upgrade with an email and password: the same account, its device kept.
	upgraded := dn + "-upgraded@example.com"
	r := guestOp(t, h, dn, "upgradeGuest", map[string]any{"email": upgraded, "password": testPassword}, withBearer(s.access))
	expectOK(t, "upgrade", r, http.StatusOK)
	if jsonPath(r.data, "guest") != false || jsonPath(r.data, "email") != upgraded || jsonPath(r.data, "emailVerified") != false || jsonPath(r.data, "id") != guestID {
		t.Fatalf("the upgraded account: %v", r.data)
	}
	expectError(t, "a password login before the address is verified", call(t, h, dn, opLogin, map[string]any{"email": upgraded, "password": testPassword}), 403, "EMAIL_NOT_VERIFIED")
	code := h.code(t, upgraded, 1, accounts.PurposeVerify)
	expectOK(t, "verify", call(t, h, dn, opVerify, map[string]any{"email": upgraded, "code": code}), http.StatusOK)
	after := login(t, h, dn, upgraded, testPassword)
	if jwtSub(t, after.access) != guestID {
		t.Fatal("the upgraded account's login is another account")
	}
	if devices := listDevices(t, h, dn, after.access); len(devices) != 1 {
		t.Errorf("the upgraded account has %d devices, want the guest's one", len(devices))
	}
	expectError(t, "upgrade again", guestOp(t, h, dn, "upgradeGuest", map[string]any{"email": dn + "-again@example.com", "password": testPassword}, withBearer(after.access)), 409, "NOT_A_GUEST")
	// The install may be a guest again: a new one.
	if fresh := guestSignIn(t, h, dn, install, true); jwtSub(t, fresh.access) == guestID {
		t.Fatal("the install's new guest is the upgraded account")
	}

	// Upgrade with a passkey: no longer a guest, and still no address
	// (null, not its placeholder) until it adds one.
	pk := guestSignIn(t, h, dn, "install-"+dn+"-0002", true)
	registerPasskey(t, h, dn, pk.access, &passkeystest.Authenticator{}, "Phone")
	if m := me(t, h, dn, pk.access); jsonPath(m.data, "guest") != false || jsonPath(m.data, "email") != nil || jsonPath(m.data, "emailVerified") != false {
		t.Errorf("a guest upgraded with a passkey: %v", m.data)
	}

	// Upgrade with Google: the provider's verified address becomes the account's.
	gg := guestSignIn(t, h, dn, "install-"+dn+"-0003", true)
	addr := dn + "-guest-google@example.com"
	tok := google.Mint(t, providertest.Token{Audience: googleClientID, Subject: dn + "-guest-google", Email: addr, EmailVerified: true, Nonce: "n"})
	expectOK(t, "link Google to a guest", identityOp(t, h, dn, "linkIdentity", map[string]any{"provider": "google", "idToken": tok, "nonce": "n"}, withBearer(gg.access)),
		map[string]int{"rest": 201, "graphql": 200}[dn])
	if m := me(t, h, dn, gg.access); jsonPath(m.data, "guest") != false || jsonPath(m.data, "email") != addr || jsonPath(m.data, "emailVerified") != true {
		t.Errorf("a guest upgraded with Google: %v", m.data)
	}
	log := strings.Join(sqlstoretest.RawColumn(t, h.Env["HERALD_DATABASE_URL"], `SELECT detail FROM security_events WHERE kind = 'guest_upgraded' AND account_id IN ('`+guestID+`', '`+jwtSub(t, pk.access)+`', '`+jwtSub(t, gg.access)+`')`), " ")
	for _, method := range []string{`"password"`, `"passkey"`, `"google"`} {
		if !strings.Contains(log, method) {
			t.Errorf("no guest_upgraded entry by %s: %s", method, log)
		}
	}
}

// A guest unused for HERALD_GUEST_RETENTION is deleted by the
// housekeeping, which runs as the server starts.
func testGuestPurge(t *testing.T, h *herald, d sqlstoretest.Dialect) {
	stale := guestSignIn(t, h, restDoor.name, "install-purge-stale", true)
	staleID := jwtSub(t, stale.access)
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // older than the retention below
	h2 := startHerald(t, d, sessionEnv(map[string]string{"HERALD_DATABASE_URL": h.DBURL, "HERALD_GUEST_RETENTION": "1s"}))
	eventually(t, func() bool {
		_, _, deleted, err := h2.store(t).AccountTombstone(context.Background(), staleID)
		return err == nil && deleted
	}, "the unused guest %s was not purged", staleID)
	expectError(t, "the purged guest's refresh token", call(t, h2, restDoor.name, opRefresh, map[string]any{"refreshToken": stale.refresh}), 401, "TOKEN_INVALID")
}

// An account without a password (a guest here; an Apple or Google account
// alike) deletes itself from a session signed in moments before, with no
// password to give; from an older session it is RECENT_SIGN_IN_REQUIRED
// until it signs in again.
func TestDeletePasswordlessE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		h := startHerald(t, d, map[string]string{"HERALD_RECENT_SIGN_IN": "1s"})
		deleteMe := func(dn, access string) result {
			if dn == graphQLDoor.name {
				return gql(t, h, "deleteAccount", `mutation { deleteAccount }`, nil, withBearer(access))
			}
			status, env, hdr := h.rest(t, http.MethodPost, "/api/v1/users/me/delete", map[string]any{}, withBearer(access))
			return envelopeResult(t, "delete", status, env, hdr)
		}
		for _, dn := range doorNames {
			t.Run(dn, func(t *testing.T) {
				install := "install-" + dn + "-delete"
				old := guestSignIn(t, h, dn, install, true)
				signedIn := time.Now()
				time.Sleep(time.Until(signedIn.Add(1500 * time.Millisecond))) // past the 1s window
				expectError(t, "a passwordless delete from an old session", deleteMe(dn, old.access), http.StatusForbidden, "RECENT_SIGN_IN_REQUIRED")
				// A refresh is no sign-in.
				refreshed := tokensOf(t, "refresh", call(t, h, dn, opRefresh, map[string]any{"refreshToken": old.refresh}))
				expectError(t, "a passwordless delete from a refreshed session", deleteMe(dn, refreshed.access), http.StatusForbidden, "RECENT_SIGN_IN_REQUIRED")

				fresh := guestSignIn(t, h, dn, install, false)
				expectOK(t, "a passwordless delete just after signing in", deleteMe(dn, fresh.access), http.StatusOK)
				// The install's guest is gone: the next sign-in makes another.
				guestSignIn(t, h, dn, install, true)
			})
		}
	})
}

// userIDs are the ids of a page of the admin's users list.
func userIDs(t testing.TB, r result) []string {
	t.Helper()
	expectOK(t, "users", r, http.StatusOK)
	var ids []string
	for _, n := range jsonPath(r.data, "nodes").([]any) {
		ids = append(ids, n.(map[string]any)["id"].(string))
	}
	return ids
}

// placeholderOf is the address a guest's row holds (never shown by the API).
func placeholderOf(t testing.TB, h *herald, id string) string {
	t.Helper()
	col := sqlstoretest.RawColumn(t, h.Env["HERALD_DATABASE_URL"], `SELECT email FROM accounts WHERE id = '`+id+`'`)
	if len(col) != 1 || !strings.HasSuffix(col[0], "@guest.invalid") {
		t.Fatalf("guest %s's stored address: %v", id, col)
	}
	return col[0]
}

// The webhooks carrying a user's address say null for a guest's, as the
// API does (one wire type): user.created of a guest, user.email_changed
// of a guest upgraded with a passkey adding its first address; a signup's
// user.created carries its address.
func TestGuestWebhooksE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		rcv := newHookReceiver(t, nil)
		h := startHerald(t, d, webhooksEnv(sessionEnv(map[string]string{
			"HERALD_WEBAUTHN_RP_ID":   passkeyRPID,
			"HERALD_WEBAUTHN_RP_NAME": "Herald Test",
			"HERALD_WEBAUTHN_ORIGINS": passkeyOrigin,
		})))
		admin := newAdminToken(t, h, "ops@example.com")
		key, _ := createKey(t, h, restDoor.name, admin, map[string]any{"name": "hooks", "scopes": []string{"webhooks:manage"}})
		_, secret := createHook(t, h, key, rcv.srv.URL+"/users", []string{"user.created", "user.email_changed"})
		data := func(typ, userID string) map[string]any {
			t.Helper()
			var found map[string]any
			rcv.waitFor(t, "/users", func(ds []hookDelivery) bool {
				for _, dl := range ofType(ds, typ) {
					if m := verifyHook(t, secret, dl)["data"].(map[string]any); m["userId"] == userID {
						found = m
						return true
					}
				}
				return false
			}, typ+" of "+userID)
			return found
		}

		guest := guestSignIn(t, h, restDoor.name, "install-hooks-0001", true)
		gid := jwtSub(t, guest.access)
		if m := data("user.created", gid); !hasNull(m, "email") {
			t.Errorf("a guest's user.created: %v, want email null", m)
		}
		signup := "hooks-ann@example.com"
		newVerifiedUser(t, h, restDoor.name, signup)
		if m := data("user.created", h.account(t, signup).ID); m["email"] != signup {
			t.Errorf("a signup's user.created: %v, want email %s", m, signup)
		}

		// A guest upgraded with a passkey adds its first address.
		phone := &passkeystest.Authenticator{}
		registerPasskey(t, h, restDoor.name, guest.access, phone, "Phone")
		s := tokensOf(t, "passkey sign-in", passkeyLogin(t, h, restDoor.name, phone, passkeystest.Ceremony{Origin: passkeyOrigin}))
		next := "hooks-guest@example.com"
		expectOK(t, "change email", call(t, h, restDoor.name, opChangeEmail, map[string]any{"email": next}, withBearer(s.access)), http.StatusAccepted)
		expectOK(t, "confirm", call(t, h, restDoor.name, opConfirmEmail, map[string]any{"code": emailChangeCode(t, h, gid, next, 1)}, withBearer(s.access)), http.StatusOK)
		if m := data("user.email_changed", gid); m["email"] != next || !hasNull(m, "previousEmail") {
			t.Errorf("the first address's user.email_changed: %v, want previousEmail null", m)
		}
	})
}

// hasNull reports whether m holds key, and null there.
func hasNull(m map[string]any, key string) bool {
	v, ok := m[key]
	return ok && v == nil
}
