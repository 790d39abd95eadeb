package main

// Rate limits end to end through the real server (harness_test.go): every
// tier through both doors, headers, refusals, aliased mutations, blocks,
// bans across restarts and the bans CLI, X-Forwarded-For, two servers on
// one Redis, and a Redis that dies under a running server.
//
// Windows are fixed and start at multiples of their length since the Unix
// epoch. The servers here count in windows of limitWindow, whose current
// one outlasts the test run, so no counter resets during a test whatever
// the wall clock says; TestDefaultWindowE2E covers the default minute.

import (
	"context"
	"crypto/rand"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/testsupport"
	"github.com/redis/go-redis/v9"
)

// clientIPs hands out client addresses (sent as X-Forwarded-For through a
// trusted proxy) so each case has counters of its own. The random second
// octet keeps concurrent runs apart on a shared Redis.
var clientIPs = func() func() string {
	var b [1]byte
	rand.Read(b[:])
	var n atomic.Int64
	return func() string {
		i := n.Add(1)
		return fmt.Sprintf("10.%d.%d.%d", b[0], i/250%250, i%250+1)
	}
}()

func from(ip string) reqOption { return withHeader("X-Forwarded-For", ip) }

// limitWindow is the HERALD_RATE_LIMIT_WINDOW of these tests' servers (see
// limitsEnv), and limitWindowEnd the end of its window running now. With a
// fixed length, some run would straddle a window's end and see its
// counters reset halfway; this length is picked when the tests start: the
// shortest whole number of minutes from two hours up whose current window
// has at least an hour left, longer than any run of these tests lasts
// (.ci/run gives go test 20 minutes).
var limitWindow, limitWindowEnd = pickWindow(time.Now(), 2*time.Hour, time.Hour)

// pickWindow returns the shortest window of whole minutes from min up
// whose window running at now has at least room left, and that window's
// end. Windows start at multiples of their length since the Unix epoch, as
// the limiter aligns them.
func pickWindow(now time.Time, min, room time.Duration) (time.Duration, time.Time) {
	for w := min; ; w += time.Minute {
		ms := w.Milliseconds()
		end := time.UnixMilli(now.UnixMilli() - now.UnixMilli()%ms + ms)
		if end.Sub(now) >= room {
			return w, end
		}
	}
}

// pickWindow's window always leaves the room asked for, whatever the
// instant, including one just before the end of a minute, an hour or a day.
func TestPickWindow(t *testing.T) {
	day := time.Date(2031, 3, 4, 0, 0, 0, 0, time.UTC)
	for _, now := range []time.Time{
		day, day.Add(-time.Millisecond), day.Add(-time.Second), day.Add(-59 * time.Minute),
		day.Add(time.Hour - time.Millisecond), day.Add(2*time.Hour - time.Second), day.Add(7*time.Hour + 31*time.Minute + 17*time.Second),
		time.Now(),
	} {
		w, end := pickWindow(now, 2*time.Hour, time.Hour)
		if w < 2*time.Hour || w%time.Minute != 0 {
			t.Errorf("at %s: window %s, want whole minutes from 2h", now, w)
		}
		if end.Sub(now) < time.Hour || end.Sub(now) > w || end.UnixMilli()%w.Milliseconds() != 0 {
			t.Errorf("at %s: window %s ends %s, want a multiple of it since the epoch at least 1h and at most %s away", now, w, end, w)
		}
	}
}

// limitsEnv is extra with these tests' rate-limit window.
func limitsEnv(extra map[string]string) map[string]string {
	env := map[string]string{"HERALD_RATE_LIMIT_WINDOW": limitWindow.String()}
	maps.Copy(env, extra)
	return env
}

