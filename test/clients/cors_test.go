package clients

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/testsupport"
)

// chromiumPath is Debian's chromium package's browser, which the browser
// tests drive (.ci/run installs it).
const chromiumPath = "/usr/bin/chromium"

// needChromium skips the test, saying why, without Chromium.
func needChromium(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("browser test not run: %s is missing (apt-get install chromium)", chromiumPath)
	}
}

// pageServer serves the test page (cors_page.js in an HTML page) from an
// origin of its own: a loopback port other than Herald's.
func pageServer(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(`<!doctype html>
<html><head><meta charset="utf-8"><title>Herald from another origin</title></head>
<body><pre id="result">running</pre><script src="/cors_page.js"></script></body></html>
`))
	})
	mux.HandleFunc("GET /cors_page.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		http.ServeFile(w, r, "cors_page.js")
	})
	mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestBrowserCORS runs cors_browser.mjs: headless Chromium opens a page
// served from an origin in HERALD_CORS_ORIGINS, which signs up over
// GraphQL, reads users/me over REST with a token made here, and reads the
// rate-limit headers; the same page from an origin not in the list is
// blocked by the browser. Herald still serves what the blocked page sent
// without a preflight; what needed a preflight never arrives.
func TestBrowserCORS(t *testing.T) {
	needNode(t)
	needChromium(t)
	allowed, blocked := pageServer(t), pageServer(t)
	s := startServer(t, map[string]string{"HERALD_CORS_ORIGINS": allowed.URL})
	token := s.userToken(t, "browser@example.com")

	page := func(srv *httptest.Server, email string) string {
		q := url.Values{"herald": {s.URL}, "token": {token}, "email": {email}}
		return srv.URL + "/?" + q.Encode()
	}
	out := runNode(t, s, "cors_browser.mjs", map[string]string{
		"CHROMIUM":     chromiumPath,
		"ALLOWED_PAGE": page(allowed, "browser-signup@example.com"),
		"BLOCKED_PAGE": page(blocked, "blocked-signup@example.com"),
	})
	t.Logf("cors_browser.mjs:\n%s", out)

	// The allowed page's signup reached Herald: its code email is sent.
	s.SMTP.WaitForMessage(t, "browser-signup@example.com", 20*time.Second)
	// The blocked page's signup was never sent (its preflight got no
	// CORS headers): the address is still free.
	if status, body := s.call(t, http.MethodPost, "/api/v1/auth/register", "", map[string]any{"email": "blocked-signup@example.com", "password": password}); status != http.StatusCreated {
		t.Errorf("register the blocked page's address: %d %v, want 201 (the browser must not have sent its signup)", status, body)
	}
	// Its simple GET was sent and served (401), only not shown to it: the
	// allowed page's one and the blocked page's one. (A request's log line
	// is written once it is answered, so it may trail the answer.)
	testsupport.Eventually(t, 10*time.Second, func() bool { return countLogged(s, "GET", "/api/v1/devices", http.StatusUnauthorized) == 2 },
		"GET /api/v1/devices was not served twice with 401 (once per page)")
}

// countLogged counts the request log lines of method path answered with
// status.
func countLogged(s *server, method, path string, status int) int {
	n := 0
	for _, line := range strings.Split(s.logs.String(), "\n") {
		var l struct {
			Msg, Method, Path string
			Status            int
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "request" && l.Method == method && l.Path == path && l.Status == status {
			n++
		}
	}
	return n
}
