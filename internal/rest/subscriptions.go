package rest

import (
	"net/http"

	"github.com/herald-vpn/herald/internal/auth"
)

// MySubscription is GET /api/v1/subscription: the caller's subscription
// and the entitlements it comes from; SUBSCRIPTION_NOT_FOUND when none.
func (h *Handlers) MySubscription() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		return h.SubscriptionOf(r.Context(), auth.Caller(r.Context()).AccountID)
	})
}

// UserSubscription is GET /api/v1/admin/users/{id}/subscription: an
// account's subscription, entitlements and their history.
func (h *Handlers) UserSubscription() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		return h.SubscriptionWithHistory(r.Context(), r.PathValue("id"))
	})
}