// expectLimitHeaders checks the X-RateLimit headers of a counted answer:
// the tier's limit, what is left, and a reset at the end of the current
// window.
func expectLimitHeaders(t testing.TB, what string, hdr http.Header, limit, remaining int) {
	t.Helper()
	l, r := hdr.Get("X-RateLimit-Limit"), hdr.Get("X-RateLimit-Remaining")
	if l != strconv.Itoa(limit) || r != strconv.Itoa(remaining) {
		t.Fatalf("%s: X-RateLimit-Limit %q Remaining %q, want %d %d", what, l, r, limit, remaining)
	}
	if reset := hdr.Get("X-RateLimit-Reset"); reset != strconv.FormatInt(limitWindowEnd.Unix(), 10) {
		t.Fatalf("%s: X-RateLimit-Reset %q, want %d, the end of the current %s window", what, reset, limitWindowEnd.Unix(), limitWindow)
	}
}

func noLimitHeaders(t testing.TB, what string, hdr http.Header) {
	t.Helper()
	for _, k := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
		if v := hdr.Get(k); v != "" {
			t.Fatalf("%s carries %s: %s", what, k, v)
		}
	}
}

// expectRefused checks a 429 of tier, of a request sent at sent (read just
// before sending it): Retry-After (whole seconds, the time to the end of
// the current window), and details/extensions limit, window, retryAfter
// and tier; the X-RateLimit headers are the refusing tier's, with nothing
// left.
func expectRefused(t testing.TB, what string, sent time.Time, r result, limit int, tier string) {
	t.Helper()
	expectRefusedLeft(t, what, sent, r, limit, tier, 0)
}

// expectRefusedLeft is expectRefused for a request that costs more than one
// unit: remaining units may be left that it did not fit in.
func expectRefusedLeft(t testing.TB, what string, sent time.Time, r result, limit int, tier string, remaining int) {
	t.Helper()
	expectRefusedIn(t, what, sent, r, limit, tier, remaining, limitWindow)
	if reset := r.header.Get("X-RateLimit-Reset"); reset != strconv.FormatInt(limitWindowEnd.Unix(), 10) {
		t.Errorf("%s: X-RateLimit-Reset %q, want %d, the end of the current %s window", what, reset, limitWindowEnd.Unix(), limitWindow)
	}
}

// expectRefusedIn is expectRefusedLeft for a server whose windows are
// window long: Retry-After is 1 second to a window, and the reset falls on
// a window's end.
func expectRefusedIn(t testing.TB, what string, sent time.Time, r result, limit int, tier string, remaining int, window time.Duration) {
	t.Helper()
	received := time.Now()
	secs := int(window / time.Second)
	expectError(t, what, r, http.StatusTooManyRequests, "RATE_LIMITED")
	ra, err := strconv.Atoi(r.header.Get("Retry-After"))
	if err != nil || ra < 1 || ra > secs {
		t.Fatalf("%s: Retry-After %q, want 1..%d seconds", what, r.header.Get("Retry-After"), secs)
	}
	// Retry-After is the time to the reset rounded up to whole seconds, so
	// reset - Retry-After is the server's clock, in whole seconds, when it
	// decided: between sending and receiving.
	reset, err := strconv.ParseInt(r.header.Get("X-RateLimit-Reset"), 10, 64)
	if err != nil || reset%int64(secs) != 0 {
		t.Errorf("%s: X-RateLimit-Reset %q, want the end of a %s window", what, r.header.Get("X-RateLimit-Reset"), window)
	}
	if decided := reset - int64(ra); err != nil || decided < sent.Unix() || decided > received.Unix() {
		t.Errorf("%s: Retry-After %d but X-RateLimit-Reset %q: decided at %d, want %d..%d (sent..received)",
			what, ra, r.header.Get("X-RateLimit-Reset"), decided, sent.Unix(), received.Unix())
	}
	if r.header.Get("X-RateLimit-Remaining") != strconv.Itoa(remaining) || r.header.Get("X-RateLimit-Limit") != strconv.Itoa(limit) {
		t.Errorf("%s: refusal headers limit %q remaining %q", what, r.header.Get("X-RateLimit-Limit"), r.header.Get("X-RateLimit-Remaining"))
	}
	want := map[string]any{"limit": float64(limit), "window": fmt.Sprintf("%ds", secs), "retryAfter": float64(ra), "tier": tier}
	for k, v := range want {
		if r.details[k] != v {
			t.Fatalf("%s: details %v, want %s = %v", what, r.details, k, v)
		}
	}
}

