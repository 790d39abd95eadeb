package subscriptions

import (
	"time"

	"github.com/herald-vpn/herald/internal/webhooks"
)

// Source is where an entitlement comes from.
type Source string

// Sources.
const (
	AppStore   Source = "app_store"
	GooglePlay Source = "google_play"
	Stripe     Source = "stripe"
	Admin      Source = "admin"
	TrialGrant Source = "trial"
	Referral   Source = "referral"
)

// Sources lists every source, stores first.
func Sources() []Source {
	return []Source{AppStore, GooglePlay, Stripe, Admin, TrialGrant, Referral}
}

// Store reports whether the source is a store that sells subscriptions
// (its entitlements change by its notifications and its API).
func (s Source) Store() bool { return s == AppStore || s == GooglePlay || s == Stripe }

// weight breaks ties between entitlements: a purchase, then an
// administrator's grant, then a referral bonus, then the trial.
func (s Source) weight() int {
	switch {
	case s.Store():
		return 3
	case s == Admin:
		return 2
	case s == Referral:
		return 1
	}
	return 0
}

// State is where an entitlement is in its life.
type State string

// States.
const (
	// StateTrial: a free period (the signup trial, a store's free trial).
	StateTrial State = "trial"
	// StateActive: paid and running.
	StateActive State = "active"
	// StateGrace: renewal failed, the store retries billing, access stays
	// until GraceEndsAt.
	StateGrace State = "grace"
	// StateOnHold: renewal failed, the store retries billing, no access.
	StateOnHold State = "on_hold"
	// StatePaused: paused by the user (Google Play), no access.
	StatePaused State = "paused"
	// StateCancelled: will not renew; access until ExpiresAt.
	StateCancelled State = "cancelled"
	// StateExpired: ended.
	StateExpired State = "expired"
	// StateRefunded: the store refunded it; access ended then.
	StateRefunded State = "refunded"
	// StateRevoked: the store took it back (Family Sharing left, fraud).
	StateRevoked State = "revoked"
)

// States lists every state.
func States() []State {
	return []State{StateTrial, StateActive, StateGrace, StateOnHold, StatePaused, StateCancelled, StateExpired, StateRefunded, StateRevoked}
}

// Valid reports whether s is one of States.
func (s State) Valid() bool {
	for _, v := range States() {
		if v == s {
			return true
		}
	}
	return false
}

// Entitlement is one right to a plan: a store purchase (one per
// subscription in the store, across its renewals), an administrator's
// grant, the signup trial or a referral bonus. An account's subscription
// is derived from its entitlements (Effective).
type Entitlement struct {
	ID string
	// AccountID is "" while a store purchase names no account Herald
	// knows; it is linked when the account proves the purchase.
	AccountID string
	Source    Source
	// ExternalID is the purchase in its store: the App Store's
	// originalTransactionId, Google Play's purchase token (the latest of
	// an upgrade chain), Stripe's subscription id; the account id for
	// admin, trial and referral.
	ExternalID  string
	ProductID   string
	Plan        string
	State       State
	StartedAt   time.Time
	ExpiresAt   time.Time
	GraceEndsAt *time.Time
	AutoRenew   bool
	// Environment is the store's ("Production", "Sandbox"); "" otherwise.
	Environment string
	// Customer is the store's customer (Stripe), "" otherwise.
	Customer string
	// ObservedAt is the store's time of the word this state came from;
	// an older word never overwrites a newer one.
	ObservedAt time.Time
	// ChangedAt is when Herald last changed the row.
	ChangedAt time.Time
	CreatedAt time.Time
}

// Grants reports whether the entitlement gives access at now.
func (e Entitlement) Grants(now time.Time) bool {
	switch e.State {
	case StateTrial, StateActive, StateCancelled, StateGrace:
		return now.Before(e.AccessEnds())
	}
	return false
}

// AccessEnds is when access ends (or ended): the period's end, the end
// of a grace period, or, for a state without access, when the store said
// so (and never after the period's end).
func (e Entitlement) AccessEnds() time.Time {
	switch e.State {
	case StateTrial, StateActive, StateCancelled:
		return e.ExpiresAt
	case StateGrace:
		if e.GraceEndsAt != nil && e.GraceEndsAt.After(e.ExpiresAt) {
			return *e.GraceEndsAt
		}
		return e.ExpiresAt
	}
	if !e.ObservedAt.IsZero() && e.ObservedAt.Before(e.ExpiresAt) {
		return e.ObservedAt
	}
	return e.ExpiresAt
}

