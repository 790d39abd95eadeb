// Package pwnedtest is a Pwned Passwords range server for tests, speaking
// the real API: GET /range/{5 hex}, SUFFIX:COUNT lines, decoy lines with
// count 0 when the request asks for Add-Padding.
package pwnedtest

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
)

// Server is a range server that knows the breached passwords it is given.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	breached map[string]int // upper-case SHA-1 hex → count
	hang     chan struct{}  // closed to release hanging requests
	hanging  atomic.Bool
	requests atomic.Int64
	padded   atomic.Int64
	prefixes []string
}

// New starts a server; Close it when done.
func New(breached ...string) *Server {
	s := &Server{breached: map[string]int{}, hang: make(chan struct{})}
	for _, p := range breached {
		s.Add(p, 42)
	}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Close releases any hanging request and stops the server.
func (s *Server) Close() {
	s.Hang(false)
	s.Server.Close()
}

// Add records plain as seen count times.
func (s *Server) Add(plain string, count int) {
	sum := sha1.Sum([]byte(plain))
	s.mu.Lock()
	s.breached[strings.ToUpper(hex.EncodeToString(sum[:]))] = count
	s.mu.Unlock()
}

// Hang makes every range request wait until Hang(false) or Close (a server
// that has gone silent).
func (s *Server) Hang(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if on && !s.hanging.Load() {
		s.hang = make(chan struct{})
		s.hanging.Store(true)
	}
	if !on && s.hanging.Load() {
		close(s.hang)
		s.hanging.Store(false)
	}
}

// Requests is how many range requests arrived; Padded how many asked for
// padding; Prefixes the prefixes asked for, in order.
func (s *Server) Requests() int64 { return s.requests.Load() }
func (s *Server) Padded() int64   { return s.padded.Load() }
func (s *Server) Prefixes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.prefixes...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	prefix, ok := strings.CutPrefix(r.URL.Path, "/range/")
	if r.Method != http.MethodGet || !ok || len(prefix) != 5 {
		http.Error(w, "The hash prefix was not in a valid format", http.StatusBadRequest)
		return
	}
	s.requests.Add(1)
	s.mu.Lock()
	s.prefixes = append(s.prefixes, prefix)
	hang := s.hang
	hanging := s.hanging.Load()
	s.mu.Unlock()
	if hanging {
		select {
		case <-hang:
		case <-r.Context().Done():
			return
		}
	}
	prefix = strings.ToUpper(prefix)
	w.Header().Set("Content-Type", "text/plain")
	s.mu.Lock()
	for digest, n := range s.breached {
		if strings.HasPrefix(digest, prefix) {
			fmt.Fprintf(w, "%s:%d\r\n", digest[5:], n)
		}
	}
	s.mu.Unlock()
	// Real answers hold hundreds of suffixes; a few unrelated ones (and,
	// padded, decoys with count 0) make the parser's job real.
	for i := range 3 {
		fmt.Fprintf(w, "%035X:%d\r\n", i+1, i+1)
	}
	if r.Header.Get("Add-Padding") == "true" {
		s.padded.Add(1)
		for i := range 5 {
			fmt.Fprintf(w, "%035X:0\r\n", 0xFFFF0+i)
		}
	}
}
