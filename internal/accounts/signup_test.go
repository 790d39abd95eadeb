package accounts

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/subscriptions"
	"github.com/herald-vpn/herald/internal/webhooks"
	"github.com/riverqueue/river"
)

// signupStore is Create's unit of work in memory: one account with a
// referral code, and what Create wrote.
type signupStore struct {
	Store
	now      time.Time
	referrer subscriptions.Subscription // of the account "ref", code REFCODE1
	inserted []subscriptions.Subscription
	extended []time.Time
	rewards  []time.Duration
	events   []webhooks.Payload
	ents     map[string]subscriptions.Entitlement
	saved    map[string]subscriptions.Subscription
}

func (f *signupStore) InTx(ctx context.Context, fn func(context.Context) error) error { return fn(ctx) }
func (f *signupStore) TxTime(context.Context) time.Time                               { return f.now }
func (f *signupStore) AccountIDByReferralCode(_ context.Context, code string) (string, error) {
	if code == "REFCODE1" {
		return "ref", nil
	}
	return "", storage.ErrNotFound
}
func (f *signupStore) InsertAccount(_ context.Context, _ NewAccount, sub subscriptions.Subscription) error {
	f.inserted = append(f.inserted, sub)
	return nil
}
func (f *signupStore) LockSubscription(_ context.Context, id string) (subscriptions.Subscription, error) {
	if sub, ok := f.saved[id]; ok {
		return sub, nil
	}
	return f.referrer, nil
}
func (f *signupStore) SaveSubscription(_ context.Context, id string, sub subscriptions.Subscription) error {
	if id == "ref" {
		f.extended = append(f.extended, sub.ExpiresAt)
	}
	if f.saved == nil {
		f.saved = map[string]subscriptions.Subscription{}
	}
	f.saved[id] = sub
	return nil
}
func (f *signupStore) LockEntitlement(_ context.Context, src subscriptions.Source, ext string) (subscriptions.Entitlement, error) {
	e, ok := f.ents[string(src)+"/"+ext]
	if !ok {
		return e, storage.ErrNotFound
	}
	return e, nil
}
func (f *signupStore) SaveEntitlement(_ context.Context, e subscriptions.Entitlement) error {
	if f.ents == nil {
		f.ents = map[string]subscriptions.Entitlement{}
	}
	f.ents[string(e.Source)+"/"+e.ExternalID] = e
	return nil
}
func (f *signupStore) AccountEntitlements(_ context.Context, id string) ([]subscriptions.Entitlement, error) {
	var out []subscriptions.Entitlement
	for _, e := range f.ents {
		if e.AccountID == id {
			out = append(out, e)
		}
	}
	return out, nil
}
func (f *signupStore) RecordChange(context.Context, subscriptions.Change) error { return nil }
func (f *signupStore) EnqueueJob(context.Context, river.JobArgs) error          { return nil }
func (f *signupStore) InsertReferralReward(_ context.Context, _, _ string, bonus time.Duration) error {
	f.rewards = append(f.rewards, bonus)
	return nil
}
func (f *signupStore) Emit(_ context.Context, p webhooks.Payload) error {
	f.events = append(f.events, p)
	return nil
}
func (f *signupStore) AccountByID(context.Context, string) (Account, error) { return Account{}, nil }

// Signup's trial and referral arithmetic, without a database.
func TestSignupTrialAndReferral(t *testing.T) {
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	cases := []struct {
		name       string
		referral   string
		referrer   subscriptions.Subscription
		applied    bool
		trialEnd   time.Time
		referrerTo time.Time // zero: not extended
	}{
		{"no referral", "", subscriptions.Subscription{}, false, now.Add(7 * day), time.Time{}},
		{"unknown code", "NOPE", subscriptions.Subscription{}, false, now.Add(7 * day), time.Time{}},
		{"referrer still subscribed: bonus on their expiry", "REFCODE1", subscriptions.Subscription{Plan: "premium", ExpiresAt: now.Add(10 * day)},
			true, now.Add(10 * day), now.Add(13 * day)},
		{"referrer lapsed: bonus from now", "REFCODE1", subscriptions.Subscription{Plan: "trial", ExpiresAt: now.Add(-day)},
			true, now.Add(10 * day), now.Add(3 * day)},
	}
	for _, c := range cases {
		f := &signupStore{now: now, referrer: c.referrer}
		_, applied, err := Create(context.Background(), f, NewAccount{ID: "new", Email: "a@example.com", Trial: 7 * day, Referral: c.referral, ReferralBonus: 3 * day})
		if err != nil || applied != c.applied {
			t.Errorf("%s: applied %v, %v", c.name, applied, err)
			continue
		}
		if len(f.inserted) != 1 || f.inserted[0] != (subscriptions.Subscription{Plan: subscriptions.Trial, ExpiresAt: c.trialEnd, Source: subscriptions.TrialGrant}) {
			t.Errorf("%s: inserted %v, want a trial to %s", c.name, f.inserted, c.trialEnd)
		}
		if c.referrerTo.IsZero() != (len(f.extended) == 0) || (len(f.extended) == 1 && !f.extended[0].Equal(c.referrerTo)) || len(f.rewards) != len(f.extended) {
			t.Errorf("%s: referrer extended to %v (rewards %v), want %v", c.name, f.extended, f.rewards, c.referrerTo)
		}
		addr := "a@example.com"
		want := UserCreated{UserID: "new", Email: &addr, Plan: subscriptions.Trial, ExpiresAt: c.trialEnd}
		if c.applied {
			want.ReferrerID = "ref"
		}
		var created []webhooks.Payload
		for _, e := range f.events {
			if e.EventType() == webhooks.UserCreated {
				created = append(created, e)
			}
		}
		if len(created) != 1 || !reflect.DeepEqual(created[0], want) {
			t.Errorf("%s: events %+v, want one %+v", c.name, f.events, want)
		}
		if trial := f.ents["trial/new"]; trial.State != subscriptions.StateTrial || !trial.ExpiresAt.Equal(c.trialEnd) || trial.AccountID != "new" {
			t.Errorf("%s: trial entitlement %+v, want a trial to %s", c.name, trial, c.trialEnd)
		}
	}
}

func TestTrialEnd(t *testing.T) {
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		trial, bonus time.Duration
		referred     bool
		want         time.Time
	}{
		{time.Hour, 0, false, now.Add(time.Hour)},
		{time.Hour, time.Minute, false, now.Add(time.Hour)},
		{time.Hour, time.Minute, true, now.Add(time.Hour + time.Minute)},
		{0, time.Minute, true, now.Add(time.Minute)},
	} {
		if got := TrialEnd(now, c.trial, c.bonus, c.referred); !got.Equal(c.want) {
			t.Errorf("TrialEnd(%v, %v, %v) = %v, want %v", c.trial, c.bonus, c.referred, got, c.want)
		}
	}
}
