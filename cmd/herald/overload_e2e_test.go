package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

// A login flood beyond hashing capacity is shed: with one hash at a time
// and two waiting, concurrent logins through both doors get either their
// answer or 503 SERVICE_UNAVAILABLE with Retry-After — never a 500, never a
// client timeout — while users/me keeps answering 200 throughout. A
// refused login opens no session and leaves the account as it was; a
// refused signup leaves no account.
func TestLoginFloodIsShed(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		h := startHerald(t, d, map[string]string{
			// Hashes slow enough that a flood outruns one slot.
			"HERALD_ARGON2_MEMORY":        "16384",
			"HERALD_ARGON2_ITERATIONS":    "2",
			"HERALD_HASH_CONCURRENCY":     "1",
			"HERALD_HASH_QUEUE":           "2",
			"HERALD_HASH_WAIT":            "200ms",
			"HERALD_RATE_LIMIT_GLOBAL":    "0",
			"HERALD_RATE_LIMIT_AUTH":      "0",
			"HERALD_RATE_LIMIT_PROTECTED": "0",
		})
		const email = "flood@example.com"
		access, _ := newUserToken(t, h, restDoor.name, email)
		sessionsBefore := liveSessions(t, h, email)

		const workers, loginsEach = 12, 8
		var (
			ok, refused, wrong atomic.Int64
			problems           = make(chan string, workers*loginsEach)
			signedUp           = make(chan string, workers*loginsEach)
			signupRefused      = make(chan string, workers*loginsEach)
			flood              sync.WaitGroup
		)
		loginBody := func(addr, password string) map[string]any {
			return map[string]any{"email": addr, "password": password}
		}
		for w := range workers {
			flood.Add(1)
			go func() {
				defer flood.Done()
				for i := range loginsEach {
					// Most logins are right; every fourth is an unknown
					// account, checked against the dummy hash.
					addr, password := email, testPassword
					if i%4 == 3 {
						addr = fmt.Sprintf("nobody%d-%d@example.com", w, i)
					}
					var status int
					var hdr http.Header
					var code string
					if w%2 == 0 && i%4 == 2 {
						// A signup hashes too: refused, it leaves no account.
						addr = fmt.Sprintf("new%d-%d@example.com", w, i)
						a := rawDo(h, "POST", "/api/v1/auth/register", loginBody(addr, testPassword))
						switch {
						case a.err != nil:
							problems <- a.err.Error()
						case a.status == http.StatusCreated:
							signedUp <- addr
						case a.status == http.StatusServiceUnavailable && a.hdr.Get("Retry-After") != "":
							signupRefused <- addr
						default:
							problems <- fmt.Sprintf("signup %s: %d %s", addr, a.status, a.raw)
						}
						continue
					}
					if w%2 == 0 {
						a := rawDo(h, "POST", "/api/v1/auth/login", loginBody(addr, password))
						if a.err != nil {
							problems <- a.err.Error()
							continue
						}
						status, hdr = a.status, a.hdr
						var env struct {
							Error struct{ Code string } `json:"error"`
						}
						_ = json.Unmarshal(a.raw, &env)
						code = env.Error.Code
					} else {
						a := rawDo(h, "POST", "/graphql", map[string]any{
							"query":     `mutation($e: String!, $p: String!) { login(email: $e, password: $p) { accessToken } }`,
							"variables": map[string]any{"e": addr, "p": password},
						}, withHeader("Accept", "application/graphql-response+json"))
						if a.err != nil {
							problems <- a.err.Error()
							continue
						}
						status, hdr = a.status, a.hdr
						var resp struct {
							Errors []struct {
								Extensions struct{ Code string } `json:"extensions"`
							} `json:"errors"`
						}
						_ = json.Unmarshal(a.raw, &resp)
						if len(resp.Errors) > 0 {
							code = resp.Errors[0].Extensions.Code
						}
					}
					switch {
					case status == http.StatusOK && code == "":
						ok.Add(1)
					case status == http.StatusUnauthorized && code == "INVALID_CREDENTIALS" && addr != email:
						wrong.Add(1)
					case status == http.StatusServiceUnavailable && code == "SERVICE_UNAVAILABLE" && hdr.Get("Retry-After") != "":
						refused.Add(1)
					default:
						problems <- fmt.Sprintf("login %s (worker %d): %d %s, Retry-After %q", addr, w, status, code, hdr.Get("Retry-After"))
					}
				}
			}()
		}
		floodDone := make(chan struct{})
		go func() { flood.Wait(); close(floodDone) }()

		// users/me answers 200 all through the flood.
		reads := 0
		for done := false; !done; {
			select {
			case <-floodDone:
				done = true
			default:
			}
			a := rawDo(h, "GET", "/api/v1/users/me", nil, withBearer(access))
			if a.err != nil {
				t.Fatalf("users/me during the flood: %v", a.err)
			}
			if a.status != http.StatusOK {
				t.Fatalf("users/me during the flood: %d %s", a.status, a.raw)
			}
			reads++
		}
		close(problems)
		var msgs []string
		for p := range problems {
			msgs = append(msgs, p)
		}
		if len(msgs) > 0 {
			t.Fatalf("%d login(s) answered neither their answer nor 503 with Retry-After:\n%s", len(msgs), strings.Join(msgs, "\n"))
		}
		t.Logf("%d logins: %d ok, %d unknown account, %d refused with 503; %d signups, %d refused; %d users/me reads meanwhile",
			ok.Load()+wrong.Load()+refused.Load(), ok.Load(), wrong.Load(), refused.Load(), len(signedUp)+len(signupRefused), len(signupRefused), reads)
		if refused.Load() == 0 {
			t.Fatalf("no login of %d concurrent ones beyond one hash slot and two waiting was refused with 503", ok.Load()+wrong.Load())
		}
		if ok.Load() == 0 {
			t.Fatal("no login succeeded during the flood: the hash slot served nobody")
		}
		// A refused login opened no session: one per login that succeeded.
		if got, want := liveSessions(t, h, email), sessionsBefore+int(ok.Load()); got != want {
			t.Fatalf("%d live sessions after %d successful logins (%d before): refused logins left sessions behind", got, ok.Load(), sessionsBefore)
		}
		// The operator sees the refusals: one per refused request.
		if got, want := h.metric(t, "herald_password_hashes_refused_total"), float64(refused.Load())+float64(len(signupRefused)); got != want {
			t.Fatalf("herald_password_hashes_refused_total = %v, want %v (the refused logins and signups)", got, want)
		}
		if got := h.metric(t, "herald_password_hashes_waiting"); got != 0 {
			t.Fatalf("herald_password_hashes_waiting = %v after the flood, want 0", got)
		}
		close(signedUp)
		close(signupRefused)
		for addr := range signedUp {
			h.account(t, addr) // fails the test when missing
		}
		for addr := range signupRefused {
			h.expectNoAccount(t, addr, "its signup was refused with 503")
		}
		// ...nor touched the account: the right password still logs in,
		// and the log holds no internal error.
		login(t, h, restDoor.name, email, testPassword)
		if h.logsMention(t, `"level":"ERROR"`) {
			t.Fatalf("the flood logged an error:\n%s", h.logs())
		}
	})
}

