package hms_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/push"
	"github.com/herald-vpn/herald/internal/push/hms"
	"github.com/herald-vpn/herald/internal/push/hms/hmstest"
	"github.com/herald-vpn/herald/internal/testsupport"
)

func newClient(t testing.TB, srv *hmstest.Server) *hms.Client {
	t.Helper()
	c, err := hms.New(hms.Config{
		AppID:        srv.AppID,
		ClientSecret: srv.ClientSecret,
		TokenURL:     srv.TokenURL(),
		SendURL:      srv.URL,
		HTTPClient:   srv.Client(),
	})
	if err != nil {
		t.Fatalf("hms.New: %v", err)
	}
	return c
}

func android(token string) push.Target {
	return push.Target{Platform: push.PlatformAndroid, Token: token}
}

func TestNewChecksConfig(t *testing.T) {
	cases := []struct {
		name string
		cfg  hms.Config
	}{
		{"no app", hms.Config{ClientSecret: "s"}},
		{"no secret", hms.Config{AppID: "1"}},
		{"bad token URL", hms.Config{AppID: "1", ClientSecret: "s", TokenURL: "oauth"}},
		{"bad send URL", hms.Config{AppID: "1", ClientSecret: "s", SendURL: "://x"}},
	}
	for _, c := range cases {
		if _, err := hms.New(c.cfg); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
	if _, err := hms.New(hms.Config{AppID: "1", ClientSecret: "s"}); err != nil {
		t.Fatalf("defaults: %v", err)
	}
}

// What the fake received, field by field, for each mapping of a
// notification's parts and options.
func TestSendPayload(t *testing.T) {
	hour, zero := time.Hour, time.Duration(0)
	cases := []struct {
		name string
		n    push.Notification
		want hmstest.Message // Token, AppID and Raw are not compared
		data map[string]any  // message.data decoded; nil: none sent
	}{
		{
			"alert with everything",
			push.Notification{Title: "Hello", Body: "World", CollapseKey: "job-1", Data: map[string]any{"k": "v", "n": 1.5, "o": map[string]any{"a": true}},
				Options: push.Options{Priority: push.PriorityHigh, TTL: &hour, ImageURL: "https://x/i.png", ChannelID: "news"}},
			hmstest.Message{HasNotification: true, Title: "Hello", Body: "World", ClickActionType: 3, Tag: "job-1", Importance: "HIGH", Urgency: "HIGH", TTL: "3600s", DefaultSound: true, Image: "https://x/i.png", ChannelID: "news"},
			map[string]any{"k": "v", "n": 1.5, "o": map[string]any{"a": true}},
		},
		{
			"normal priority, own sound, ttl zero",
			push.Notification{Title: "t", Body: "b", Options: push.Options{Priority: push.PriorityNormal, Sound: "ding", TTL: &zero}},
			hmstest.Message{HasNotification: true, Title: "t", Body: "b", ClickActionType: 3, Importance: "NORMAL", Urgency: "NORMAL", TTL: "0s", Sound: "ding"},
			nil,
		},
		{
			"defaults",
			push.Notification{Title: "t", Body: "b"},
			hmstest.Message{HasNotification: true, Title: "t", Body: "b", ClickActionType: 3, DefaultSound: true},
			nil,
		},
		{
			"data only",
			push.Notification{Data: map[string]any{"id": "42"}, CollapseKey: "job-2"},
			hmstest.Message{},
			map[string]any{"id": "42"},
		},
		{
			"silent push shows nothing",
			push.Notification{Title: "t", Body: "b", Data: map[string]any{"x": 1.0}, Options: push.Options{ContentAvailable: true, Priority: push.PriorityHigh}},
			hmstest.Message{Urgency: "HIGH"},
			map[string]any{"x": 1.0},
		},
	}
	srv := hmstest.NewServer(t)
	c := newClient(t, srv)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			token := fmt.Sprintf("IQAAAACy0-%d", i)
			if err := c.Send(t.Context(), android(token), tc.n); err != nil {
				t.Fatalf("Send: %v", err)
			}
			msgs := srv.MessagesFor(token)
			if len(msgs) != 1 {
				t.Fatalf("got %d messages, want 1", len(msgs))
			}
			got := msgs[0]
			if got.AppID != srv.AppID || got.Raw["validate_only"] != false {
				t.Fatalf("app %q, validate_only %v", got.AppID, got.Raw["validate_only"])
			}
			var data map[string]any
			if got.Data != "" {
				if err := json.Unmarshal([]byte(got.Data), &data); err != nil {
					t.Fatalf("message.data %q is not a JSON object: %v", got.Data, err)
				}
			}
			if !reflect.DeepEqual(data, tc.data) {
				t.Fatalf("data %v, want %v", data, tc.data)
			}
			got.Token, got.AppID, got.Raw, got.Data = "", "", nil, ""
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("message\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

// A prepared notification sent to many devices reaches each with its own
// token.
func TestSendPrepared(t *testing.T) {
	srv := hmstest.NewServer(t)
	c := newClient(t, srv)
	n := push.Notification{Title: "t", Body: "b"}.Prepared()
	for _, tok := range []string{"dev-a", "dev-b", `dev-"c"`} {
		if err := c.Send(t.Context(), android(tok), n); err != nil {
			t.Fatal(err)
		}
		if got := srv.Delivered(tok); got != 1 {
			t.Fatalf("%s: delivered %d", tok, got)
		}
	}
}

func TestSendErrorKinds(t *testing.T) {
	cases := []struct {
		name     string
		fault    hmstest.Fault
		kind     push.Kind
		reason   string
		after    time.Duration
		attempts int // sends the fake saw for the token
	}{
		{"all tokens invalid", hmstest.AllTokensInvalid(), push.DeadToken, "80300007", 0, 1},
		{"illegal token in a partial success", hmstest.IllegalToken(), push.DeadToken, "80100000", 0, 1},
		{"incorrect message structure", hmstest.BadMessage(), push.Other, "80100003", 0, 1},
		{"body too large", hmstest.BodyTooLarge(), push.Other, "80300008", 0, 1},
		{"too many tokens", hmstest.TooManyTokens(), push.Other, "80300010", 0, 1},
		{"no permission", hmstest.NoPermission(), push.Fatal, "80300002", 0, 1},
		{"internal error", hmstest.Internal(2 * time.Second), push.Retryable, "81000001", 2 * time.Second, 1},
		{"flow control", hmstest.FlowControl(5 * time.Second), push.Retryable, "Service Unavailable", 5 * time.Second, 1},
		{"flow control without retry-after", hmstest.FlowControl(0), push.Retryable, "Service Unavailable", 0, 1},
		// Answers refusing the access token are retried once with a new one.
		{"oauth failed (HTTP 401)", hmstest.OAuthFailed(), push.Fatal, "80600003", 0, 2},
		{"token expired, again with a new one", hmstest.TokenExpired(), push.Fatal, "80200003", 0, 2},
		{"auth error, again with a new one", hmstest.AuthError(), push.Fatal, "80200001", 0, 2},
	}
	srv := hmstest.NewServer(t)
	c := newClient(t, srv)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			token := fmt.Sprintf("dev-%d", i)
			srv.Fail(token, -1, tc.fault)
			err := c.Send(t.Context(), android(token), push.Notification{Title: "t", Body: "b"})
			pe, ok := errors.AsType[*push.Error](err)
			if !ok {
				t.Fatalf("got %v, want *push.Error", err)
			}
			if pe.Kind != tc.kind || pe.Reason != tc.reason || pe.RetryAfter != tc.after || pe.Provider != "hms" || pe.Status != tc.fault.HTTPStatus {
				t.Fatalf("got %+v, want %v %q after %v", pe, tc.kind, tc.reason, tc.after)
			}
			if kind, after := push.Classify(fmt.Errorf("wrapped: %w", err)); kind != tc.kind || after != tc.after {
				t.Fatalf("Classify = %v, %v", kind, after)
			}
			if got := srv.Attempts(token); got != tc.attempts {
				t.Fatalf("fake saw %d sends, want %d", got, tc.attempts)
			}
		})
	}
}

