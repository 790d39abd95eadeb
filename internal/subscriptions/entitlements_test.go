package subscriptions_test

import (
	"slices"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/subscriptions"
)

func devicesOf(plan string) int {
	return map[string]int{"trial": 3, "basic": 5, "premium": 10}[plan]
}

func TestGrantsAndAccessEnds(t *testing.T) {
	grace := now.Add(48 * time.Hour)
	cases := []struct {
		name   string
		e      subscriptions.Entitlement
		grants bool
		ends   time.Time
	}{
		{"active, running", subscriptions.Entitlement{State: subscriptions.StateActive, ExpiresAt: now.Add(time.Hour)}, true, now.Add(time.Hour)},
		{"active, past its end", subscriptions.Entitlement{State: subscriptions.StateActive, ExpiresAt: now.Add(-time.Hour)}, false, now.Add(-time.Hour)},
		{"cancelled keeps access to the end", subscriptions.Entitlement{State: subscriptions.StateCancelled, ExpiresAt: now.Add(time.Hour)}, true, now.Add(time.Hour)},
		{"grace runs past the period", subscriptions.Entitlement{State: subscriptions.StateGrace, ExpiresAt: now.Add(-time.Hour), GraceEndsAt: &grace}, true, grace},
		{"grace without an end: the period's", subscriptions.Entitlement{State: subscriptions.StateGrace, ExpiresAt: now.Add(time.Hour)}, true, now.Add(time.Hour)},
		{"on hold: ended when the store said so", subscriptions.Entitlement{State: subscriptions.StateOnHold, ExpiresAt: now.Add(time.Hour), ObservedAt: now.Add(-time.Minute)}, false, now.Add(-time.Minute)},
		{"refunded mid-period", subscriptions.Entitlement{State: subscriptions.StateRefunded, ExpiresAt: now.Add(24 * time.Hour), ObservedAt: now.Add(-time.Hour)}, false, now.Add(-time.Hour)},
		{"expired long ago: never after the period", subscriptions.Entitlement{State: subscriptions.StateExpired, ExpiresAt: now.Add(-48 * time.Hour), ObservedAt: now}, false, now.Add(-48 * time.Hour)},
		{"paused", subscriptions.Entitlement{State: subscriptions.StatePaused, ExpiresAt: now.Add(time.Hour), ObservedAt: now}, false, now},
	}
	for _, c := range cases {
		if got := c.e.Grants(now); got != c.grants {
			t.Errorf("%s: grants %v, want %v", c.name, got, c.grants)
		}
		if got := c.e.AccessEnds(); !got.Equal(c.ends) {
			t.Errorf("%s: access ends %s, want %s", c.name, got, c.ends)
		}
	}
}

func TestEffective(t *testing.T) {
	ent := func(id string, src subscriptions.Source, plan string, st subscriptions.State, ends time.Duration) subscriptions.Entitlement {
		return subscriptions.Entitlement{ID: id, Source: src, Plan: plan, State: st, ExpiresAt: now.Add(ends), AutoRenew: src.Store()}
	}
	cases := []struct {
		name   string
		ents   []subscriptions.Entitlement
		want   string // the entitlement chosen; "" none at all
		active bool
	}{
		{"none", nil, "", false},
		{"the trial alone", []subscriptions.Entitlement{ent("t", subscriptions.TrialGrant, "trial", subscriptions.StateTrial, time.Hour)}, "t", true},
		{"a purchase beats the trial", []subscriptions.Entitlement{
			ent("t", subscriptions.TrialGrant, "trial", subscriptions.StateTrial, 72*time.Hour),
			ent("p", subscriptions.AppStore, "basic", subscriptions.StateActive, time.Hour)}, "p", true},
		{"more devices beat a longer plan", []subscriptions.Entitlement{
			ent("b", subscriptions.Stripe, "basic", subscriptions.StateActive, 720*time.Hour),
			ent("a", subscriptions.Admin, "premium", subscriptions.StateActive, time.Hour)}, "a", true},
		{"a live plan beats a lapsed better one", []subscriptions.Entitlement{
			ent("p", subscriptions.GooglePlay, "premium", subscriptions.StateOnHold, -time.Hour),
			ent("t", subscriptions.TrialGrant, "trial", subscriptions.StateTrial, time.Hour)}, "t", true},
		{"none live: the one that ended last", []subscriptions.Entitlement{
			ent("old", subscriptions.AppStore, "premium", subscriptions.StateExpired, -72*time.Hour),
			ent("new", subscriptions.TrialGrant, "trial", subscriptions.StateExpired, -time.Hour)}, "new", false},
		{"same plan: the longer", []subscriptions.Entitlement{
			ent("short", subscriptions.AppStore, "basic", subscriptions.StateActive, time.Hour),
			ent("long", subscriptions.Stripe, "basic", subscriptions.StateActive, 2*time.Hour)}, "long", true},
		{"a tie goes to the weightier source, whatever the order", []subscriptions.Entitlement{
			ent("admin", subscriptions.Admin, "basic", subscriptions.StateExpired, -time.Hour),
			ent("trial", subscriptions.TrialGrant, "trial", subscriptions.StateExpired, -time.Hour)}, "admin", false},
	}
	for _, c := range cases {
		for _, order := range [][]subscriptions.Entitlement{c.ents, reversed(c.ents)} {
			sub, ok := subscriptions.Effective(order, now, devicesOf)
			if ok != (c.want != "") || sub.EntitlementID != c.want || sub.Active(now) != c.active {
				t.Errorf("%s: chose %q (ok %v, active %v), want %q (active %v)", c.name, sub.EntitlementID, ok, sub.Active(now), c.want, c.active)
			}
		}
	}
}

