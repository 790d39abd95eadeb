package main

// End-to-end tests of issue 2 (accounts up to a verified account): the real
// server, a real database per dialect, a real SMTP server, both API doors.

import (
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

// A password that passes the rules.
const goodPassword = "Sturdy-Pass-42"

// accountsEnv turns the per-IP rate-limit tiers off: these tests make many
// requests from one address and count the resend limits, not the tiers.
func accountsEnv(extra map[string]string) map[string]string {
	env := map[string]string{
		"HERALD_RATE_LIMIT_GLOBAL":    "0",
		"HERALD_RATE_LIMIT_AUTH":      "0",
		"HERALD_RATE_LIMIT_PROTECTED": "0",
		"HERALD_RATE_LIMIT_ADMIN":     "0",
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// wrongCode returns a 6-digit code that is not code.
func wrongCode(t testing.TB, code string) string {
	t.Helper()
	n, err := strconv.Atoi(code)
	if err != nil {
		t.Fatalf("code %q is not a number", code)
	}
	return fmt.Sprintf("%06d", (n+1)%1_000_000)
}

// signup signs email up through d and fails unless it worked.
func signup(t testing.TB, h *herald, d door, email, password string) {
	t.Helper()
	r := d.call(t, h, opSignup, map[string]any{"email": email, "password": password})
	want := http.StatusOK
	if d.name == "rest" {
		want = http.StatusCreated
	}
	expectOK(t, d.name+" signup "+email, r, want)
}

// verified reports, from the database, whether the account is verified.
func verified(t testing.TB, h *herald, email string) bool {
	t.Helper()
	return h.account(t, email).Verified()
}

func TestE2ESignupEmailVerify(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dl sqlstoretest.Dialect) {
		h := startHerald(t, dl, accountsEnv(nil))
		for _, d := range doors() {
			t.Run(d.name, func(t *testing.T) {
				email := d.name + ".alice@example.com"
				// Typed with spaces and capitals: stored trimmed and lower-case.
				typed := "  " + strings.ToUpper(d.name) + ".Alice@Example.COM "
				r := d.call(t, h, opSignup, map[string]any{"email": typed, "password": goodPassword})
				switch d.name {
				case "graphql":
					expectOK(t, "signup", r, http.StatusOK)
					if jsonPath(r.data, "success") != true {
						t.Fatalf("signup.success = %v, want true", jsonPath(r.data, "success"))
					}
					if msg, _ := jsonPath(r.data, "message").(string); !strings.Contains(msg, email) {
						t.Errorf("signup.message %q does not name %s", msg, email)
					}
				case "rest":
					expectOK(t, "register", r, http.StatusCreated)
					user := jsonPath(r.data, "user")
					if got := jsonPath(user, "email"); got != email {
						t.Errorf("user.email = %v, want %s", got, email)
					}
					if jsonPath(user, "emailVerified") != false {
						t.Errorf("user.emailVerified = %v, want false", jsonPath(user, "emailVerified"))
					}
					if id, _ := jsonPath(user, "id").(string); id == "" {
						t.Errorf("user.id is empty")
					}
					if code, _ := jsonPath(user, "referralCode").(string); len(code) != 8 {
						t.Errorf("user.referralCode = %q, want 8 characters", code)
					}
					sub := jsonPath(user, "subscription")
					if jsonPath(sub, "plan") != "trial" || jsonPath(sub, "status") != "active" {
						t.Errorf("subscription = %v, want an active trial", sub)
					}
					created := parseTime(t, jsonPath(user, "createdAt"))
					expires := parseTime(t, jsonPath(sub, "expiresAt"))
					if got := expires.Sub(created); got != 168*time.Hour {
						t.Errorf("trial lasts %s, want 168h (HERALD_TRIAL_PERIOD default)", got)
					}
					if jsonPath(r.data, "referralApplied") != false {
						t.Errorf("referralApplied = %v, want false", jsonPath(r.data, "referralApplied"))
					}
				}
				if verified(t, h, email) {
					t.Fatal("account is verified before the code was entered")
				}

				msg := h.SMTP.WaitForMessage(t, email, mailWait)
				if msg.From != "no-reply@herald.test" {
					t.Errorf("envelope sender %q, want no-reply@herald.test (HERALD_MAIL_FROM)", msg.From)
				}
				if !strings.Contains(strings.ToLower(msg.Subject), "verify") {
					t.Errorf("subject %q does not say what the email is for", msg.Subject)
				}
				code := h.code(t, email, 1, accounts.PurposeVerify) // checks text and HTML parts

				// Verification compares the email case-insensitively too.
				r = d.call(t, h, opVerify, map[string]any{"email": strings.ToUpper(email), "code": code})
				expectOK(t, "verify", r, http.StatusOK)
				if d.name == "graphql" && r.data != true {
					t.Fatalf("verifyEmail = %v, want true", r.data)
				}
				if d.name == "rest" && jsonPath(r.data, "verified") != true {
					t.Fatalf("data.verified = %v, want true", r.data)
				}
				if !verified(t, h, email) {
					t.Fatal("account not verified after the right code")
				}

				// Once verified: ALREADY_VERIFIED for both operations, and no email.
				r = d.call(t, h, opVerify, map[string]any{"email": email, "code": code})
				expectError(t, "verify again", r, http.StatusBadRequest, "ALREADY_VERIFIED")
				r = d.call(t, h, opResend, map[string]any{"email": email})
				expectError(t, "resend when verified", r, http.StatusBadRequest, "ALREADY_VERIFIED")
				if n := h.SMTP.Count(email); n != 1 {
					t.Errorf("%d emails to %s, want 1", n, email)
				}
			})
		}
	})
}

func parseTime(t testing.TB, v any) time.Time {
	t.Helper()
	s, _ := v.(string)
	ts, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatalf("%v is not an RFC 3339 time: %v", v, err)
	}
	if ts.Location() != time.UTC {
		t.Errorf("%s is not UTC", s)
	}
	return ts
}