// Errors found before anything is sent, and the fake's own refusal of a
// message over Push Kit's size limit.
func TestSendLocalErrors(t *testing.T) {
	srv := hmstest.NewServer(t)
	c := newClient(t, srv)
	cases := []struct {
		name   string
		token  string
		n      push.Notification
		kind   push.Kind
		reason string
	}{
		{"empty token", "", push.Notification{Title: "t", Body: "b"}, push.DeadToken, "EmptyToken"},
		{"data that is not JSON", "dev", push.Notification{Data: map[string]any{"f": func() {}}}, push.Other, "InvalidData"},
		{"too large", "dev", push.Notification{Title: "t", Body: strings.Repeat("x", 5000)}, push.Other, "80300008"},
	}
	for _, tc := range cases {
		err := c.Send(t.Context(), android(tc.token), tc.n)
		pe, ok := errors.AsType[*push.Error](err)
		if !ok || pe.Kind != tc.kind || pe.Reason != tc.reason {
			t.Fatalf("%s: got %v, want %v %s", tc.name, err, tc.kind, tc.reason)
		}
	}
	if n := srv.TotalDelivered(); n != 0 {
		t.Fatalf("%d delivered", n)
	}
}

// sendAll sends to n devices at once and fails the test on any error.
func sendAll(t *testing.T, c *hms.Client, prefix string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			errs <- c.Send(context.Background(), android(fmt.Sprintf("%s-%d", prefix, i)), push.Notification{Title: "t", Body: "b"})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Send: %v", err)
		}
	}
}

