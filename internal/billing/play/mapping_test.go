package play_test

import (
	"errors"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/billing"
	"github.com/herald-vpn/herald/internal/billing/play"
	"github.com/herald-vpn/herald/internal/subscriptions"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

const rfc = time.RFC3339Nano

// sub is an active monthly subscription bought by account acc-1.
func sub(state string, mods ...func(*play.SubscriptionPurchaseV2)) play.SubscriptionPurchaseV2 {
	p := play.SubscriptionPurchaseV2{
		Kind:                 "androidpublisher#subscriptionPurchaseV2",
		RegionCode:           "DE",
		StartTime:            t0.Add(-24 * time.Hour).Format(rfc),
		SubscriptionState:    state,
		LatestOrderID:        "GPA.1234-5678-9012-34567",
		AcknowledgementState: play.AcknowledgementPending,
		ExternalAccountIdentifiers: &play.ExternalAccountIdentifiers{
			ObfuscatedExternalAccountID: "acc-1",
		},
		LineItems: []play.LineItem{{
			ProductID:        "vpn.monthly",
			ExpiryTime:       t0.Add(29 * 24 * time.Hour).Format(rfc),
			AutoRenewingPlan: &play.AutoRenewingPlan{AutoRenewEnabled: true},
			OfferDetails:     &play.OfferDetails{BasePlanID: "monthly"},
			OfferPhase:       &play.OfferPhase{BasePrice: &struct{}{}},
		}},
	}
	for _, m := range mods {
		m(&p)
	}
	return p
}

func noRenew(p *play.SubscriptionPurchaseV2) {
	p.LineItems[0].AutoRenewingPlan.AutoRenewEnabled = false
}

func expiry(d time.Duration) func(*play.SubscriptionPurchaseV2) {
	return func(p *play.SubscriptionPurchaseV2) { p.LineItems[0].ExpiryTime = t0.Add(d).Format(rfc) }
}

func TestObserve(t *testing.T) {
	month := t0.Add(29 * 24 * time.Hour)
	started := t0.Add(-24 * time.Hour)
	grace := t0.Add(3 * 24 * time.Hour)
	want := func(state subscriptions.State, mods ...func(*subscriptions.Observation)) subscriptions.Observation {
		o := subscriptions.Observation{
			Source: subscriptions.GooglePlay, ExternalID: "tok-1", AccountHint: "acc-1", ProductID: "vpn.monthly",
			State: state, StartedAt: started, ExpiresAt: month, AutoRenew: true, Environment: "Production", ObservedAt: t0,
		}
		for _, m := range mods {
			m(&o)
		}
		return o
	}
	off := func(o *subscriptions.Observation) { o.AutoRenew = false }
	tests := []struct {
		name    string
		in      play.SubscriptionPurchaseV2
		want    subscriptions.Observation
		wantErr error
	}{
		{name: "active", in: sub(play.StateActive), want: want(subscriptions.StateActive)},
		{name: "active in a free trial", in: sub(play.StateActive, func(p *play.SubscriptionPurchaseV2) {
			p.LineItems[0].OfferPhase = &play.OfferPhase{FreeTrial: &struct{}{}}
		}), want: want(subscriptions.StateTrial)},
		{name: "active at an introductory price", in: sub(play.StateActive, func(p *play.SubscriptionPurchaseV2) {
			p.LineItems[0].OfferPhase = &play.OfferPhase{IntroductoryPrice: &struct{}{}}
		}), want: want(subscriptions.StateActive)},
		{name: "active without offer phase", in: sub(play.StateActive, func(p *play.SubscriptionPurchaseV2) {
			p.LineItems[0].OfferPhase = nil
		}), want: want(subscriptions.StateActive)},
		{name: "prepaid", in: sub(play.StateActive, func(p *play.SubscriptionPurchaseV2) {
			p.LineItems[0].AutoRenewingPlan, p.LineItems[0].PrepaidPlan = nil, &play.PrepaidPlan{}
		}), want: want(subscriptions.StateActive, off)},
		{name: "in grace: the expiry Play extended is the grace end", in: sub(play.StateInGracePeriod, expiry(3*24*time.Hour)),
			want: want(subscriptions.StateGrace, func(o *subscriptions.Observation) { o.ExpiresAt, o.GraceEndsAt = grace, &grace })},
		{name: "on hold", in: sub(play.StateOnHold, expiry(-time.Hour)),
			want: want(subscriptions.StateOnHold, func(o *subscriptions.Observation) { o.ExpiresAt = t0.Add(-time.Hour) })},
		{name: "paused", in: sub(play.StatePaused, expiry(-time.Hour), func(p *play.SubscriptionPurchaseV2) {
			p.PausedStateContext = &play.PausedStateContext{AutoResumeTime: t0.Add(30 * 24 * time.Hour).Format(rfc)}
		}), want: want(subscriptions.StatePaused, func(o *subscriptions.Observation) { o.ExpiresAt = t0.Add(-time.Hour) })},
		{name: "cancelled: access until expiry", in: sub(play.StateCanceled, noRenew, func(p *play.SubscriptionPurchaseV2) {
			p.CanceledStateContext = &play.CanceledStateContext{}
		}), want: want(subscriptions.StateCancelled, off)},
		{name: "expired", in: sub(play.StateExpired, noRenew, expiry(-time.Hour)),
			want: want(subscriptions.StateExpired, off, func(o *subscriptions.Observation) { o.ExpiresAt = t0.Add(-time.Hour) })},
		{name: "pending purchase cancelled", in: sub(play.StatePendingPurchaseCanceled, noRenew),
			want: want(subscriptions.StateExpired, off)},
		{name: "pending", in: sub(play.StatePending), wantErr: play.ErrPending},
		{name: "upgrade: the linked token is replaced", in: sub(play.StateActive, func(p *play.SubscriptionPurchaseV2) {
			p.LinkedPurchaseToken = "tok-0"
		}), want: want(subscriptions.StateActive, func(o *subscriptions.Observation) { o.Replaces = "tok-0" })},
		{name: "test purchase is sandbox", in: sub(play.StateActive, func(p *play.SubscriptionPurchaseV2) {
			p.TestPurchase = &struct{}{}
		}), want: want(subscriptions.StateActive, func(o *subscriptions.Observation) { o.Environment = "Sandbox" })},
		{name: "no account id", in: sub(play.StateActive, func(p *play.SubscriptionPurchaseV2) {
			p.ExternalAccountIdentifiers = nil
		}), want: want(subscriptions.StateActive, func(o *subscriptions.Observation) { o.AccountHint = "" })},
		{name: "the line item expiring last is served", in: sub(play.StateActive, func(p *play.SubscriptionPurchaseV2) {
			p.LineItems = append([]play.LineItem{{ProductID: "vpn.addon", ExpiryTime: t0.Add(time.Hour).Format(rfc)}}, p.LineItems...)
			p.LineItems = append(p.LineItems, play.LineItem{ProductID: "vpn.old", ExpiryTime: t0.Add(-time.Hour).Format(rfc)})
		}), want: want(subscriptions.StateActive)},
		{name: "unspecified state", in: sub(play.StateUnspecified), wantErr: billing.ErrMalformed},
		{name: "unknown state", in: sub("SUBSCRIPTION_STATE_NEW"), wantErr: billing.ErrMalformed},
		{name: "no line item", in: sub(play.StateActive, func(p *play.SubscriptionPurchaseV2) { p.LineItems = nil }), wantErr: billing.ErrMalformed},
		{name: "bad expiry", in: sub(play.StateActive, func(p *play.SubscriptionPurchaseV2) { p.LineItems[0].ExpiryTime = "soon" }), wantErr: billing.ErrMalformed},
		{name: "bad start", in: sub(play.StateActive, func(p *play.SubscriptionPurchaseV2) { p.StartTime = "1" }), wantErr: billing.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := play.Observe(tt.in, "tok-1", t0)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			assertObs(t, got, tt.want)
		})
	}
}