// versionQuery is the cheapest API request: one global unit.
func versionQuery(t testing.TB, h *herald, opts ...reqOption) result {
	t.Helper()
	status, body, hdr := h.graphqlHeader(t, `{ version }`, nil, opts...)
	return graphqlResult(t, "version", status, body, hdr)
}

// notFound is a REST request to no route: one global unit.
func notFound(t testing.TB, h *herald, opts ...reqOption) result {
	t.Helper()
	status, env, hdr := h.rest(t, http.MethodGet, "/api/v1/nothing-here", nil, opts...)
	return envelopeResult(t, "GET /api/v1/nothing-here", status, env, hdr)
}

const (
	tierGlobal    = 12
	tierAuth      = 10
	tierProtected = 4
	tierAdmin     = 2
)

func TestRateLimitTiersE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		h := startHerald(t, d, limitsEnv(map[string]string{
			"HERALD_TRUSTED_PROXIES":            "127.0.0.1/32",
			"HERALD_RATE_LIMIT_GLOBAL":          strconv.Itoa(tierGlobal),
			"HERALD_RATE_LIMIT_AUTH":            strconv.Itoa(tierAuth),
			"HERALD_RATE_LIMIT_PROTECTED":       strconv.Itoa(tierProtected),
			"HERALD_RATE_LIMIT_ADMIN":           strconv.Itoa(tierAdmin),
			"HERALD_GRAPHQL_MAX_ROOT_MUTATIONS": "20",
			"HERALD_BLOCK_AFTER_REFUSALS":       "1000",
		}))
		// Callers: an admin from the CLI and one user per door (the
		// protected tier counts per user, across doors).
		if _, stderr, err := runHerald(t, h.Env, "", "admin", "create", "--email", "ops@example.com", "--password", testPassword); err != nil {
			t.Fatalf("admin create: %v\n%s", err, stderr)
		}
		adminTok := login(t, h, restDoor.name, "ops@example.com", testPassword, from(clientIPs())).access
		userTok := map[string]string{}
		for _, dn := range doorNames {
			email := "tiers-" + dn + "@example.com"
			newVerifiedUser(t, h, restDoor.name, email, from(clientIPs()))
			userTok[dn] = login(t, h, restDoor.name, email, testPassword, from(clientIPs())).access
		}
		wrongLogin := map[string]any{"email": "ops@example.com", "password": "Wrong1234"}

		cases := []struct {
			door, tier string
			limit      int
			sameIP     bool // every request from one address; else one address each
			send       func(t testing.TB, ip string) result
			wantStatus int // of the requests within the limit
		}{
			{graphQLDoor.name, "global", tierGlobal, true, func(t testing.TB, ip string) result { return versionQuery(t, h, from(ip)) }, 200},
			{restDoor.name, "global", tierGlobal, true, func(t testing.TB, ip string) result { return notFound(t, h, from(ip)) }, 404},
			{graphQLDoor.name, "auth", tierAuth, true, func(t testing.TB, ip string) result {
				return call(t, h, graphQLDoor.name, opLogin, wrongLogin, from(ip))
			}, 401},
			{restDoor.name, "auth", tierAuth, true, func(t testing.TB, ip string) result {
				return call(t, h, restDoor.name, opLogin, wrongLogin, from(ip))
			}, 401},
			{graphQLDoor.name, "protected", tierProtected, false, func(t testing.TB, ip string) result {
				return me(t, h, graphQLDoor.name, userTok[graphQLDoor.name], from(ip))
			}, 200},
			{restDoor.name, "protected", tierProtected, false, func(t testing.TB, ip string) result {
				return me(t, h, restDoor.name, userTok[restDoor.name], from(ip))
			}, 200},
			{graphQLDoor.name, "admin", tierAdmin, false, func(t testing.TB, ip string) result {
				return call(t, h, graphQLDoor.name, opBotStatus, nil, withBearer(adminTok), from(ip))
			}, 200},
			// The REST door has no admin route yet; the admin tier's
			// refusal is also covered by internal/limits' gate tests.
		}
		for _, c := range cases {
			t.Run(c.door+"/"+c.tier, func(t *testing.T) {
				ip := clientIPs()
				for i := range c.limit {
					if !c.sameIP {
						ip = clientIPs()
					}
					r := c.send(t, ip)
					what := fmt.Sprintf("request %d of %d", i+1, c.limit)
					if r.status != c.wantStatus || r.code == "RATE_LIMITED" {
						t.Fatalf("%s: status %d %s, want %d", what, r.status, r.code, c.wantStatus)
					}
					expectLimitHeaders(t, what, r.header, c.limit, c.limit-i-1)
				}
				if !c.sameIP {
					ip = clientIPs()
				}
				sent := time.Now()
				expectRefused(t, "the request over the limit", sent, c.send(t, ip), c.limit, c.tier)
				if c.sameIP && c.tier == "auth" {
					// The refused request was charged to no tier: global
					// counted the allowed ones only.
					expectLimitHeaders(t, "global after an auth refusal", versionQuery(t, h, from(ip)).header, tierGlobal, tierGlobal-c.limit-1)
				}
			})
		}

		t.Run("OneRequestTwoTiers", func(t *testing.T) {
			ip := clientIPs()
			r := call(t, h, graphQLDoor.name, opSignup, map[string]any{"email": "two-tiers@example.com", "password": testPassword}, from(ip))
			expectOK(t, "signup", r, 200)
			expectLimitHeaders(t, "signup: auth is closest", r.header, tierAuth, tierAuth-1)
			// Global moved too.
			expectLimitHeaders(t, "then a global-only request", versionQuery(t, h, from(ip)).header, tierGlobal, tierGlobal-2)
			for i := 3; i < tierGlobal; i++ {
				versionQuery(t, h, from(ip))
			}
			r = call(t, h, restDoor.name, opLogin, wrongLogin, from(ip))
			expectLimitHeaders(t, "login: now global is closest", r.header, tierGlobal, 0)
		})

		t.Run("ElevenAliasedSignups", func(t *testing.T) {
			ip := clientIPs()
			emails := func(prefix string, n int) []string {
				var out []string
				for i := range n {
					out = append(out, fmt.Sprintf("%s-%d@example.com", prefix, i))
				}
				return out
			}
			doc := func(emails []string) string {
				var b strings.Builder
				b.WriteString("mutation {")
				for i, e := range emails {
					fmt.Fprintf(&b, " s%d: signup(email: %q, password: %q) { success }", i, e, testPassword)
				}
				b.WriteString(" }")
				return b.String()
			}
			eleven := emails("alias", 11)
			sent := time.Now()
			status, body, hdr := h.graphqlHeader(t, doc(eleven), nil, from(ip))
			r := graphqlResult(t, "s0", status, body, hdr)
			// All ten units are still there: eleven do not fit in them.
			expectRefusedLeft(t, "eleven aliased signups", sent, r, tierAuth, "auth", tierAuth)
			// Refused whole, before any side effect.
			for _, e := range eleven {
				h.expectNoAccount(t, e, "a document refused by the rate limit")
			}
			// More root mutations than allowed: refused outright.
			status, body, _ = h.graphqlHeader(t, doc(emails("many", 21)), nil, from(clientIPs()))
			if status != http.StatusBadRequest || jsonPath(body, "errors") == nil || jsonPath(body["errors"].([]any)[0], "extensions", "code") != "QUERY_TOO_COMPLEX" {
				t.Fatalf("21 root mutations: %d %v, want 400 QUERY_TOO_COMPLEX", status, body)
			}
			for _, e := range emails("many", 21) {
				h.expectNoAccount(t, e, "a document over the root-field cap")
			}
			// Ten fit exactly, from the same address: the refusal cost
			// nothing.
			ten := emails("fits", 10)
			status, body, hdr = h.graphqlHeader(t, doc(ten), nil, from(ip))
			if status != http.StatusOK || body["errors"] != nil {
				t.Fatalf("ten aliased signups: %d %v", status, body)
			}
			expectLimitHeaders(t, "ten aliased signups", hdr, tierAuth, 0)
			for _, e := range ten {
				h.account(t, e)
			}
		})

		t.Run("OutsideTheLimits", func(t *testing.T) {
			for _, path := range []string{"/healthz", "/readyz", "/metrics", "/.well-known/jwks.json"} {
				status, hdr, _ := h.do(t, http.MethodGet, path, nil)
				if status != http.StatusOK {
					t.Fatalf("%s: %d", path, status)
				}
				noLimitHeaders(t, path, hdr)
			}
		})
	})
}