func TestE2EInputErrors(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dl sqlstoretest.Dialect) {
		h := startHerald(t, dl, accountsEnv(nil))
		for _, d := range doors() {
			t.Run(d.name, func(t *testing.T) {
				taken := d.name + ".taken@example.com"
				signup(t, h, d, taken, goodPassword)
				takenAccount := h.account(t, taken)
				unknown := d.name + ".nobody@example.com"
				cases := []struct {
					name       string
					op         string
					args       map[string]any
					status     int
					code       string
					weakFailed int // for WEAK_PASSWORD: how many rules fail
				}{
					{"email without at", opSignup, map[string]any{"email": "not-an-email", "password": goodPassword}, 422, "INVALID_EMAIL", 0},
					{"email without dot in domain", opSignup, map[string]any{"email": "a@localhost", "password": goodPassword}, 422, "INVALID_EMAIL", 0},
					{"email with space", opSignup, map[string]any{"email": "a b@example.com", "password": goodPassword}, 422, "INVALID_EMAIL", 0},
					{"email with two ats", opSignup, map[string]any{"email": "a@b@example.com", "password": goodPassword}, 422, "INVALID_EMAIL", 0},
					{"email of 255 characters", opSignup, map[string]any{"email": strings.Repeat("a", 64) + "@" + strings.Repeat("b", 60) + "." + strings.Repeat("c", 60) + "." + strings.Repeat("d", 60) + ".example", "password": goodPassword}, 422, "INVALID_EMAIL", 0},
					{"empty email", opSignup, map[string]any{"email": "", "password": goodPassword}, 422, "INVALID_EMAIL", 0},
					{"bad email and weak password", opSignup, map[string]any{"email": "nope", "password": "x"}, 422, "INVALID_EMAIL", 0},
					{"short password", opSignup, map[string]any{"email": d.name + ".w1@example.com", "password": "Ab1"}, 422, "WEAK_PASSWORD", 1},
					{"no uppercase", opSignup, map[string]any{"email": d.name + ".w2@example.com", "password": "lowercase123"}, 422, "WEAK_PASSWORD", 1},
					{"no lowercase", opSignup, map[string]any{"email": d.name + ".w3@example.com", "password": "UPPERCASE123"}, 422, "WEAK_PASSWORD", 1},
					{"no digit", opSignup, map[string]any{"email": d.name + ".w4@example.com", "password": "NoDigitsHere"}, 422, "WEAK_PASSWORD", 1},
					{"only lowercase, short", opSignup, map[string]any{"email": d.name + ".w5@example.com", "password": "abc"}, 422, "WEAK_PASSWORD", 3},
					{"empty password", opSignup, map[string]any{"email": d.name + ".w6@example.com", "password": ""}, 422, "WEAK_PASSWORD", 4},
					{"password of 129 characters", opSignup, map[string]any{"email": d.name + ".w7@example.com", "password": "Aa1" + strings.Repeat("x", 126)}, 422, "WEAK_PASSWORD", 1},
					{"email taken", opSignup, map[string]any{"email": taken, "password": goodPassword}, 409, d.emailExists, 0},
					{"email taken, other case", opSignup, map[string]any{"email": " " + strings.ToUpper(taken), "password": goodPassword}, 409, d.emailExists, 0},
					{"resend to unknown email", opResend, map[string]any{"email": unknown}, 400, "EMAIL_NOT_FOUND", 0},
					{"resend to invalid email", opResend, map[string]any{"email": "nope"}, 422, "INVALID_EMAIL", 0},
					{"verify unknown email", opVerify, map[string]any{"email": unknown, "code": "123456"}, 400, "EMAIL_NOT_FOUND", 0},
				}
				for _, c := range cases {
					t.Run(c.name, func(t *testing.T) {
						r := d.call(t, h, c.op, c.args)
						expectError(t, c.op, r, c.status, c.code)
						if c.op == opSignup {
							// A refused signup created nothing: checked in the
							// database, which the answer already reflects.
							email, _ := c.args["email"].(string)
							if c.code == d.emailExists {
								if a := h.account(t, taken); !reflect.DeepEqual(a, takenAccount) {
									t.Errorf("the refused duplicate signup changed the account:\n%+v\nwas\n%+v", a, takenAccount)
								}
							} else {
								h.expectNoAccount(t, email, "refused signup")
								h.expectNoAccount(t, strings.ToLower(strings.TrimSpace(email)), "refused signup")
							}
						}
						if c.code != "WEAK_PASSWORD" {
							return
						}
						reqs := asStrings(t, r.details["requirements"])
						if !reflect.DeepEqual(reqs, accounts.PasswordRequirements()) || len(reqs) < 4 {
							t.Errorf("requirements = %q, want every rule %q", reqs, accounts.PasswordRequirements())
						}
						failed := asStrings(t, r.details["failedChecks"])
						if n := len(slices.DeleteFunc(slices.Clone(failed), func(f string) bool { return f == accounts.CheckSpecialRecommended })); n != c.weakFailed {
							t.Errorf("failedChecks = %q, want %d failed rules", failed, c.weakFailed)
						}
						for _, f := range failed {
							if !slices.Contains(accounts.PasswordChecks(), f) {
								t.Errorf("failed check %q is not one of the documented keys %q", f, accounts.PasswordChecks())
							}
						}
						pw, _ := c.args["password"].(string)
						if !reflect.DeepEqual(failed, accounts.CheckPassword(pw)) {
							t.Errorf("failedChecks = %q, want %q", failed, accounts.CheckPassword(pw))
						}
					})
				}
			})
		}
	})
}

