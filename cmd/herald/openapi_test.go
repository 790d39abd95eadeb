package main

// The contract check: rawDo, which every request of the end-to-end tests
// goes through (h.do, h.rest, the doors), hands each exchange to
// checkContract, which validates it against apidoc/openapi.yaml with
// kin-openapi. An answer the document does not describe fails the request
// like a transport error would, so the test fails where it made the call.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/herald-vpn/herald/apidoc"
)

// contract is apidoc/openapi.yaml loaded for checking exchanges: the document,
// a router over its paths, and the operations that stand for what it does
// not list but describes in its components (any other path under /api/ is
// NotFound, any other method of a listed path MethodNotAllowed; either can
// be refused first by the global tier).
type contract struct {
	doc         *openapi3.T
	router      routers.Router
	unknownPath *openapi3.Operation
	otherMethod *openapi3.Operation
}

// theContract is loaded once per test binary.
var theContract = sync.OnceValues(func() (*contract, error) {
	// An event stream is checked as the text it is (its events are
	// checked by the tests that read them).
	openapi3filter.RegisterBodyDecoder("text/event-stream", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder)
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(apidoc.YAML)
	if err != nil {
		return nil, fmt.Errorf("load apidoc/openapi.yaml: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("apidoc/openapi.yaml is not a valid OpenAPI document: %w", err)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("route apidoc/openapi.yaml: %w", err)
	}
	c := &contract{doc: doc, router: router}
	if c.unknownPath, err = fallbackOperation(doc, http.StatusNotFound, "NotFound"); err != nil {
		return nil, err
	}
	if c.otherMethod, err = fallbackOperation(doc, http.StatusMethodNotAllowed, "MethodNotAllowed"); err != nil {
		return nil, err
	}
	return c, nil
})

// fallbackOperation is the operation of a request the document does not
// list: the component response named for status, or a refusal of the
// global tier, or an internal error.
func fallbackOperation(doc *openapi3.T, status int, name string) (*openapi3.Operation, error) {
	opts := []openapi3.NewResponsesOption{}
	for code, n := range map[int]string{status: name, http.StatusForbidden: "Banned", http.StatusTooManyRequests: "RateLimited", http.StatusInternalServerError: "InternalError"} {
		ref := doc.Components.Responses[n]
		if ref == nil {
			return nil, fmt.Errorf("apidoc/openapi.yaml has no #/components/responses/%s", n)
		}
		opts = append(opts, openapi3.WithStatus(code, ref))
	}
	op := openapi3.NewOperation()
	op.Responses = openapi3.NewResponses(opts...)
	return op, nil
}

// contractMethods are the methods probed for a path's Allow header.
var contractMethods = []string{http.MethodDelete, http.MethodGet, http.MethodHead, http.MethodPatch, http.MethodPost, http.MethodPut}

// storeEndpoints are the paths under /api/ the document leaves out by
// design: the stores' notification endpoints, which the stores call, not
// clients (docs/billing.md, "The doors"). The tests that call them check
// their answers (the envelope, the status and the code).
var storeEndpoints = []string{
	"/api/v1/billing/apple/notifications",
	"/api/v1/billing/google/rtdn",
	"/api/v1/billing/stripe/webhook",
}

// checkContract validates one exchange: a request to h (method, path with
// any query, its headers and body) and its answer. It governs every path
// under /api/ and the other paths the document lists (the operational
// endpoints), with the methods it lists for them; any other exchange
// (GraphQL, /metrics, the webhook, CORS preflights, the stores'
// endpoints) passes unchecked. It fails on an undocumented path or method
// (unless the answer is the documented 404 or 405), an undocumented
// status, a body or header that does not match, a missing required
// header, an Allow header that differs from the listed methods, missing
// X-RateLimit-* headers while the global tier is on, and on a 2xx answer
// to a request that the document calls invalid (the document would then
// be stricter than the server).
func checkContract(h *herald, method, path string, reqHeader http.Header, reqBody []byte, a answer) error {
	c, err := theContract()
	if err != nil {
		return err
	}
	req, err := http.NewRequest(method, h.BaseURL+path, bytes.NewReader(reqBody))
	if err != nil {
		return err
	}
	req.Header = reqHeader.Clone()
	underAPI := strings.HasPrefix(req.URL.Path, "/api/")
	if !underAPI && c.doc.Paths.Value(req.URL.Path) == nil {
		return nil
	}
	if method == http.MethodOptions && req.Header.Get("Access-Control-Request-Method") != "" {
		// A CORS preflight belongs to the CORS protocol, which OpenAPI
		// documents do not describe.
		return nil
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s %s answered %d, which apidoc/openapi.yaml does not describe: %s\nanswer headers: %v\nanswer body: %.800s",
			method, path, a.status, fmt.Sprintf(format, args...), a.hdr, a.raw)
	}

	if slices.Contains(storeEndpoints, req.URL.Path) {
		if c.doc.Paths.Value(req.URL.Path) != nil {
			return fail("the document lists %s, a store's endpoint storeEndpoints says it leaves out", req.URL.Path)
		}
		return nil
	}

	route, params, err := c.router.FindRoute(req)
	listed := err == nil
	switch {
	case listed:
	case !underAPI:
		// A method the document leaves out on an operational path: Go's
		// mux answers it, outside the API.
		return nil
	case errors.Is(err, routers.ErrMethodNotAllowed):
		route = &routers.Route{Spec: c.doc, Path: req.URL.Path, Method: method, Operation: c.otherMethod}
		if a.status == http.StatusMethodNotAllowed {
			if want, got := c.listedMethods(req), a.hdr.Get("Allow"); got != want {
				return fail("Allow is %q, but the document lists %q for this path", got, want)
			}
		}
	case errors.Is(err, routers.ErrPathNotFound):
		route = &routers.Route{Spec: c.doc, Path: req.URL.Path, Method: method, Operation: c.unknownPath}
	default:
		return fail("no route: %v", err)
	}

	ctx := context.Background()
	reqIn := &openapi3filter.RequestValidationInput{
		Request:    req,
		PathParams: params,
		Route:      route,
		Options:    &openapi3filter.Options{AuthenticationFunc: bearerPresented, MultiError: true},
	}
	resIn := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: reqIn,
		Status:                 a.status,
		Header:                 a.hdr,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	resIn.SetBodyBytes(a.raw)
	if err := openapi3filter.ValidateResponse(ctx, resIn); err != nil {
		if !listed {
			return fail("not a path or method the document lists (%s), and not its documented answer to one: %v", route.Path, err)
		}
		return fail("%v", err)
	}
	if underAPI && h.Env["HERALD_RATE_LIMIT_GLOBAL"] != "0" && !isBanned(a) {
		for _, k := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
			if a.hdr.Get(k) == "" {
				return fail("no %s, which every answer under /api/ but BANNED carries while the global tier is on", k)
			}
		}
	}
	if listed && a.status >= 200 && a.status < 300 {
		if err := openapi3filter.ValidateRequest(ctx, reqIn); err != nil {
			return fail("the server accepted a request that the document calls invalid (the document is stricter than the server): %v\nrequest body: %.800s", err, reqBody)
		}
	}
	return nil
}