// A client that keeps going after 429s is blocked (every request refused
// with tier "blocked"); blocked again, it is banned in the database: the ban
// outlives a restart and `herald bans lift` ends it.
func TestBlocksAndBansE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		env := limitsEnv(map[string]string{
			"HERALD_TRUSTED_PROXIES":      "127.0.0.1/32",
			"HERALD_RATE_LIMIT_AUTH":      "1",
			"HERALD_BLOCK_AFTER_REFUSALS": "1",
			"HERALD_BLOCK_DURATION":       "5s",
			"HERALD_BAN_AFTER_BLOCKS":     "2",
		})
		h := startHerald(t, d, env)
		ip := clientIPs()
		wrongLogin := map[string]any{"email": "x@example.com", "password": "Wrong1234"}
		loginFrom := func(dn string) result { return call(t, h, dn, opLogin, wrongLogin, from(ip)) }
		expectBlocked := func(what string, r result) {
			t.Helper()
			expectError(t, what, r, http.StatusTooManyRequests, "RATE_LIMITED")
			ra, err := strconv.Atoi(r.header.Get("Retry-After"))
			if r.details["tier"] != "blocked" || err != nil || ra < 1 || ra > 5 || r.details["retryAfter"] != float64(ra) {
				t.Fatalf("%s: details %v Retry-After %q, want tier blocked and 1..5 s (HERALD_BLOCK_DURATION)", what, r.details, r.header.Get("Retry-After"))
			}
			if r.header.Get("X-RateLimit-Remaining") != "0" {
				t.Fatalf("%s: X-RateLimit-Remaining %q while blocked", what, r.header.Get("X-RateLimit-Remaining"))
			}
		}

		// Both blocks, and the wait for the first to end (5s), fall in one
		// auth window (limitWindow).
		expectError(t, "first login", loginFrom(restDoor.name), http.StatusUnauthorized, "INVALID_CREDENTIALS")
		sent := time.Now()
		expectRefused(t, "over the auth limit", sent, loginFrom(graphQLDoor.name), 1, "auth")
		expectBlocked("refused again: blocked", loginFrom(restDoor.name))
		// Every request of the address, whatever its tier and door.
		expectBlocked("GraphQL while blocked", versionQuery(t, h, from(ip)))
		expectBlocked("REST while blocked", notFound(t, h, from(ip)))
		if r := versionQuery(t, h, from(clientIPs())); r.code != "" {
			t.Fatalf("another address while one is blocked: %s", r.code)
		}
		eventually(t, func() bool { return versionQuery(t, h, from(ip)).code == "" }, "the block never ended")

		// Blocked a second time: banned.
		sent = time.Now()
		expectRefused(t, "over the auth limit after the block", sent, loginFrom(graphQLDoor.name), 1, "auth")
		expectBlocked("second block", loginFrom(restDoor.name))
		expectBanned := func(h *herald, what string) {
			t.Helper()
			expectError(t, what+" (GraphQL)", versionQuery(t, h, from(ip)), http.StatusForbidden, "BANNED")
			expectError(t, what+" (REST)", notFound(t, h, from(ip)), http.StatusForbidden, "BANNED")
		}
		expectBanned(h, "banned")

		// The ban is in the database: a restart keeps it.
		dbURL := h.DBURL
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		env["HERALD_DATABASE_URL"] = dbURL
		h = startHerald(t, d, env)
		expectBanned(h, "banned after a restart")
		if r := versionQuery(t, h, from(clientIPs())); r.code != "" {
			t.Fatalf("another address after the restart: %s", r.code)
		}
		out, _, err := runHerald(t, h.Env, "", "bans", "list")
		if err != nil || !strings.Contains(out, ip) {
			t.Fatalf("bans list: %v\n%s", err, out)
		}

		// Lifted by the CLI: servers re-read bans every 2 s.
		if out, stderr, err := runHerald(t, h.Env, "", "bans", "lift", ip); err != nil {
			t.Fatalf("bans lift: %v\n%s%s", err, out, stderr)
		}
		eventually(t, func() bool { return versionQuery(t, h, from(ip)).code == "" }, "the lifted ban still holds")
		if r := notFound(t, h, from(ip)); r.status != http.StatusNotFound {
			t.Fatalf("REST after the lift: %d %s", r.status, r.code)
		}
		if _, _, err := runHerald(t, h.Env, "", "bans", "lift", ip); err == nil {
			t.Fatal("lifting a ban that is not there succeeded")
		}

		// Added by the CLI.
		other := clientIPs()
		if out, stderr, err := runHerald(t, h.Env, "", "bans", "add", other, "--reason", "abuse report 42"); err != nil {
			t.Fatalf("bans add: %v\n%s%s", err, out, stderr)
		}
		eventually(t, func() bool { return versionQuery(t, h, from(other)).code == "BANNED" }, "the added ban never held")
		out, _, err = runHerald(t, h.Env, "", "bans", "list")
		if err != nil || !strings.Contains(out, other) || !strings.Contains(out, "abuse report 42") {
			t.Fatalf("bans list: %v\n%s", err, out)
		}
	})
}

