package fcm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/push"
	"github.com/herald-vpn/herald/internal/push/fcm"
	"github.com/herald-vpn/herald/internal/push/fcm/fcmtest"
	"github.com/herald-vpn/herald/internal/testsupport"
)

const project = "herald-test"

// newClient returns a client for srv using the production transport
// settings (fcm.NewHTTPClient), trusting the fake's certificate.
func newClient(t testing.TB, srv *fcmtest.Server) *fcm.Client {
	t.Helper()
	c, err := fcm.New(t.Context(), srv.CredentialsJSON(project), "", srv.URL, fcm.NewHTTPClient(srv.CertPool()))
	if err != nil {
		t.Fatalf("fcm.New: %v", err)
	}
	return c
}

func android(token string) push.Target {
	return push.Target{Platform: push.PlatformAndroid, Token: token}
}

func TestSend(t *testing.T) {
	tests := []struct {
		name      string
		opts      []fcmtest.Option
		wantProto string
	}{
		{"http2 over tls", nil, "HTTP/2.0"},
		{"plain http", []fcmtest.Option{fcmtest.PlainHTTP()}, "HTTP/1.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := fcmtest.NewServer(t, tt.opts...)
			c := newClient(t, srv)
			if c.ProjectID() != project {
				t.Fatalf("ProjectID = %q, want default from credentials %q", c.ProjectID(), project)
			}
			err := c.Send(t.Context(), android("tok-1"), push.Notification{Title: "Hello", Body: "World", Data: map[string]any{"k": "v"}})
			if err != nil {
				t.Fatalf("Send: %v", err)
			}
			msgs := srv.MessagesFor("tok-1")
			if len(msgs) != 1 {
				t.Fatalf("got %d messages, want 1", len(msgs))
			}
			m := msgs[0]
			if m.Proto != tt.wantProto || m.Project != project || !m.HasNotification ||
				m.Title != "Hello" || m.Body != "World" || m.Data["k"] != "v" {
				t.Fatalf("message = %+v", m)
			}
		})
	}
}

// A collapse key replaces a repeat on the device: collapse_key while FCM
// still holds the first message, android.notification.tag once it is
// shown, apns-collapse-id on iOS. A message that shows nothing gets no tag.
func TestCollapseKeyAndTag(t *testing.T) {
	cases := []struct {
		name               string
		n                  push.Notification
		wantCollapse, wTag string
	}{
		{"shown", push.Notification{Title: "t", Body: "b", CollapseKey: "job-1"}, "job-1", "job-1"},
		{"shown with a channel", push.Notification{Body: "b", CollapseKey: "job-2", Options: push.Options{ChannelID: "news"}}, "job-2", "job-2"},
		{"data only", push.Notification{Data: map[string]any{"k": "v"}, CollapseKey: "job-3"}, "job-3", ""},
		{"silent", push.Notification{Title: "t", CollapseKey: "job-4", Options: push.Options{ContentAvailable: true}}, "job-4", ""},
		{"no key", push.Notification{Title: "t"}, "", ""},
	}
	srv := fcmtest.NewServer(t)
	c := newClient(t, srv)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			token := fmt.Sprintf("tok-collapse-%d", i)
			if err := c.Send(t.Context(), android(token), tc.n); err != nil {
				t.Fatalf("Send: %v", err)
			}
			msgs := srv.MessagesFor(token)
			if len(msgs) != 1 {
				t.Fatalf("got %d messages, want 1", len(msgs))
			}
			m := msgs[0]
			if m.CollapseKey != tc.wantCollapse || m.Tag != tc.wTag {
				t.Fatalf("collapse_key %q, tag %q; want %q, %q (message %+v)", m.CollapseKey, m.Tag, tc.wantCollapse, tc.wTag, m.Raw)
			}
			apns, _ := m.Raw["apns"].(map[string]any)
			headers, _ := apns["headers"].(map[string]any)
			if got, _ := headers["apns-collapse-id"].(string); got != tc.wantCollapse {
				t.Fatalf("apns-collapse-id %q, want %q", got, tc.wantCollapse)
			}
		})
	}
}

