package subscriptions

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/webhooks"
	"github.com/riverqueue/river"
)

// Change is one row of an entitlement's history: what it became, and why.
type Change struct {
	ID            string
	EntitlementID string
	AccountID     string
	Source        Source
	// Cause names what made the change: a store's notification
	// ("app_store:DID_RENEW"), "purchase" (an app's proof), "restore",
	// "reconcile", "admin", "signup", "referral", "expiry".
	Cause     string
	FromState State // "" for a new entitlement
	ToState   State
	Plan      string
	ExpiresAt time.Time
	At        time.Time
}

// Ledger is the persistence of entitlements; sqlstore implements it.
// Every method but the transactor's joins the unit of work ctx carries.
type Ledger interface {
	storage.Transactor
	// Emit writes a webhook event in the transaction ctx carries.
	Emit(ctx context.Context, p webhooks.Payload) error
	// EnqueueJob inserts a background job in the transaction ctx carries.
	EnqueueJob(ctx context.Context, args river.JobArgs) error
	// LockSubscription reads a live account's subscription and holds its
	// row until the transaction ends. ErrNotFound for an unknown or
	// deleted account.
	LockSubscription(ctx context.Context, accountID string) (Subscription, error)
	// SaveSubscription replaces the account's derived subscription.
	SaveSubscription(ctx context.Context, accountID string, sub Subscription) error
	// AccountEntitlements reads every entitlement of the account.
	AccountEntitlements(ctx context.Context, accountID string) ([]Entitlement, error)
	// LockEntitlement reads the entitlement of a purchase and holds it
	// until the transaction ends; ErrNotFound when there is none.
	LockEntitlement(ctx context.Context, source Source, externalID string) (Entitlement, error)
	// SaveEntitlement inserts or replaces the entitlement (by ID).
	SaveEntitlement(ctx context.Context, e Entitlement) error
	// RecordChange appends a row to the history.
	RecordChange(ctx context.Context, c Change) error
	// EntitlementChanges reads the account's history, newest first, at
	// most limit rows.
	EntitlementChanges(ctx context.Context, accountID string, limit int) ([]Change, error)
	// MarkRevocation records that the refund or revocation of the store's
	// transaction was recorded against the entitlement; false when it was
	// already.
	MarkRevocation(ctx context.Context, source Source, transactionID, entitlementID string) (bool, error)
}

// CausePastRefund is the history's cause of a refund or revocation of an
// earlier period (RecordPastRevocation).
const CausePastRefund = "past_refund"

// PastRevocation is a refund or revocation of one transaction of a store
// purchase, as its store's history gives it (the App Store's Get
// Transaction History).
type PastRevocation struct {
	TransactionID string `json:"transactionId"`
	ProductID     string `json:"productId"`
	// The transaction's period.
	StartedAt time.Time `json:"startedAt"`
	EndsAt    time.Time `json:"endsAt"`
	RevokedAt time.Time `json:"revokedAt"`
	// Reason is StateRefunded (the customer got their money back) or
	// StateRevoked (Family Sharing withdrawn).
	Reason State `json:"reason"`
}

// RecordPastRevocation records the refund or revocation r of an earlier
// period of the purchase (source, externalID), once by its transaction id,
// in one unit of work of st: one history row (cause CausePastRefund, the
// entitlement's state unchanged, expiresAt the refunded period's end) and
// subscription.refunded carrying the period (Lifecycle.RefundedPeriod).
// The entitlement and the account's access stay as they are: the period
// paid now is another. A revocation whose period does not end before the
// entitlement's is the current one, which the store's state gives (Record)
// and is not recorded here; so is a purchase Herald does not hold. It
// reports whether r is of an earlier period of a purchase Herald holds
// (recorded now or before), and whether it recorded anything now.
func RecordPastRevocation(ctx context.Context, st Ledger, source Source, externalID string, r PastRevocation) (earlier, recorded bool, err error) {
	err = st.InTx(ctx, func(ctx context.Context) error {
		now := st.TxTime(ctx)
		e, err := lockEntitlement(ctx, st, source, externalID)
		if err != nil || e == nil || !r.EndsAt.Before(e.ExpiresAt) {
			return err
		}
		earlier = true
		if recorded, err = st.MarkRevocation(ctx, source, r.TransactionID, e.ID); err != nil || !recorded {
			return err
		}
		if err := st.RecordChange(ctx, Change{
			ID: uuid.NewString(), EntitlementID: e.ID, AccountID: e.AccountID, Source: e.Source,
			Cause: CausePastRefund, FromState: e.State, ToState: e.State, Plan: e.Plan, ExpiresAt: r.EndsAt.UTC(), At: now,
		}); err != nil || e.AccountID == "" {
			return err
		}
		sub, err := st.LockSubscription(ctx, e.AccountID)
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		ev := LifecycleEvent(EventRefunded, e.AccountID, *e, sub)
		ev.RefundedPeriod = &RefundedPeriod{
			TransactionID: r.TransactionID, ProductID: r.ProductID, StartsAt: r.StartedAt.UTC(), EndsAt: r.EndsAt.UTC(),
			RevokedAt: r.RevokedAt.UTC(), Reason: r.Reason,
		}
		return st.Emit(ctx, ev)
	})
	return earlier, recorded, err
}

