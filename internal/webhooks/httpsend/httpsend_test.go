package httpsend

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/webhooks"
)

func request(url string) webhooks.Request {
	return webhooks.Request{URL: url, Headers: webhooks.Headers{ID: "msg_1", Timestamp: "1700000000", Signature: "v1,abc"}, Body: []byte(`{"type":"webhook.ping"}`)}
}

func TestSendHeadersAndAnswers(t *testing.T) {
	var redirected atomic.Bool
	var got http.Header
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/target", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/target", func(w http.ResponseWriter, r *http.Request) { redirected.Store(true) })
	mux.HandleFunc("/busy", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "120")
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	mux.HandleFunc("/huge", func(w http.ResponseWriter, r *http.Request) {
		// Far more than is read: the sender stops at 64 KiB.
		chunk := strings.Repeat("x", 1<<20)
		for range 64 {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	s := New(true)
	ctx := context.Background()

	res, err := s.Send(ctx, request(srv.URL+"/ok"))
	if err != nil || res.StatusCode != http.StatusNoContent {
		t.Fatalf("%+v %v", res, err)
	}
	if got.Get("webhook-id") != "msg_1" || got.Get("webhook-timestamp") != "1700000000" || got.Get("webhook-signature") != "v1,abc" || got.Get("Content-Type") != "application/json" {
		t.Fatalf("headers %v", got)
	}
	if res, err := s.Send(ctx, request(srv.URL+"/redirect")); err != nil || res.StatusCode != http.StatusTemporaryRedirect || redirected.Load() {
		t.Fatalf("redirect: %+v %v, followed %v", res, err, redirected.Load())
	}
	if res, err := s.Send(ctx, request(srv.URL+"/busy")); err != nil || res.StatusCode != 503 || res.RetryAfter != 120*time.Second {
		t.Fatalf("busy: %+v %v", res, err)
	}
	if res, err := s.Send(ctx, request(srv.URL+"/huge")); err != nil || res.StatusCode != 200 {
		t.Fatalf("huge: %+v %v", res, err)
	}
}

// Without ALLOW_PRIVATE the dial itself refuses a loopback address, so a
// name that resolves there later is refused too.
func TestSendRefusesPrivateAddressesAtDial(t *testing.T) {
	var hit atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hit.Store(true) }))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":"):]
	for _, url := range []string{srv.URL, "http://localhost" + port} {
		_, err := New(false).Send(context.Background(), request(url))
		if err == nil || !strings.Contains(err.Error(), "not a public address") {
			t.Errorf("%s: %v", url, err)
		}
	}
	if hit.Load() {
		t.Fatal("the receiver was reached")
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"": 0, "30": 30 * time.Second, "0": 0, "-5": 0, "soon": 0,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
		now.Add(-time.Hour).Format(http.TimeFormat):       0,
	} {
		if got := retryAfter(v, now); got != want {
			t.Errorf("retryAfter(%q) = %v, want %v", v, got, want)
		}
	}
}
