package accounts

import (
	"context"
	"errors"
	"time"

	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/subscriptions"
)

// TrialEnd is when the trial of an account created at now ends: trial
// from now, and the referral bonus on top when a referrer's code applied.
func TrialEnd(now time.Time, trial, bonus time.Duration, referred bool) time.Time {
	end := now.Add(trial)
	if referred {
		end = end.Add(bonus)
	}
	return end
}

// Create runs signup's rules in one unit of work of st: the account on
// its trial (TrialEnd, a trial entitlement), and, when n.Referral names an account, that
// account's subscription extended by the bonus under its row's lock (a
// referral entitlement, subscriptions.Subscription.Extended) and the
// reward recorded; then
// n.Job and the user.created event. It reports whether the referral was
// applied. ErrConflict when the email or referral code is taken.
func Create(ctx context.Context, st Store, n NewAccount) (Account, bool, error) {
	var applied bool
	err := st.InTx(ctx, func(ctx context.Context) error {
		var referrerID string
		if n.Referral != "" {
			id, err := st.AccountIDByReferralCode(ctx, n.Referral)
			if err != nil && !errors.Is(err, storage.ErrNotFound) {
				return err
			}
			referrerID = id
		}
		applied = referrerID != ""
		now := st.TxTime(ctx)
		expires := TrialEnd(now, n.Trial, n.ReferralBonus, applied)
		// No trial (HERALD_TRIAL_PERIOD=0, no referral): no subscription
		// until the account buys one.
		trial := subscriptions.Subscription{Plan: subscriptions.Trial, ExpiresAt: expires, Source: subscriptions.TrialGrant}
		if !expires.After(now) {
			trial = subscriptions.Subscription{ExpiresAt: now}
		}
		if err := st.InsertAccount(ctx, n, trial); err != nil {
			return err
		}
		if trial.Plan != "" {
			if _, err := subscriptions.Grant(ctx, st, n.ID, subscriptions.TrialGrant, subscriptions.Trial, expires, "signup", n.DeviceLimit); err != nil {
				return err
			}
		}
		if applied {
			sub, err := st.LockSubscription(ctx, referrerID)
			if err != nil {
				return err
			}
			if _, err := subscriptions.Grant(ctx, st, referrerID, subscriptions.Referral, sub.Plan, sub.Extended(n.ReferralBonus, now), "referral", n.DeviceLimit); err != nil {
				return err
			}
			if err := st.InsertReferralReward(ctx, n.ID, referrerID, n.ReferralBonus); err != nil {
				return err
			}
		}
		if n.Job != nil {
			if err := st.EnqueueJob(ctx, n.Job); err != nil {
				return err
			}
		}
		return st.Emit(ctx, UserCreated{UserID: n.ID, Email: wireAddress(n.Email), EmailVerified: n.Verified, Plan: trial.Plan, ExpiresAt: trial.ExpiresAt.UTC(), ReferrerID: referrerID})
	})
	if err != nil {
		return Account{}, false, err
	}
	a, err := st.AccountByID(ctx, n.ID)
	return a, applied, err
}