// X-Forwarded-For is believed only from a trusted proxy, read right to
// left.
func TestForwardedForE2E(t *testing.T) {
	cases := []struct {
		name    string
		trusted string
		// Each request's X-Forwarded-For and the X-RateLimit-Remaining
		// (or "429") it must get, with a global limit of 2.
		steps [][2]string
	}{
		{"trusted proxy: one counter per client", "127.0.0.1/32", [][2]string{
			{"203.0.113.1", "1"},
			{"203.0.113.2", "1"},
			{"203.0.113.1", "0"},
			{"203.0.113.1", "429"},
			{"203.0.113.2", "0"},
			// A client cannot pick its address by prepending to the
			// header: the proxy appended the real one, last.
			{"203.0.113.9, 203.0.113.3", "1"},
			{"203.0.113.2, 203.0.113.3", "0"},
		}},
		{"untrusted peer: one counter for the peer", "", [][2]string{
			{"203.0.113.1", "1"},
			{"203.0.113.2", "0"},
			{"203.0.113.3", "429"},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := startHerald(t, "sqlite", limitsEnv(map[string]string{"HERALD_TRUSTED_PROXIES": c.trusted, "HERALD_RATE_LIMIT_GLOBAL": "2"}))
			for i, s := range c.steps {
				sent := time.Now()
				r := versionQuery(t, h, from(s[0]))
				what := fmt.Sprintf("request %d (X-Forwarded-For %s)", i+1, s[0])
				if s[1] == "429" {
					expectRefused(t, what, sent, r, 2, "global")
					continue
				}
				expectOK(t, what, r, http.StatusOK)
				expectLimitHeaders(t, what, r.header, 2, int(s[1][0]-'0'))
			}
		})
	}
}