func TestDataEncoding(t *testing.T) {
	srv := fcmtest.NewServer(t)
	c := newClient(t, srv)
	data := map[string]any{
		"str":     "plain",
		"jsonish": `{"already":"a string"}`,
		"int":     42,
		"float":   1.5,
		"bool":    true,
		"null":    nil,
		"nested":  map[string]any{"a": []any{1, "x"}, "b": map[string]any{"c": false}},
		"list":    []string{"a", "b"},
	}
	if err := c.Send(t.Context(), android("tok"), push.Notification{Data: data}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	m := srv.MessagesFor("tok")[0]
	want := map[string]string{
		"str":     "plain",
		"jsonish": `{"already":"a string"}`,
		"int":     "42",
		"float":   "1.5",
		"bool":    "true",
		"null":    "null",
		"nested":  `{"a":[1,"x"],"b":{"c":false}}`,
		"list":    `["a","b"]`,
	}
	if fmt.Sprint(m.Data) != fmt.Sprint(want) {
		t.Fatalf("data = %v\nwant %v", m.Data, want)
	}
	if m.HasNotification {
		t.Fatal("data-only push carried a notification block")
	}
}

func TestUnencodableData(t *testing.T) {
	srv := fcmtest.NewServer(t)
	c := newClient(t, srv)
	err := c.Send(t.Context(), android("tok"), push.Notification{Title: "x", Data: map[string]any{"ch": make(chan int)}})
	var pe *push.Error
	if !errors.As(err, &pe) || pe.Kind != push.Other || pe.Reason != "InvalidData" {
		t.Fatalf("err = %v, want Other/InvalidData", err)
	}
	if srv.Attempts("tok") != 0 {
		t.Fatal("invalid message reached the server")
	}
}

func TestErrorClassification(t *testing.T) {
	tests := []struct {
		name       string
		fault      fcmtest.Fault
		wantKind   push.Kind
		wantReason string
		wantStatus int
		wantAfter  time.Duration
	}{
		{"unregistered", fcmtest.Unregistered(), push.DeadToken, "UNREGISTERED", 404, 0},
		{"sender id mismatch", fcmtest.SenderIDMismatch(), push.DeadToken, "SENDER_ID_MISMATCH", 403, 0},
		{"invalid token message", fcmtest.InvalidToken(), push.DeadToken, "INVALID_ARGUMENT", 400, 0},
		{"invalid token field violation", fcmtest.InvalidTokenField(), push.DeadToken, "INVALID_ARGUMENT", 400, 0},
		{"invalid payload keeps token", fcmtest.InvalidPayload(), push.Other, "INVALID_ARGUMENT", 400, 0},
		{"quota exceeded", fcmtest.QuotaExceeded(7 * time.Second), push.Retryable, "QUOTA_EXCEEDED", 429, 7 * time.Second},
		{"unavailable", fcmtest.Unavailable(0), push.Retryable, "UNAVAILABLE", 503, 0},
		{"internal", fcmtest.Internal(), push.Retryable, "INTERNAL", 500, 0},
		{"third party auth", fcmtest.ThirdPartyAuth(), push.Fatal, "THIRD_PARTY_AUTH_ERROR", 401, 0},
		{"permission denied", fcmtest.PermissionDenied(), push.Fatal, "PERMISSION_DENIED", 403, 0},
		{"unauthenticated", fcmtest.Unauthenticated(), push.Fatal, "UNAUTHENTICATED", 401, 0},
	}
	srv := fcmtest.NewServer(t)
	c := newClient(t, srv)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			token := "tok-" + strconv.Itoa(i)
			srv.Fail(token, -1, tt.fault)
			err := c.Send(t.Context(), android(token), push.Notification{Title: "t"})
			var pe *push.Error
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want *push.Error", err)
			}
			if pe.Kind != tt.wantKind || pe.Reason != tt.wantReason || pe.Status != tt.wantStatus || pe.RetryAfter != tt.wantAfter || pe.Provider != "fcm" {
				t.Fatalf("got %s/%s/%d/%v/%s, want %s/%s/%d/%v/fcm", pe.Kind, pe.Reason, pe.Status, pe.RetryAfter, pe.Provider,
					tt.wantKind, tt.wantReason, tt.wantStatus, tt.wantAfter)
			}
			if kind, after := push.Classify(err); kind != tt.wantKind || after != tt.wantAfter {
				t.Fatalf("Classify = %v, %v", kind, after)
			}
		})
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	srv := fcmtest.NewServer(t)
	c := newClient(t, srv)
	srv.Fail("tok", 2, fcmtest.Unavailable(3*time.Second))
	rec := &testsupport.Sleeper{}
	pol := push.RetryPolicy{Attempts: 5, BaseBackoff: 10 * time.Millisecond, MaxBackoff: 10 * time.Second, Sleep: rec.Sleep}

	if err := push.SendWithRetry(t.Context(), c, android("tok"), push.Notification{Title: "t"}, pol); err != nil {
		t.Fatalf("SendWithRetry: %v", err)
	}
	if got, want := fmt.Sprint(rec.Sleeps()), fmt.Sprint([]time.Duration{3 * time.Second, 3 * time.Second}); got != want {
		t.Errorf("waits = %s, want %s", got, want)
	}
	if a, d := srv.Attempts("tok"), srv.Delivered("tok"); a != 3 || d != 1 {
		t.Errorf("attempts=%d delivered=%d, want 3 and 1", a, d)
	}
}