func assertObs(t *testing.T, got, want subscriptions.Observation) {
	t.Helper()
	gg, wg := got.GraceEndsAt, want.GraceEndsAt
	got.GraceEndsAt, want.GraceEndsAt = nil, nil
	if got != want {
		t.Errorf("observation\n got %+v\nwant %+v", got, want)
	}
	if (gg == nil) != (wg == nil) || (gg != nil && !gg.Equal(*wg)) {
		t.Errorf("GraceEndsAt = %v, want %v", gg, wg)
	}
}

// TestObserveLifecycle runs purchases through subscriptions.Apply: what
// Herald does with each read of the API.
func TestObserveLifecycle(t *testing.T) {
	type step struct {
		token  string
		in     play.SubscriptionPurchaseV2
		state  subscriptions.State
		events []string
	}
	linked := func(tok string) func(*play.SubscriptionPurchaseV2) {
		return func(p *play.SubscriptionPurchaseV2) { p.LinkedPurchaseToken = tok }
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{name: "pause and resume", steps: []step{
			{"tok-1", sub(play.StateActive), subscriptions.StateActive, []string{subscriptions.EventStarted}},
			{"tok-1", sub(play.StatePaused), subscriptions.StatePaused, nil},
			{"tok-1", sub(play.StateActive, expiry(60*24*time.Hour)), subscriptions.StateActive, []string{subscriptions.EventRecovered}},
		}},
		{name: "fail, grace, recover", steps: []step{
			{"tok-1", sub(play.StateActive), subscriptions.StateActive, []string{subscriptions.EventStarted}},
			{"tok-1", sub(play.StateInGracePeriod, expiry(32*24*time.Hour)), subscriptions.StateGrace, []string{subscriptions.EventPaymentFailed}},
			{"tok-1", sub(play.StateActive, expiry(59*24*time.Hour)), subscriptions.StateActive, []string{subscriptions.EventRecovered}},
		}},
		{name: "fail, on hold, expire", steps: []step{
			{"tok-1", sub(play.StateActive), subscriptions.StateActive, []string{subscriptions.EventStarted}},
			{"tok-1", sub(play.StateOnHold), subscriptions.StateOnHold, []string{subscriptions.EventPaymentFailed}},
			{"tok-1", sub(play.StateExpired, noRenew), subscriptions.StateExpired, []string{subscriptions.EventExpired}},
		}},
		{name: "cancel, expire", steps: []step{
			{"tok-1", sub(play.StateActive), subscriptions.StateActive, []string{subscriptions.EventStarted}},
			{"tok-1", sub(play.StateCanceled, noRenew), subscriptions.StateCancelled, []string{subscriptions.EventCancelled}},
			{"tok-1", sub(play.StateExpired, noRenew), subscriptions.StateExpired, []string{subscriptions.EventExpired}},
		}},
		{name: "upgrade: the new token replaces the old", steps: []step{
			{"tok-1", sub(play.StateActive), subscriptions.StateActive, []string{subscriptions.EventStarted}},
			{"tok-2", sub(play.StateActive, linked("tok-1"), func(p *play.SubscriptionPurchaseV2) {
				p.LineItems[0].ProductID = "vpn.yearly"
			}), subscriptions.StateActive, []string{subscriptions.EventStarted}},
		}},
		{name: "downgrade: the new token replaces the old", steps: []step{
			{"tok-1", sub(play.StateActive, func(p *play.SubscriptionPurchaseV2) { p.LineItems[0].ProductID = "vpn.yearly" }),
				subscriptions.StateActive, []string{subscriptions.EventStarted}},
			{"tok-2", sub(play.StateActive, linked("tok-1")), subscriptions.StateActive, []string{subscriptions.EventStarted}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ents := map[string]*subscriptions.Entitlement{}
			for i, s := range tt.steps {
				obs, err := play.Observe(s.in, s.token, t0.Add(time.Duration(i)*time.Hour))
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if obs.Replaces != "" && (ents[obs.Replaces] == nil || obs.Replaces == s.token) {
					t.Fatalf("step %d: replaces %q, which is unknown", i, obs.Replaces)
				}
				prev := ents[s.token]
				next, _ := subscriptions.Apply(prev, obs, "plan")
				if next.State != s.state {
					t.Errorf("step %d: state %s, want %s", i, next.State, s.state)
				}
				if got := subscriptions.Transitions(prev, next); !equal(got, s.events) {
					t.Errorf("step %d: events %v, want %v", i, got, s.events)
				}
				ents[s.token] = &next
			}
		})
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestStateFor(t *testing.T) {
	purchase := func(s subscriptions.State) play.Purchase {
		return play.Purchase{Observation: subscriptions.Observation{ExternalID: "tok-1", State: s}}
	}
	subPush := func(typ int, tok string) play.Push {
		return play.Push{Kind: play.KindSubscription, NotificationType: typ, PurchaseToken: tok}
	}
	voided := play.Push{Kind: play.KindVoided, PurchaseToken: "tok-1"}
	tests := []struct {
		name string
		push play.Push
		p    play.Purchase
		want subscriptions.State
	}{
		{"revoked", subPush(play.SubscriptionRevoked, "tok-1"), purchase(subscriptions.StateExpired), subscriptions.StateRevoked},
		{"revoked, whatever the API says", subPush(play.SubscriptionRevoked, "tok-1"), purchase(subscriptions.StateActive), subscriptions.StateRevoked},
		{"revoked another token", subPush(play.SubscriptionRevoked, "tok-9"), purchase(subscriptions.StateExpired), subscriptions.StateExpired},
		{"expired", subPush(play.SubscriptionExpired, "tok-1"), purchase(subscriptions.StateExpired), subscriptions.StateExpired},
		{"renewed", subPush(play.SubscriptionRenewed, "tok-1"), purchase(subscriptions.StateActive), subscriptions.StateActive},
		{"voided and ended: refunded", voided, purchase(subscriptions.StateExpired), subscriptions.StateRefunded},
		{"voided renewal, still active", voided, purchase(subscriptions.StateActive), subscriptions.StateActive},
		{"test", play.Push{Kind: play.KindTest}, purchase(subscriptions.StateActive), subscriptions.StateActive},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := play.StateFor(tt.push, tt.p); got != tt.want {
				t.Errorf("StateFor = %s, want %s", got, tt.want)
			}
		})
	}
}