// NoticeArgs is the job that tells an account's owner about their
// subscription (a failed payment, an expiry, a refund, a trial ending):
// the billing package's worker sends it by push, email and Telegram.
type NoticeArgs struct {
	AccountID     string `json:"accountId"`
	EntitlementID string `json:"entitlementId"`
	// Event is a lifecycle event (EventPaymentFailed …) or NoticeTrialEnding.
	Event string    `json:"event"`
	Plan  string    `json:"plan"`
	At    time.Time `json:"at"`
}

// NoticeTrialEnding is the notice of a trial ending within three days.
const NoticeTrialEnding = "trial_ending"

func (NoticeArgs) Kind() string { return "subscription_notice" }

// noticed are the events whose account owner is told.
var noticed = map[string]bool{EventPaymentFailed: true, EventExpired: true, EventRefunded: true}

// Record applies obs, planned as plan, to its purchase's entitlement in
// one unit of work of st: the entitlement under its lock (Apply: a word
// older than the last changes nothing), the purchase it replaces ended,
// the history, the account's derived subscription under the account's
// lock, the lifecycle events and the owner's notices. An AccountHint that
// names no live account leaves the purchase unlinked until a restore
// (Link). It returns the entitlement as stored.
func Record(ctx context.Context, st Ledger, obs Observation, plan, cause string, devices func(string) int) (Entitlement, error) {
	var out Entitlement
	err := st.InTx(ctx, func(ctx context.Context) error {
		now := st.TxTime(ctx)
		cur, err := lockEntitlement(ctx, st, obs.Source, obs.ExternalID)
		if err != nil {
			return err
		}
		var replaced *Entitlement
		if obs.Replaces != "" {
			if replaced, err = lockEntitlement(ctx, st, obs.Source, obs.Replaces); err != nil {
				return err
			}
		}
		unlinked := cur == nil || cur.AccountID == ""
		if unlinked && obs.AccountHint != "" && (replaced == nil || replaced.AccountID == "") {
			if _, err := st.LockSubscription(ctx, obs.AccountHint); errors.Is(err, storage.ErrNotFound) {
				obs.AccountHint = "" // kept, unlinked, until the account proves it
			} else if err != nil {
				return err
			}
		}
		if cur == nil && replaced != nil && replaced.AccountID != "" {
			obs.AccountHint = replaced.AccountID
		}
		next, changed := Apply(cur, obs, plan)
		if !changed {
			out = next
			if cur != nil && next.ObservedAt.After(cur.ObservedAt) {
				next.ChangedAt = now
				return st.SaveEntitlement(ctx, next)
			}
			return nil
		}
		prev := cur
		if prev == nil && replaced != nil {
			prev = replaced // an upgrade goes on from the purchase it replaces
		}
		if prev != nil && prev.AccountID == "" && next.AccountID != "" {
			// A purchase kept unlinked is new to the account it now names:
			// its events are those of a purchase that starts.
			prev = nil
		}
		if replaced != nil && replaced.State != StateExpired {
			old := *replaced
			ended := old
			ended.State, ended.AutoRenew, ended.ChangedAt = StateExpired, false, now
			if err := save(ctx, st, &old, ended, "replaced", now); err != nil {
				return err
			}
		}
		if cur == nil {
			next.ID, next.CreatedAt = uuid.NewString(), now
		}
		next.ChangedAt = now
		if err := save(ctx, st, cur, next, cause, now); err != nil {
			return err
		}
		if obs.TransactionID != "" && (next.State == StateRefunded || next.State == StateRevoked) {
			if _, err := st.MarkRevocation(ctx, next.Source, obs.TransactionID, next.ID); err != nil {
				return err
			}
		}
		out = next
		if next.AccountID == "" {
			return nil
		}
		return settle(ctx, st, next.AccountID, Transitions(prev, next), next, now, devices)
	})
	return out, err
}

// Grant gives the account plan until expires from one of Herald's own
// sources (Admin, TrialGrant, Referral), one entitlement per account and
// source, in the unit of work ctx carries or a new one. An administrator's
// grant ends Herald's other grants (the trial, referral bonuses), so that
// setting a plan means that plan; a store purchase stays, and the better
// of the two is the account's plan.
func Grant(ctx context.Context, st Ledger, accountID string, source Source, plan string, expires time.Time, cause string, devices func(string) int) (Entitlement, error) {
	var out Entitlement
	err := st.InTx(ctx, func(ctx context.Context) error {
		now := st.TxTime(ctx)
		if _, err := st.LockSubscription(ctx, accountID); err != nil {
			return err
		}
		if source == Admin {
			for _, other := range []Source{TrialGrant, Referral} {
				cur, err := lockEntitlement(ctx, st, other, accountID)
				if err != nil {
					return err
				}
				if cur != nil && cur.State != StateExpired {
					ended := *cur
					ended.State, ended.ChangedAt = StateExpired, now
					ended.ExpiresAt = minTime(ended.ExpiresAt, now, expires.UTC())
					if err := save(ctx, st, cur, ended, cause, now); err != nil {
						return err
					}
				}
			}
		}
		state := StateActive
		if source == TrialGrant {
			state = StateTrial
		}
		if !expires.After(now) {
			state = StateExpired
		}
		e, err := Record(ctx, st, Observation{
			Source: source, ExternalID: accountID, AccountHint: accountID, State: state,
			StartedAt: now, ExpiresAt: expires, ObservedAt: now,
		}, plan, cause, devices)
		out = e
		if err != nil {
			return err
		}
		// Record settles only when the entitlement changed; the trial and
		// referral ended above change the account's plan all the same.
		return settle(ctx, st, accountID, nil, e, now, devices)
	})
	return out, err
}

