package main

// CORS end to end through the real server (harness_test.go): preflights and
// actual requests from an allowed and a disallowed origin on both doors,
// successes and errors, a preflight that is never charged to a rate limit,
// and a server without HERALD_CORS_ORIGINS, which answers as before. The
// same, in a real browser: test/clients (TestBrowserCORS).

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

const (
	corsAllowed    = "https://app.example.com"
	corsDisallowed = "https://evil.example.com"
	// corsExtending begins with the allowed origin: only an exact match
	// may allow it.
	corsExtending = corsAllowed + ".evil.io"
)

// The Access-Control-* headers an answer must carry, or must not.
var (
	corsExposed    = []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After", "X-Request-ID"}
	corsAnyHeaders = []string{"Access-Control-Allow-Origin", "Access-Control-Allow-Methods", "Access-Control-Allow-Headers",
		"Access-Control-Allow-Credentials", "Access-Control-Expose-Headers", "Access-Control-Max-Age"}
)

// preflight sends what a browser sends before a cross-origin request.
func preflight(t testing.TB, h *herald, path, origin, method, headers string) (int, http.Header, []byte) {
	t.Helper()
	opts := []reqOption{withHeader("Origin", origin), withHeader("Access-Control-Request-Method", method)}
	if headers != "" {
		opts = append(opts, withHeader("Access-Control-Request-Headers", headers))
	}
	return h.do(t, http.MethodOptions, path, nil, opts...)
}

// expectPreflightAllowed checks a preflight's 204 and its every header.
func expectPreflightAllowed(t testing.TB, what string, status int, hdr http.Header, body []byte, origin, methods, headers string) {
	t.Helper()
	if status != http.StatusNoContent || len(body) != 0 {
		t.Fatalf("%s: %d %q, want 204 without a body", what, status, body)
	}
	want := map[string]string{
		"Access-Control-Allow-Origin":      origin,
		"Access-Control-Allow-Methods":     methods,
		"Access-Control-Allow-Headers":     headers,
		"Access-Control-Max-Age":           "600",
		"Access-Control-Allow-Credentials": "",
		"Access-Control-Expose-Headers":    "",
	}
	for k, v := range want {
		if got := hdr.Get(k); got != v {
			t.Errorf("%s: %s %q, want %q", what, k, got, v)
		}
	}
	expectVary(t, what, hdr, "Origin", "Access-Control-Request-Method", "Access-Control-Request-Headers")
	expectNotCharged(t, what, hdr)
}

// expectPreflightRefused checks a preflight answered (204, uncharged) with
// no Access-Control-* header, so the browser sends nothing.
func expectPreflightRefused(t testing.TB, what string, status int, hdr http.Header) {
	t.Helper()
	if status != http.StatusNoContent {
		t.Fatalf("%s: status %d, want 204", what, status)
	}
	expectNoCORS(t, what, hdr)
	expectNotCharged(t, what, hdr)
}

// expectNotCharged: no rate-limit headers (nothing was counted), and the
// request ID every answer carries.
func expectNotCharged(t testing.TB, what string, hdr http.Header) {
	t.Helper()
	for _, k := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "Retry-After"} {
		if got := hdr.Get(k); got != "" {
			t.Errorf("%s: %s %q: a preflight was charged", what, k, got)
		}
	}
	if hdr.Get("X-Request-ID") == "" {
		t.Errorf("%s: no X-Request-ID", what)
	}
}

// expectCORS checks an actual answer to the allowed origin: the origin
// echoed, Vary: Origin, the exposed headers, never credentials.
func expectCORS(t testing.TB, what string, hdr http.Header) {
	t.Helper()
	if got := hdr.Get("Access-Control-Allow-Origin"); got != corsAllowed {
		t.Errorf("%s: Access-Control-Allow-Origin %q, want %q", what, got, corsAllowed)
	}
	if got := hdr.Get("Access-Control-Allow-Credentials"); got != "" {
		t.Errorf("%s: Access-Control-Allow-Credentials %q, want none", what, got)
	}
	var exposed []string
	for _, e := range strings.Split(hdr.Get("Access-Control-Expose-Headers"), ",") {
		exposed = append(exposed, strings.ToLower(strings.TrimSpace(e)))
	}
	for _, e := range corsExposed {
		if !slices.Contains(exposed, strings.ToLower(e)) {
			t.Errorf("%s: Access-Control-Expose-Headers %q lacks %s", what, hdr.Get("Access-Control-Expose-Headers"), e)
		}
	}
	expectVary(t, what, hdr, "Origin")
}

