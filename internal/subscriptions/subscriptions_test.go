package subscriptions_test

import (
	"context"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/jobs"
	"github.com/herald-vpn/herald/internal/jobs/jobstest"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/subscriptions"
)

var now = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

func TestStatusAndExtension(t *testing.T) {
	cases := []struct {
		name    string
		expires time.Time
		status  string
		bonus   time.Time // after a week's bonus
	}{
		{"active", now.Add(time.Hour), "active", now.Add(time.Hour + 7*24*time.Hour)},
		{"expires now", now, "expired", now.Add(7 * 24 * time.Hour)},
		{"lapsed: the bonus counts from now", now.Add(-30 * 24 * time.Hour), "expired", now.Add(7 * 24 * time.Hour)},
	}
	for _, c := range cases {
		s := subscriptions.Subscription{Plan: subscriptions.Trial, ExpiresAt: c.expires}
		if got := s.Status(now); got != c.status {
			t.Errorf("%s: status %q, want %q", c.name, got, c.status)
		}
		if got := s.Extended(7*24*time.Hour, now); !got.Equal(c.bonus) {
			t.Errorf("%s: extended to %s, want %s", c.name, got, c.bonus)
		}
	}
}

func TestAdmitDevice(t *testing.T) {
	plans := subscriptions.NewService(nil, subscriptions.Config{UpgradeURL: "https://up", RenewURL: "https://renew", Now: func() time.Time { return now }})
	live := func(plan string) subscriptions.Subscription {
		return subscriptions.Subscription{Plan: plan, ExpiresAt: now.Add(time.Hour)}
	}
	cases := []struct {
		name   string
		sub    subscriptions.Subscription
		active int
		code   apperr.Code
		want   map[string]any
	}{
		{"trial with room", live("trial"), 2, "", nil},
		{"trial full", live("trial"), 3, apperr.DeviceLimitReached, map[string]any{"currentDevices": 3, "maxDevices": 3, "plan": "trial", "upgradeUrl": "https://up"}},
		{"basic with room", live("basic"), 4, "", nil},
		{"premium full", live("premium"), 10, apperr.DeviceLimitReached, map[string]any{"currentDevices": 10, "maxDevices": 10, "plan": "premium", "upgradeUrl": "https://up"}},
		{"unknown plan gets the trial's", live("gold"), 3, apperr.DeviceLimitReached, map[string]any{"currentDevices": 3, "maxDevices": 3, "plan": "gold", "upgradeUrl": "https://up"}},
		{"never subscribed", subscriptions.Subscription{}, 0, apperr.SubscriptionNotFound, map[string]any{"renewUrl": "https://renew"}},
		{"expired is checked first", subscriptions.Subscription{Plan: "basic", ExpiresAt: now}, 9, apperr.SubscriptionExpired,
			map[string]any{"expiredAt": now.Format(time.RFC3339), "plan": "basic", "renewUrl": "https://renew"}},
	}
	for _, c := range cases {
		err := plans.AdmitDevice(c.sub, c.active)
		if c.code == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		ae := apperr.As(err)
		if ae.Code != c.code || len(ae.Details) != len(c.want) {
			t.Errorf("%s: %v %v, want %s %v", c.name, ae.Code, ae.Details, c.code, c.want)
			continue
		}
		for k, v := range c.want {
			if ae.Details[k] != v {
				t.Errorf("%s: %s = %v, want %v", c.name, k, ae.Details[k], v)
			}
		}
	}
}

func TestSetPlan(t *testing.T) {
	sqlstoretest.Each(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db, _ := jobstest.Open(t, url, jobs.Config{})
		if _, _, err := accounts.Create(ctx, db, accounts.NewAccount{ID: "a1", Email: "a@example.com", PasswordHash: "x", ReferralCode: "AAAAAAAA", Trial: time.Hour}); err != nil {
			t.Fatal(err)
		}
		plans := subscriptions.NewService(db, subscriptions.Config{})
		for _, c := range []struct {
			name, account, plan string
			expires             time.Time
			code                apperr.Code
		}{
			{"unknown plan", "a1", "gold", now, apperr.ValidationError},
			{"no expiry", "a1", "basic", time.Time{}, apperr.ValidationError},
			{"unknown account", "nobody", "basic", now, apperr.UserNotFound},
		} {
			if _, err := plans.SetPlan(ctx, c.account, c.plan, c.expires); !apperr.Is(err, c.code) {
				t.Errorf("%s: %v, want %s", c.name, err, c.code)
			}
		}
		exp := now.Add(30 * 24 * time.Hour).In(time.FixedZone("X", 3600))
		sub, err := plans.SetPlan(ctx, "a1", "premium", exp)
		if err != nil || sub.Plan != "premium" || !sub.ExpiresAt.Equal(exp) || sub.ExpiresAt.Location() != time.UTC {
			t.Fatalf("set plan: %+v, %v", sub, err)
		}
		if a, _ := db.AccountByID(ctx, "a1"); a.Subscription != sub {
			t.Fatalf("stored %+v, want %+v", a.Subscription, sub)
		}
	})
}

func TestRenewURL(t *testing.T) {
	plans := subscriptions.NewService(nil, subscriptions.Config{RenewURL: "https://acme.test/renew",
		RenewURLs: map[subscriptions.Source]string{subscriptions.AppStore: "https://apps.apple.com/account/subscriptions", subscriptions.Stripe: ""}})
	for src, want := range map[subscriptions.Source]string{
		subscriptions.AppStore:   "https://apps.apple.com/account/subscriptions",
		subscriptions.Stripe:     "https://acme.test/renew", // an empty link falls back
		subscriptions.GooglePlay: "https://acme.test/renew",
		subscriptions.TrialGrant: "https://acme.test/renew",
		"":                       "https://acme.test/renew",
	} {
		if got := plans.RenewURL(src); got != want {
			t.Errorf("RenewURL(%q) = %q, want %q", src, got, want)
		}
	}
}