// Effective is the subscription an account's entitlements add up to: the
// best entitlement granting access at now (the plan allowing the most
// devices, then the one lasting longest); when none does, the one whose
// access ended last, so that SUBSCRIPTION_EXPIRED can name it. ok is
// false when there is no entitlement at all. A nil devices ranks every
// plan alike.
func Effective(ents []Entitlement, now time.Time, devices func(plan string) int) (Subscription, bool) {
	if devices == nil {
		devices = func(string) int { return 0 }
	}
	var best *Entitlement
	better := func(e *Entitlement) bool {
		if best == nil {
			return true
		}
		eg, bg := e.Grants(now), best.Grants(now)
		if eg != bg {
			return eg
		}
		if eg {
			if de, db := devices(e.Plan), devices(best.Plan); de != db {
				return de > db
			}
		}
		if ee, be := e.AccessEnds(), best.AccessEnds(); !ee.Equal(be) {
			return ee.After(be)
		}
		// A tie goes to the newer word, then to the source that weighs
		// more (an administrator's grant over the trial it ended in the
		// same change), then to the id, so that the answer never depends
		// on the order the rows were read in.
		if !e.ChangedAt.Equal(best.ChangedAt) {
			return e.ChangedAt.After(best.ChangedAt)
		}
		if we, wb := e.Source.weight(), best.Source.weight(); we != wb {
			return we > wb
		}
		return e.ID > best.ID
	}
	for i := range ents {
		if better(&ents[i]) {
			best = &ents[i]
		}
	}
	if best == nil {
		return Subscription{}, false
	}
	return Subscription{
		Plan:          best.Plan,
		ExpiresAt:     best.AccessEnds().UTC(),
		Source:        best.Source,
		AutoRenew:     best.AutoRenew && best.Grants(now),
		GraceEndsAt:   graceEnd(*best),
		EntitlementID: best.ID,
	}, true
}

func graceEnd(e Entitlement) *time.Time {
	if e.State != StateGrace || e.GraceEndsAt == nil {
		return nil
	}
	t := e.GraceEndsAt.UTC()
	return &t
}

// Observation is a store's word on one purchase at one moment, decoded
// and verified by the store's adapter (internal/billing/...): what the
// entitlement of (Source, ExternalID) should become.
type Observation struct {
	Source     Source
	ExternalID string
	// AccountHint is the Herald account id the purchase carries (the App
	// Store's appAccountToken, Play's obfuscatedExternalAccountId,
	// Stripe's client_reference_id or metadata); "" when none.
	AccountHint string
	ProductID   string
	State       State
	StartedAt   time.Time
	ExpiresAt   time.Time
	GraceEndsAt *time.Time
	AutoRenew   bool
	Environment string
	Customer    string
	// ObservedAt is the store's time of this word (the notification's
	// signed date, Play's eventTimeMillis, Stripe's event created); for a
	// read of the store's API, when it was read.
	ObservedAt time.Time
	// Replaces is the purchase this one replaces in the same store (Play's
	// linkedPurchaseToken after an upgrade or downgrade): its entitlement
	// ends and this one carries on.
	Replaces string
	// TransactionID is the store's transaction this word is about (the
	// App Store's transactionId), "" when it names none: a refund or
	// revocation it records is marked by it (MarkRevocation), so that the
	// store's history read later does not record it again.
	TransactionID string
	// Acknowledged: the store had the purchase acknowledged when this
	// word was read (Google Play's acknowledgementState), so settling it
	// needs no other read.
	Acknowledged bool
}

