// Package captchatest is a fake siteverify endpoint (Turnstile's and
// hCaptcha's protocol): a form POST of secret, response and remoteip,
// answered {"success": ..., "error-codes": [...]}. It records what it got.
package captchatest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
)

// Good is the token the fake accepts; every other token is refused with
// invalid-input-response.
const Good = "good-captcha-token"

// Request is one verification the fake received.
type Request struct {
	Secret, Response, RemoteIP, ContentType string
}

// Server is the fake endpoint.
type Server struct {
	*httptest.Server
	secret string

	mu   sync.Mutex
	got  []Request
	down bool
}

// New starts a fake that knows secret.
func New(secret string) *Server {
	s := &Server{secret: secret}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Down makes the fake answer 502 (on) or answer again (off).
func (s *Server) Down(on bool) {
	s.mu.Lock()
	s.down = on
	s.mu.Unlock()
}

// Requests returns the verifications received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	req := Request{Secret: r.PostForm.Get("secret"), Response: r.PostForm.Get("response"), RemoteIP: r.PostForm.Get("remoteip"), ContentType: r.Header.Get("Content-Type")}
	s.mu.Lock()
	s.got = append(s.got, req)
	down := s.down
	s.mu.Unlock()
	if down {
		http.Error(w, "bad gateway", http.StatusBadGateway)
		return
	}
	var codes []string
	switch {
	case req.Secret == "":
		codes = append(codes, "missing-input-secret")
	case req.Secret != s.secret:
		codes = append(codes, "invalid-input-secret")
	}
	switch {
	case req.Response == "":
		codes = append(codes, "missing-input-response")
	case req.Response != Good:
		codes = append(codes, "invalid-input-response")
	}
	w.Header().Set("Content-Type", "application/json")
	out := map[string]any{"success": len(codes) == 0, "error-codes": codes}
	if codes == nil {
		out["error-codes"] = []string{}
		out["challenge_ts"] = "2026-01-01T00:00:00Z"
		out["hostname"] = "example.com"
	}
	_ = json.NewEncoder(w).Encode(out)
}
