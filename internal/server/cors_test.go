package server

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

const testOrigin = "https://app.example.com"

// corsCall sends one request through p.wrap(methods, next) and reports
// the answer and whether next ran.
func corsCall(t *testing.T, p *corsPolicy, methods []string, method string, hdr map[string]string) (*httptest.ResponseRecorder, bool) {
	t.Helper()
	reached := false
	h := p.wrap(methods, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		reached = true
		w.WriteHeader(http.StatusUnauthorized)
	}))
	r := httptest.NewRequest(method, "/api/v1/devices", nil)
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w, reached
}

func preflightHeaders(origin, method, headers string) map[string]string {
	h := map[string]string{"Origin": origin, "Access-Control-Request-Method": method}
	if headers != "" {
		h["Access-Control-Request-Headers"] = headers
	}
	return h
}

// Without HERALD_CORS_ORIGINS nothing changes: OPTIONS reaches the route
// (which refuses it) and no answer carries a CORS header.
func TestCORSOff(t *testing.T) {
	p := newCORSPolicy(nil)
	if p != nil {
		t.Fatal("a policy without origins")
	}
	for _, method := range []string{http.MethodOptions, http.MethodGet} {
		w, reached := corsCall(t, p, []string{"GET"}, method, preflightHeaders(testOrigin, "GET", "authorization"))
		if !reached {
			t.Errorf("%s did not reach the route", method)
		}
		for k := range w.Header() {
			if k == "Vary" || len(k) > 15 && k[:15] == "Access-Control-" {
				t.Errorf("%s: header %s without CORS", method, k)
			}
		}
	}
}

func TestCORSPreflight(t *testing.T) {
	p := newCORSPolicy([]string{testOrigin, "http://127.0.0.1:5173"})
	methods := []string{"GET", "POST"}

	w, reached := corsCall(t, p, methods, http.MethodOptions, preflightHeaders(testOrigin, "POST", "authorization,content-type,idempotency-key,x-api-key,x-request-id"))
	if reached || w.Code != http.StatusNoContent {
		t.Fatalf("allowed preflight: status %d, reached the route %v; want 204 answered in front", w.Code, reached)
	}
	want := map[string]string{
		"Access-Control-Allow-Origin":  testOrigin,
		"Access-Control-Allow-Methods": "GET, POST",
		"Access-Control-Allow-Headers": "authorization,content-type,idempotency-key,x-api-key,x-request-id",
		"Access-Control-Max-Age":       "600",
	}
	for k, v := range want {
		if got := w.Header().Get(k); got != v {
			t.Errorf("allowed preflight: %s %q, want %q", k, got, v)
		}
	}
	if got := w.Header().Get("Access-Control-Allow-Credentials"); got != "" {
		t.Errorf("Access-Control-Allow-Credentials %q, want none", got)
	}
	if got := w.Header().Get("Vary"); got != "Origin, Access-Control-Request-Method, Access-Control-Request-Headers" {
		t.Errorf("preflight Vary %q", got)
	}

	// Refused preflights are answered in front too, without any
	// Access-Control-Allow-* header: the browser then sends nothing.
	for name, hdr := range map[string]map[string]string{
		"disallowed origin":               preflightHeaders("https://evil.example.com", "POST", "content-type"),
		"origin differing in case":        preflightHeaders("https://APP.example.com", "POST", ""),
		"method the route lacks":          preflightHeaders(testOrigin, "DELETE", "authorization"),
		"header not allowed":              preflightHeaders(testOrigin, "POST", "authorization,x-custom"),
		"no origin (not a browser)":       {"Access-Control-Request-Method": "POST"},
		"origin with a default port":      preflightHeaders("https://app.example.com:443", "GET", ""),
		"origin extending an allowed one": preflightHeaders(testOrigin+".evil.io", "POST", "authorization"),
		"allowed origin as a prefix":      preflightHeaders("https://app.example.co", "POST", "authorization"),
		"allowed origin with a path":      preflightHeaders(testOrigin+"/x", "POST", "authorization"),
	} {
		w, reached := corsCall(t, p, methods, http.MethodOptions, hdr)
		if reached || w.Code != http.StatusNoContent {
			t.Errorf("%s: status %d, reached the route %v; want 204 answered in front", name, w.Code, reached)
		}
		for _, k := range []string{"Access-Control-Allow-Origin", "Access-Control-Allow-Methods", "Access-Control-Allow-Headers", "Access-Control-Max-Age", "Access-Control-Expose-Headers"} {
			if got := w.Header().Get(k); got != "" {
				t.Errorf("%s: %s %q, want none", name, k, got)
			}
		}
	}

	// OPTIONS without Access-Control-Request-Method is no preflight: the
	// route answers it (with its 405).
	if _, reached := corsCall(t, p, methods, http.MethodOptions, map[string]string{"Origin": testOrigin}); !reached {
		t.Error("a plain OPTIONS was answered as a preflight")
	}
}

