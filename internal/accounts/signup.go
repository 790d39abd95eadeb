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
// its trial (TrialEnd), and, when n.Referral names an account, that
// account's subscription extended by the bonus under its row's lock
// (subscriptions.Subscription.Extended) and the reward recorded; then
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
		if err := st.InsertAccount(ctx, n, subscriptions.Subscription{Plan: subscriptions.Trial, ExpiresAt: expires}); err != nil {
			return err
		}
		if applied {
			sub, err := st.LockSubscription(ctx, referrerID)
			if err != nil {
				return err
			}
			if err := st.SetSubscriptionExpiry(ctx, referrerID, sub.Extended(n.ReferralBonus, now)); err != nil {
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
		return st.Emit(ctx, UserCreated{UserID: n.ID, Email: n.Email, EmailVerified: n.Verified, Plan: subscriptions.Trial, ExpiresAt: expires.UTC(), ReferrerID: referrerID})
	})
	if err != nil {
		return Account{}, false, err
	}
	a, err := st.AccountByID(ctx, n.ID)
	return a, applied, err
}
