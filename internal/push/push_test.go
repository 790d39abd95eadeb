package push_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/push"
	"github.com/herald-vpn/herald/internal/testsupport"
	"net/http"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		wantKind  push.Kind
		wantAfter time.Duration
	}{
		{"nil is sent", nil, push.Sent, 0},
		{"dead token", &push.Error{Kind: push.DeadToken, Reason: "UNREGISTERED"}, push.DeadToken, 0},
		{"retryable keeps retry-after", &push.Error{Kind: push.Retryable, RetryAfter: 5 * time.Second}, push.Retryable, 5 * time.Second},
		{"retry-after ignored unless retryable", &push.Error{Kind: push.Fatal, RetryAfter: 5 * time.Second}, push.Fatal, 0},
		{"wrapped", fmt.Errorf("outer: %w", &push.Error{Kind: push.DeadToken}), push.DeadToken, 0},
		{"joined", errors.Join(context.Canceled, &push.Error{Kind: push.Retryable, RetryAfter: time.Second}), push.Retryable, time.Second},
		{"error without kind is not sent", &push.Error{Reason: "x"}, push.Other, 0},
		{"bare context error", context.DeadlineExceeded, push.Other, 0},
		{"unknown error", errors.New("boom"), push.Other, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind, after := push.Classify(tt.err)
			if kind != tt.wantKind || after != tt.wantAfter {
				t.Fatalf("Classify = %v, %v; want %v, %v", kind, after, tt.wantKind, tt.wantAfter)
			}
		})
	}
}

func TestErrorMessage(t *testing.T) {
	err := &push.Error{Kind: push.DeadToken, Provider: "fcm", Reason: "UNREGISTERED", Status: 404, Err: errors.New("Requested entity was not found.")}
	want := "fcm: dead_token UNREGISTERED (HTTP 404): Requested entity was not found."
	if got := err.Error(); got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, err.Err) {
		t.Fatal("Unwrap does not expose the cause")
	}
}

// named is a Provider that records which instance was used.
type named struct {
	name string
	got  *[]string
}

func (p named) Send(context.Context, push.Target, push.Notification) error {
	*p.got = append(*p.got, p.name)
	return nil
}

type fcmClient struct{} // stands in for a typed-nil *fcm.Client

func (*fcmClient) Send(context.Context, push.Target, push.Notification) error { return nil }

