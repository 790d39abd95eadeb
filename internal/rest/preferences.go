package rest

import (
	"net/http"

	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/view"
)

// preferencesBody is the body of a preferences change.
type preferencesBody struct {
	Settings   []view.NotificationSetting `json:"settings"`
	TimeZone   *string                    `json:"timeZone"`
	QuietHours *view.QuietHoursInput      `json:"quietHours"`
}

// MyPreferences is GET /api/v1/users/me/notification-preferences.
func (h *Handlers) MyPreferences() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		return h.preferences(r, auth.Caller(r.Context()).AccountID)
	})
}

// UserPreferences is GET /api/v1/admin/users/{id}/notification-preferences.
func (h *Handlers) UserPreferences() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		return h.preferences(r, r.PathValue("id"))
	})
}

// UpdateMyPreferences is PATCH /api/v1/users/me/notification-preferences.
func (h *Handlers) UpdateMyPreferences() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, in preferencesBody) (any, error) {
		return h.updatePreferences(r, auth.Caller(r.Context()).AccountID, in)
	})
}

// UpdateUserPreferences is PATCH /api/v1/admin/users/{id}/notification-preferences.
func (h *Handlers) UpdateUserPreferences() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, in preferencesBody) (any, error) {
		return h.updatePreferences(r, r.PathValue("id"), in)
	})
}

func (h *Handlers) preferences(r *http.Request, accountID string) (any, error) {
	p, err := h.Preferences.Get(r.Context(), accountID)
	if err != nil {
		return nil, err
	}
	return view.NewNotificationPreferences(p), nil
}

func (h *Handlers) updatePreferences(r *http.Request, accountID string, in preferencesBody) (any, error) {
	change, err := view.PreferencesChange(in.Settings, in.TimeZone, in.QuietHours)
	if err != nil {
		return nil, err
	}
	p, err := h.Preferences.Update(r.Context(), accountID, change)
	if err != nil {
		return nil, err
	}
	return view.NewNotificationPreferences(p), nil
}

// NotificationCategories is GET /api/v1/notifications/categories: the
// categories a send may name, in catalogue order.
func (h *Handlers) NotificationCategories() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		return view.NewNotificationCategories(h.Preferences.Catalogue()), nil
	})
}
