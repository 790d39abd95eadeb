package apns_test

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/push"
	"github.com/herald-vpn/herald/internal/push/apns"
	"github.com/herald-vpn/herald/internal/push/apns/apnstest"
	"github.com/herald-vpn/herald/internal/testsupport"
)

const (
	keyID  = "KEY1234567"
	teamID = "TEAM123456"
)

func newClient(t testing.TB, srv *apnstest.Server) *apns.Client {
	t.Helper()
	c, err := apns.New(srv.NewKey(keyID, teamID), keyID, teamID, srv.Topic, srv.URL, apns.WithTLSConfig(srv.TLSConfig()))
	if err != nil {
		t.Fatalf("apns.New: %v", err)
	}
	return c
}

func ios(token string) push.Target { return push.Target{Platform: push.PlatformIOS, Token: token} }

func TestSendAlert(t *testing.T) {
	srv := apnstest.NewServer(t)
	c := newClient(t, srv)
	n := push.Notification{Title: "Hello", Body: "World", Data: map[string]any{
		"vpn":    "eu-1",
		"count":  3,
		"nested": map[string]any{"a": []any{1, true}},
		"aps":    "must not clobber aps",
	}}
	if err := c.Send(t.Context(), ios("tok-1"), n); err != nil {
		t.Fatalf("Send: %v", err)
	}
	msgs := srv.MessagesFor("tok-1")
	if len(msgs) != 1 {
		t.Fatalf("got %d messages, want 1", len(msgs))
	}
	m := msgs[0]
	if m.Title != "Hello" || m.Body != "World" || m.Topic != srv.Topic || m.PushType != "alert" || m.Priority != 10 || m.ApnsID == "" {
		t.Fatalf("message = %+v", m)
	}
	// Data sits at the top level with JSON types kept.
	want := `map[aps:map[alert:map[body:World title:Hello]] count:3 nested:map[a:[1 true]] vpn:eu-1]`
	if got := fmt.Sprint(m.Payload); got != want {
		t.Fatalf("payload = %s\nwant      %s", got, want)
	}
}

func TestSendBackground(t *testing.T) {
	srv := apnstest.NewServer(t)
	c := newClient(t, srv)
	if err := c.Send(t.Context(), ios("tok"), push.Notification{Data: map[string]any{"sync": true}}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	m := srv.MessagesFor("tok")[0]
	if m.PushType != "background" || m.Priority != 5 || fmt.Sprint(m.Payload) != "map[aps:map[content-available:1] sync:true]" {
		t.Fatalf("message = %+v", m)
	}
}

func TestErrorClassification(t *testing.T) {
	tests := []struct {
		name       string
		fault      apnstest.Fault
		wantKind   push.Kind
		wantStatus int
	}{
		{"BadDeviceToken", apnstest.BadDeviceToken(), push.DeadToken, 400},
		{"DeviceTokenNotForTopic", apnstest.DeviceTokenNotForTopic(), push.DeadToken, 400},
		{"Unregistered", apnstest.Unregistered(), push.DeadToken, 410},
		{"ExpiredToken", apnstest.ExpiredToken(), push.DeadToken, 410},
		{"TooManyRequests", apnstest.TooManyRequests(), push.Retryable, 429},
		{"InternalServerError", apnstest.InternalServerError(), push.Retryable, 500},
		{"ServiceUnavailable", apnstest.ServiceUnavailable(), push.Retryable, 503},
		{"Shutdown", apnstest.Shutdown(), push.Retryable, 503},
		{"InvalidProviderToken", apnstest.InvalidProviderToken(), push.Fatal, 403},
		{"ExpiredProviderToken", apnstest.ExpiredProviderToken(), push.Fatal, 403},
		{"MissingProviderToken", apnstest.Fault{Status: 403, Reason: "MissingProviderToken"}, push.Fatal, 403},
		{"BadTopic", apnstest.Fault{Status: 400, Reason: "BadTopic"}, push.Fatal, 400},
		{"TopicDisallowed", apnstest.Fault{Status: 400, Reason: "TopicDisallowed"}, push.Fatal, 400},
		{"Forbidden", apnstest.Fault{Status: 403, Reason: "Forbidden"}, push.Fatal, 403},
		{"PayloadTooLarge", apnstest.Fault{Status: 413, Reason: "PayloadTooLarge"}, push.Other, 413},
	}
	srv := apnstest.NewServer(t)
	c := newClient(t, srv)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			token := "tok-" + strconv.Itoa(i)
			srv.Fail(token, -1, tt.fault)
			err := c.Send(t.Context(), ios(token), push.Notification{Title: "t"})
			var pe *push.Error
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want *push.Error", err)
			}
			if pe.Kind != tt.wantKind || pe.Reason != tt.fault.Reason || pe.Status != tt.wantStatus || pe.Provider != "apns" {
				t.Fatalf("got %s/%s/%d/%s, want %s/%s/%d/apns", pe.Kind, pe.Reason, pe.Status, pe.Provider, tt.wantKind, tt.fault.Reason, tt.wantStatus)
			}
		})
	}
}