// liveSessions counts the account's live sessions in the database.
func liveSessions(t *testing.T, h *herald, email string) int {
	t.Helper()
	got, err := h.store(t).LiveSessions(context.Background(), h.account(t, email).ID)
	if err != nil {
		t.Fatal(err)
	}
	return len(got)
}

// Past HERALD_MAX_REQUESTS and its queue, API requests are refused at once
// on both doors with 503 SERVICE_UNAVAILABLE and Retry-After, never held
// without bound, never a 500; the refusals are counted, and the server
// serves again once the burst is over.
func TestRequestsInFlightAreBounded(t *testing.T) {
	t.Parallel()
	h := startHerald(t, "sqlite", map[string]string{
		"HERALD_MAX_REQUESTS":         "1",
		"HERALD_REQUEST_QUEUE":        "0",
		"HERALD_RATE_LIMIT_GLOBAL":    "0",
		"HERALD_RATE_LIMIT_AUTH":      "0",
		"HERALD_RATE_LIMIT_PROTECTED": "0",
	})
	access, _ := newUserToken(t, h, restDoor.name, "burst@example.com")
	const workers, each = 32, 8
	var ok, refused atomic.Int64
	problems := make(chan string, workers*each)
	var burst sync.WaitGroup
	for w := range workers {
		burst.Go(func() {
			for range each {
				var a answer
				var code string
				if w%2 == 0 {
					a = rawDo(h, http.MethodGet, "/api/v1/users/me", nil, withBearer(access))
					var env struct {
						Error struct{ Code string } `json:"error"`
					}
					_ = json.Unmarshal(a.raw, &env)
					code = env.Error.Code
				} else {
					a = rawDo(h, http.MethodPost, "/graphql", map[string]any{"query": "{ me { id } }"}, withBearer(access))
					var body map[string]any
					_ = json.Unmarshal(a.raw, &body)
					code = gqlCode(body)
				}
				switch {
				case a.err != nil:
					problems <- a.err.Error()
				case a.status == http.StatusOK && code == "":
					ok.Add(1)
				case a.status == http.StatusServiceUnavailable && code == "SERVICE_UNAVAILABLE" && a.hdr.Get("Retry-After") != "":
					refused.Add(1)
				default:
					problems <- fmt.Sprintf("%d %s (Retry-After %q)", a.status, a.raw, a.hdr.Get("Retry-After"))
				}
			}
		})
	}
	burst.Wait()
	close(problems)
	for p := range problems {
		t.Errorf("an answer that is neither 200 nor 503 SERVICE_UNAVAILABLE with Retry-After: %s", p)
	}
	if refused.Load() == 0 {
		t.Fatalf("%d requests at once past a bound of one in flight and no queue: none refused (%d answered)", workers, ok.Load())
	}
	if got := h.metric(t, "herald_api_requests_refused_total"); int64(got) != refused.Load() {
		t.Errorf("herald_api_requests_refused_total = %v, want the %d refusals", got, refused.Load())
	}
	if a := rawDo(h, http.MethodGet, "/api/v1/users/me", nil, withBearer(access)); a.status != http.StatusOK {
		t.Fatalf("after the burst: users/me %d %s, want 200", a.status, a.raw)
	}
}