// listedMethods is the Allow header the document implies for req's path:
// the methods it lists there, sorted, comma-separated (HEAD aside: Go's mux
// answers it for GET).
func (c *contract) listedMethods(req *http.Request) string {
	var ms []string
	for _, m := range contractMethods {
		probe := req.Clone(context.Background())
		probe.Method = m
		if _, _, err := c.router.FindRoute(probe); err == nil && m != http.MethodHead {
			ms = append(ms, m)
		}
	}
	slices.Sort(ms)
	return strings.Join(ms, ", ")
}

// bearerPresented is the check of the security schemes when a request is
// validated: the server has authenticated it; the document only says it
// comes as Authorization: Bearer (or, for the apiKey scheme, X-API-Key).
func bearerPresented(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	if in.SecuritySchemeName == "apiKey" {
		if strings.TrimSpace(in.RequestValidationInput.Request.Header.Get("X-API-Key")) == "" {
			return in.NewError(errors.New("no X-API-Key header"))
		}
		return nil
	}
	scheme, token, ok := strings.Cut(in.RequestValidationInput.Request.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return in.NewError(errors.New("no Authorization: Bearer header"))
	}
	return nil
}

// isBanned reports whether a is the BANNED refusal, which comes before any
// rate-limit tier is counted and so carries no X-RateLimit headers.
func isBanned(a answer) bool {
	return a.status == http.StatusForbidden && bytes.Contains(a.raw, []byte(`"code":"BANNED"`))
}