func TestProviderDown(t *testing.T) {
	srv := fcmtest.NewServer(t)
	c := newClient(t, srv)
	srv.SetDown(true)
	rec := &testsupport.Sleeper{}
	pol := push.RetryPolicy{Attempts: 4, BaseBackoff: 100 * time.Millisecond, MaxBackoff: time.Second, Sleep: rec.Sleep}

	err := push.SendWithRetry(t.Context(), c, android("tok"), push.Notification{Title: "t"}, pol)
	if kind, _ := push.Classify(err); kind != push.Retryable {
		t.Fatalf("err = %v, want Retryable", err)
	}
	if got := srv.Attempts("tok"); got != 4 {
		t.Errorf("attempts = %d, want 4", got)
	}
	if got, want := fmt.Sprint(rec.Sleeps()), fmt.Sprint([]time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}); got != want {
		t.Errorf("waits = %s, want %s", got, want)
	}

	srv.SetDown(false)
	if err := push.SendWithRetry(t.Context(), c, android("tok"), push.Notification{Title: "t"}, pol); err != nil {
		t.Fatalf("after recovery: %v", err)
	}
}

func TestNoRetryOnDeadOrFatal(t *testing.T) {
	tests := []struct {
		name  string
		fault fcmtest.Fault
		want  push.Kind
	}{
		{"third party auth", fcmtest.ThirdPartyAuth(), push.Fatal},
		{"permission denied", fcmtest.PermissionDenied(), push.Fatal},
		{"unregistered", fcmtest.Unregistered(), push.DeadToken},
		{"sender id mismatch", fcmtest.SenderIDMismatch(), push.DeadToken},
	}
	srv := fcmtest.NewServer(t)
	c := newClient(t, srv)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			token := "tok-" + strconv.Itoa(i)
			srv.Fail(token, -1, tt.fault)
			rec := &testsupport.Sleeper{}
			err := push.SendWithRetry(t.Context(), c, android(token), push.Notification{Title: "t"},
				push.RetryPolicy{Attempts: 5, Sleep: rec.Sleep})
			if kind, _ := push.Classify(err); kind != tt.want {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if got := srv.Attempts(token); got != 1 || len(rec.Sleeps()) != 0 {
				t.Fatalf("attempts=%d waits=%v, want 1 attempt and no waits", got, rec.Sleeps())
			}
		})
	}
}

func TestTokenEndpointFailure(t *testing.T) {
	tests := []struct {
		status int
		want   push.Kind
	}{
		{http.StatusBadRequest, push.Fatal}, // invalid_grant: key revoked or wrong
		{http.StatusUnauthorized, push.Fatal},
		{http.StatusServiceUnavailable, push.Retryable},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.status), func(t *testing.T) {
			srv := fcmtest.NewServer(t)
			c := newClient(t, srv)
			srv.SetTokenEndpointStatus(tt.status)
			err := c.Send(t.Context(), android("tok"), push.Notification{Title: "t"})
			var pe *push.Error
			if !errors.As(err, &pe) || pe.Kind != tt.want || pe.Reason != "TOKEN_ENDPOINT" || pe.Status != tt.status {
				t.Fatalf("err = %v, want %v TOKEN_ENDPOINT %d", err, tt.want, tt.status)
			}
			if srv.Attempts("tok") != 0 {
				t.Fatal("send reached FCM without a token")
			}
		})
	}
}