// Apply is the entitlement after obs, from cur (nil when the purchase is
// new), planned with plan. A word older than the one cur came from
// changes nothing (changed is false), so notifications that arrive out of
// order converge on the newest.
func Apply(cur *Entitlement, obs Observation, plan string) (next Entitlement, changed bool) {
	if cur != nil {
		if obs.ObservedAt.Before(cur.ObservedAt) {
			return *cur, false
		}
		next = *cur
	}
	next.Source, next.ExternalID = obs.Source, obs.ExternalID
	if next.AccountID == "" {
		next.AccountID = obs.AccountHint
	}
	next.ProductID, next.Plan, next.State = obs.ProductID, plan, obs.State
	if !obs.StartedAt.IsZero() && (next.StartedAt.IsZero() || obs.StartedAt.Before(next.StartedAt)) {
		next.StartedAt = obs.StartedAt.UTC()
	}
	next.ExpiresAt = obs.ExpiresAt.UTC()
	next.GraceEndsAt = nil
	if obs.GraceEndsAt != nil {
		g := obs.GraceEndsAt.UTC()
		next.GraceEndsAt = &g
	}
	next.AutoRenew = obs.AutoRenew
	if obs.Environment != "" {
		next.Environment = obs.Environment
	}
	if obs.Customer != "" {
		next.Customer = obs.Customer
	}
	next.ObservedAt = obs.ObservedAt.UTC()
	return next, cur == nil || !sameState(*cur, next)
}

// sameState reports whether a and b say the same (the times of the word
// aside).
func sameState(a, b Entitlement) bool {
	return a.AccountID == b.AccountID && a.ProductID == b.ProductID && a.Plan == b.Plan && a.State == b.State &&
		a.StartedAt.Equal(b.StartedAt) && a.ExpiresAt.Equal(b.ExpiresAt) && sameTime(a.GraceEndsAt, b.GraceEndsAt) && a.AutoRenew == b.AutoRenew &&
		a.Environment == b.Environment && a.Customer == b.Customer
}

// Lifecycle events (webhook types subscription.*).
const (
	EventStarted       = webhooks.SubscriptionStarted
	EventRenewed       = webhooks.SubscriptionRenewed
	EventPaymentFailed = webhooks.SubscriptionPaymentFailed
	EventRecovered     = webhooks.SubscriptionRecovered
	EventExpired       = webhooks.SubscriptionExpired
	EventRefunded      = webhooks.SubscriptionRefunded
	EventCancelled     = webhooks.SubscriptionCancelled
	EventPlanChanged   = webhooks.SubscriptionPlanChanged
)

// Transitions names what happened between an entitlement's prev (nil for
// a new one) and next, in the order the events are written. A plan change
// of the account's subscription is the caller's (it depends on the
// account's other entitlements).
func Transitions(prev *Entitlement, next Entitlement) []string {
	var out []string
	live := func(s State) bool {
		return s == StateTrial || s == StateActive || s == StateGrace || s == StateCancelled
	}
	failing := func(s State) bool { return s == StateGrace || s == StateOnHold }
	switch {
	case prev == nil || (!live(prev.State) && !failing(prev.State) && prev.State != StatePaused):
		if live(next.State) {
			return append(out, EventStarted)
		}
		if prev == nil && failing(next.State) {
			return append(out, EventPaymentFailed)
		}
	}
	if prev == nil {
		return out
	}
	switch {
	case next.State == StateRefunded && prev.State != StateRefunded:
		out = append(out, EventRefunded)
	case next.State == StateRevoked && prev.State != StateRevoked,
		next.State == StateExpired && prev.State != StateExpired:
		out = append(out, EventExpired)
	case failing(next.State) && !failing(prev.State):
		out = append(out, EventPaymentFailed)
	case (next.State == StateActive || next.State == StateTrial) && (failing(prev.State) || prev.State == StatePaused):
		out = append(out, EventRecovered)
	case next.State == StateCancelled && prev.State != StateCancelled && live(prev.State):
		out = append(out, EventCancelled)
	case (next.State == StateActive || next.State == StateTrial) && prev.State == StateCancelled:
		// Auto-renew turned back on: the subscription goes on.
		out = append(out, EventRecovered)
	case live(next.State) && next.ExpiresAt.After(prev.ExpiresAt) && live(prev.State):
		out = append(out, EventRenewed)
	}
	return out
}

// sameTime reports whether two optional times are both absent or equal.
func sameTime(a, b *time.Time) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && a.Equal(*b))
}
