package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"testing"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/captcha/captchatest"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

// A CAPTCHA guards signup, resend, password reset requests and a login
// after three failures for its address: missing is CAPTCHA_REQUIRED, a
// token the provider refuses CAPTCHA_FAILED, a good one passes, and a
// provider that cannot answer refuses with 503 and Retry-After. The fake
// siteverify endpoint records the secret, token and client address.
func TestCaptchaE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		provider := captchatest.New("captcha-secret")
		t.Cleanup(provider.Close)
		h := startHerald(t, d, sessionEnv(map[string]string{
			"HERALD_CAPTCHA_PROVIDER":       "turnstile",
			"HERALD_CAPTCHA_SECRET":         "captcha-secret",
			"HERALD_CAPTCHA_VERIFY_URL":     provider.URL,
			"HERALD_CAPTCHA_LOGIN_FAILURES": "3",
			"HERALD_RESEND_COOLDOWN":        "1ms",
		}))
		// The provider's requests are counted below: the start-up check's
		// own verification first.
		if c := h.dependencyChecks(t); c["captcha"] != "ok" {
			t.Fatalf("the start-up checks say captcha %v, want ok", c["captcha"])
		}
		good := withHeader("X-Captcha-Token", captchatest.Good)
		bad := withHeader("X-Captcha-Token", "forged-token")
		for _, dn := range doorNames {
			t.Run(dn, func(t *testing.T) {
				email := "captcha-" + dn + "@example.com"
				signup := map[string]any{"email": email, "password": testPassword}
				expectError(t, "signup without a token", call(t, h, dn, opSignup, signup), http.StatusBadRequest, "CAPTCHA_REQUIRED")
				expectError(t, "signup with a refused token", call(t, h, dn, opSignup, signup, bad), http.StatusForbidden, "CAPTCHA_FAILED")
				before := len(provider.Requests())
				expectOK(t, "signup with a good token", call(t, h, dn, opSignup, signup, good),
					map[string]int{"graphql": 200, "rest": 201}[dn])
				got := provider.Requests()
				if len(got) != before+1 {
					t.Fatalf("the good signup made %d verifications, want 1", len(got)-before)
				}
				if want := (captchatest.Request{Secret: "captcha-secret", Response: captchatest.Good, RemoteIP: "127.0.0.1", ContentType: "application/x-www-form-urlencoded"}); got[before] != want {
					t.Fatalf("the provider got %+v, want %+v", got[before], want)
				}

				h.code(t, email, 1, accounts.PurposeVerify) // the signup's own email is out
				expectError(t, "resend without a token", call(t, h, dn, opResend, map[string]any{"email": email}), http.StatusBadRequest, "CAPTCHA_REQUIRED")
				expectError(t, "resend with a refused token", call(t, h, dn, opResend, map[string]any{"email": email}, bad), http.StatusForbidden, "CAPTCHA_FAILED")
				expectOK(t, "resend with a good token", call(t, h, dn, opResend, map[string]any{"email": email}, good), http.StatusOK)
				expectOK(t, "verify (no CAPTCHA)", call(t, h, dn, opVerify, map[string]any{"email": email, "code": h.code(t, email, 2, accounts.PurposeVerify)}), http.StatusOK)

				reset := map[string]any{"email": email}
				expectError(t, "reset request without a token", call(t, h, dn, opRequestReset, reset), http.StatusBadRequest, "CAPTCHA_REQUIRED")
				expectError(t, "reset request with a refused token", call(t, h, dn, opRequestReset, reset, bad), http.StatusForbidden, "CAPTCHA_FAILED")
				expectOK(t, "reset request with a good token", call(t, h, dn, opRequestReset, reset, good), http.StatusOK)

				// A login needs no token until its address failed three times.
				login(t, h, dn, email, testPassword)
				wrong := map[string]any{"email": email, "password": "Wrong-password-1"}
				right := map[string]any{"email": email, "password": testPassword}
				for range 3 {
					expectError(t, "wrong password", call(t, h, dn, opLogin, wrong), http.StatusUnauthorized, "INVALID_CREDENTIALS")
				}
				expectError(t, "login after three failures without a token", call(t, h, dn, opLogin, right), http.StatusBadRequest, "CAPTCHA_REQUIRED")
				expectError(t, "login after three failures with a refused token", call(t, h, dn, opLogin, right, bad), http.StatusForbidden, "CAPTCHA_FAILED")
				// The demand tells nothing about the account: an unknown
				// address that failed three times is asked the same.
				unknown := map[string]any{"email": "nobody-" + dn + "@example.com", "password": testPassword}
				for range 3 {
					expectError(t, "unknown address", call(t, h, dn, opLogin, unknown), http.StatusUnauthorized, "INVALID_CREDENTIALS")
				}
				expectError(t, "unknown address after three failures", call(t, h, dn, opLogin, unknown), http.StatusBadRequest, "CAPTCHA_REQUIRED")
				// Another address is not affected, and a good token lets the
				// login through, which forgets the failures.
				login(t, h, dn, email, testPassword, good)
				login(t, h, dn, email, testPassword)
			})
		}

		t.Run("provider down", func(t *testing.T) {
			provider.Down(true)
			defer provider.Down(false)
			for _, dn := range doorNames {
				r := call(t, h, dn, opSignup, map[string]any{"email": "down-" + dn + "@example.com", "password": testPassword}, good)
				expectError(t, dn+" signup while the provider is down", r, http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE")
				if r.header.Get("Retry-After") == "" {
					t.Errorf("%s: 503 without Retry-After", dn)
				}
			}
			provider.Down(false)
			expectOK(t, "signup once the provider answers", call(t, h, "rest", opSignup, map[string]any{"email": "down-rest@example.com", "password": testPassword}, good), http.StatusCreated)
		})
	})
}

// Two servers sharing Redis count an address's failed logins together:
// two failures on one and one on the other make both ask for a CAPTCHA.
func TestCaptchaLoginFailuresSharedE2E(t *testing.T) {
	redisURL := testRedisURL(t)
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		provider := captchatest.New("captcha-secret")
		t.Cleanup(provider.Close)
		env := sessionEnv(map[string]string{
			"HERALD_REDIS_URL":          redisURL,
			"HERALD_CAPTCHA_PROVIDER":   "hcaptcha",
			"HERALD_CAPTCHA_SECRET":     "captcha-secret",
			"HERALD_CAPTCHA_VERIFY_URL": provider.URL,
		})
		a := startHerald(t, d, env)
		env["HERALD_DATABASE_URL"] = a.DBURL
		b := startHerald(t, d, env)
		var nonce [6]byte
		_, _ = rand.Read(nonce[:])
		// An address no earlier run counted (Redis outlives the servers).
		wrong := map[string]any{"email": "shared-" + hex.EncodeToString(nonce[:]) + "@example.com", "password": testPassword}
		for i, h := range []*herald{a, b, a} {
			expectError(t, fmt.Sprintf("failure %d", i+1), call(t, h, restDoor.name, opLogin, wrong), http.StatusUnauthorized, "INVALID_CREDENTIALS")
		}
		for i, h := range []*herald{b, a} {
			dn := doorNames[i]
			expectError(t, dn+" login after failures on both servers", call(t, h, dn, opLogin, wrong), http.StatusBadRequest, "CAPTCHA_REQUIRED")
		}
		expectError(t, "with a good token the password is judged", call(t, b, restDoor.name, opLogin, wrong, withHeader("X-Captcha-Token", captchatest.Good)), http.StatusUnauthorized, "INVALID_CREDENTIALS")
	})
}
