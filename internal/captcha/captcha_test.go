package captcha_test

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/captcha"
	"github.com/herald-vpn/herald/internal/captcha/captchatest"
)

func newGuard(t *testing.T, url string, now func() time.Time) *captcha.Guard {
	t.Helper()
	g, err := captcha.New(captcha.Config{Provider: captcha.Turnstile, Secret: "s3cret", VerifyURL: url, Timeout: 5 * time.Second, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestVerify(t *testing.T) {
	fake := captchatest.New("s3cret")
	defer fake.Close()
	g := newGuard(t, fake.URL, nil)
	ctx := context.Background()
	ip := netip.MustParseAddr("203.0.113.7")

	if err := g.Verify(ctx, captcha.ActionSignup, "", ip); !apperr.Is(err, apperr.CaptchaRequired) {
		t.Fatalf("no token: %v, want CAPTCHA_REQUIRED", err)
	}
	if n := len(fake.Requests()); n != 0 {
		t.Fatalf("a missing token reached the provider (%d requests)", n)
	}
	if err := g.Verify(ctx, captcha.ActionSignup, "forged", ip); !apperr.Is(err, apperr.CaptchaFailed) {
		t.Fatalf("bad token: %v, want CAPTCHA_FAILED", err)
	}
	if err := g.Verify(ctx, captcha.ActionSignup, captchatest.Good, ip); err != nil {
		t.Fatalf("good token: %v", err)
	}
	got := fake.Requests()
	if len(got) != 2 {
		t.Fatalf("provider got %d requests, want 2", len(got))
	}
	want := captchatest.Request{Secret: "s3cret", Response: captchatest.Good, RemoteIP: "203.0.113.7", ContentType: "application/x-www-form-urlencoded"}
	if got[1] != want {
		t.Fatalf("provider got %+v, want %+v", got[1], want)
	}

	fake.Down(true)
	err := g.Verify(ctx, captcha.ActionSignup, captchatest.Good, ip)
	e := apperr.As(err)
	if e == nil || e.Code != apperr.ServiceUnavailable || e.RetryAfterSeconds <= 0 {
		t.Fatalf("provider down: %v, want SERVICE_UNAVAILABLE with Retry-After", err)
	}
}

func TestWrongSecretFails(t *testing.T) {
	fake := captchatest.New("right")
	defer fake.Close()
	g := newGuard(t, fake.URL, nil)
	if err := g.Verify(context.Background(), captcha.ActionLogin, captchatest.Good, netip.Addr{}); !apperr.Is(err, apperr.CaptchaFailed) {
		t.Fatalf("wrong secret: %v, want CAPTCHA_FAILED", err)
	}
	if r := fake.Requests(); len(r) != 1 || r[0].RemoteIP != "" {
		t.Fatalf("requests %+v: want one without remoteip", r)
	}
}

func TestOff(t *testing.T) {
	ctx := context.Background()
	var nilGuard *captcha.Guard
	if err := nilGuard.Verify(context.Background(), captcha.ActionSignup, "", netip.Addr{}); err != nil {
		t.Fatalf("nil guard: %v", err)
	}
	g, err := captcha.New(captcha.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Require(context.Background(), captcha.ActionGuest); err != nil || g.On() {
		t.Fatalf("no provider: %v, on %v", err, g.On())
	}
	g.LoginFailed(ctx, "a@example.com")
	g.LoginFailed(ctx, "a@example.com")
	g.LoginFailed(ctx, "a@example.com")
	if g.LoginNeedsCaptcha(ctx, "a@example.com") {
		t.Fatal("no provider, yet a login needs a CAPTCHA")
	}
	if _, err := captcha.New(captcha.Config{Provider: "recaptcha", Secret: "x"}); err == nil {
		t.Fatal("unknown provider accepted")
	}
	if _, err := captcha.New(captcha.Config{Provider: captcha.HCaptcha}); err == nil {
		t.Fatal("provider without secret accepted")
	}
}

func TestLoginFailures(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g, err := captcha.New(captcha.Config{Provider: captcha.HCaptcha, Secret: "x", VerifyURL: "http://127.0.0.1:1", LoginFailures: 3, FailureWindow: 10 * time.Minute, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	const a = "a@example.com"
	for i := range 2 {
		g.LoginFailed(ctx, a)
		if g.LoginNeedsCaptcha(ctx, a) {
			t.Fatalf("needed after %d failures", i+1)
		}
	}
	g.LoginFailed(ctx, a)
	if !g.LoginNeedsCaptcha(ctx, a) {
		t.Fatal("not needed after 3 failures")
	}
	if g.LoginNeedsCaptcha(ctx, "b@example.com") {
		t.Fatal("another address needs one")
	}
	now = now.Add(10 * time.Minute)
	if g.LoginNeedsCaptcha(ctx, a) {
		t.Fatal("still needed after the window")
	}
	for range 3 {
		g.LoginFailed(ctx, a)
	}
	g.LoginSucceeded(ctx, a)
	if g.LoginNeedsCaptcha(ctx, a) {
		t.Fatal("still needed after a successful login")
	}
}

func TestLoginFailuresBounded(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g, err := captcha.New(captcha.Config{Provider: captcha.Turnstile, Secret: "x", LoginFailures: 1, MaxTracked: 2, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	g.LoginFailed(ctx, "old@example.com")
	now = now.Add(time.Second)
	g.LoginFailed(ctx, "mid@example.com")
	now = now.Add(time.Second)
	g.LoginFailed(ctx, "new@example.com")
	if g.LoginNeedsCaptcha(ctx, "old@example.com") {
		t.Fatal("the oldest address was not evicted at the bound")
	}
	if !g.LoginNeedsCaptcha(ctx, "mid@example.com") || !g.LoginNeedsCaptcha(ctx, "new@example.com") {
		t.Fatal("a recent address was evicted")
	}
}

func TestParseResult(t *testing.T) {
	for _, tc := range []struct {
		in      string
		ok      bool
		success bool
	}{
		{`{"success":true,"challenge_ts":"2026-01-01T00:00:00Z","hostname":"x","error-codes":[]}`, true, true},
		{`{"success":false,"error-codes":["invalid-input-response"]}`, true, false},
		{`{"error-codes":[]}`, false, false},
		{`not json`, false, false},
		{`{"success":"yes"}`, false, false},
	} {
		r, err := captcha.ParseResult(strings.NewReader(tc.in))
		if (err == nil) != tc.ok || r.Success != tc.success {
			t.Errorf("ParseResult(%s) = %+v, %v", tc.in, r, err)
		}
	}
}

func FuzzParseResult(f *testing.F) {
	f.Add(`{"success":true,"error-codes":[]}`)
	f.Add(`{"success":false,"error-codes":["timeout-or-duplicate"]}`)
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, in string) {
		r, err := captcha.ParseResult(strings.NewReader(in))
		if err != nil && r.Success {
			t.Fatalf("error %v with success", err)
		}
	})
}