func TestE2EWrongCodesKillTheCode(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dl sqlstoretest.Dialect) {
		h := startHerald(t, dl, accountsEnv(nil))
		for _, d := range doors() {
			t.Run(d.name, func(t *testing.T) {
				email := d.name + ".bob@example.com"
				signup(t, h, d, email, goodPassword)
				code := h.code(t, email, 1, accounts.PurposeVerify)
				wrong := []string{wrongCode(t, code), "000000x", "", "12345", wrongCode(t, wrongCode(t, code))}
				for i, w := range wrong {
					r := d.call(t, h, opVerify, map[string]any{"email": email, "code": w})
					expectError(t, fmt.Sprintf("wrong code %d (%q)", i+1, w), r, http.StatusBadRequest, "INVALID_VERIFICATION_CODE")
					if got, want := asInt(t, r.details["attemptsRemaining"]), 4-i; got != want {
						t.Fatalf("after %d wrong codes attemptsRemaining = %d, want %d", i+1, got, want)
					}
				}
				// Five wrong attempts killed the code: the right one is refused.
				r := d.call(t, h, opVerify, map[string]any{"email": email, "code": code})
				expectError(t, "right code after 5 wrong ones", r, http.StatusBadRequest, "INVALID_VERIFICATION_CODE")
				if got := asInt(t, r.details["attemptsRemaining"]); got != 0 {
					t.Fatalf("attemptsRemaining = %d, want 0", got)
				}
				if verified(t, h, email) {
					t.Fatal("a dead code verified the account")
				}
				// A new code brings the account back.
				expectOK(t, "resend", d.call(t, h, opResend, map[string]any{"email": email}), http.StatusOK)
				fresh := h.code(t, email, 2, accounts.PurposeVerify)
				expectOK(t, "verify the new code", d.call(t, h, opVerify, map[string]any{"email": email, "code": fresh}), http.StatusOK)
				if !verified(t, h, email) {
					t.Fatal("not verified with the new code")
				}
			})
		}
	})
}

func TestE2ECodeExpires(t *testing.T) {
	t.Parallel()
	const ttl = time.Second
	forEachDialect(t, func(t *testing.T, dl sqlstoretest.Dialect) {
		h := startHerald(t, dl, accountsEnv(map[string]string{"HERALD_VERIFICATION_CODE_TTL": ttl.String()}))
		for _, d := range doors() {
			t.Run(d.name, func(t *testing.T) {
				email := d.name + ".carol@example.com"
				signup(t, h, d, email, goodPassword)
				code := h.code(t, email, 1, accounts.PurposeVerify)
				// The code expires at most ttl after it was recorded; poll the
				// clock until that moment has surely passed.
				expiry := h.sendStats(t, email, accounts.PurposeVerify).LastSent.Add(ttl + 50*time.Millisecond)
				for time.Now().Before(expiry) {
					time.Sleep(20 * time.Millisecond)
				}
				r := d.call(t, h, opVerify, map[string]any{"email": email, "code": code})
				expectError(t, "expired code", r, http.StatusBadRequest, "VERIFICATION_CODE_EXPIRED")
				if verified(t, h, email) {
					t.Fatal("an expired code verified the account")
				}
			})
		}
	})
}

func TestE2EResendCooldown(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dl sqlstoretest.Dialect) {
		h := startHerald(t, dl, accountsEnv(nil)) // cooldown 60s, the default
		for _, d := range doors() {
			t.Run(d.name, func(t *testing.T) {
				email := d.name + ".dave@example.com"
				signup(t, h, d, email, goodPassword)
				first := h.code(t, email, 1, accounts.PurposeVerify)

				// The signup email is not a resend request: a resend may follow.
				r := d.call(t, h, opResend, map[string]any{"email": email})
				expectOK(t, "first resend", r, http.StatusOK)
				if d.name == "graphql" && r.data != true {
					t.Fatalf("resendVerificationEmail = %v, want true", r.data)
				}
				second := h.code(t, email, 2, accounts.PurposeVerify)

				r = d.call(t, h, opResend, map[string]any{"email": email})
				expectError(t, "resend within the cooldown", r, http.StatusTooManyRequests, "RATE_LIMITED")
				retry := asInt(t, r.details["retryAfter"])
				if retry < 1 || retry > 60 {
					t.Errorf("retryAfter = %d, want 1..60 (the cooldown)", retry)
				}
				if r.header.Get("Retry-After") != strconv.Itoa(retry) {
					t.Errorf("Retry-After header %q, want %d", r.header.Get("Retry-After"), retry)
				}
				if n := h.SMTP.Count(email); n != 2 {
					t.Fatalf("%d emails, want 2: a refused resend must send nothing", n)
				}

				// The new code replaced the first one.
				if first != second {
					r = d.call(t, h, opVerify, map[string]any{"email": email, "code": first})
					expectError(t, "first code after resend", r, http.StatusBadRequest, "INVALID_VERIFICATION_CODE")
				}
				expectOK(t, "verify the resent code", d.call(t, h, opVerify, map[string]any{"email": email, "code": second}), http.StatusOK)
			})
		}
	})
}