func TestCORSActualRequest(t *testing.T) {
	p := newCORSPolicy([]string{testOrigin})
	// The route's own answer (401 here), for its methods and others (a
	// 405 must be readable too).
	for _, method := range []string{"GET", "DELETE"} {
		w, reached := corsCall(t, p, []string{"GET"}, method, map[string]string{"Origin": testOrigin})
		if !reached || w.Code != http.StatusUnauthorized {
			t.Fatalf("%s: status %d, reached %v", method, w.Code, reached)
		}
		if got := w.Header().Get("Access-Control-Allow-Origin"); got != testOrigin {
			t.Errorf("%s: Access-Control-Allow-Origin %q, want %q", method, got, testOrigin)
		}
		if got := w.Header().Get("Access-Control-Expose-Headers"); got != "X-Ratelimit-Limit, X-Ratelimit-Remaining, X-Ratelimit-Reset, Retry-After, X-Request-Id" {
			t.Errorf("%s: Access-Control-Expose-Headers %q", method, got)
		}
		if got := w.Header().Get("Vary"); got != "Origin" {
			t.Errorf("%s: Vary %q, want Origin", method, got)
		}
	}
	// Another origin, or none, is served without CORS headers (but with
	// Vary: Origin, since the answer depends on it).
	for _, hdr := range []map[string]string{{"Origin": "https://evil.example.com"}, {"Origin": testOrigin + ".evil.io"}, {"Origin": testOrigin + ":8443"}, nil} {
		w, reached := corsCall(t, p, []string{"GET"}, "GET", hdr)
		if !reached || w.Code != http.StatusUnauthorized {
			t.Fatalf("%v: status %d, reached %v", hdr, w.Code, reached)
		}
		if got := w.Header().Get("Access-Control-Allow-Origin") + w.Header().Get("Access-Control-Expose-Headers"); got != "" {
			t.Errorf("%v: CORS headers %q, want none", hdr, got)
		}
		if got := w.Header().Get("Vary"); got != "Origin" {
			t.Errorf("%v: Vary %q, want Origin", hdr, got)
		}
	}
}

// "*" allows every origin, echoing it (never credentials).
func TestCORSAnyOrigin(t *testing.T) {
	p := newCORSPolicy([]string{"*"})
	for _, origin := range []string{testOrigin, "http://localhost:3000"} {
		w, _ := corsCall(t, p, []string{"GET"}, http.MethodOptions, preflightHeaders(origin, "GET", "authorization"))
		if got := w.Header().Get("Access-Control-Allow-Origin"); w.Code != http.StatusNoContent || got != origin {
			t.Errorf("preflight from %s: %d, Access-Control-Allow-Origin %q", origin, w.Code, got)
		}
		w, _ = corsCall(t, p, []string{"GET"}, "GET", map[string]string{"Origin": origin})
		if got := w.Header().Get("Access-Control-Allow-Origin"); got != origin {
			t.Errorf("GET from %s: Access-Control-Allow-Origin %q", origin, got)
		}
		if got := w.Header().Get("Access-Control-Allow-Credentials"); got != "" {
			t.Errorf("Access-Control-Allow-Credentials %q, want none", got)
		}
	}
}