// Without HERALD_RATE_LIMIT_WINDOW, windows are minutes: a refusal says
// "60s", Retry-After is at most a minute and the reset falls on a minute.
// Nothing here counts across requests, so a minute's end between them
// costs one more request, not the test.
func TestDefaultWindowE2E(t *testing.T) {
	t.Parallel()
	h := startHerald(t, "sqlite", map[string]string{"HERALD_RATE_LIMIT_GLOBAL": "1"})
	// With a limit of 1, the second request of a window is refused; three
	// requests in a row cross at most one minute's end.
	for i := range 3 {
		sent := time.Now()
		r := versionQuery(t, h)
		if r.code == "" {
			continue
		}
		expectRefusedIn(t, fmt.Sprintf("request %d over the limit of 1", i+1), sent, r, 1, "global", 0, time.Minute)
		return
	}
	t.Fatal("three requests with a global limit of 1, none refused")
}

// testRedisURL is HERALD_TEST_REDIS_URL on database 3, so these servers'
// keys (prefix herald:rl:) stay apart from the unit tests'.
func testRedisURL(t testing.TB) string {
	t.Helper()
	raw := os.Getenv("HERALD_TEST_REDIS_URL")
	if raw == "" {
		t.Skip("Redis not tested: HERALD_TEST_REDIS_URL is not set")
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/3"
	return u.String()
}

// Two servers on one database and one Redis enforce one limit together.
func TestTwoServersShareRedisE2E(t *testing.T) {
	redisURL := testRedisURL(t)
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		env := limitsEnv(map[string]string{"HERALD_REDIS_URL": redisURL, "HERALD_TRUSTED_PROXIES": "127.0.0.1/32", "HERALD_RATE_LIMIT_GLOBAL": "4"})
		a := startHerald(t, d, env)
		env["HERALD_DATABASE_URL"] = a.DBURL
		b := startHerald(t, d, env)
		ip := clientIPs() // counters keyed by an address no one else uses
		for i, h := range []*herald{a, b, a, b} {
			r := versionQuery(t, h, from(ip))
			what := fmt.Sprintf("request %d (server %c)", i+1, "abab"[i])
			expectOK(t, what, r, http.StatusOK)
			expectLimitHeaders(t, what, r.header, 4, 3-i)
		}
		for i, h := range []*herald{a, b} {
			sent := time.Now()
			expectRefused(t, fmt.Sprintf("fifth request on server %c", "ab"[i]), sent, versionQuery(t, h, from(ip)), 4, "global")
		}
		for _, h := range []*herald{a, b} {
			status, _, raw := h.do(t, http.MethodGet, "/readyz", nil)
			if status != http.StatusOK || strings.Contains(string(raw), "degraded") {
				t.Fatalf("/readyz with Redis up: %d %s", status, raw)
			}
		}
	})
}