func TestRouter(t *testing.T) {
	var typedNil *fcmClient
	tests := []struct {
		name                     string
		fcm, apns, web, hms, dev bool
		typedNilFCM, typedNilHMS bool
		platform                 string
		want                     string    // provider used
		wantErr                  push.Kind // when want == ""
	}{
		{name: "android to fcm", fcm: true, apns: true, dev: true, platform: "android", want: "fcm"},
		{name: "ios to apns", fcm: true, apns: true, dev: true, platform: "ios", want: "apns"},
		{name: "ios falls back to fcm", fcm: true, dev: true, platform: "ios", want: "fcm"},
		{name: "platform case-insensitive", fcm: true, apns: true, platform: "iOS", want: "apns"},
		{name: "none configured android to dev", dev: true, platform: "android", want: "dev"},
		{name: "none configured ios to dev", dev: true, platform: "ios", want: "dev"},
		{name: "typed nil fcm counts as unset", typedNilFCM: true, dev: true, platform: "android", want: "dev"},
		{name: "android without fcm is fatal", apns: true, dev: true, platform: "android", wantErr: push.Fatal},
		{name: "nothing at all is fatal", platform: "ios", wantErr: push.Fatal},
		{name: "web to webpush", fcm: true, apns: true, web: true, dev: true, platform: "web", want: "web"},
		{name: "none configured web to dev", dev: true, platform: "web", want: "dev"},
		{name: "web without webpush is fatal", fcm: true, dev: true, platform: "web", wantErr: push.Fatal},
		{name: "android without fcm beside webpush is fatal", web: true, dev: true, platform: "android", wantErr: push.Fatal},
		{name: "huawei to hms", fcm: true, apns: true, web: true, hms: true, dev: true, platform: "huawei", want: "hms"},
		{name: "huawei case-insensitive", hms: true, platform: "Huawei", want: "hms"},
		{name: "none configured huawei to dev", dev: true, platform: "huawei", want: "dev"},
		{name: "huawei without hms is fatal, not fcm", fcm: true, apns: true, web: true, dev: true, platform: "huawei", wantErr: push.Fatal},
		{name: "typed nil hms counts as unset", fcm: true, typedNilHMS: true, dev: true, platform: "huawei", wantErr: push.Fatal},
		{name: "typed nil hms alone leaves dev", typedNilHMS: true, dev: true, platform: "huawei", want: "dev"},
		{name: "android without fcm beside hms is fatal", hms: true, dev: true, platform: "android", wantErr: push.Fatal},
		{name: "ios without apns and fcm beside hms is fatal", hms: true, dev: true, platform: "ios", wantErr: push.Fatal},
		{name: "web without webpush beside hms is fatal", hms: true, dev: true, platform: "web", wantErr: push.Fatal},
		{name: "android beside hms to fcm", fcm: true, hms: true, platform: "android", want: "fcm"},
		{name: "unknown platform", fcm: true, apns: true, web: true, hms: true, platform: "windows", wantErr: push.Other},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			var f, a, w, hm, d push.Provider
			if tt.fcm {
				f = named{"fcm", &got}
			}
			if tt.typedNilFCM {
				f = typedNil
			}
			if tt.apns {
				a = named{"apns", &got}
			}
			if tt.web {
				w = named{"web", &got}
			}
			if tt.hms {
				hm = named{"hms", &got}
			}
			if tt.typedNilHMS {
				hm = typedNil
			}
			if tt.dev {
				d = named{"dev", &got}
			}
			err := push.NewRouter(f, a, w, hm, d).Send(t.Context(), push.Target{Platform: tt.platform, Token: "tok"}, push.Notification{})
			if tt.want == "" {
				if kind, _ := push.Classify(err); kind != tt.wantErr {
					t.Fatalf("err = %v (kind %v), want kind %v", err, kind, tt.wantErr)
				}
				wantReason := map[push.Kind]string{push.Fatal: "NoProvider: " + tt.platform, push.Other: "UnknownPlatform: " + tt.platform}[tt.wantErr]
				if pe, ok := errors.AsType[*push.Error](err); !ok || pe.Provider != "router" || pe.Reason != wantReason {
					t.Fatalf("err = %#v, want the router's %q", err, wantReason)
				}
				if len(got) != 0 {
					t.Fatalf("providers called: %v", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Send: %v", err)
			}
			if len(got) != 1 || got[0] != tt.want {
				t.Fatalf("used %v, want [%s]", got, tt.want)
			}
		})
	}
}

func TestDevLogs(t *testing.T) {
	var buf bytes.Buffer
	dev := push.NewDev(slog.New(slog.NewJSONHandler(&buf, nil)))
	token := "abcdefgh-secret-rest-of-token"
	err := dev.Send(t.Context(), push.Target{Platform: "ios", Token: token},
		push.Notification{Title: "Hi", Body: "There", Data: map[string]any{"n": 1}})
	if kind, _ := push.Classify(err); kind != push.Sent {
		t.Fatalf("Send = %v, want sent", err)
	}
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("log is not one JSON record: %v\n%s", err, buf.String())
	}
	want := map[string]any{
		"level":        "INFO",
		"platform":     "ios",
		"token_prefix": "abcdefgh…",
		"title":        "Hi",
		"body":         "There",
	}
	for k, v := range want {
		if rec[k] != v {
			t.Errorf("log[%q] = %v, want %v", k, rec[k], v)
		}
	}
	if d, _ := rec["data"].(map[string]any); d["n"] != float64(1) {
		t.Errorf("log data = %v", rec["data"])
	}
	if strings.Contains(buf.String(), "secret") {
		t.Errorf("full token leaked into log: %s", buf.String())
	}
}

// scripted returns the given errors in order, then nil.
type scripted struct {
	mu    sync.Mutex
	errs  []error
	calls int
}

func (s *scripted) Send(context.Context, push.Target, push.Notification) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if len(s.errs) == 0 {
		return nil
	}
	err := s.errs[0]
	s.errs = s.errs[1:]
	return err
}

