package main

// GraphQL over HTTP through the real server: the two media types a client
// can ask for in Accept, each error family under each, and GET.

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

const (
	mediaJSON    = "application/json"
	mediaGraphQL = "application/graphql-response+json"
)

// gqlAnswer is one raw /graphql answer, decoded.
type gqlAnswer struct {
	status int
	hdr    http.Header
	body   map[string]any
	raw    []byte
}

func (a gqlAnswer) code() string {
	errs, _ := a.body["errors"].([]any)
	if len(errs) == 0 {
		return ""
	}
	code, _ := jsonPath(errs[0], "extensions", "code").(string)
	return code
}

// postGraphQL posts a document to /graphql accepting media.
func postGraphQL(t testing.TB, h *herald, media, query string, opts ...reqOption) gqlAnswer {
	t.Helper()
	opts = append([]reqOption{withHeader("Accept", media)}, opts...)
	status, hdr, raw := h.do(t, http.MethodPost, "/graphql", map[string]any{"query": query}, opts...)
	return gqlAnswer{status, hdr, decodeObject(t, "POST /graphql", raw), raw}
}

// getGraphQL sends GET /graphql?query=… accepting media.
func getGraphQL(t testing.TB, h *herald, media string, params url.Values, opts ...reqOption) gqlAnswer {
	t.Helper()
	opts = append([]reqOption{withHeader("Accept", media)}, opts...)
	status, hdr, raw := h.do(t, http.MethodGet, "/graphql?"+params.Encode(), nil, opts...)
	return gqlAnswer{status, hdr, decodeObject(t, "GET /graphql", raw), raw}
}

// expectGraphQLAnswer checks an answer in media: its Content-Type, its
// status and code, and its data entry: present (null on error) under
// application/json, absent from every non-2xx answer under
// application/graphql-response+json.
func expectGraphQLAnswer(t testing.TB, what, media string, a gqlAnswer, status int, code string) {
	t.Helper()
	if ct := a.hdr.Get("Content-Type"); ct != media+"; charset=utf-8" {
		t.Errorf("%s: Content-Type %q, want %s; charset=utf-8", what, ct, media)
	}
	if a.status != status || a.code() != code {
		t.Fatalf("%s: %d %q, want %d %q: %s", what, a.status, a.code(), status, code, a.raw)
	}
	data, present := a.body["data"]
	switch {
	case code == "":
		if data == nil {
			t.Errorf("%s: no data: %s", what, a.raw)
		}
	case media == mediaJSON:
		if !present || data != nil {
			t.Errorf("%s: data = %v (present %v), want null: %s", what, data, present, a.raw)
		}
	case status < 200 || status > 299:
		if present {
			t.Errorf("%s: a %d answer has a data entry: %s", what, status, a.raw)
		}
	}
}