func TestE2EResendHourlyCap(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dl sqlstoretest.Dialect) {
		h := startHerald(t, dl, accountsEnv(map[string]string{
			"HERALD_RESEND_COOLDOWN":     "1us",
			"HERALD_RESEND_HOURLY_LIMIT": "2",
		}))
		for _, d := range doors() {
			t.Run(d.name, func(t *testing.T) {
				email := d.name + ".erin@example.com"
				signup(t, h, d, email, goodPassword)
				h.code(t, email, 1, accounts.PurposeVerify)
				for i := 1; i <= 2; i++ {
					expectOK(t, fmt.Sprintf("resend %d", i), d.call(t, h, opResend, map[string]any{"email": email}), http.StatusOK)
					h.code(t, email, 1+i, accounts.PurposeVerify)
				}
				r := d.call(t, h, opResend, map[string]any{"email": email})
				expectError(t, "third resend in the hour", r, http.StatusTooManyRequests, "RATE_LIMITED")
				// The wait is until the oldest resend leaves the hour, not a cooldown.
				if retry := asInt(t, r.details["retryAfter"]); retry <= 60 || retry > 3600 {
					t.Errorf("retryAfter = %d, want the rest of the hour (61..3600)", retry)
				}
				if n := h.SMTP.Count(email); n != 3 {
					t.Fatalf("%d emails, want 3 (signup and two resends)", n)
				}
			})
		}
	})
}

func TestE2EResendDeliveryFailure(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dl sqlstoretest.Dialect) {
		// A cap of one per hour and the 60s cooldown: a failed send that
		// counted would block the next resend.
		h := startHerald(t, dl, accountsEnv(map[string]string{"HERALD_RESEND_HOURLY_LIMIT": "1"}))
		for _, d := range doors() {
			t.Run(d.name, func(t *testing.T) {
				// The code the user already has survives a failed resend.
				kept := d.name + ".frank@example.com"
				signup(t, h, d, kept, goodPassword)
				code := h.code(t, kept, 1, accounts.PurposeVerify)
				h.SMTP.SetFailing(true)
				r := d.call(t, h, opResend, map[string]any{"email": kept})
				h.SMTP.SetFailing(false)
				expectError(t, "resend during an SMTP outage", r, http.StatusBadGateway, "EMAIL_DELIVERY_FAILED")
				expectOK(t, "verify the earlier code", d.call(t, h, opVerify, map[string]any{"email": kept, "code": code}), http.StatusOK)

				// The failed resend counted against neither the cooldown nor the cap.
				quota := d.name + ".grace@example.com"
				signup(t, h, d, quota, goodPassword)
				h.code(t, quota, 1, accounts.PurposeVerify)
				h.SMTP.SetFailing(true)
				r = d.call(t, h, opResend, map[string]any{"email": quota})
				h.SMTP.SetFailing(false)
				expectError(t, "resend during an SMTP outage", r, http.StatusBadGateway, "EMAIL_DELIVERY_FAILED")
				expectOK(t, "resend after recovery", d.call(t, h, opResend, map[string]any{"email": quota}), http.StatusOK)
				fresh := h.code(t, quota, 2, accounts.PurposeVerify)
				// ...while the limits themselves are in force.
				r = d.call(t, h, opResend, map[string]any{"email": quota})
				expectError(t, "resend after a successful one", r, http.StatusTooManyRequests, "RATE_LIMITED")
				expectOK(t, "verify the resent code", d.call(t, h, opVerify, map[string]any{"email": quota, "code": fresh}), http.StatusOK)
			})
		}
		if got := h.metric(t, `herald_emails_total{result="failed"}`); got != 4 {
			t.Errorf("herald_emails_total{result=\"failed\"} = %v, want 4 (one per refused resend)", got)
		}
	})
}

func TestE2ESignupDuringSMTPOutage(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dl sqlstoretest.Dialect) {
		h := startHerald(t, dl, accountsEnv(nil))
		h.SMTP.SetFailing(true)
		var emails []string
		for _, d := range doors() {
			email := d.name + ".heidi@example.com"
			signup(t, h, d, email, goodPassword) // the outage never fails a signup
			emails = append(emails, email)
		}
		// Both email jobs ran and failed against the outage...
		eventually(t, func() bool {
			return h.metric(t, `herald_emails_total{result="failed"}`) >= 2 &&
				h.metric(t, `herald_jobs_total{kind="code_email",outcome="failed"}`) >= 2
		}, "the signup email jobs were never attempted and failed")
		for _, email := range emails {
			if n := h.SMTP.Count(email); n != 0 {
				t.Fatalf("%d emails to %s during the outage", n, email)
			}
		}
		// ...and are retried once the mail server is back.
		h.SMTP.SetFailing(false)
		for i, d := range doors() {
			code := h.code(t, emails[i], 1, accounts.PurposeVerify)
			expectOK(t, d.name+" verify the delayed code", d.call(t, h, opVerify, map[string]any{"email": emails[i], "code": code}), http.StatusOK)
			if n := h.SMTP.Count(emails[i]); n != 1 {
				t.Errorf("%d emails to %s, want exactly 1", n, emails[i])
			}
		}
	})
}

func TestE2EConcurrentSignups(t *testing.T) {
	t.Parallel()
	const n = 10
	forEachDialect(t, func(t *testing.T, dl sqlstoretest.Dialect) {
		h := startHerald(t, dl, accountsEnv(nil))
		for _, d := range doors() {
			t.Run(d.name, func(t *testing.T) {
				email := d.name + ".ivan@example.com"
				// The goroutines only send (t is not theirs to fail); the
				// answers are checked here, on the test goroutine.
				answers := make([]answer, n)
				var wg sync.WaitGroup
				for i := range n {
					wg.Go(func() {
						answers[i] = rawCall(h, d.name, opSignup, map[string]any{"email": email, "password": fmt.Sprintf("%s%d", goodPassword, i)})
					})
				}
				wg.Wait()
				wins := 0
				for i, a := range answers {
					r := reduceAnswer(t, d.name, opSignup, a)
					switch {
					case r.code == "":
						wins++
					case r.status == http.StatusConflict && r.code == d.emailExists:
					default:
						t.Errorf("signup %d: status %d code %q, want success or 409 %s", i, r.status, r.code, d.emailExists)
					}
				}
				if wins != 1 {
					t.Fatalf("%d signups succeeded, want exactly 1", wins)
				}
				h.code(t, email, 1, accounts.PurposeVerify)
				if c := h.SMTP.Count(email); c != 1 {
					t.Errorf("%d emails, want 1", c)
				}
			})
		}
	})
}

