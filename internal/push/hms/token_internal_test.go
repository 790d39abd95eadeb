package hms

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/push"
)

// A token endpoint answering a lifetime too long for a time.Duration still
// gives a token that is kept, not one renewed at every send.
func TestTokenLifetimeCapped(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		fmt.Fprint(w, `{"access_token":"a","expires_in":9000000000000000,"token_type":"Bearer"}`)
	}))
	defer srv.Close()
	s := &tokenSource{httpClient: srv.Client(), url: srv.URL, clientID: "1", clientSecret: "s", timeout: time.Second, now: time.Now}
	for range 3 {
		if tok, err := s.get(t.Context(), ""); err != nil || tok != "a" {
			t.Fatalf("get = %q, %v", tok, err)
		}
	}
	if n := requests.Load(); n != 1 {
		t.Fatalf("%d token requests, want 1", n)
	}
}

// A token request that takes longer than the fetch's own time limit is a
// transient failure, not a cancellation.
func TestTokenFetchTimeoutRetryable(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block }))
	defer srv.Close()
	defer close(block)
	s := &tokenSource{httpClient: srv.Client(), url: srv.URL, clientID: "1", clientSecret: "s", timeout: 50 * time.Millisecond, now: time.Now}
	_, err := s.get(t.Context(), "")
	pe, ok := errors.AsType[*push.Error](err)
	if !ok || pe.Kind != push.Retryable || pe.Reason != "TOKEN_ENDPOINT" {
		t.Fatalf("got %v", err)
	}
}