// Link gives an unlinked purchase to the account that proved it (a
// restore), and settles the account. A purchase linked to another
// account is ErrConflict.
func Link(ctx context.Context, st Ledger, source Source, externalID, accountID string, devices func(string) int) (Entitlement, error) {
	var out Entitlement
	err := st.InTx(ctx, func(ctx context.Context) error {
		now := st.TxTime(ctx)
		cur, err := lockEntitlement(ctx, st, source, externalID)
		if err != nil {
			return err
		}
		if cur == nil {
			return storage.ErrNotFound
		}
		out = *cur
		if cur.AccountID == accountID {
			return nil
		}
		if cur.AccountID != "" {
			return storage.ErrConflict
		}
		if _, err := st.LockSubscription(ctx, accountID); err != nil {
			return err
		}
		next := *cur
		next.AccountID, next.ChangedAt = accountID, now
		if err := save(ctx, st, cur, next, "restore", now); err != nil {
			return err
		}
		out = next
		return settle(ctx, st, accountID, Transitions(nil, next), next, now, devices)
	})
	return out, err
}

// Settle derives the account's subscription again (an entitlement's
// access ended, so the next best takes over) and writes the change.
func Settle(ctx context.Context, st Ledger, accountID string, devices func(string) int) error {
	return st.InTx(ctx, func(ctx context.Context) error {
		return settle(ctx, st, accountID, nil, Entitlement{}, st.TxTime(ctx), devices)
	})
}

func lockEntitlement(ctx context.Context, st Ledger, source Source, externalID string) (*Entitlement, error) {
	e, err := st.LockEntitlement(ctx, source, externalID)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &e, nil
}

// save writes next and its history row.
func save(ctx context.Context, st Ledger, prev *Entitlement, next Entitlement, cause string, now time.Time) error {
	if err := st.SaveEntitlement(ctx, next); err != nil {
		return err
	}
	var from State
	if prev != nil {
		from = prev.State
	}
	return st.RecordChange(ctx, Change{
		ID: uuid.NewString(), EntitlementID: next.ID, AccountID: next.AccountID, Source: next.Source,
		Cause: cause, FromState: from, ToState: next.State, Plan: next.Plan, ExpiresAt: next.ExpiresAt, At: now,
	})
}

// settle derives the account's subscription from its entitlements under
// the account's lock, saves it when it changed, and writes the events:
// the entitlement's lifecycle events, subscription.plan_changed when the
// plan changed, user.subscription_changed when the plan or its end did;
// and a notice job for the events its owner is told of.
func settle(ctx context.Context, st Ledger, accountID string, events []string, e Entitlement, now time.Time, devices func(string) int) error {
	cur, err := st.LockSubscription(ctx, accountID)
	if err != nil {
		return err
	}
	ents, err := st.AccountEntitlements(ctx, accountID)
	if err != nil {
		return err
	}
	next, _ := Effective(ents, now, devices)
	for _, ev := range events {
		if err := st.Emit(ctx, LifecycleEvent(ev, accountID, e, next)); err != nil {
			return err
		}
		if noticed[ev] {
			if err := st.EnqueueJob(ctx, NoticeArgs{AccountID: accountID, EntitlementID: e.ID, Event: ev, Plan: e.Plan, At: now}); err != nil {
				return err
			}
		}
	}
	if sameSubscription(cur, next) {
		return nil
	}
	if err := st.SaveSubscription(ctx, accountID, next); err != nil {
		return err
	}
	if cur.Plan != next.Plan && cur.Plan != "" {
		if err := st.Emit(ctx, LifecycleEvent(EventPlanChanged, accountID, e, next).withPrevious(cur.Plan)); err != nil {
			return err
		}
	}
	if cur.Plan != next.Plan || !cur.ExpiresAt.Equal(next.ExpiresAt) {
		return st.Emit(ctx, Changed(accountID, cur, next))
	}
	return nil
}

func sameSubscription(a, b Subscription) bool {
	return a.Plan == b.Plan && a.ExpiresAt.Equal(b.ExpiresAt) && a.Source == b.Source && a.AutoRenew == b.AutoRenew && sameTime(a.GraceEndsAt, b.GraceEndsAt)
}

func minTime(ts ...time.Time) time.Time {
	m := ts[0]
	for _, t := range ts[1:] {
		if t.Before(m) {
			m = t
		}
	}
	return m
}
