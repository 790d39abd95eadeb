package services

import (
	"context"
	"encoding/json"

	"github.com/herald-vpn/herald/internal/subscriptions"
	"github.com/herald-vpn/herald/internal/view"
)

// The subscription operations both doors offer, composed once here: a
// door decodes its input, calls one of these and writes the answer.

// SubscriptionOf is the account's subscription and the entitlements it
// comes from (GET /api/v1/subscription, mySubscription);
// SUBSCRIPTION_NOT_FOUND when it has none.
func (s Services) SubscriptionOf(ctx context.Context, accountID string) (view.SubscriptionDetail, error) {
	sub, ents, err := s.Plans.Entitlements(ctx, accountID)
	if err != nil {
		return view.SubscriptionDetail{}, err
	}
	return view.NewSubscriptionDetail(sub, ents, s.Plans.Now()), nil
}

// SubscriptionWithHistory is the admin API's view of an account's
// subscription: its entitlements and their history. USER_NOT_FOUND for an
// unknown or deleted account, SUBSCRIPTION_NOT_FOUND for one without
// entitlements.
func (s Services) SubscriptionWithHistory(ctx context.Context, accountID string) (view.UserSubscriptionDetail, error) {
	if _, err := s.Accounts.User(ctx, accountID); err != nil {
		return view.UserSubscriptionDetail{}, err
	}
	detail, err := s.SubscriptionOf(ctx, accountID)
	if err != nil {
		return view.UserSubscriptionDetail{}, err
	}
	history, err := s.Plans.History(ctx, accountID)
	if err != nil {
		return view.UserSubscriptionDetail{}, err
	}
	return view.NewUserSubscriptionDetail(detail, history), nil
}

// ReconcilePurchases reads the account's store purchases from their
// stores now and answers SubscriptionWithHistory.
func (s Services) ReconcilePurchases(ctx context.Context, accountID string) (view.UserSubscriptionDetail, error) {
	if _, err := s.Accounts.User(ctx, accountID); err != nil {
		return view.UserSubscriptionDetail{}, err
	}
	if _, err := s.Billing.Reconcile(ctx, accountID); err != nil {
		return view.UserSubscriptionDetail{}, err
	}
	return s.SubscriptionWithHistory(ctx, accountID)
}

// RecordPurchase records what an app posts after a purchase or a restore
// (the App Store's signed transaction, a billing.GooglePlayProof) for the
// account, and answers its subscription after it.
func (s Services) RecordPurchase(ctx context.Context, source subscriptions.Source, accountID string, proof any) (view.SubscriptionDetail, error) {
	raw, err := json.Marshal(proof)
	if err != nil {
		return view.SubscriptionDetail{}, err
	}
	if _, err := s.Billing.Prove(ctx, source, accountID, raw); err != nil {
		return view.SubscriptionDetail{}, err
	}
	return s.SubscriptionOf(ctx, accountID)
}