// Redis dies under a running server: requests are still answered (counted
// in memory), /readyz stays 200 and reports the degradation, and so does
// the operator console's overview.
func TestRedisOutageE2E(t *testing.T) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("Redis outage not tested: redis-server is not installed")
	}
	port, cmd, exited, client := startRedis(t, bin)
	defer client.Close()

	h := startHerald(t, "sqlite", limitsEnv(map[string]string{"HERALD_REDIS_URL": "redis://127.0.0.1:" + port + "/0", "HERALD_RATE_LIMIT_GLOBAL": "50"}))
	expectLimitHeaders(t, "with Redis", versionQuery(t, h).header, 50, 49)
	if keys, err := client.Keys(context.Background(), "herald:rl:*").Result(); err != nil || len(keys) == 0 {
		t.Fatalf("no counters in Redis (%v): the server is not using it", err)
	}
	readyz := func() (int, string) {
		status, _, raw := h.do(t, http.MethodGet, "/readyz", nil)
		return status, string(raw)
	}
	if status, body := readyz(); status != http.StatusOK || strings.Contains(body, "degraded") {
		t.Fatalf("/readyz with Redis up: %d %s", status, body)
	}
	if v := h.metric(t, "herald_rate_limiter_degraded"); v != 0 {
		t.Fatalf("herald_rate_limiter_degraded = %v with Redis up", v)
	}
	admin := newAdminToken(t, h, "ops@example.com")
	limiter := func() map[string]any {
		t.Helper()
		r := consoleOp(t, h, restDoor.name, "adminOverview", nil, withBearer(admin))
		expectOK(t, "overview", r, http.StatusOK)
		m, _ := jsonPath(r.data, "rateLimiter").(map[string]any)
		return m
	}
	if rl := limiter(); rl["backend"] != "redis" || rl["degraded"] != false || rl["reason"] != nil {
		t.Fatalf("overview's rateLimiter with Redis up: %v", rl)
	}

	cmd.Process.Kill()
	testsupport.Receive(t, exited, stopWait, "redis-server's exit after SIGKILL")
	for i := range 3 {
		r := versionQuery(t, h)
		expectOK(t, fmt.Sprintf("request %d without Redis", i+1), r, http.StatusOK)
		if r.header.Get("X-RateLimit-Limit") != "50" {
			t.Fatalf("request without Redis: X-RateLimit-Limit %q, want 50 (counted in memory)", r.header.Get("X-RateLimit-Limit"))
		}
	}
	eventually(t, func() bool {
		status, body := readyz()
		if status != http.StatusOK {
			t.Fatalf("/readyz without Redis: %d %s, want 200", status, body)
		}
		return strings.Contains(body, `"degraded"`)
	}, "/readyz never reported the rate limiter degraded")
	if v := h.metric(t, "herald_rate_limiter_degraded"); v != 1 {
		t.Fatalf("herald_rate_limiter_degraded = %v without Redis, want 1", v)
	}
	if rl := limiter(); rl["backend"] != "redis" || rl["degraded"] != true || rl["reason"] == nil || rl["reason"] == "" {
		t.Fatalf("overview's rateLimiter without Redis: %v, want redis, degraded, with a reason", rl)
	}
}

