package console_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/console"
)

func TestHandler(t *testing.T) {
	h := console.Handler()
	cases := []struct {
		method, path string
		status       int
		contentType  string // prefix; "" not checked
		location     string
	}{
		{"GET", "/console", http.StatusMovedPermanently, "", "/console/"},
		{"GET", "/console/", http.StatusOK, "text/html", ""},
		{"GET", "/console/app.js", http.StatusOK, "text/javascript", ""},
		{"GET", "/console/style.css", http.StatusOK, "text/css", ""},
		{"HEAD", "/console/api.js", http.StatusOK, "text/javascript", ""},
		{"GET", "/console/nothing.js", http.StatusNotFound, "", ""},
		{"POST", "/console/", http.StatusMethodNotAllowed, "", ""},
	}
	for _, c := range cases {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil))
		if rec.Code != c.status {
			t.Errorf("%s %s: status %d, want %d", c.method, c.path, rec.Code, c.status)
		}
		if ct := rec.Header().Get("Content-Type"); c.contentType != "" && !strings.HasPrefix(ct, c.contentType) {
			t.Errorf("%s %s: Content-Type %q, want %s…", c.method, c.path, ct, c.contentType)
		}
		if c.location != "" && rec.Header().Get("Location") != c.location {
			t.Errorf("%s %s: Location %q, want %q", c.method, c.path, rec.Header().Get("Location"), c.location)
		}
		csp := rec.Header().Get("Content-Security-Policy")
		for _, want := range []string{"script-src 'self'", "frame-ancestors 'none'", "default-src 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s %s: CSP %q lacks %q", c.method, c.path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("%s %s: CSP %q allows inline code", c.method, c.path, csp)
		}
		if rec.Header().Get("X-Content-Type-Options") != "nosniff" || rec.Header().Get("Referrer-Policy") == "" {
			t.Errorf("%s %s: headers %v", c.method, c.path, rec.Header())
		}
	}
}

// TestNoInlineCode: the page works under the CSP only if no HTML file has
// an inline script, style attribute or event handler.
func TestNoInlineCode(t *testing.T) {
	rec := httptest.NewRecorder()
	console.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/console/", nil))
	body := rec.Body.String()
	for _, bad := range []string{"<script>", " style=", " onclick=", " onload=", " onsubmit=", "javascript:"} {
		if strings.Contains(body, bad) {
			t.Errorf("index.html contains %q, which the CSP blocks", bad)
		}
	}
}