func TestSendWithRetry(t *testing.T) {
	retry := func(after time.Duration) error {
		return &push.Error{Kind: push.Retryable, Reason: "UNAVAILABLE", RetryAfter: after}
	}
	dead := &push.Error{Kind: push.DeadToken, Reason: "UNREGISTERED"}
	fatal := &push.Error{Kind: push.Fatal, Reason: "THIRD_PARTY_AUTH_ERROR"}
	policy := push.RetryPolicy{Attempts: 4, BaseBackoff: 100 * time.Millisecond, MaxBackoff: 10 * time.Second}

	tests := []struct {
		name      string
		errs      []error
		wantKind  push.Kind
		wantCalls int
		wantWaits []time.Duration
	}{
		{"first try", nil, push.Sent, 1, nil},
		{"exponential backoff then success", []error{retry(0), retry(0)}, push.Sent, 3, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}},
		{"retry-after honoured", []error{retry(3 * time.Second), retry(time.Second)}, push.Sent, 3, []time.Duration{3 * time.Second, time.Second}},
		{"backoff wins over shorter retry-after", []error{retry(0), retry(0), retry(100 * time.Millisecond)}, push.Sent, 4, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}},
		{"gives up after attempts", []error{retry(0), retry(0), retry(0), retry(0), retry(0)}, push.Retryable, 4, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}},
		{"retry-after beyond max returns at once", []error{retry(time.Hour)}, push.Retryable, 1, nil},
		{"dead token not retried", []error{dead}, push.DeadToken, 1, nil},
		{"fatal not retried", []error{retry(0), fatal}, push.Fatal, 2, []time.Duration{100 * time.Millisecond}},
		{"other not retried", []error{errors.New("boom")}, push.Other, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &scripted{errs: tt.errs}
			rec := &testsupport.Sleeper{}
			pol := policy
			pol.Sleep = rec.Sleep
			err := push.SendWithRetry(t.Context(), p, push.Target{Platform: "android", Token: "t"}, push.Notification{}, pol)
			if kind, _ := push.Classify(err); kind != tt.wantKind {
				t.Fatalf("err = %v (kind %v), want %v", err, kind, tt.wantKind)
			}
			if p.calls != tt.wantCalls {
				t.Errorf("calls = %d, want %d", p.calls, tt.wantCalls)
			}
			if fmt.Sprint(rec.Sleeps()) != fmt.Sprint(tt.wantWaits) {
				t.Errorf("waits = %v, want %v", rec.Sleeps(), tt.wantWaits)
			}
		})
	}
}

func TestSendWithRetryStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	p := &scripted{errs: []error{
		&push.Error{Kind: push.Retryable}, &push.Error{Kind: push.Retryable}, &push.Error{Kind: push.Retryable},
	}}
	pol := push.RetryPolicy{Attempts: 5, Sleep: func(ctx context.Context, _ time.Duration) error {
		cancel() // the caller gives up while we wait
		return ctx.Err()
	}}
	err := push.SendWithRetry(ctx, p, push.Target{}, push.Notification{}, pol)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if p.calls != 1 {
		t.Fatalf("calls = %d, want 1", p.calls)
	}
}

func TestRetryJitterBounds(t *testing.T) {
	pol := push.RetryPolicy{Attempts: 2, BaseBackoff: time.Second, MaxBackoff: time.Minute, Jitter: 0.5}
	for range 50 {
		rec := &testsupport.Sleeper{}
		pol.Sleep = rec.Sleep
		p := &scripted{errs: []error{&push.Error{Kind: push.Retryable}}}
		if err := push.SendWithRetry(t.Context(), p, push.Target{}, push.Notification{}, pol); err != nil {
			t.Fatal(err)
		}
		if w := rec.Sleeps()[0]; w < 500*time.Millisecond || w > time.Second {
			t.Fatalf("jittered wait %v outside [0.5s, 1s]", w)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tt := range []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"30", 30 * time.Second},
		{" 30 ", 30 * time.Second},
		{"0", 0},
		{"-5", 0},
		{"soon", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
	} {
		if got := push.ParseRetryAfter(tt.in, now); got != tt.want {
			t.Errorf("ParseRetryAfter(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
