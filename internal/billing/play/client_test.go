package play_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/billing"
	"github.com/herald-vpn/herald/internal/billing/play"
	"github.com/herald-vpn/herald/internal/billing/play/playfake"
	"github.com/herald-vpn/herald/internal/subscriptions"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func setup(t *testing.T) (*playfake.Fake, *play.Client, *clock) {
	t.Helper()
	clk := &clock{t: t0}
	f := playfake.New(t, pkg)
	f.SetNow(clk.Now)
	cfg := f.Config()
	cfg.Now = clk.Now
	c, err := play.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return f, c, clk
}

func renewed(tok string) play.DeveloperNotification {
	return play.DeveloperNotification{SubscriptionNotification: &play.SubscriptionNotification{
		Version: "1.0", NotificationType: play.SubscriptionRenewed, PurchaseToken: tok, SubscriptionID: "vpn.monthly",
	}}
}

func TestVerifyPush(t *testing.T) {
	f, c, _ := setup(t)
	ctx := context.Background()
	tests := []struct {
		name string
		tok  playfake.Token
		auth string // replaces the header when set
		want error
	}{
		{name: "valid"},
		{name: "foreign key", tok: playfake.Token{ForeignKey: true}, want: billing.ErrForged},
		{name: "unsigned", tok: playfake.Token{Alg: "none"}, want: billing.ErrForged},
		{name: "HMAC", tok: playfake.Token{Alg: "HS256"}, want: billing.ErrForged},
		{name: "expired", tok: playfake.Token{IssuedAt: t0.Add(-2 * time.Hour)}, want: billing.ErrForged},
		{name: "expired within the leeway", tok: playfake.Token{IssuedAt: t0.Add(-time.Hour - 30*time.Second)}},
		{name: "issued in the future", tok: playfake.Token{IssuedAt: t0.Add(10 * time.Minute)}, want: billing.ErrForged},
		{name: "another issuer", tok: playfake.Token{Issuer: "https://evil.example"}, want: billing.ErrForged},
		{name: "email not verified", tok: playfake.Token{EmailUnverified: true}, want: billing.ErrForged},
		{name: "wrong audience", tok: playfake.Token{Audience: "https://other.example/push"}, want: billing.ErrMisaddressed},
		// Any service account can get a Google-signed token for our
		// audience: another's is no proof, not a misaddressed push.
		{name: "wrong email", tok: playfake.Token{Email: "someone@other.iam.gserviceaccount.com"}, want: billing.ErrForged},
		{name: "no header", auth: " ", want: billing.ErrForged},
		{name: "not bearer", auth: "Basic dXNlcjpwYXNz", want: billing.ErrForged},
		{name: "garbage", auth: "Bearer a.b.c", want: billing.ErrForged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, auth := f.PushWith("m-1", renewed("tok-1"), tt.tok)
			if tt.auth != "" {
				auth = tt.auth
			}
			err := c.VerifyPush(ctx, auth)
			if tt.want == nil && err != nil {
				t.Fatalf("VerifyPush: %v", err)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("VerifyPush = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestVerifyPushKeys(t *testing.T) {
	f, c, clk := setup(t)
	ctx := context.Background()
	verify := func(want error) {
		t.Helper()
		_, auth := f.Push("m-1", renewed("tok-1"))
		if err := c.VerifyPush(ctx, auth); !errors.Is(err, want) {
			t.Fatalf("VerifyPush = %v, want %v", err, want)
		}
	}
	verify(nil)
	verify(nil)
	if n := f.JWKSFetches(); n != 1 {
		t.Fatalf("JWKS fetched %d times, want once (cached)", n)
	}
	// A new key right after a fetch: the unknown kid does not refetch yet.
	f.RotateKey()
	verify(billing.ErrForged)
	if n := f.JWKSFetches(); n != 1 {
		t.Fatalf("JWKS fetched %d times within a minute", n)
	}
	clk.Add(2 * time.Minute)
	verify(nil)
	if n := f.JWKSFetches(); n != 2 {
		t.Fatalf("JWKS fetched %d times, want a refetch for the new kid", n)
	}
	// After an hour the keys are refetched even for a known kid.
	clk.Add(2 * time.Hour)
	verify(nil)
	if n := f.JWKSFetches(); n != 3 {
		t.Fatalf("JWKS fetched %d times, want a refetch of old keys", n)
	}
}

func TestVerifyPushJWKSDown(t *testing.T) {
	f := playfake.New(t, pkg)
	f.SetNow(func() time.Time { return t0 })
	cfg := f.Config()
	cfg.Now = func() time.Time { return t0 }
	cfg.JWKSURL = f.URL() + "/nowhere"
	c, err := play.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, auth := f.Push("m-1", renewed("tok-1"))
	if err := c.VerifyPush(context.Background(), auth); !errors.Is(err, billing.ErrUpstream) {
		t.Fatalf("VerifyPush = %v, want ErrUpstream", err)
	}
}

func TestDefaultIssuer(t *testing.T) {
	f, _, _ := setup(t)
	for _, iss := range []string{"https://accounts.google.com", "accounts.google.com"} {
		cfg := f.Config()
		cfg.PushIssuer = ""
		cfg.Now = func() time.Time { return t0 }
		c, err := play.New(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, auth := f.PushWith("m-1", renewed("tok-1"), playfake.Token{Issuer: iss})
		if err := c.VerifyPush(context.Background(), auth); err != nil {
			t.Errorf("issuer %q: %v", iss, err)
		}
		_, auth = f.Push("m-1", renewed("tok-1"))
		if err := c.VerifyPush(context.Background(), auth); !errors.Is(err, billing.ErrForged) {
			t.Errorf("fake's issuer against Google's: %v, want ErrForged", err)
		}
	}
}

func TestCheckPackage(t *testing.T) {
	f, c, _ := setup(t)
	other := playfake.New(t, "com.other.app")
	for _, tt := range []struct {
		name string
		body []byte
		want error
	}{
		{"ours", first(f.Push("m-1", renewed("tok-1"))), nil},
		{"another app", first(other.Push("m-1", renewed("tok-1"))), billing.ErrMisaddressed},
	} {
		p, err := play.DecodePush(tt.body)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.CheckPackage(p); !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
			t.Errorf("%s: CheckPackage = %v, want %v", tt.name, err, tt.want)
		}
	}
}

func first(b []byte, _ string) []byte { return b }

func TestPurchaseAndAcknowledge(t *testing.T) {
	f, c, _ := setup(t)
	ctx := context.Background()
	f.SetPurchase("tok-1", sub(play.StateActive))
	p, err := c.Purchase(ctx, "tok-1")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := play.Observe(sub(play.StateActive), "tok-1", t0)
	assertObs(t, p.Observation, want)
	if p.Acknowledged || p.SubscriptionID != "vpn.monthly" {
		t.Fatalf("Acknowledged %v, SubscriptionID %q", p.Acknowledged, p.SubscriptionID)
	}
	if err := c.Acknowledge(ctx, p.SubscriptionID, "tok-1"); err != nil {
		t.Fatal(err)
	}
	if !f.Acknowledged("tok-1") {
		t.Fatal("the fake saw no acknowledgement")
	}
	p, err = c.Purchase(ctx, "tok-1")
	if err != nil || !p.Acknowledged {
		t.Fatalf("after acknowledge: %+v, %v", p.Acknowledged, err)
	}
	// Acknowledging again is harmless.
	if err := c.Acknowledge(ctx, p.SubscriptionID, "tok-1"); err != nil {
		t.Fatal(err)
	}
	// The OAuth token is reused.
	if n := f.Calls(); n != 4 {
		t.Fatalf("calls %d", n)
	}
}

func TestPurchaseErrors(t *testing.T) {
	f, c, _ := setup(t)
	ctx := context.Background()
	f.SetPurchase("tok-1", sub(play.StateActive))
	f.SetPurchase("tok-pending", sub(play.StatePending))
	tests := []struct {
		name  string
		fail  []int
		token string
		want  error
	}{
		{name: "unknown token", token: "tok-404", want: play.ErrPurchaseNotFound},
		{name: "gone", fail: []int{http.StatusGone}, token: "tok-1", want: play.ErrPurchaseNotFound},
		{name: "pending", token: "tok-pending", want: play.ErrPending},
		{name: "503", fail: []int{http.StatusServiceUnavailable}, token: "tok-1", want: billing.ErrUpstream},
		{name: "500", fail: []int{http.StatusInternalServerError}, token: "tok-1", want: billing.ErrUpstream},
		{name: "429", fail: []int{http.StatusTooManyRequests}, token: "tok-1", want: billing.ErrUpstream},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.Fail(tt.fail...)
			_, err := c.Purchase(ctx, tt.token)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Purchase = %v, want %v", err, tt.want)
			}
		})
	}
	t.Run("403 is the operator's, not upstream", func(t *testing.T) {
		f.Fail(http.StatusForbidden)
		_, err := c.Purchase(ctx, "tok-1")
		if err == nil || errors.Is(err, billing.ErrUpstream) || errors.Is(err, play.ErrPurchaseNotFound) {
			t.Fatalf("Purchase = %v", err)
		}
	})
	t.Run("acknowledge an unknown token", func(t *testing.T) {
		if err := c.Acknowledge(ctx, "vpn.monthly", "tok-404"); !errors.Is(err, play.ErrPurchaseNotFound) {
			t.Fatalf("Acknowledge = %v", err)
		}
		if f.Acknowledged("tok-404") {
			t.Fatal("acknowledged")
		}
	})
	t.Run("acknowledge on a 503", func(t *testing.T) {
		f.Fail(http.StatusServiceUnavailable)
		if err := c.Acknowledge(ctx, "vpn.monthly", "tok-1"); !errors.Is(err, billing.ErrUpstream) {
			t.Fatalf("Acknowledge = %v", err)
		}
		if f.Acknowledged("tok-1") {
			t.Fatal("acknowledged")
		}
	})
	t.Run("upstream unreachable", func(t *testing.T) {
		cfg := f.Config()
		cfg.APIBase = "http://127.0.0.1:1"
		c2, err := play.New(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c2.Purchase(ctx, "tok-1"); !errors.Is(err, billing.ErrUpstream) {
			t.Fatalf("Purchase = %v", err)
		}
	})
}

func TestPurchaseForeignServiceAccount(t *testing.T) {
	f, _, _ := setup(t)
	other := playfake.New(t, pkg)
	cfg := f.Config()
	// Another key whose token_uri is ours: the assertion does not verify.
	cfg.ServiceAccountJSON = []byte(replaceTokenURI(t, other.ServiceAccountJSON(), f.URL()+"/token"))
	c, err := play.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.SetPurchase("tok-1", sub(play.StateActive))
	_, err = c.Purchase(context.Background(), "tok-1")
	if err == nil || errors.Is(err, billing.ErrUpstream) {
		t.Fatalf("Purchase = %v, want a refused token grant", err)
	}
	if f.Calls() != 0 {
		t.Fatal("the API was called without a token")
	}
}

func TestPurchaseOfAnotherPackage(t *testing.T) {
	f, _, _ := setup(t)
	cfg := f.Config()
	cfg.PackageName = "com.other.app"
	c, err := play.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.SetPurchase("tok-1", sub(play.StateActive))
	if _, err := c.Purchase(context.Background(), "tok-1"); err == nil {
		t.Fatal("read a purchase of a package the service account may not read")
	}
}

func TestNewRefuses(t *testing.T) {
	f, _, _ := setup(t)
	for name, mod := range map[string]func(*play.Config){
		"no package":  func(c *play.Config) { c.PackageName = "" },
		"no audience": func(c *play.Config) { c.PushAudience = "" },
		"no email":    func(c *play.Config) { c.PushServiceAccount = "" },
		"no key":      func(c *play.Config) { c.ServiceAccountJSON = nil },
		"bad key":     func(c *play.Config) { c.ServiceAccountJSON = []byte(`{"type":"authorized_user"}`) },
	} {
		cfg := f.Config()
		mod(&cfg)
		if _, err := play.New(context.Background(), cfg); err == nil {
			t.Errorf("%s: New accepted", name)
		}
	}
}

// TestRTDN is the whole path of a notification: verify, decode, check the
// package, read the purchase, decide the state, acknowledge.
func TestRTDN(t *testing.T) {
	f, c, _ := setup(t)
	ctx := context.Background()
	tests := []struct {
		name     string
		purchase play.SubscriptionPurchaseV2
		typ      int
		want     subscriptions.State
	}{
		{"purchased", sub(play.StateActive), play.SubscriptionPurchased, subscriptions.StateActive},
		{"in grace", sub(play.StateInGracePeriod), play.SubscriptionInGracePeriod, subscriptions.StateGrace},
		{"on hold", sub(play.StateOnHold), play.SubscriptionOnHold, subscriptions.StateOnHold},
		{"paused", sub(play.StatePaused), play.SubscriptionPaused, subscriptions.StatePaused},
		{"canceled", sub(play.StateCanceled, noRenew), play.SubscriptionCanceled, subscriptions.StateCancelled},
		{"expired", sub(play.StateExpired, noRenew), play.SubscriptionExpired, subscriptions.StateExpired},
		{"revoked", sub(play.StateExpired, noRenew), play.SubscriptionRevoked, subscriptions.StateRevoked},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := "tok-" + tt.name
			f.SetPurchase(tok, tt.purchase)
			n := renewed(tok)
			n.SubscriptionNotification.NotificationType = tt.typ
			body, auth := f.Push("m-"+tt.name, n)
			if err := c.VerifyPush(ctx, auth); err != nil {
				t.Fatal(err)
			}
			push, err := play.DecodePush(body)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.CheckPackage(push); err != nil {
				t.Fatal(err)
			}
			if push.MessageID != "m-"+tt.name || !push.EventTime.Equal(t0) || push.NotificationType != tt.typ {
				t.Fatalf("push %+v", push)
			}
			p, err := c.Purchase(ctx, push.PurchaseToken)
			if err != nil {
				t.Fatal(err)
			}
			if got := play.StateFor(push, p); got != tt.want {
				t.Fatalf("state %s, want %s", got, tt.want)
			}
			if !p.Acknowledged {
				if err := c.Acknowledge(ctx, p.SubscriptionID, push.PurchaseToken); err != nil {
					t.Fatal(err)
				}
			}
			if !f.Acknowledged(tok) {
				t.Fatalf("step %d: not acknowledged", i)
			}
		})
	}
}

func replaceTokenURI(t *testing.T, key []byte, uri string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(key, &m); err != nil {
		t.Fatal(err)
	}
	m["token_uri"] = uri
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