func TestE2EConcurrentResends(t *testing.T) {
	t.Parallel()
	const n = 20
	forEachDialect(t, func(t *testing.T, dl sqlstoretest.Dialect) {
		h := startHerald(t, dl, accountsEnv(nil))
		email := "judy@example.com"
		signup(t, h, restDoor, email, goodPassword)
		h.code(t, email, 1, accounts.PurposeVerify)
		// The goroutines only send (t is not theirs to fail); the answers
		// are checked here, on the test goroutine.
		answers := make([]answer, n)
		var wg sync.WaitGroup
		for i := range n {
			d := doors()[i%2]
			wg.Go(func() { answers[i] = rawCall(h, d.name, opResend, map[string]any{"email": email}) })
		}
		wg.Wait()
		sent := 0
		for i, a := range answers {
			r := reduceAnswer(t, doors()[i%2].name, opResend, a)
			switch {
			case r.code == "" && r.status == http.StatusOK:
				sent++
			case r.status == http.StatusTooManyRequests && r.code == "RATE_LIMITED":
				if asInt(t, r.details["retryAfter"]) < 1 {
					t.Errorf("resend %d: retryAfter %v, want at least 1", i, r.details["retryAfter"])
				}
			default:
				t.Errorf("resend %d: status %d code %q, want 200 or 429 RATE_LIMITED", i, r.status, r.code)
			}
		}
		if sent != 1 {
			t.Fatalf("%d resends succeeded, want exactly 1", sent)
		}
		// Every resend answered after its send finished: the count is final.
		if c := h.SMTP.Count(email); c != 2 {
			t.Fatalf("%d emails, want 2 (signup and one resend)", c)
		}
		code := h.code(t, email, 2, accounts.PurposeVerify)
		expectOK(t, "verify", restDoor.call(t, h, opVerify, map[string]any{"email": email, "code": code}), http.StatusOK)
	})
}

func TestE2EReferral(t *testing.T) {
	t.Parallel()
	const trial, bonus = 168 * time.Hour, 72 * time.Hour
	forEachDialect(t, func(t *testing.T, dl sqlstoretest.Dialect) {
		h := startHerald(t, dl, accountsEnv(map[string]string{"HERALD_REFERRAL_BONUS": bonus.String()}))
		register := func(email, referral string) result {
			t.Helper()
			r := restDoor.call(t, h, opSignup, map[string]any{"email": email, "password": goodPassword, "referral": referral})
			expectOK(t, "register "+email, r, http.StatusCreated)
			return r
		}
		// subscription is expiry minus creation, from the database.
		subscription := func(email string) time.Duration {
			t.Helper()
			a := h.account(t, email)
			return a.Subscription.ExpiresAt.Sub(a.CreatedAt)
		}

		r := register("referrer@example.com", "")
		code, _ := jsonPath(r.data, "user", "referralCode").(string)
		if subscription("referrer@example.com") != trial {
			t.Fatalf("referrer starts with %s, want %s", subscription("referrer@example.com"), trial)
		}

		// Through REST, with the code as given.
		r = register("friend1@example.com", code)
		if jsonPath(r.data, "referralApplied") != true {
			t.Errorf("referralApplied = %v, want true", jsonPath(r.data, "referralApplied"))
		}
		sub := jsonPath(r.data, "user", "subscription")
		if got := parseTime(t, jsonPath(sub, "expiresAt")).Sub(parseTime(t, jsonPath(r.data, "user", "createdAt"))); got != trial+bonus {
			t.Errorf("new account's subscription %s, want trial+bonus %s", got, trial+bonus)
		}
		if got := subscription("referrer@example.com"); got != trial+bonus {
			t.Errorf("referrer's subscription %s after one referral, want %s", got, trial+bonus)
		}

		// Through GraphQL, typed in lower case with a dash.
		typed := strings.ToLower(code[:4] + "-" + code[4:])
		gr := graphQLDoor.call(t, h, opSignup, map[string]any{"email": "friend2@example.com", "password": goodPassword, "referral": typed})
		expectOK(t, "graphql signup with referral", gr, http.StatusOK)
		if got := subscription("friend2@example.com"); got != trial+bonus {
			t.Errorf("graphql referral: new account's subscription %s, want %s", got, trial+bonus)
		}
		if got := subscription("referrer@example.com"); got != trial+2*bonus {
			t.Errorf("referrer's subscription %s after two referrals, want %s", got, trial+2*bonus)
		}

		// Unknown codes are ignored: the account is created with the plain trial.
		for i, unknown := range []string{"ZZZZZZZZ", "not a code!", strings.Repeat("A", 300)} {
			email := fmt.Sprintf("stranger%d@example.com", i)
			r = register(email, unknown)
			if jsonPath(r.data, "referralApplied") != false {
				t.Errorf("referral %q: referralApplied = %v, want false", unknown, jsonPath(r.data, "referralApplied"))
			}
			if got := subscription(email); got != trial {
				t.Errorf("referral %q: subscription %s, want the plain trial %s", unknown, got, trial)
			}
		}
		gr = graphQLDoor.call(t, h, opSignup, map[string]any{"email": "stranger-gql@example.com", "password": goodPassword, "referral": "ZZZZ-ZZZZ"})
		expectOK(t, "graphql signup with unknown referral", gr, http.StatusOK)
		if got := subscription("stranger-gql@example.com"); got != trial {
			t.Errorf("graphql unknown referral: subscription %s, want %s", got, trial)
		}
		if got := subscription("referrer@example.com"); got != trial+2*bonus {
			t.Errorf("unknown codes changed the referrer's subscription to %s", got)
		}
	})
}