func TestE2EGraphQLMediaTypes(t *testing.T) {
	t.Parallel()
	// 11 levels: one more than HERALD_GRAPHQL_MAX_DEPTH.
	deep := `{ me { subscription { plan { a { b { c { d { e { f { g { h } } } } } } } } } } }`
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		h := startHerald(t, d, map[string]string{
			"HERALD_TRUSTED_PROXIES":      "127.0.0.1/32",
			"HERALD_RATE_LIMIT_AUTH":      "1",
			"HERALD_BLOCK_AFTER_REFUSALS": "1000",
		})
		// Each case comes from an address of its own, so the auth tier
		// (one unit) refuses only the second auth request of the
		// rate-limit case.
		families := []struct {
			name         string
			query        string
			before       string // sent first, from the same address
			status       int    // the same under both media types unless gqlStatus
			gqlStatus    int
			code         string
			retryAfter   bool
			beforeStatus int
		}{
			{name: "success", query: `{ version }`, status: 200},
			{name: "parse", query: `mutation { signup(`, status: 400, code: "GRAPHQL_PARSE_FAILED"},
			{name: "validation", query: `{ nope }`, status: 422, gqlStatus: 400, code: "GRAPHQL_VALIDATION_FAILED"},
			{name: "too complex", query: deep, status: 400, code: "QUERY_TOO_COMPLEX"},
			{name: "auth", query: `{ me { id } }`, status: 401, code: "AUTH_REQUIRED"},
			{name: "rate limit", query: `mutation { resendVerificationEmail(email: "nobody@example.com") }`,
				before: `mutation { resendVerificationEmail(email: "nobody@example.com") }`, beforeStatus: 400,
				status: 429, code: "RATE_LIMITED", retryAfter: true},
			{name: "business error", query: `mutation { resendVerificationEmail(email: "nobody@example.com") }`, status: 400, code: "EMAIL_NOT_FOUND"},
			{name: "business error with 422", query: `mutation { signup(email: "weak@example.com", password: "weak") { success } }`, status: 422, code: "WEAK_PASSWORD"},
			{name: "Int beyond 64 bits", query: `{ users(first: 99999999999999999999) { nodes { id } } }`, status: 422, gqlStatus: 400, code: "GRAPHQL_VALIDATION_FAILED"},
			{name: "Int beyond 32 bits", query: `{ users(first: 2147483648) { nodes { id } } }`, status: 422, gqlStatus: 400, code: "GRAPHQL_VALIDATION_FAILED"},
			{name: "malformed Time", query: `mutation { setSubscription(userId: "u", plan: "trial", expiresAt: "soon") { id } }`, status: 422, gqlStatus: 400, code: "GRAPHQL_VALIDATION_FAILED"},
		}
		for _, media := range []string{mediaJSON, mediaGraphQL} {
			for _, f := range families {
				t.Run(media+"/"+f.name, func(t *testing.T) {
					ip := from(clientIPs())
					if f.before != "" {
						if a := postGraphQL(t, h, media, f.before, ip); a.status != f.beforeStatus {
							t.Fatalf("first request: %d %s", a.status, a.raw)
						}
					}
					a := postGraphQL(t, h, media, f.query, ip)
					status := f.status
					if media == mediaGraphQL && f.gqlStatus != 0 {
						status = f.gqlStatus
					}
					expectGraphQLAnswer(t, f.name, media, a, status, f.code)
					if f.retryAfter && a.hdr.Get("Retry-After") == "" {
						t.Errorf("no Retry-After on a 429")
					}
				})
			}
		}

		// A variable that cannot be coerced, like a literal: refused before
		// anything runs, with the validation code (it was 500).
		for _, media := range []string{mediaJSON, mediaGraphQL} {
			for name, v := range map[string]string{"Int beyond 64 bits": `99999999999999999999`, "Int beyond 32 bits": `2147483648`, "Int as 1e30": `1e30`} {
				body := `{"query":"query($n: Int) { users(first: $n) { nodes { id } } }","variables":{"n":` + v + `}}`
				status, hdr, raw := h.do(t, http.MethodPost, "/graphql", body, withHeader("Accept", media), from(clientIPs()))
				a := gqlAnswer{status, hdr, decodeObject(t, "POST /graphql", raw), raw}
				want := 422
				if media == mediaGraphQL {
					want = 400
				}
				expectGraphQLAnswer(t, "variable "+name, media, a, want, "GRAPHQL_VALIDATION_FAILED")
			}
		}

		// Without Accept, and with application/json beside a wildcard,
		// the answer is application/json, as before media types were
		// negotiated; */* (curl's) gets the spec's
		// application/graphql-response+json.
		for _, c := range []struct {
			accept, media string
			status        int
		}{
			{"", mediaJSON, 422},
			{"application/json, */*", mediaJSON, 422},
			{"*/*", mediaGraphQL, 400},
		} {
			opts := []reqOption{from(clientIPs())}
			if c.accept != "" {
				opts = append(opts, withHeader("Accept", c.accept))
			}
			status, hdr, raw := h.do(t, http.MethodPost, "/graphql", map[string]any{"query": `{ nope }`}, opts...)
			a := gqlAnswer{status, hdr, decodeObject(t, "POST /graphql", raw), raw}
			expectGraphQLAnswer(t, "Accept "+c.accept, c.media, a, c.status, "GRAPHQL_VALIDATION_FAILED")
			status, hdr, raw = h.do(t, http.MethodPost, "/graphql", map[string]any{"query": `{ version }`}, opts...)
			a = gqlAnswer{status, hdr, decodeObject(t, "POST /graphql", raw), raw}
			expectGraphQLAnswer(t, "Accept "+c.accept, c.media, a, 200, "")
		}
		// Neither media type acceptable: 406.
		status, _, raw := h.do(t, http.MethodPost, "/graphql", map[string]any{"query": `{ version }`}, withHeader("Accept", "text/html"), from(clientIPs()))
		if status != http.StatusNotAcceptable || !strings.Contains(string(raw), "NOT_ACCEPTABLE") {
			t.Errorf("Accept: text/html: %d %s, want 406 NOT_ACCEPTABLE", status, raw)
		}
	})
}