// Twenty sends at once with no token yet make one token request, and the
// token is reused after.
func TestTokenFetchedOnceForConcurrentSends(t *testing.T) {
	srv := hmstest.NewServer(t, hmstest.TokenLatency(100*time.Millisecond))
	c := newClient(t, srv)
	sendAll(t, c, "dev", 20)
	sendAll(t, c, "again", 20)
	if n := srv.TokenRequests(); n != 1 {
		t.Fatalf("token requests = %d, want 1", n)
	}
	if n := srv.TotalDelivered(); n != 40 {
		t.Fatalf("delivered %d, want 40", n)
	}
}

// A token is replaced before it expires, so no send goes out with an
// expired one: with a one-second token, a send 950 ms after the first
// fetches a new token, and the fake refuses nothing.
func TestTokenRefreshedAheadOfExpiry(t *testing.T) {
	srv := hmstest.NewServer(t, hmstest.TokenLifetime(time.Second))
	c := newClient(t, srv)
	n := push.Notification{Title: "t", Body: "b"}
	if err := c.Send(t.Context(), android("dev"), n); err != nil {
		t.Fatal(err)
	}
	time.Sleep(950 * time.Millisecond)
	if err := c.Send(t.Context(), android("dev"), n); err != nil {
		t.Fatal(err)
	}
	if got, refused := srv.TokenRequests(), srv.RefusedAccessTokens(); got != 2 || refused != 0 {
		t.Fatalf("token requests %d, refused access tokens %d; want 2, 0", got, refused)
	}
}

// When Push Kit says the token expired, the sends that used it share one
// new token and each is sent again once.
func TestTokenRefreshedOnceOnExpiredAnswer(t *testing.T) {
	srv := hmstest.NewServer(t)
	c := newClient(t, srv)
	sendAll(t, c, "first", 1)
	srv.ExpireAccessTokens()
	sendAll(t, c, "dev", 20)
	if n := srv.TokenRequests(); n != 2 {
		t.Fatalf("token requests = %d, want 2", n)
	}
	if n := srv.RefusedAccessTokens(); n < 1 || n > 20 {
		t.Fatalf("refused access tokens = %d, want 1 to 20", n)
	}
	for i := range 20 {
		if tok := fmt.Sprintf("dev-%d", i); srv.Delivered(tok) != 1 {
			t.Fatalf("%s: delivered %d", tok, srv.Delivered(tok))
		}
	}
}

// SendWithRetry waits out Push Kit's Retry-After, then the message goes.
func TestRetryAfterHonoured(t *testing.T) {
	srv := hmstest.NewServer(t)
	c := newClient(t, srv)
	srv.Fail("dev", 1, hmstest.FlowControl(3*time.Second))
	var sl testsupport.Sleeper
	err := push.SendWithRetry(t.Context(), c, android("dev"), push.Notification{Title: "t", Body: "b"},
		push.RetryPolicy{Attempts: 3, BaseBackoff: time.Millisecond, MaxBackoff: 10 * time.Second, Sleep: sl.Sleep})
	if err != nil {
		t.Fatalf("SendWithRetry: %v", err)
	}
	if got := sl.Sleeps(); len(got) != 1 || got[0] != 3*time.Second {
		t.Fatalf("slept %v, want [3s]", got)
	}
	if srv.Delivered("dev") != 1 || srv.Attempts("dev") != 2 {
		t.Fatalf("delivered %d after %d attempts", srv.Delivered("dev"), srv.Attempts("dev"))
	}
}