func TestE2ERESTEnvelopeErrors(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dl sqlstoretest.Dialect) {
		h := startHerald(t, dl, accountsEnv(nil))
		const register = "/api/v1/auth/register"
		validation := []struct {
			name        string
			path        string
			body        string
			contentType string
			field       string
			constraint  string
			received    string // "" means any non-empty... or empty; not checked
		}{
			{"truncated JSON", register, `{"email":`, "", "body", "valid JSON", "truncated JSON"},
			{"syntax error", register, `{email: "a@example.com"}`, "", "body", "valid JSON", ""},
			{"empty body", register, ``, "", "body", "a JSON object", "empty body"},
			{"trailing data", register, `{"email":"a@example.com","password":"Abcdefg1"} {}`, "", "body", "a single JSON object", "trailing data"},
			{"stray closing brace", register, `{"email":"a@example.com","password":"Abcdefg1"}}`, "", "body", "a single JSON object", "trailing data"},
			{"array body", register, `[]`, "", "body", "type object", "array"},
			{"email is a number", register, `{"email":12,"password":"Abcdefg1"}`, "", "email", "type string", "number"},
			{"password is a boolean", register, `{"email":"a@example.com","password":true}`, "", "password", "type string", "bool"},
			{"code is an object", "/api/v1/auth/verify", `{"email":"a@example.com","code":{}}`, "", "code", "type string", "object"},
			{"unknown field", register, `{"email":"a@example.com","password":"Abcdefg1","admin":true}`, "", "admin", "known field", "unknown field"},
			{"unknown field on resend", "/api/v1/auth/resend-verification", `{"mail":"a@example.com"}`, "", "mail", "known field", "unknown field"},
			{"wrong content type", register, `{"email":"a@example.com","password":"Abcdefg1"}`, "text/plain", "body", "content type application/json", "text/plain"},
		}
		for _, c := range validation {
			t.Run(c.name, func(t *testing.T) {
				var opts []reqOption
				if c.contentType != "" {
					opts = append(opts, withHeader("Content-Type", c.contentType))
				}
				status, env, hdr := h.rest(t, http.MethodPost, c.path, c.body, opts...)
				r := envelopeResult(t, c.name, status, env, hdr)
				expectError(t, c.name, r, http.StatusBadRequest, "VALIDATION_ERROR")
				if r.details["field"] != c.field || r.details["constraint"] != c.constraint {
					t.Errorf("details = %v, want field %q constraint %q", r.details, c.field, c.constraint)
				}
				if _, ok := r.details["received"].(string); !ok {
					t.Errorf("details.received missing: %v", r.details)
				}
				if c.received != "" && r.details["received"] != c.received {
					t.Errorf("details.received = %v, want %q", r.details["received"], c.received)
				}
			})
		}

		other := []struct {
			name, method, path string
			body               any
			status             int
			code               string
			allow              string
		}{
			{"body over 1 MiB", http.MethodPost, register, `{"email":"` + strings.Repeat("a", 1<<20) + `"}`, 413, "PAYLOAD_TOO_LARGE", ""},
			{"unknown path", http.MethodGet, "/api/v1/nothing-here", nil, 404, "NOT_FOUND", ""},
			{"unknown auth path", http.MethodPost, "/api/v1/auth/nothing", map[string]any{}, 404, "NOT_FOUND", ""},
			{"unknown version", http.MethodGet, "/api/v9/auth/register", nil, 404, "NOT_FOUND", ""},
			{"GET on a POST path", http.MethodGet, register, nil, 405, "METHOD_NOT_ALLOWED", "POST"},
			{"DELETE on a POST path", http.MethodDelete, "/api/v1/auth/verify", nil, 405, "METHOD_NOT_ALLOWED", "POST"},
		}
		for _, c := range other {
			t.Run(c.name, func(t *testing.T) {
				status, env, hdr := h.rest(t, c.method, c.path, c.body)
				r := envelopeResult(t, c.name, status, env, hdr)
				expectError(t, c.name, r, c.status, c.code)
				if c.allow != "" && hdr.Get("Allow") != c.allow {
					t.Errorf("Allow = %q, want %q", hdr.Get("Allow"), c.allow)
				}
			})
		}
	})
}