func TestE2EGraphQLGet(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		h := startHerald(t, d, accountsEnv(nil))
		for _, media := range []string{mediaJSON, mediaGraphQL} {
			a := getGraphQL(t, h, media, url.Values{"query": {`{ version }`}})
			expectGraphQLAnswer(t, "GET query", media, a, http.StatusOK, "")
			if v := jsonPath(a.body, "data", "version"); v != readBuild().version {
				t.Errorf("GET query: data.version = %v", v)
			}
			a = getGraphQL(t, h, media, url.Values{
				"query":         {`query Q($n: String!) { __type(name: $n) { name } } mutation M { logout }`},
				"operationName": {"Q"},
				"variables":     {`{"n": "Query"}`},
			})
			expectGraphQLAnswer(t, "GET named query with variables", media, a, http.StatusOK, "")
			if v := jsonPath(a.body, "data", "__type", "name"); v != "Query" {
				t.Errorf("GET named query: data.__type.name = %v", v)
			}

			// A mutation is refused before it runs, with Allow: POST.
			email := strings.ReplaceAll(strings.TrimPrefix(media, "application/"), "+", "-") + "@example.com"
			a = getGraphQL(t, h, media, url.Values{"query": {`mutation { signup(email: "` + email + `", password: "` + goodPassword + `") { success } }`}})
			expectGraphQLAnswer(t, "GET mutation", media, a, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")
			if allow := a.hdr.Get("Allow"); allow != "POST" {
				t.Errorf("GET mutation: Allow %q, want POST", allow)
			}
			h.expectNoAccount(t, email, "a mutation sent with GET")
			a = getGraphQL(t, h, media, url.Values{"query": {`query Q { version } mutation M { logout }`}, "operationName": {"M"}})
			expectGraphQLAnswer(t, "GET named mutation", media, a, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")

			// Without a query, or with variables that are not an object.
			a = getGraphQL(t, h, media, url.Values{})
			expectGraphQLAnswer(t, "GET without a query", media, a, http.StatusBadRequest, "VALIDATION_ERROR")
			a = getGraphQL(t, h, media, url.Values{"query": {`{ version }`}, "variables": {`[1]`}})
			expectGraphQLAnswer(t, "GET with variables not an object", media, a, http.StatusBadRequest, "VALIDATION_ERROR")
		}
		// Other methods: 405 with Allow: GET, POST.
		status, hdr, raw := h.do(t, http.MethodPut, "/graphql", map[string]any{"query": `{ version }`})
		if status != http.StatusMethodNotAllowed || hdr.Get("Allow") != "GET, POST" || !strings.Contains(string(raw), "METHOD_NOT_ALLOWED") {
			t.Errorf("PUT: %d Allow %q %s", status, hdr.Get("Allow"), raw)
		}
	})
}
