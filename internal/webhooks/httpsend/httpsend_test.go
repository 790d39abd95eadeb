package httpsend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
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
	s := New(Options{Policy: webhooks.AddressPolicy{AllowPrivate: true}})
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
// name that resolves there later is refused too; the error is the class
// unreachable, naming neither the URL nor the address.
func TestSendRefusesPrivateAddressesAtDial(t *testing.T) {
	var hit atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hit.Store(true) }))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":"):]
	s := New(Options{Policy: webhooks.AddressPolicy{AllowInsecure: true, Ports: []uint16{portOf(t, srv.URL)}}})
	for _, url := range []string{srv.URL, "http://localhost" + port} {
		_, err := s.Send(context.Background(), request(url+"/hook?token=secret"))
		var se *webhooks.SendError
		if !errors.As(err, &se) || se.Class != webhooks.ErrorUnreachable || se.Reason != "not a public address" || strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "127.0.0.1") {
			t.Errorf("%s: %v", url, err)
		}
	}
	if hit.Load() {
		t.Fatal("the receiver was reached")
	}
}

// zonedResolver answers every name with one address, zoned or not.
type zonedResolver struct{ addr netip.Addr }

func (r zonedResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{r.addr}, nil
}

// A resolver (a hosts file can) that answers a zoned loopback address is
// refused at dial time, even with ALLOW_PRIVATE, which never admits a
// zone: a zoned address is in no prefix, and the old deny-list let it by.
func TestSendRefusesZonedAddressesAtDial(t *testing.T) {
	var hit atomic.Int32
	l, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hit.Add(1) }))
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	defer srv.Close()
	port := l.Addr().(*net.TCPAddr).Port
	loIndex := "1"
	if ifs, err := net.Interfaces(); err == nil {
		for _, i := range ifs {
			if i.Flags&net.FlagLoopback != 0 {
				loIndex = strconv.Itoa(i.Index)
			}
		}
	}
	for _, zone := range []string{"lo", loIndex} {
		for _, private := range []bool{false, true} {
			resolver := zonedResolver{netip.MustParseAddr("::1%" + zone)}
			s := New(Options{Policy: webhooks.AddressPolicy{AllowPrivate: private, AllowInsecure: true, Ports: []uint16{uint16(port)}}, Resolver: resolver})
			_, err := s.Send(context.Background(), request(fmt.Sprintf("http://rebound.example:%d/hook", port)))
			var se *webhooks.SendError
			if !errors.As(err, &se) || se.Class != webhooks.ErrorUnreachable {
				t.Errorf("zone %s, private %v: %v", zone, private, err)
			}
		}
	}
	if n := hit.Load(); n != 0 {
		t.Fatalf("the receiver on [::1] was reached %d times through a zoned address", n)
	}
	// The same receiver is reachable when allowed, so the refusals above
	// are the policy's, not a dead listener's.
	s := New(Options{Policy: webhooks.AddressPolicy{AllowPrivate: true}, Resolver: zonedResolver{netip.MustParseAddr("::1")}})
	if res, err := s.Send(context.Background(), request(fmt.Sprintf("http://rebound.example:%d/hook", port))); err != nil || res.StatusCode != 200 || hit.Load() != 1 {
		t.Fatalf("unzoned, private allowed: %+v %v", res, err)
	}
}

func portOf(t *testing.T, raw string) uint16 {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	return uint16(n)
}

// Each failure is its class: refused, a receiver that hangs up, one that
// answers too late, one that speaks TLS with a certificate not trusted.
func TestSendErrorClasses(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	defer slow.Close()
	defer close(release)
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer tlsSrv.Close()
	hangup, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hangup.Close()
	go func() {
		for {
			c, err := hangup.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + closed.Addr().String()
	closed.Close()
	s := New(Options{Policy: webhooks.AddressPolicy{AllowPrivate: true}})
	for _, c := range []struct {
		url, class string
		ctx        func() (context.Context, context.CancelFunc)
	}{
		{closedURL, webhooks.ErrorUnreachable, nil},
		{"http://" + hangup.Addr().String(), webhooks.ErrorUnreachable, nil},
		{slow.URL, webhooks.ErrorTimeout, func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 200*time.Millisecond)
		}},
		{tlsSrv.URL, webhooks.ErrorTLS, nil},
		{"http://no-such-host.invalid", webhooks.ErrorUnreachable, nil},
	} {
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		if c.ctx != nil {
			ctx, cancel = c.ctx()
		}
		_, err := s.Send(ctx, request(c.url))
		cancel()
		var se *webhooks.SendError
		if !errors.As(err, &se) || se.Class != c.class {
			t.Errorf("%s: %v, want class %s", c.url, err, c.class)
		}
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