func TestE2EGraphQLDocumentErrors(t *testing.T) {
	t.Parallel()
	// 11 nested selections: deeper than the limit (10).
	deep := `{ me { subscription { plan { a { b { c { d { e { f { g { h } } } } } } } } } } }`
	// 25 nested selections through introspection: deeper than its own
	// allowance (20).
	deepIntrospection := `{ __schema { types { fields { type ` + strings.Repeat("{ ofType ", 20) + "{ name }" + strings.Repeat(" }", 20) + ` } } } }`
	var wide strings.Builder
	wide.WriteString("{")
	for i := range 250 {
		fmt.Fprintf(&wide, " v%d: version", i)
	}
	wide.WriteString(" }")
	huge := "{ version " + strings.Repeat("# padding\n", 7000) + "}"

	forEachDialect(t, func(t *testing.T, dl sqlstoretest.Dialect) {
		h := startHerald(t, dl, accountsEnv(nil))

		status, body := h.graphql(t, `{ version }`, nil)
		if status != http.StatusOK || jsonPath(body, "data", "version") != readBuild().version {
			t.Fatalf("{ version }: %d %v", status, body)
		}

		cases := []struct {
			name   string
			method string
			body   any // a JSON document (map) or raw text
			status int
			code   string
			msgHas string // what the message must say, to tell the limits apart
		}{
			{"parse error", "POST", map[string]any{"query": `mutation { signup(`}, 400, "GRAPHQL_PARSE_FAILED", ""},
			{"unknown field", "POST", map[string]any{"query": `{ nope }`}, 422, "GRAPHQL_VALIDATION_FAILED", "nope"},
			{"missing argument", "POST", map[string]any{"query": `mutation { resendVerificationEmail }`}, 422, "GRAPHQL_VALIDATION_FAILED", "email"},
			{"selection on a scalar", "POST", map[string]any{"query": `mutation { resendVerificationEmail(email: "a@example.com") { x } }`}, 422, "GRAPHQL_VALIDATION_FAILED", ""},
			{"variable of the wrong type", "POST", map[string]any{"query": graphQLDocs[opResend], "variables": map[string]any{"email": 12}}, 422, "GRAPHQL_VALIDATION_FAILED", ""},
			{"missing variable", "POST", map[string]any{"query": graphQLDocs[opResend]}, 422, "GRAPHQL_VALIDATION_FAILED", ""},
			{"too deep", "POST", map[string]any{"query": deep}, 400, "QUERY_TOO_COMPLEX", "deep"},
			{"introspection too deep", "POST", map[string]any{"query": deepIntrospection}, 400, "QUERY_TOO_COMPLEX", "deep"},
			{"too complex", "POST", map[string]any{"query": wide.String()}, 400, "QUERY_TOO_COMPLEX", "complexity"},
			{"document too long", "POST", map[string]any{"query": huge}, 400, "QUERY_TOO_COMPLEX", "longer"},
			{"malformed JSON", "POST", `{"query": `, 400, "VALIDATION_ERROR", ""},
			{"no query", "POST", map[string]any{"variables": map[string]any{}}, 400, "VALIDATION_ERROR", ""},
			{"body over 1 MiB", "POST", map[string]any{"query": "{ version }", "variables": map[string]any{"pad": strings.Repeat("x", 1<<20)}}, 413, "PAYLOAD_TOO_LARGE", ""},
			{"PUT", "PUT", nil, 405, "METHOD_NOT_ALLOWED", ""},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				status, _, raw := h.do(t, c.method, "/graphql", c.body)
				body := decodeObject(t, c.name, raw)
				if d, present := body["data"]; !present || d != nil {
					t.Errorf("data = %v (present %v), want null", d, present)
				}
				errs, _ := body["errors"].([]any)
				if len(errs) == 0 {
					t.Fatalf("no errors: %s", raw)
				}
				code := jsonPath(errs[0], "extensions", "code")
				if status != c.status || code != c.code {
					t.Fatalf("got %d %v, want %d %s: %s", status, code, c.status, c.code, raw)
				}
				if msg, _ := jsonPath(errs[0], "message").(string); msg == "" || !strings.Contains(msg, c.msgHas) {
					t.Errorf("errors[0].message %q, want a sentence saying %q", msg, c.msgHas)
				}
			})
		}
	})
}

func TestE2ERequestID(t *testing.T) {
	t.Parallel()
	generated := regexp.MustCompile(`^[0-9a-f]{24}$`)
	cases := []struct {
		name string
		sent string
		echo bool
	}{
		{"plain", "e2e-trace-0001", true},
		{"punctuation allowed", "trace_1.2:3/4+5=6", true},
		{"128 characters", strings.Repeat("r", 128), true},
		{"none", "", false},
		{"spaces", "has some spaces", false},
		{"129 characters", strings.Repeat("r", 129), false},
		{"markup", "<script>alert(1)</script>", false},
		{"quote", `abc"def`, false},
	}
	forEachDialect(t, func(t *testing.T, dl sqlstoretest.Dialect) {
		h := startHerald(t, dl, accountsEnv(nil))
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				var opts []reqOption
				if c.sent != "" {
					opts = append(opts, withHeader("X-Request-ID", c.sent))
				}
				path := "/api/v1/auth/resend-verification"
				email := fmt.Sprintf("rid%d@example.com", i)
				_, _, hdr := h.rest(t, http.MethodPost, path, map[string]any{"email": email}, opts...)
				id := hdr.Get("X-Request-ID")
				if c.echo && id != c.sent {
					t.Fatalf("X-Request-ID = %q, want the client's %q", id, c.sent)
				}
				if !c.echo && !generated.MatchString(id) {
					t.Fatalf("X-Request-ID = %q, want a generated ID in place of %q", id, c.sent)
				}
				// The request's log line carries the same ID.
				var line map[string]any
				eventually(t, func() bool {
					for _, l := range h.logLines(t) {
						if l["msg"] == "request" && l["request_id"] == id {
							line = l
							return true
						}
					}
					return false
				}, "no request log line with request_id %q", id)
				if line["path"] != path || line["method"] != "POST" || asInt(t, line["status"]) != 400 {
					t.Errorf("request log line %v, want POST %s 400", line, path)
				}
				if _, ok := line["duration_ms"].(float64); !ok {
					t.Errorf("request log line has no duration_ms: %v", line)
				}
				// Searched in the decoded log: the raw JSON escapes a quote.
				if c.sent != "" && !c.echo && h.logsMention(t, c.sent) {
					t.Errorf("the refused request ID %q reached the log", c.sent)
				}
			})
		}
		// GraphQL answers carry it too.
		_, _, hdr := h.graphqlHeader(t, `{ version }`, nil, withHeader("X-Request-ID", "gql-trace-7"))
		if hdr.Get("X-Request-ID") != "gql-trace-7" {
			t.Errorf("GraphQL X-Request-ID = %q, want gql-trace-7", hdr.Get("X-Request-ID"))
		}
	})
}