func TestTokenEndpointErrors(t *testing.T) {
	srv := hmstest.NewServer(t)
	n := push.Notification{Title: "t", Body: "b"}

	wrong, err := hms.New(hms.Config{AppID: srv.AppID, ClientSecret: "wrong", TokenURL: srv.TokenURL(), SendURL: srv.URL, HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	err = wrong.Send(t.Context(), android("dev"), n)
	if pe, ok := errors.AsType[*push.Error](err); !ok || pe.Kind != push.Fatal || pe.Reason != "TOKEN_ENDPOINT" || pe.Status != http.StatusUnauthorized {
		t.Fatalf("wrong secret: %v", err)
	}

	c := newClient(t, srv)
	srv.SetTokenEndpointStatus(http.StatusServiceUnavailable)
	err = c.Send(t.Context(), android("dev"), n)
	if pe, ok := errors.AsType[*push.Error](err); !ok || pe.Kind != push.Retryable || pe.Reason != "TOKEN_ENDPOINT" || pe.RetryAfter != 3*time.Second {
		t.Fatalf("token endpoint down: %v", err)
	}
	// A failed fetch is not kept: once the endpoint is back, sends go.
	srv.SetTokenEndpointStatus(0)
	if err := c.Send(t.Context(), android("dev"), n); err != nil {
		t.Fatalf("after recovery: %v", err)
	}

	gone, err := hms.New(hms.Config{AppID: "1", ClientSecret: "s", TokenURL: "http://127.0.0.1:1/token", SendURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	err = gone.Send(t.Context(), android("dev"), n)
	if pe, ok := errors.AsType[*push.Error](err); !ok || pe.Kind != push.Retryable || pe.Reason != "TOKEN_ENDPOINT" {
		t.Fatalf("token endpoint unreachable: %v", err)
	}
}

// A caller that gives up while the token is being fetched gets Canceled;
// the fetch goes on for the others.
func TestSendCanceledWhileFetchingToken(t *testing.T) {
	srv := hmstest.NewServer(t, hmstest.TokenLatency(300*time.Millisecond))
	c := newClient(t, srv)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	err := c.Send(ctx, android("dev"), push.Notification{Title: "t", Body: "b"})
	if pe, ok := errors.AsType[*push.Error](err); !ok || pe.Kind != push.Other || pe.Reason != "Canceled" {
		t.Fatalf("got %v", err)
	}
	if err := c.Send(t.Context(), android("dev"), push.Notification{Title: "t", Body: "b"}); err != nil {
		t.Fatal(err)
	}
	if n := srv.TokenRequests(); n != 1 {
		t.Fatalf("token requests = %d, want 1 (the abandoned fetch is reused)", n)
	}
}

// Check fetches an access token: granted for the right credentials,
// refused (Fatal, with the status) for a wrong secret, Retryable when the
// endpoint fails; it sends nothing.
func TestCheck(t *testing.T) {
	srv := hmstest.NewServer(t)
	if err := newClient(t, srv).Check(t.Context()); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if srv.TokenRequests() != 1 || len(srv.Messages()) != 0 {
		t.Fatalf("token requests %d, messages %d; want one request and nothing sent", srv.TokenRequests(), len(srv.Messages()))
	}
	wrong, err := hms.New(hms.Config{AppID: srv.AppID, ClientSecret: "wrong", TokenURL: srv.TokenURL(), SendURL: srv.URL, HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	pe, ok := errors.AsType[*push.Error](wrong.Check(t.Context()))
	if !ok || pe.Kind != push.Fatal || pe.Reason != "TOKEN_ENDPOINT" || pe.Status != http.StatusUnauthorized {
		t.Fatalf("wrong secret: %+v, want Fatal TOKEN_ENDPOINT 401", pe)
	}
	srv.SetTokenEndpointStatus(http.StatusServiceUnavailable)
	pe, ok = errors.AsType[*push.Error](newClient(t, srv).Check(t.Context()))
	if !ok || pe.Kind != push.Retryable || pe.Reason != "TOKEN_ENDPOINT" || pe.Status != http.StatusServiceUnavailable {
		t.Fatalf("failing endpoint: %+v, want Retryable TOKEN_ENDPOINT 503", pe)
	}
}

// The client's own HTTP client keeps the connections of a broadcast's
// concurrent sends for the next ones (Push Kit may answer over HTTP/1.1,
// where a connection carries one request at a time): four rounds of 32
// sends at once open about one round's connections, not one per send (with
// net/http's default of 2 idle connections per host, about 120).
func TestDefaultClientKeepsConnections(t *testing.T) {
	srv := hmstest.NewServer(t)
	c, err := hms.New(hms.Config{AppID: srv.AppID, ClientSecret: srv.ClientSecret, TokenURL: srv.TokenURL(), SendURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	sendAll(t, c, "first", 32)
	first := srv.Connections()
	for round := range 3 {
		sendAll(t, c, fmt.Sprintf("round-%d", round), 32)
	}
	// 32 sends and the token request at once, and a few dials a round may
	// start just before a connection comes back idle.
	if got := srv.Connections(); got > 48 {
		t.Fatalf("%d connections after four rounds, %d after the first: idle connections were dropped", got, first)
	}
}
