package rest

import (
	"net/http"

	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/billing"
	"github.com/herald-vpn/herald/internal/subscriptions"
	"github.com/herald-vpn/herald/internal/view"
)

// StoreNotification is a store's notification endpoint (POST
// /api/v1/billing/apple/notifications, /google/rtdn, /stripe/webhook):
// verified by the store's signature or token, kept, then answered 200; a
// repeat is answered 200 and changes nothing. A forged or misaddressed
// one gets 4xx (the store stops), a failure to keep it 5xx (the store
// retries).
func (h *Handlers) StoreNotification(source subscriptions.Source) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := api.ReadBody(w, r)
		if err != nil {
			api.WriteError(w, r, err)
			return
		}
		if err := h.Billing.Receive(r.Context(), source, r.Header.Get, body); err != nil {
			api.WriteError(w, r, err)
			return
		}
		api.WriteData(w, http.StatusOK, view.Received{Received: true})
	}
}

// appleTransactionBody is what an app posts after a StoreKit 2 purchase
// or restore.
type appleTransactionBody struct {
	SignedTransaction string `json:"signedTransaction"`
}

// googlePurchaseBody is what an app posts after a Play purchase.
type googlePurchaseBody struct {
	PurchaseToken string `json:"purchaseToken"`
	ProductID     string `json:"productId"`
}

// AppleTransaction is POST /api/v1/billing/apple/transactions.
func (h *Handlers) AppleTransaction() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, in appleTransactionBody) (any, error) {
		if err := api.Required("signedTransaction", in.SignedTransaction); err != nil {
			return nil, err
		}
		return h.RecordPurchase(r.Context(), subscriptions.AppStore, auth.Caller(r.Context()).AccountID, in.SignedTransaction)
	})
}

// GooglePurchase is POST /api/v1/billing/google/purchases.
func (h *Handlers) GooglePurchase() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, in googlePurchaseBody) (any, error) {
		if err := api.Required("purchaseToken", in.PurchaseToken); err != nil {
			return nil, err
		}
		if err := api.Required("productId", in.ProductID); err != nil {
			return nil, err
		}
		return h.RecordPurchase(r.Context(), subscriptions.GooglePlay, auth.Caller(r.Context()).AccountID, billing.GooglePlayProof{PurchaseToken: in.PurchaseToken, ProductID: in.ProductID})
	})
}

// checkoutBody names the Stripe price to buy.
type checkoutBody struct {
	ProductID string `json:"productId"`
}

// StripeCheckout is POST /api/v1/billing/stripe/checkout: a Checkout URL
// for the signed-in user.
func (h *Handlers) StripeCheckout() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, in checkoutBody) (any, error) {
		if err := api.Required("productId", in.ProductID); err != nil {
			return nil, err
		}
		caller := auth.Caller(r.Context()).AccountID
		acct, err := h.Accounts.Profile(r.Context(), caller)
		if err != nil {
			return nil, err
		}
		url, err := h.Billing.Checkout(r.Context(), subscriptions.Stripe, caller, acct.Email, in.ProductID)
		if err != nil {
			return nil, err
		}
		return view.RedirectURL{URL: url}, nil
	})
}

// StripePortal is POST /api/v1/billing/stripe/portal: the customer
// portal's URL for the signed-in user.
func (h *Handlers) StripePortal() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		url, err := h.Billing.Portal(r.Context(), subscriptions.Stripe, auth.Caller(r.Context()).AccountID)
		if err != nil {
			return nil, err
		}
		return view.RedirectURL{URL: url}, nil
	})
}

// ReconcileUser is POST /api/v1/admin/users/{id}/subscription/reconcile:
// the account's store purchases read again from their stores now.
func (h *Handlers) ReconcileUser() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		return h.ReconcilePurchases(r.Context(), r.PathValue("id"))
	})
}