// startRedis runs a throwaway redis-server on a free port until the test
// ends, retrying with another port if the first is taken meanwhile.
func startRedis(t *testing.T, bin string) (port string, cmd *exec.Cmd, exited chan struct{}, client *redis.Client) {
	t.Helper()
	for attempt := 1; attempt <= 3; attempt++ {
		port = strings.TrimPrefix(freeAddr(t), "127.0.0.1:")
		cmd = exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited = make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		client = redis.NewClient(&redis.Options{Addr: net.JoinHostPort("127.0.0.1", port)})
		if redisAnswers(client, exited) {
			t.Cleanup(func() {
				cmd.Process.Kill()
				testsupport.Receive(t, exited, stopWait, "redis-server's exit after SIGKILL")
			})
			return port, cmd, exited, client
		}
		client.Close()
		cmd.Process.Kill()
		testsupport.Receive(t, exited, stopWait, "redis-server's exit after SIGKILL")
	}
	t.Fatal("redis-server would not start")
	return
}

// redisAnswers polls until the server answers PING, or its process has
// exited (the port was taken), or pollWait has passed.
func redisAnswers(client *redis.Client, exited <-chan struct{}) bool {
	deadline := time.After(pollWait)
	for client.Ping(context.Background()).Err() != nil {
		select {
		case <-exited:
			return false
		case <-deadline:
			return false
		case <-time.After(20 * time.Millisecond):
		}
	}
	return true
}
