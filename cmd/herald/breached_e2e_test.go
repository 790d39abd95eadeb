package main

import (
	"net/http"
	"slices"
	"testing"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/pwned/pwnedtest"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

// breachedPassword passes every password rule but is in the fake corpus.
const breachedPassword = "Summer2024!"

// Signup, reset and change refuse a password in the breach corpus with
// WEAK_PASSWORD and failedChecks ["breached"]; a corpus that goes silent
// fails open (the password is accepted).
func TestBreachedPasswordsE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		corpus := pwnedtest.New(breachedPassword)
		t.Cleanup(corpus.Close)
		h := startHerald(t, d, sessionEnv(map[string]string{
			"HERALD_PWNED_PASSWORDS_URL":     corpus.URL,
			"HERALD_PWNED_PASSWORDS_TIMEOUT": "200ms",
			"HERALD_RESEND_COOLDOWN":         "1ms", // two resets of one address
		}))
		// The corpus's requests are counted below: the start-up check's
		// own lookup first.
		if c := h.dependencyChecks(t); c["pwned"] != "ok" {
			t.Fatalf("the start-up checks say pwned %v, want ok", c["pwned"])
		}
		for _, dn := range doorNames {
			t.Run(dn, func(t *testing.T) {
				email := "breached-" + dn + "@example.com"
				expectBreached(t, "signup", call(t, h, dn, opSignup, map[string]any{"email": email, "password": breachedPassword}))
				newVerifiedUser(t, h, dn, email) // the same address with a password not in the corpus

				mails := h.SMTP.Count(email)
				expectOK(t, "request reset", call(t, h, dn, opRequestReset, map[string]any{"email": email}), http.StatusOK)
				code := h.code(t, email, mails+1, accounts.PurposeReset)
				expectBreached(t, "reset", call(t, h, dn, opResetPass, map[string]any{"email": email, "code": code, "newPassword": breachedPassword}))
				// The refusal spent nothing: the code still resets to a clean password.
				expectOK(t, "reset to a clean password", call(t, h, dn, opResetPass, map[string]any{"email": email, "code": code, "newPassword": newPassword}), http.StatusOK)

				tok := login(t, h, dn, email, newPassword)
				change := func(next string) result {
					return call(t, h, dn, opChangePassword, map[string]any{"currentPassword": newPassword, "newPassword": next}, withBearer(tok.access))
				}
				expectBreached(t, "change", change(breachedPassword))
				// A password failing the rules is refused by the rules, without
				// asking the corpus.
				before := corpus.Requests()
				expectError(t, "weak", change("short"), http.StatusUnprocessableEntity, "WEAK_PASSWORD")
				if corpus.Requests() != before {
					t.Error("a password refused by the rules was still looked up")
				}
			})
		}
		if corpus.Padded() != corpus.Requests() || corpus.Requests() == 0 {
			t.Errorf("%d of %d range requests asked for padding", corpus.Padded(), corpus.Requests())
		}

		t.Run("silent corpus fails open", func(t *testing.T) {
			// A breached password whose range no earlier lookup cached, but
			// the corpus cannot say so in time: the signup goes through.
			const silentlyBreached = "Winter2025?"
			corpus.Add(silentlyBreached, 7)
			corpus.Hang(true)
			defer corpus.Hang(false)
			before := corpus.Requests()
			expectOK(t, "signup while the corpus is silent", call(t, h, "rest", opSignup, map[string]any{"email": "fail-open@example.com", "password": silentlyBreached}), http.StatusCreated)
			// The silent lookup is not cached: the next one asks again.
			// The server counts a request when it arrives, which on a busy
			// machine may be after the client has given up on it.
			eventually(t, func() bool { return corpus.Requests() == before+1 }, "the signup never asked the corpus (%d requests)", corpus.Requests()-before)
			corpus.Hang(false)

			// Once the corpus answers, a login with that password goes
			// through but marks the account to change it, on both doors;
			// a new password clears the mark.
			const email = "fail-open@example.com"
			expectOK(t, "verify", call(t, h, "rest", opVerify, map[string]any{"email": email, "code": h.code(t, email, 1, accounts.PurposeVerify)}), http.StatusOK)
			tok := login(t, h, "rest", email, silentlyBreached)
			for _, dn := range doorNames {
				if got := passwordChangeRequired(t, me(t, h, dn, tok.access)); !got {
					t.Fatalf("%s: me after a login with a breached password: passwordChangeRequired false", dn)
				}
			}
			expectOK(t, "change", call(t, h, "rest", opChangePassword, map[string]any{"currentPassword": silentlyBreached, "newPassword": newPassword}, withBearer(tok.access)), http.StatusOK)
			if passwordChangeRequired(t, me(t, h, "graphql", tok.access)) {
				t.Fatal("passwordChangeRequired still set after a password change")
			}

			// A reset clears the mark too: a breached password set through a
			// reset while the corpus is silent, a login once it answers
			// (marked), then a reset to a clean password (cleared).
			const resetBreached = "Autumn2026#"
			corpus.Add(resetBreached, 3)
			corpus.Hang(true)
			// The verification code and the change's notice are out.
			mails := len(h.SMTP.WaitForMessages(t, email, 2, mailWait))
			expectOK(t, "request reset", call(t, h, "rest", opRequestReset, map[string]any{"email": email}), http.StatusOK)
			code := h.code(t, email, mails+1, accounts.PurposeReset)
			expectOK(t, "reset to a breached password while the corpus is silent", call(t, h, "graphql", opResetPass, map[string]any{"email": email, "code": code, "newPassword": resetBreached}), http.StatusOK)
			corpus.Hang(false)
			tok = login(t, h, "graphql", email, resetBreached)
			if !passwordChangeRequired(t, me(t, h, "rest", tok.access)) {
				t.Fatal("me after a login with a breached password set by a reset: passwordChangeRequired false")
			}
			expectOK(t, "request reset", call(t, h, "graphql", opRequestReset, map[string]any{"email": email}), http.StatusOK)
			code = h.code(t, email, mails+2, accounts.PurposeReset)
			expectOK(t, "reset to a clean password", call(t, h, "rest", opResetPass, map[string]any{"email": email, "code": code, "newPassword": testPassword}), http.StatusOK)
			tok = login(t, h, "rest", email, testPassword)
			if passwordChangeRequired(t, me(t, h, "graphql", tok.access)) {
				t.Fatal("passwordChangeRequired still set after a password reset")
			}
		})
	})
}

func expectBreached(t *testing.T, what string, r result) {
	t.Helper()
	expectError(t, what, r, http.StatusUnprocessableEntity, "WEAK_PASSWORD")
	checks, _ := r.details["failedChecks"].([]any)
	if !slices.Equal(checks, []any{"breached"}) {
		t.Fatalf("%s: failedChecks %v, want [breached]", what, r.details["failedChecks"])
	}
}

// passwordChangeRequired reads the flag from me's answer on either door.
func passwordChangeRequired(t *testing.T, r result) bool {
	t.Helper()
	expectOK(t, "me", r, http.StatusOK)
	user, _ := r.data.(map[string]any)
	flag, ok := user["passwordChangeRequired"].(bool)
	if !ok {
		t.Fatalf("me has no passwordChangeRequired: %v", r.data)
	}
	return flag
}