// TestServerChecks covers answers the fake derives from the request itself.
func TestServerChecks(t *testing.T) {
	srv := apnstest.NewServer(t)
	goodKey := srv.NewKey(keyID, teamID)
	unknownKey, _, err := apnstest.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		key        []byte
		keyID      string
		teamID     string
		topic      string
		wantReason string
	}{
		{"key not registered", unknownKey, "OTHERKEY00", teamID, srv.Topic, "InvalidProviderToken"},
		{"wrong key for kid", unknownKey, keyID, teamID, srv.Topic, "InvalidProviderToken"},
		{"wrong team", goodKey, keyID, "OTHERTEAM0", srv.Topic, "InvalidProviderToken"},
		{"wrong topic", goodKey, keyID, teamID, "com.other.app", "TopicDisallowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := apns.New(tt.key, tt.keyID, tt.teamID, tt.topic, srv.URL, apns.WithTLSConfig(srv.TLSConfig()))
			if err != nil {
				t.Fatal(err)
			}
			err = c.Send(t.Context(), ios("tok"), push.Notification{Title: "t"})
			var pe *push.Error
			if !errors.As(err, &pe) || pe.Kind != push.Fatal || pe.Reason != tt.wantReason {
				t.Fatalf("err = %v, want Fatal %s", err, tt.wantReason)
			}
		})
	}
}

func TestRetryThenSuccess(t *testing.T) {
	srv := apnstest.NewServer(t)
	c := newClient(t, srv)
	srv.Fail("tok", 2, apnstest.TooManyRequests())
	rec := &testsupport.Sleeper{}
	pol := push.RetryPolicy{Attempts: 3, BaseBackoff: 50 * time.Millisecond, MaxBackoff: time.Second, Sleep: rec.Sleep}
	if err := push.SendWithRetry(t.Context(), c, ios("tok"), push.Notification{Title: "t"}, pol); err != nil {
		t.Fatalf("SendWithRetry: %v", err)
	}
	if got, want := fmt.Sprint(rec.Sleeps()), fmt.Sprint([]time.Duration{50 * time.Millisecond, 100 * time.Millisecond}); got != want {
		t.Errorf("waits = %s, want %s", got, want)
	}
	if a, d := srv.Attempts("tok"), srv.Delivered("tok"); a != 3 || d != 1 {
		t.Errorf("attempts=%d delivered=%d, want 3 and 1", a, d)
	}
}

func TestProviderDown(t *testing.T) {
	srv := apnstest.NewServer(t)
	c := newClient(t, srv)
	srv.SetDown(true)
	rec := &testsupport.Sleeper{}
	err := push.SendWithRetry(t.Context(), c, ios("tok"), push.Notification{Title: "t"},
		push.RetryPolicy{Attempts: 3, BaseBackoff: time.Millisecond, Sleep: rec.Sleep})
	if kind, _ := push.Classify(err); kind != push.Retryable {
		t.Fatalf("err = %v, want Retryable", err)
	}
	if got := srv.Attempts("tok"); got != 3 || len(rec.Sleeps()) != 2 {
		t.Fatalf("attempts=%d waits=%v, want 3 attempts, 2 waits", got, rec.Sleeps())
	}
}