func TestE2ELogsKeepSecrets(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dl sqlstoretest.Dialect) {
		h := startHerald(t, dl, accountsEnv(map[string]string{"HERALD_LOG_LEVEL": "debug"}))
		var secrets []string
		for _, d := range doors() {
			email := d.name + ".mallory@example.com"
			password := "Secret-" + d.name + "-Pw-7731"
			weak := "weaksecret" + d.name
			secrets = append(secrets, password, weak)
			expectError(t, "weak", d.call(t, h, opSignup, map[string]any{"email": email, "password": weak}), 422, "WEAK_PASSWORD")
			signup(t, h, d, email, password)
			code := h.code(t, email, 1, accounts.PurposeVerify)
			wrong := wrongCode(t, code)
			expectError(t, "wrong code", d.call(t, h, opVerify, map[string]any{"email": email, "code": wrong}), 400, "INVALID_VERIFICATION_CODE")
			h.SMTP.SetFailing(true)
			expectError(t, "failed resend", d.call(t, h, opResend, map[string]any{"email": email}), 502, "EMAIL_DELIVERY_FAILED")
			h.SMTP.SetFailing(false)
			expectOK(t, "resend", d.call(t, h, opResend, map[string]any{"email": email}), http.StatusOK)
			code2 := h.code(t, email, 2, accounts.PurposeVerify)
			expectOK(t, "verify", d.call(t, h, opVerify, map[string]any{"email": email, "code": code2}), http.StatusOK)
			secrets = append(secrets, code, wrong, code2)
		}
		logs := h.logs()
		if !strings.Contains(logs, `"msg":"request"`) {
			t.Fatal("no request log lines captured: the scan below would prove nothing")
		}
		for _, s := range secrets {
			// Codes are matched as whole numbers, so a timestamp holding the
			// same six digits inside a longer number does not count.
			re := regexp.MustCompile(`(^|[^0-9])` + regexp.QuoteMeta(s) + `([^0-9]|$)`)
			if re.MatchString(logs) {
				t.Errorf("secret %q appears in the log", s)
			}
		}
	})
}

func TestE2EOperationalEndpoints(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dl sqlstoretest.Dialect) {
		h := startHerald(t, dl, accountsEnv(nil))
		for path, want := range map[string]map[string]any{
			"/healthz": {"status": "ok"},
			"/readyz":  {"status": "ready", "database": "ok"},
		} {
			status, hdr, raw := h.do(t, http.MethodGet, path, nil)
			if status != http.StatusOK || !reflect.DeepEqual(decodeObject(t, path, raw), want) {
				t.Errorf("GET %s: %d %s, want 200 %v", path, status, raw, want)
			}
			if hdr.Get("X-Request-ID") == "" {
				t.Errorf("GET %s: no X-Request-ID", path)
			}
		}

		email := "oscar@example.com"
		signup(t, h, graphQLDoor, email, goodPassword)
		h.code(t, email, 1, accounts.PurposeVerify)
		// Counted once the handler (or the job) has returned, which may be
		// just after the client has its answer (or the email).
		eventually(t, func() bool {
			return h.metric(t, `herald_http_requests_total{operation="signup",route="/graphql",status="200"}`) == 1
		}, "the signup request was not counted once")
		eventually(t, func() bool { return h.metric(t, `herald_jobs_total{kind="code_email",outcome="completed"}`) == 1 },
			"the code_email job was not counted as completed")
		if got := h.metric(t, `herald_emails_total{result="sent"}`); got != 1 {
			t.Errorf("emails sent %v, want 1", got)
		}
		status, _, raw := h.do(t, http.MethodGet, "/metrics", nil)
		if status != http.StatusOK {
			t.Fatalf("GET /metrics: %d", status)
		}
		for _, name := range []string{"herald_http_requests_total", "herald_http_request_duration_seconds", "herald_emails_total", "herald_jobs_total"} {
			if !strings.Contains(string(raw), "# TYPE "+name+" ") {
				t.Errorf("/metrics has no %s", name)
			}
		}
	})
}

func TestE2EGracefulShutdown(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dl sqlstoretest.Dialect) {
		// INFO lines are held for an hour (but a WARN line writes them):
		// whatever is held at the stop is written by it.
		h := startHerald(t, dl, accountsEnv(map[string]string{"HERALD_LOG_FLUSH_INTERVAL": "1h"}))
		signup(t, h, restDoor, "peggy@example.com", goodPassword)
		h.code(t, "peggy@example.com", 1, accounts.PurposeVerify)
		if err := h.stop(); err != nil {
			t.Fatalf("run returned %v after cancel, want nil", err)
		}
		if _, err := http.Get(h.BaseURL + "/healthz"); err == nil {
			t.Error("the server still answers after run returned")
		}
		var msgs []string
		for _, l := range h.logLines(t) {
			if m, _ := l["msg"].(string); m == "shutting down" || m == "stopped" {
				msgs = append(msgs, m)
			}
		}
		if !reflect.DeepEqual(msgs, []string{"shutting down", "stopped"}) {
			t.Errorf("shutdown log lines %q, want shutting down then stopped", msgs)
		}
		if !h.logsMention(t, "/api/v1/auth/register") {
			t.Error("the signup's request line, held by the batching, was not written at shutdown")
		}
	})
}