// TestContractCheck feeds checkContract made-up exchanges, without a
// server: the documented ones pass, and each way of departing from the
// document fails.
func TestContractCheck(t *testing.T) {
	t.Parallel()
	h := &herald{BaseURL: "http://127.0.0.1:9", Env: map[string]string{}}
	header := func(kv ...string) http.Header {
		hdr := http.Header{}
		hdr.Set("Content-Type", "application/json; charset=utf-8")
		hdr.Set("X-Request-ID", "0a1b2c")
		hdr.Set("X-RateLimit-Limit", "100")
		hdr.Set("X-RateLimit-Remaining", "99")
		hdr.Set("X-RateLimit-Reset", "1800000000")
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == "" {
				hdr.Del(kv[i])
			} else {
				hdr.Set(kv[i], kv[i+1])
			}
		}
		return hdr
	}
	bearer := http.Header{"Authorization": {"Bearer a.b.c"}}
	jsonBody := http.Header{"Content-Type": {"application/json"}}
	const (
		user      = `{"id":"0197a3c2-5e1f-7c3a-9b2d-4f6e8a1c0d2b","email":"ann@example.com","emailVerified":true,"createdAt":"2026-11-29T10:00:00Z","referralCode":"ABCD2345","subscription":{"plan":"trial","status":"active","expiresAt":"2026-12-06T10:00:00Z","source":"trial","autoRenew":false,"graceEndsAt":null},"locale":null,"passwordChangeRequired":false,"guest":false}`
		tokens    = `{"token":"aaa.bbb.ccc","refreshToken":"0123456789abcdefghijABCDEFGHIJ0123456789_-x","tokenType":"Bearer","expiresIn":86400}`
		authReq   = `{"success":false,"error":{"code":"AUTH_REQUIRED","message":"Authentication is required."}}`
		banned    = `{"success":false,"error":{"code":"BANNED","message":"This address is banned; contact support."}}`
		notFound  = `{"success":false,"error":{"code":"NOT_FOUND","message":"There is no GET /api/v1/nothing."}}`
		limited   = `{"success":false,"error":{"code":"RATE_LIMITED","message":"Too many requests.","details":{"limit":100,"window":"60s","tier":"global","retryAfter":7}}}`
		notAllow  = `{"success":false,"error":{"code":"METHOD_NOT_ALLOWED","message":"DELETE is not allowed here; use POST."}}`
		loginBody = `{"email":"ann@example.com","password":"Secret123"}`
	)
	cases := []struct {
		name, method, path string
		reqHeader          http.Header
		reqBody            string
		status             int
		hdr                http.Header
		body               string
		want               string // "" for a pass, else a part of the error
	}{
		{"a documented success", "GET", "/api/v1/users/me", bearer, "", 200, header(), `{"success":true,"data":` + user + `}`, ""},
		{"a documented error", "GET", "/api/v1/users/me", nil, "", 401, header(), authReq, ""},
		{"BANNED, without rate-limit headers", "GET", "/api/v1/users/me", nil, "", 403, header("X-RateLimit-Limit", "", "X-RateLimit-Remaining", "", "X-RateLimit-Reset", ""), banned, ""},
		{"a documented request", "POST", "/api/v1/auth/login", jsonBody, loginBody, 200, header(), `{"success":true,"data":` + tokens + `}`, ""},
		{"an unknown path's 404", "GET", "/api/v1/nothing", nil, "", 404, header(), notFound, ""},
		{"another method's 405", "DELETE", "/api/v1/auth/verify", nil, "", 405, header("Allow", "POST"), notAllow, ""},
		{"outside the API", "GET", "/metrics", nil, "", 200, http.Header{"Content-Type": {"text/plain"}}, "go_goroutines 9\n", ""},
		{"an operational path", "GET", "/healthz", nil, "", 200, header(), `{"status":"ok"}`, ""},
		{"a CORS preflight", "OPTIONS", "/api/v1/users/me", http.Header{"Origin": {"https://app.example.com"}, "Access-Control-Request-Method": {"GET"}}, "", 204, http.Header{}, "", ""},
		{"a store's endpoint", "POST", "/api/v1/billing/google/rtdn", jsonBody, `{"message":{}}`, 200, http.Header{"Content-Type": {"application/json"}}, `{"success":true,"data":{"received":true}}`, ""},

		{"an unknown path served", "GET", "/api/v1/nothing", nil, "", 200, header(), `{"success":true,"data":{}}`, "not a path or method the document lists"},
		{"an unlisted method served", "PATCH", "/api/v1/users/me", bearer, "", 200, header(), `{"success":true,"data":` + user + `}`, "not a path or method the document lists"},
		{"a 405 with the wrong Allow", "DELETE", "/api/v1/auth/verify", nil, "", 405, header("Allow", "GET, POST"), notAllow, `Allow is "GET, POST"`},
		{"an undocumented status", "GET", "/api/v1/users/me", bearer, "", 418, header(), authReq, "status is not supported"},
		{"a field too many", "GET", "/api/v1/users/me", bearer, "", 200, header(), `{"success":true,"data":` + strings.Replace(user, `{"id"`, `{"admin":true,"id"`, 1) + `}`, "additional properties 'admin'"},
		{"a field missing", "GET", "/api/v1/users/me", bearer, "", 200, header(), `{"success":true,"data":` + strings.Replace(user, `"referralCode":"ABCD2345",`, "", 1) + `}`, "referralCode"},
		{"a field of the wrong type", "POST", "/api/v1/auth/login", jsonBody, loginBody, 200, header(), `{"success":true,"data":` + strings.Replace(tokens, "86400", `"86400"`, 1) + `}`, "expiresIn"},
		{"a code of another status", "GET", "/api/v1/users/me", nil, "", 401, header(), banned, "doesn't match"},
		{"details on a code without any", "GET", "/api/v1/users/me", nil, "", 401, header(), strings.Replace(authReq, `."}}`, `.","details":{}}}`, 1), "doesn't match"},
		{"both data and error", "GET", "/api/v1/users/me", nil, "", 401, header(), strings.Replace(authReq, `"success":false,`, `"success":false,"data":null,`, 1), "doesn't match"},
		{"a 429 without Retry-After", "GET", "/api/v1/users/me", nil, "", 429, header(), limited, `"Retry-After" missing`},
		{"no X-Request-ID", "GET", "/api/v1/users/me", nil, "", 401, header("X-Request-ID", ""), authReq, `"X-Request-ID" missing`},
		{"no X-RateLimit while the global tier is on", "GET", "/api/v1/users/me", nil, "", 401, header("X-RateLimit-Remaining", ""), authReq, "no X-RateLimit-Remaining"},
		{"another content type", "GET", "/api/v1/users/me", nil, "", 401, header("Content-Type", "text/plain"), authReq, "Content-Type has unexpected value"},
		{"a success for a request the document refuses", "POST", "/api/v1/auth/login", jsonBody, `{"email":"ann@example.com","password":"Secret123","remember":true}`, 200, header(), `{"success":true,"data":` + tokens + `}`, "stricter than the server"},
		{"a protected success without a token", "GET", "/api/v1/users/me", nil, "", 200, header(), `{"success":true,"data":` + user + `}`, "stricter than the server"},
		{"an operational path's body", "GET", "/healthz", nil, "", 200, header(), `{"status":"fine"}`, "doesn't match"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := answer{status: c.status, hdr: c.hdr, raw: []byte(c.body)}
			reqHeader := c.reqHeader
			if reqHeader == nil {
				reqHeader = http.Header{}
			}
			err := checkContract(h, c.method, c.path, reqHeader, []byte(c.reqBody), a)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && err == nil:
				t.Fatalf("passed, want an error with %q", c.want)
			case c.want != "" && !strings.Contains(err.Error(), c.want):
				t.Fatalf("error does not say %q:\n%v", c.want, err)
			}
		})
	}
	off := &herald{BaseURL: h.BaseURL, Env: map[string]string{"HERALD_RATE_LIMIT_GLOBAL": "0"}}
	if err := checkContract(off, "GET", "/api/v1/users/me", http.Header{}, nil, answer{status: 401, hdr: header("X-RateLimit-Limit", "", "X-RateLimit-Remaining", "", "X-RateLimit-Reset", ""), raw: []byte(authReq)}); err != nil {
		t.Fatalf("with the global tier off, an answer without X-RateLimit headers was refused: %v", err)
	}
}