func reversed[T any](s []T) []T {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

func TestApplyKeepsTheNewestWord(t *testing.T) {
	obs := func(st subscriptions.State, at time.Duration, expires time.Duration) subscriptions.Observation {
		return subscriptions.Observation{Source: subscriptions.AppStore, ExternalID: "otx", ProductID: "p", State: st,
			ExpiresAt: now.Add(expires), ObservedAt: now.Add(at), AutoRenew: true}
	}
	first, changed := subscriptions.Apply(nil, obs(subscriptions.StateActive, 0, 30*24*time.Hour), "basic")
	if !changed || first.State != subscriptions.StateActive || first.Plan != "basic" {
		t.Fatalf("new purchase: %+v changed %v", first, changed)
	}
	// The same word again changes nothing.
	if _, changed := subscriptions.Apply(&first, obs(subscriptions.StateActive, 0, 30*24*time.Hour), "basic"); changed {
		t.Error("a repeat changed the entitlement")
	}
	// An older word arriving late changes nothing.
	if got, changed := subscriptions.Apply(&first, obs(subscriptions.StateOnHold, -time.Minute, 30*24*time.Hour), "basic"); changed || got.State != subscriptions.StateActive {
		t.Errorf("an older word changed it: %+v", got)
	}
	// A newer one does, and keeps the first start and the account.
	first.AccountID = "acct"
	next, changed := subscriptions.Apply(&first, obs(subscriptions.StateGrace, time.Minute, 30*24*time.Hour), "basic")
	if !changed || next.State != subscriptions.StateGrace || next.AccountID != "acct" {
		t.Errorf("a newer word: %+v changed %v", next, changed)
	}
}

func TestTransitions(t *testing.T) {
	e := func(st subscriptions.State, expires time.Duration, autoRenew bool) *subscriptions.Entitlement {
		return &subscriptions.Entitlement{State: st, ExpiresAt: now.Add(expires), AutoRenew: autoRenew}
	}
	month := 30 * 24 * time.Hour
	cases := []struct {
		name       string
		prev, next *subscriptions.Entitlement
		want       []string
	}{
		{"subscribed", nil, e(subscriptions.StateActive, month, true), []string{subscriptions.EventStarted}},
		{"a trial started", nil, e(subscriptions.StateTrial, month, true), []string{subscriptions.EventStarted}},
		{"renewed", e(subscriptions.StateActive, month, true), e(subscriptions.StateActive, 2*month, true), []string{subscriptions.EventRenewed}},
		{"trial converted", e(subscriptions.StateTrial, month, true), e(subscriptions.StateActive, 2*month, true), []string{subscriptions.EventRenewed}},
		{"payment failed, grace", e(subscriptions.StateActive, month, true), e(subscriptions.StateGrace, month, true), []string{subscriptions.EventPaymentFailed}},
		{"payment failed, on hold", e(subscriptions.StateActive, month, true), e(subscriptions.StateOnHold, month, true), []string{subscriptions.EventPaymentFailed}},
		{"grace to hold is one failure", e(subscriptions.StateGrace, month, true), e(subscriptions.StateOnHold, month, true), nil},
		{"recovered", e(subscriptions.StateGrace, month, true), e(subscriptions.StateActive, 2*month, true), []string{subscriptions.EventRecovered}},
		{"resumed after a pause", e(subscriptions.StatePaused, month, true), e(subscriptions.StateActive, 2*month, true), []string{subscriptions.EventRecovered}},
		{"cancelled", e(subscriptions.StateActive, month, true), e(subscriptions.StateCancelled, month, false), []string{subscriptions.EventCancelled}},
		{"renewal turned back on", e(subscriptions.StateCancelled, month, false), e(subscriptions.StateActive, month, true), []string{subscriptions.EventRecovered}},
		{"expired", e(subscriptions.StateCancelled, month, false), e(subscriptions.StateExpired, month, false), []string{subscriptions.EventExpired}},
		{"revoked", e(subscriptions.StateActive, month, true), e(subscriptions.StateRevoked, month, false), []string{subscriptions.EventExpired}},
		{"refunded", e(subscriptions.StateActive, month, true), e(subscriptions.StateRefunded, month, false), []string{subscriptions.EventRefunded}},
		{"resubscribed after expiry", e(subscriptions.StateExpired, -month, false), e(subscriptions.StateActive, month, true), []string{subscriptions.EventStarted}},
		{"nothing changed", e(subscriptions.StateActive, month, true), e(subscriptions.StateActive, month, true), nil},
	}
	for _, c := range cases {
		if got := subscriptions.Transitions(c.prev, *c.next); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