func expectNoCORS(t testing.TB, what string, hdr http.Header) {
	t.Helper()
	for _, k := range corsAnyHeaders {
		if got := hdr.Get(k); got != "" {
			t.Errorf("%s: %s %q, want no CORS header", what, k, got)
		}
	}
}

// expectVary checks that Vary names each of names.
func expectVary(t testing.TB, what string, hdr http.Header, names ...string) {
	t.Helper()
	var vary []string
	for _, v := range hdr.Values("Vary") {
		for _, n := range strings.Split(v, ",") {
			vary = append(vary, strings.ToLower(strings.TrimSpace(n)))
		}
	}
	for _, n := range names {
		if !slices.Contains(vary, strings.ToLower(n)) {
			t.Errorf("%s: Vary %q lacks %s", what, hdr.Values("Vary"), n)
		}
	}
}

func TestCORSE2E(t *testing.T) {
	h := startHerald(t, "sqlite", map[string]string{"HERALD_CORS_ORIGINS": corsAllowed + ", http://127.0.0.1:5173"})
	newVerifiedUser(t, h, "rest", "cors@example.com")
	access := login(t, h, "rest", "cors@example.com", testPassword).access

	t.Run("preflight, allowed origin", func(t *testing.T) {
		// The headers as Chromium sends them: lower case, sorted.
		const asked = "authorization,content-type,idempotency-key,x-api-key,x-request-id"
		for _, c := range []struct{ path, method, methods string }{
			{"/graphql", "POST", "GET, POST"},
			{"/graphql", "GET", "GET, POST"},
			{"/api/v1/users/me", "GET", "GET"},
			{"/api/v1/auth/login", "POST", "POST"},
			{"/api/v1/devices", "POST", "GET, POST"},
			{"/api/v1/devices/dev-1", "DELETE", "DELETE"},
			{"/api/v1/devices/dev-1/push-token", "PUT", "PUT"},
			// A path no route declares: any method, so the page can read
			// the 404 that follows.
			{"/api/v1/no-such-thing", "PATCH", "GET, HEAD, POST, PUT, PATCH, DELETE"},
		} {
			what := "OPTIONS " + c.path + " for " + c.method
			status, hdr, body := preflight(t, h, c.path, corsAllowed, c.method, asked)
			expectPreflightAllowed(t, what, status, hdr, body, corsAllowed, c.methods, asked)
		}
		// Only the headers asked for are named, and none are needed.
		status, hdr, body := preflight(t, h, "/api/v1/users/me", "http://127.0.0.1:5173", "GET", "")
		expectPreflightAllowed(t, "preflight without headers", status, hdr, body, "http://127.0.0.1:5173", "GET", "")
	})

	t.Run("preflight, refused", func(t *testing.T) {
		for _, c := range []struct{ what, path, origin, method, headers string }{
			{"disallowed origin, GraphQL", "/graphql", corsDisallowed, "POST", "content-type"},
			{"disallowed origin, REST", "/api/v1/users/me", corsDisallowed, "GET", "authorization"},
			{"origin extending the allowed one, GraphQL", "/graphql", corsExtending, "POST", "content-type"},
			{"origin extending the allowed one, REST", "/api/v1/users/me", corsExtending, "GET", "authorization"},
			{"a method the route lacks", "/api/v1/users/me", corsAllowed, "DELETE", "authorization"},
			{"a method GraphQL lacks", "/graphql", corsAllowed, "PUT", "content-type"},
			{"a header not allowed", "/graphql", corsAllowed, "POST", "content-type,x-custom"},
		} {
			status, hdr, _ := preflight(t, h, c.path, c.origin, c.method, c.headers)
			expectPreflightRefused(t, c.what, status, hdr)
		}
	})

	t.Run("actual requests, allowed origin", func(t *testing.T) {
		origin := withHeader("Origin", corsAllowed)
		status, body, hdr := h.graphqlHeader(t, graphQLDocs[opSignup], map[string]any{"email": "cors-gql@example.com", "password": testPassword}, origin)
		if status != http.StatusOK || jsonPath(body, "data", "signup", "success") != true {
			t.Fatalf("GraphQL signup: %d %v", status, body)
		}
		expectCORS(t, "GraphQL signup", hdr)
		if hdr.Get("X-RateLimit-Remaining") == "" {
			t.Error("GraphQL signup: no X-RateLimit-Remaining to expose")
		}

		status, body, hdr = h.graphqlHeader(t, `{ me { id } }`, nil, origin)
		if status != http.StatusUnauthorized || jsonPath(body, "errors") == nil {
			t.Fatalf("GraphQL me without a token: %d %v, want 401", status, body)
		}
		expectCORS(t, "GraphQL 401", hdr)

		status, env, hdr := h.rest(t, http.MethodGet, "/api/v1/users/me", nil, origin, withBearer(access))
		if status != http.StatusOK || jsonPath(env, "data", "email") != "cors@example.com" {
			t.Fatalf("users/me: %d %v", status, env)
		}
		expectCORS(t, "users/me", hdr)

		for _, c := range []struct {
			method, path string
			status       int
			code         string
		}{
			{"GET", "/api/v1/users/me", http.StatusUnauthorized, "AUTH_REQUIRED"},
			{"PATCH", "/api/v1/users/me", http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED"},
			{"PATCH", "/api/v1/no-such-thing", http.StatusNotFound, "NOT_FOUND"},
		} {
			what := c.method + " " + c.path
			status, env, hdr := h.rest(t, c.method, c.path, nil, origin)
			if status != c.status || jsonPath(env, "error", "code") != c.code {
				t.Fatalf("%s: %d %v, want %d %s", what, status, env, c.status, c.code)
			}
			expectCORS(t, what, hdr)
		}
	})

	t.Run("actual requests, disallowed origin: served without CORS headers", func(t *testing.T) {
		for _, o := range []string{corsDisallowed, corsExtending} {
			corsDisallowedRequests(t, h, access, withHeader("Origin", o))
		}
	})

	t.Run("outside the API: no CORS", func(t *testing.T) {
		status, hdr, _ := preflight(t, h, "/.well-known/jwks.json", corsAllowed, "GET", "")
		if status != http.StatusMethodNotAllowed {
			t.Errorf("preflight on /.well-known/jwks.json: %d, want 405 as before", status)
		}
		expectNoCORS(t, "jwks preflight", hdr)
		status, hdr, _ = h.do(t, http.MethodGet, "/healthz", nil, withHeader("Origin", corsAllowed))
		if status != http.StatusOK {
			t.Errorf("healthz: %d", status)
		}
		expectNoCORS(t, "healthz", hdr)
	})

	// A preflight is logged like any request, at INFO with its 204, never
	// as a problem.
	for _, line := range h.logLines(t) {
		path, _ := line["path"].(string)
		api := path == "/graphql" || strings.HasPrefix(path, "/api/")
		if line["method"] == http.MethodOptions && api && (line["level"] != "INFO" || line["status"] != float64(http.StatusNoContent)) {
			t.Errorf("preflight logged as %v", line)
		}
	}
}

// A preflight is answered before the rate limits: with a global limit of
// one request, any number of preflights leave that one request to the page,
// and even once it is spent a preflight still gets its 204. The refusal
// that follows (429) is readable by the page, Retry-After included.
func TestCORSPreflightNotRateLimitedE2E(t *testing.T) {
	h := startHerald(t, "sqlite", limitsEnv(map[string]string{"HERALD_CORS_ORIGINS": corsAllowed, "HERALD_RATE_LIMIT_GLOBAL": "1"}))
	const asked = "authorization,content-type"
	for i := range 30 {
		path := []string{"/graphql", "/api/v1/users/me", "/api/v1/no-such-thing"}[i%3]
		method := map[string]string{"/graphql": "POST", "/api/v1/users/me": "GET", "/api/v1/no-such-thing": "GET"}[path]
		status, hdr, _ := preflight(t, h, path, corsAllowed, method, asked)
		if status != http.StatusNoContent || hdr.Get("Access-Control-Allow-Origin") != corsAllowed {
			t.Fatalf("preflight %d on %s: %d, Access-Control-Allow-Origin %q", i+1, path, status, hdr.Get("Access-Control-Allow-Origin"))
		}
		expectNotCharged(t, "preflight on "+path, hdr)
	}
	for i := range 10 {
		status, hdr, _ := preflight(t, h, "/graphql", corsDisallowed, "POST", asked)
		expectPreflightRefused(t, "disallowed preflight "+string(rune('0'+i)), status, hdr)
	}

	// The one unit is still there.
	origin := withHeader("Origin", corsAllowed)
	status, env, hdr := h.rest(t, http.MethodGet, "/api/v1/users/me", nil, origin)
	if status != http.StatusUnauthorized || jsonPath(env, "error", "code") != "AUTH_REQUIRED" {
		t.Fatalf("first request: %d %v, want 401 AUTH_REQUIRED (admitted, then refused for want of a token)", status, env)
	}
	expectLimitHeaders(t, "first request", hdr, 1, 0)
	expectCORS(t, "first request", hdr)

	status, env, hdr = h.rest(t, http.MethodGet, "/api/v1/users/me", nil, origin)
	if status != http.StatusTooManyRequests || jsonPath(env, "error", "code") != "RATE_LIMITED" || hdr.Get("Retry-After") == "" {
		t.Fatalf("second request: %d %v (Retry-After %q), want 429 RATE_LIMITED with Retry-After", status, env, hdr.Get("Retry-After"))
	}
	expectCORS(t, "429", hdr)

	status, hdr, body := preflight(t, h, "/api/v1/users/me", corsAllowed, "GET", asked)
	expectPreflightAllowed(t, "preflight after the limit is spent", status, hdr, body, corsAllowed, "GET", asked)
}

// A preflight is answered before the ban check too: a banned address still
// gets its 204, and the page can read the 403 BANNED that follows.
func TestCORSPreflightBannedE2E(t *testing.T) {
	h := startHerald(t, "sqlite", map[string]string{"HERALD_CORS_ORIGINS": corsAllowed, "HERALD_TRUSTED_PROXIES": "127.0.0.1/32"})
	ip := clientIPs()
	if out, stderr, err := runHerald(t, h.Env, "", "bans", "add", ip, "--reason", "cors test"); err != nil {
		t.Fatalf("bans add: %v\n%s%s", err, out, stderr)
	}
	eventually(t, func() bool { return versionQuery(t, h, from(ip)).code == "BANNED" }, "the ban never held")

	status, hdr, body := h.do(t, http.MethodOptions, "/graphql", nil, from(ip), withHeader("Origin", corsAllowed),
		withHeader("Access-Control-Request-Method", "POST"), withHeader("Access-Control-Request-Headers", "content-type"))
	expectPreflightAllowed(t, "preflight from a banned address", status, hdr, body, corsAllowed, "GET, POST", "content-type")

	status, env, hdr := h.rest(t, http.MethodGet, "/api/v1/users/me", nil, from(ip), withHeader("Origin", corsAllowed))
	if status != http.StatusForbidden || jsonPath(env, "error", "code") != "BANNED" {
		t.Fatalf("request from a banned address: %d %v, want 403 BANNED", status, env)
	}
	expectCORS(t, "403 BANNED", hdr)
}

// Without HERALD_CORS_ORIGINS nothing changes: a preflight is an OPTIONS
// request like any other (405, charged), and no answer carries a CORS
// header.
func TestCORSOffE2E(t *testing.T) {
	h := startHerald(t, "sqlite", nil)
	for _, path := range []string{"/graphql", "/api/v1/users/me"} {
		status, hdr, _ := preflight(t, h, path, corsAllowed, "GET", "authorization")
		if status != http.StatusMethodNotAllowed {
			t.Errorf("preflight on %s: %d, want 405", path, status)
		}
		expectNoCORS(t, "preflight on "+path, hdr)
		if hdr.Get("X-RateLimit-Remaining") == "" {
			t.Errorf("preflight on %s: not charged, want the global tier as any request", path)
		}
		// Vary: Accept is GraphQL's negotiation, not CORS's.
		if vary := strings.Join(hdr.Values("Vary"), ","); strings.Contains(vary, "Origin") || strings.Contains(vary, "Access-Control") {
			t.Errorf("preflight on %s: Vary %q, want no CORS request header in it", path, vary)
		}
	}
	status, _, hdr := h.rest(t, http.MethodGet, "/api/v1/users/me", nil, withHeader("Origin", corsAllowed))
	if status != http.StatusUnauthorized {
		t.Errorf("users/me: %d, want 401", status)
	}
	expectNoCORS(t, "users/me", hdr)
}

// corsDisallowedRequests: a disallowed origin's requests are served as any
// other, with no CORS header the browser would need to read them.
func corsDisallowedRequests(t *testing.T, h *herald, access string, origin reqOption) {
	t.Helper()
	status, body, hdr := h.graphqlHeader(t, `{ version }`, nil, origin)
	if status != http.StatusOK || jsonPath(body, "data", "version") == nil {
		t.Fatalf("GraphQL version: %d %v", status, body)
	}
	expectNoCORS(t, "GraphQL", hdr)
	expectVary(t, "GraphQL", hdr, "Origin")

	status, env, hdr := h.rest(t, http.MethodGet, "/api/v1/users/me", nil, origin, withBearer(access))
	if status != http.StatusOK || jsonPath(env, "data", "email") != "cors@example.com" {
		t.Fatalf("users/me: %d %v", status, env)
	}
	expectNoCORS(t, "users/me", hdr)

	status, _, hdr = h.rest(t, http.MethodGet, "/api/v1/users/me", nil, origin)
	if status != http.StatusUnauthorized {
		t.Fatalf("users/me without a token: %d, want 401", status)
	}
	expectNoCORS(t, "users/me 401", hdr)
}