// TestOpenAPIDocumentServedE2E: GET /api/v1/openapi.json serves
// apidoc/openapi.yaml as JSON, loadable by an OpenAPI tool as it comes, under
// the global tier (its rate-limit headers), and refuses other methods.
func TestOpenAPIDocumentServedE2E(t *testing.T) {
	t.Parallel()
	h := startHerald(t, "sqlite", nil)
	want, err := apidoc.JSON()
	if err != nil {
		t.Fatal(err)
	}
	status, hdr, raw := h.do(t, http.MethodGet, "/api/v1/openapi.json", nil)
	if status != http.StatusOK || string(raw) != string(want)+"\n" {
		t.Fatalf("GET /api/v1/openapi.json: %d, %d bytes, want 200 and apidoc/openapi.yaml as JSON (%d bytes)", status, len(raw), len(want)+1)
	}
	if ct := hdr.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	if hdr.Get("X-RateLimit-Limit") != "100" {
		t.Errorf("X-RateLimit-Limit %q, want the global tier's 100", hdr.Get("X-RateLimit-Limit"))
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(raw)
	if err != nil {
		t.Fatalf("the served document does not load: %v", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		t.Fatalf("the served document is not valid: %v", err)
	}
	if status, hdr, _ := h.do(t, http.MethodPost, "/api/v1/openapi.json", nil); status != http.StatusMethodNotAllowed || hdr.Get("Allow") != "GET" {
		t.Errorf("POST /api/v1/openapi.json: %d, Allow %q; want 405 and GET", status, hdr.Get("Allow"))
	}
}

// TestIndexE2E: GET / is the envelope of where everything is, and every
// path it names answers.
func TestIndexE2E(t *testing.T) {
	t.Parallel()
	h := startHerald(t, "sqlite", nil)
	status, env, _ := h.rest(t, http.MethodGet, "/", nil)
	if status != http.StatusOK || env["success"] != true {
		t.Fatalf("GET /: %d %v", status, env)
	}
	data, _ := env["data"].(map[string]any)
	for _, key := range []string{"openapi", "jwks", "health"} {
		path, _ := data[key].(string)
		if status, _, _ := h.do(t, http.MethodGet, path, nil); status != http.StatusOK {
			t.Errorf("GET / names %s %q, which answers %d", key, path, status)
		}
	}
	if status, _, _ := h.do(t, http.MethodGet, "/nowhere", nil); status != http.StatusNotFound {
		t.Errorf("GET /nowhere: %d, want 404 (only / itself is the index)", status)
	}
	if data["console"] != "/console/" {
		t.Errorf("GET / names the console as %v, want /console/", data["console"])
	}
}

// TestConsoleSwitchE2E: the console is served by default, with its
// security headers, and HERALD_CONSOLE=off takes it (and its mention in
// the index) away.
func TestConsoleSwitchE2E(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		value  string
		status int
	}{{"", http.StatusOK}, {"off", http.StatusNotFound}} {
		h := startHerald(t, "sqlite", map[string]string{"HERALD_CONSOLE": c.value})
		status, header, body := h.do(t, http.MethodGet, "/console/", nil)
		if status != c.status {
			t.Fatalf("HERALD_CONSOLE=%q: GET /console/ answered %d, want %d", c.value, status, c.status)
		}
		if c.status == http.StatusOK && (!strings.Contains(header.Get("Content-Security-Policy"), "frame-ancestors 'none'") || !strings.Contains(string(body), `src="app.js"`)) {
			t.Fatalf("GET /console/: headers %v, body %.200s", header, body)
		}
		_, env, _ := h.rest(t, http.MethodGet, "/", nil)
		_, named := env["data"].(map[string]any)["console"]
		if named != (c.status == http.StatusOK) {
			t.Errorf("HERALD_CONSOLE=%q: the index names the console: %v", c.value, named)
		}
	}
}