func TestAccessTokenReused(t *testing.T) {
	srv := fcmtest.NewServer(t)
	c := newClient(t, srv)
	for i := range 20 {
		if err := c.Send(t.Context(), android("tok-"+strconv.Itoa(i)), push.Notification{Title: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	if got := srv.TokenRequests(); got != 1 {
		t.Fatalf("token requests = %d, want 1", got)
	}
}

func TestRevokedAccessTokenIsFatal(t *testing.T) {
	srv := fcmtest.NewServer(t)
	c := newClient(t, srv)
	if err := c.Send(t.Context(), android("tok"), push.Notification{Title: "t"}); err != nil {
		t.Fatal(err)
	}
	srv.RevokeAccessTokens()
	err := c.Send(t.Context(), android("tok"), push.Notification{Title: "t"})
	if kind, _ := push.Classify(err); kind != push.Fatal {
		t.Fatalf("err = %v, want Fatal", err)
	}
}

func TestWrongProjectIsFatal(t *testing.T) {
	srv := fcmtest.NewServer(t)
	c, err := fcm.New(t.Context(), srv.CredentialsJSON(project), "someone-else", srv.URL, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	err = c.Send(t.Context(), android("tok"), push.Notification{Title: "t"})
	if kind, _ := push.Classify(err); kind != push.Fatal {
		t.Fatalf("err = %v, want Fatal", err)
	}
}

func TestUntrustedCertificateIsFatal(t *testing.T) {
	srv := fcmtest.NewServer(t)
	// System roots do not trust the fake's self-signed certificate; the
	// first TLS contact is the token fetch, which must fail fatally too.
	c, err := fcm.New(t.Context(), srv.CredentialsJSON(project), "", srv.URL, fcm.NewHTTPClient(nil))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Send(t.Context(), android("tok"), push.Notification{Title: "t"})
	if kind, _ := push.Classify(err); kind != push.Fatal {
		t.Fatalf("err = %v, want Fatal", err)
	}
}

func TestCanceledContext(t *testing.T) {
	srv := fcmtest.NewServer(t)
	c := newClient(t, srv)
	// Warm up so the cancellation hits the send, not the token fetch.
	if err := c.Send(t.Context(), android("warm"), push.Notification{Title: "t"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := c.Send(ctx, android("tok"), push.Notification{Title: "t"})
	if kind, _ := push.Classify(err); kind != push.Other || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want Other wrapping context.Canceled", err)
	}
}

func TestNewErrors(t *testing.T) {
	srv := fcmtest.NewServer(t)
	edit := func(f func(map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(srv.CredentialsJSON(project), &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := []struct {
		name      string
		creds     []byte
		projectID string
		endpoint  string
		wantErr   string
	}{
		{"not json", []byte("nope"), "", "", "invalid character"},
		{"not a service account", []byte(`{"type":"authorized_user","client_id":"x","client_secret":"y","refresh_token":"z"}`), "p", "", "expected credential type"},
		{"no project", edit(func(m map[string]any) { delete(m, "project_id") }), "", "", "no project ID"},
		{"broken private key", edit(func(m map[string]any) {
			m["private_key"] = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
		}), "", "", "private_key"},
		{"bad endpoint", srv.CredentialsJSON(project), "", "not a url", "invalid endpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := fcm.New(t.Context(), tt.creds, tt.projectID, tt.endpoint, nil)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("New error = %v, want one mentioning %q", err, tt.wantErr)
			}
		})
	}
}

// TestConcurrentSends pushes many distinct tokens at once over one HTTP/2
// client, as a broadcast does.
func TestConcurrentSends(t *testing.T) {
	const n = 2000
	srv := fcmtest.NewServer(t)
	c := newClient(t, srv)
	srv.Fail("tok-7", -1, fcmtest.Unregistered())
	var wg sync.WaitGroup
	var dead, failed atomic.Int64
	sem := make(chan struct{}, 256)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			err := c.Send(t.Context(), android("tok-"+strconv.Itoa(i)), push.Notification{Title: "t", Data: map[string]any{"i": i}})
			switch kind, _ := push.Classify(err); kind {
			case push.Sent:
			case push.DeadToken:
				dead.Add(1)
			default:
				failed.Add(1)
				t.Errorf("send %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	if got := srv.DistinctTokens(); got != n-1 || dead.Load() != 1 || failed.Load() != 0 {
		t.Fatalf("delivered to %d tokens, dead=%d failed=%d", got, dead.Load(), failed.Load())
	}
	if got := srv.TokenRequests(); got > 2 {
		t.Errorf("token requests = %d; the access token should be shared", got)
	}
	// 256 in flight fit in one HTTP/2 connection (1000 streams); a small
	// slack allows a reconnect but catches a dial per request.
	if got := srv.Connections(); got > 3 {
		t.Errorf("connections = %d, want HTTP/2 multiplexing on ~1", got)
	}
}

func BenchmarkFCMSend(b *testing.B) {
	srv := fcmtest.NewServer(b)
	c := newClient(b, srv)
	n := push.Notification{Title: "Hello", Body: "World", Data: map[string]any{"id": 123, "kind": "alert"}}
	ctx := context.Background()
	if err := c.Send(ctx, android("warm"), n); err != nil {
		b.Fatal(err)
	}
	var seq atomic.Int64
	b.ReportAllocs()
	// Many sends in flight, as in a broadcast; the work is I/O bound.
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := c.Send(ctx, android("tok-"+strconv.FormatInt(seq.Add(1), 10)), n); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "sends/s")
}

// The fake's Latency and Timeline: sends are decided on arrival, answered
// after the latency (or when the client goes away), counted in flight
// meanwhile, and recorded with both times.
func TestFakeLatencyAndTimeline(t *testing.T) {
	const latency = 50 * time.Millisecond
	srv := fcmtest.NewServer(t, fcmtest.PlainHTTP(), fcmtest.Latency(latency, latency), fcmtest.Timeline())
	c := newClient(t, srv)
	srv.Fail("dead", -1, fcmtest.Unregistered())
	tokens := []string{"a", "b", "c", "dead"}
	var wg sync.WaitGroup
	errs := make([]error, len(tokens))
	for i, tok := range tokens {
		wg.Go(func() { errs[i] = c.Send(t.Context(), android(tok), push.Notification{Title: "t", Body: "b"}) })
	}
	wg.Wait()
	for i, err := range errs {
		if (err != nil) != (tokens[i] == "dead") {
			t.Fatalf("send to %s: %v", tokens[i], err)
		}
	}
	// A client that goes away before the answer: the message is delivered
	// all the same, and the exchange ends early.
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Send(ctx, android("gone"), push.Notification{Title: "t", Body: "b"}) }()
	deadline := time.Now().Add(10 * time.Second)
	for srv.Delivered("gone") != 1 || srv.InFlight() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("InFlight %d, delivered %d; want the send recorded and waiting out its latency", srv.InFlight(), srv.Delivered("gone"))
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled send did not return")
	}
	for srv.InFlight() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("InFlight %d after every send ended, want 0", srv.InFlight())
		}
		time.Sleep(time.Millisecond)
	}
	ex := srv.Exchanges()
	if len(ex) != 5 || srv.Delivered("gone") != 1 || srv.TotalDelivered() != 4 {
		t.Fatalf("exchanges %+v, delivered %d", ex, srv.TotalDelivered())
	}
	for _, e := range ex {
		if e.Accepted != (e.Token != "dead") || e.Answered.IsZero() {
			t.Fatalf("exchange %+v", e)
		}
		if d := e.Answered.Sub(e.Received); e.Token != "gone" && d < latency {
			t.Fatalf("exchange %+v answered after %s, want at least %s", e, d, latency)
		}
	}
}

// TestConcurrentFirstRequestsShareOneDial fires requests at a fake no
// connection has reached yet, all at once, through the production client
// and through the fake's own: they must share one HTTP/2 connection rather
// than each dial one (which TestConcurrentSends cannot see, because there
// the OAuth2 token fetch opens the connection before any send).
func TestConcurrentFirstRequestsShareOneDial(t *testing.T) {
	for _, tt := range []struct {
		name   string
		client func(*fcmtest.Server) *http.Client
	}{
		{"NewHTTPClient", func(srv *fcmtest.Server) *http.Client { return fcm.NewHTTPClient(srv.CertPool()) }},
		{"fcmtest Client", (*fcmtest.Server).Client},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := fcmtest.NewServer(t)
			hc := tt.client(srv)
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
		})
	}
}