func TestNoRetryOnDeadOrFatal(t *testing.T) {
	tests := []struct {
		fault apnstest.Fault
		want  push.Kind
	}{
		{apnstest.InvalidProviderToken(), push.Fatal},
		{apnstest.Unregistered(), push.DeadToken},
		{apnstest.BadDeviceToken(), push.DeadToken},
	}
	srv := apnstest.NewServer(t)
	c := newClient(t, srv)
	for i, tt := range tests {
		t.Run(tt.fault.Reason, func(t *testing.T) {
			token := "tok-" + strconv.Itoa(i)
			srv.Fail(token, -1, tt.fault)
			rec := &testsupport.Sleeper{}
			err := push.SendWithRetry(t.Context(), c, ios(token), push.Notification{Title: "t"}, push.RetryPolicy{Attempts: 5, Sleep: rec.Sleep})
			if kind, _ := push.Classify(err); kind != tt.want {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if got := srv.Attempts(token); got != 1 || len(rec.Sleeps()) != 0 {
				t.Fatalf("attempts=%d waits=%v", got, rec.Sleeps())
			}
		})
	}
}

func TestUntrustedCertificateIsFatal(t *testing.T) {
	srv := apnstest.NewServer(t)
	c, err := apns.New(srv.NewKey(keyID, teamID), keyID, teamID, srv.Topic, srv.URL) // system roots
	if err != nil {
		t.Fatal(err)
	}
	err = c.Send(t.Context(), ios("tok"), push.Notification{Title: "t"})
	var pe *push.Error
	if !errors.As(err, &pe) || pe.Kind != push.Fatal || pe.Reason != "TLS" {
		t.Fatalf("err = %v, want Fatal TLS", err)
	}
}

func TestConcurrentSends(t *testing.T) {
	const n = 1000
	srv := apnstest.NewServer(t)
	c := newClient(t, srv)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := c.Send(t.Context(), ios("tok-"+strconv.Itoa(i)), push.Notification{Title: "t"}); err != nil {
				t.Errorf("send %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if got := srv.TotalDelivered(); got != n {
		t.Fatalf("delivered %d, want %d", got, n)
	}
	// 1000 in flight fit in one HTTP/2 connection (1000 streams), once the
	// server's SETTINGS say so: until they arrive Go's client allows 100
	// streams on a connection and dials another for the 101st, so on a
	// busy machine, where the 1000 sends start before the SETTINGS come,
	// up to n/100 connections are right (CI saw 4). A dial per request
	// (1000) is what this catches.
	if got := srv.Connections(); got > n/100 {
		t.Errorf("connections = %d, want HTTP/2 multiplexing (at most %d before the server's SETTINGS arrive)", got, n/100)
	}
}

func TestNewErrors(t *testing.T) {
	p8, _, err := apnstest.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name                           string
		key                            []byte
		keyID, teamID, topic, endpoint string
	}{
		{"not pem", []byte("nope"), keyID, teamID, "t", ""},
		{"missing key id", p8, "", teamID, "t", ""},
		{"missing team", p8, keyID, "", "t", ""},
		{"missing topic", p8, keyID, teamID, "", ""},
		{"bad endpoint", p8, keyID, teamID, "t", "ftp://x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := apns.New(tt.key, tt.keyID, tt.teamID, tt.topic, tt.endpoint); err == nil {
				t.Fatal("New succeeded, want error")
			}
		})
	}
}

// TestConcurrentFirstRequestsShareOneDial fires requests at a fake no
// connection has reached yet, all at once: they must share one HTTP/2
// connection rather than each dial one.
func TestConcurrentFirstRequestsShareOneDial(t *testing.T) {
	srv := apnstest.NewServer(t)
	hc := apns.NewHTTPClient(srv.TLSConfig())
	defer hc.CloseIdleConnections()
	const n = 100
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			<-start
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/", nil)
			if err != nil {
				t.Error(err)
				return
			}
			resp, err := hc.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			if resp.Proto != "HTTP/2.0" {
				t.Errorf("proto = %s, want HTTP/2.0", resp.Proto)
			}
		})
	}
	close(start)
	wg.Wait()
	if got := srv.Connections(); got != 1 {
		t.Errorf("connections = %d, want the %d first requests on one", got, n)
	}
}
